/// One property of an object type: a name, a type, and how it behaves.
///
/// ```swift
/// Property("id", .int)
/// Property("age", .int, default: 0, indexed: true)
/// Property("email", .string, optional: true)
/// ```
public struct Property: Hashable, Sendable, Codable {
    /// The property's name, unique within its object type.
    public var name: String
    /// The type of the property's values.
    public var type: PropertyType
    /// Whether the property may hold ``Value/null``. Default: `false`.
    public var isOptional: Bool
    /// The value used when an object is inserted without one, and the value
    /// existing objects read when the property is added later. When nil, a
    /// required property reads as its type's ``PropertyType/emptyValue`` and
    /// an optional one as null. Default: nil.
    public var defaultValue: Value?
    /// Whether an index is kept for equality lookups with
    /// ``ObjectCollection/where(_:equals:)``. Default: `false`.
    public var isIndexed: Bool

    /// Creates a property.
    ///
    /// - Parameters:
    ///   - name: The property's name.
    ///   - type: The type of its values.
    ///   - optional: Whether it may hold null.
    ///   - default: The value it takes when none is given.
    ///   - indexed: Whether to keep an index on it.
    public init(
        _ name: String, _ type: PropertyType, optional: Bool = false, default: Value? = nil, indexed: Bool = false
    ) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.defaultValue = `default`
        self.isIndexed = indexed
    }

    /// The value an object reads for this property when its record has none.
    public var valueWhenAbsent: Value {
        if let defaultValue { return defaultValue }
        return isOptional ? .null : type.emptyValue
    }

    /// The JSON keys of catalogs and snapshots, spelled out so that renaming
    /// a Swift property never changes the file format.
    private enum CodingKeys: String, CodingKey {
        case name, type, isOptional, defaultValue, isIndexed
    }

    /// The type as written in messages: `int`, or `int?` when optional.
    var typeDescription: String { isOptional ? "\(type)?" : "\(type)" }
}

extension Value {
    /// Whether the value may be stored in a property of `type`.
    func fits(_ type: PropertyType, optional: Bool) -> Bool {
        if case .null = self { return optional }
        return propertyType == type
    }

    /// The value converted to `type` where that loses nothing (an integer
    /// literal given for a double property), else the value itself.
    func coerced(to type: PropertyType) -> Value {
        if type == .double, case .int(let v) = self, let d = Double(exactly: v) { return .double(d) }
        return self
    }
}
