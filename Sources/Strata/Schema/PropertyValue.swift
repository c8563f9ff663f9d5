import Foundation

/// A Swift type that a model property can have: `Bool`, `Int`, `Int64`,
/// `Double`, `String`, `Data`, `Date`, `UUID`, `Decimal`, a ``Link`` to a model, an
/// ``EmbeddedModel`` (a struct declared `@Embedded`), the optional of
/// each, and an array of any of them but optionals and arrays.
///
/// Each maps to one ``PropertyType``; its optional maps to the same type
/// with ``Property/isOptional`` set. Models use these through the
/// ``Model`` protocol; you rarely call them yourself.
public protocol PropertyValue {
    /// The stored type of the property.
    static var propertyType: PropertyType { get }
    /// Whether the property may hold null: true for optionals.
    static var isOptional: Bool { get }
    /// The value as stored.
    var propertyValue: Value { get }
    /// The Swift value of a stored value, or nil when `value` is not of
    /// ``propertyType`` (or is null for a type that is not optional).
    init?(propertyValue value: Value)
    /// The stored property named `name` that holds values of this type:
    /// its type, whether it is optional, and for relationships its target.
    static func storedProperty(named name: String) -> Property
    /// The embedded model type whose objects a property of this type holds
    /// (itself, in an optional or in an array), or nil.
    static var embeddedType: (any EmbeddedModel.Type)? { get }
}

extension PropertyValue {
    /// False: only `Optional` is optional.
    public static var isOptional: Bool { false }
    /// A property of ``propertyType``, optional when ``isOptional``.
    public static func storedProperty(named name: String) -> Property {
        Property(name, propertyType, optional: isOptional)
    }
    /// Nil: only embedded models, their optionals and arrays embed.
    public static var embeddedType: (any EmbeddedModel.Type)? { nil }

    /// What the stored `value` reads as and is written back as, or nil
    /// when it does not read as this type. The same value for most types;
    /// another for a ``PersistableEnum`` that reads an unknown raw value
    /// as its ``PersistableEnum/unknownCase``.
    static func writtenBack(_ value: Value) -> Value? {
        Self(propertyValue: value)?.propertyValue
    }
}

/// A type that can be an object type's primary key: `Int`, `Int64`,
/// `String` or `UUID`.
public protocol PrimaryKeyValue: PropertyValue, Hashable, Sendable {}

extension Bool: PropertyValue {
    /// ``PropertyType/bool``.
    public static var propertyType: PropertyType { .bool }
    /// ``Value/bool(_:)``.
    public var propertyValue: Value { .bool(self) }
    /// The boolean of a ``Value/bool(_:)``.
    @inline(__always)
    public init?(propertyValue value: Value) {
        guard case .bool(let v) = value else { return nil }
        self = v
    }
}

extension Int: PrimaryKeyValue {
    /// ``PropertyType/int``.
    public static var propertyType: PropertyType { .int }
    /// ``Value/int(_:)``.
    public var propertyValue: Value { .int(Int64(self)) }
    /// The integer of a ``Value/int(_:)``; nil when it does not fit `Int`.
    @inline(__always)
    public init?(propertyValue value: Value) {
        guard case .int(let v) = value, let exact = Int(exactly: v) else { return nil }
        self = exact
    }
}

extension Int64: PrimaryKeyValue {
    /// ``PropertyType/int``.
    public static var propertyType: PropertyType { .int }
    /// ``Value/int(_:)``.
    public var propertyValue: Value { .int(self) }
    /// The integer of a ``Value/int(_:)``.
    @inline(__always)
    public init?(propertyValue value: Value) {
        guard case .int(let v) = value else { return nil }
        self = v
    }
}

extension Double: PropertyValue {
    /// ``PropertyType/double``.
    public static var propertyType: PropertyType { .double }
    /// ``Value/double(_:)``.
    public var propertyValue: Value { .double(self) }
    /// The number of a ``Value/double(_:)``.
    @inline(__always)
    public init?(propertyValue value: Value) {
        guard case .double(let v) = value else { return nil }
        self = v
    }
}

extension String: PrimaryKeyValue {
    /// ``PropertyType/string``.
    public static var propertyType: PropertyType { .string }
    /// ``Value/string(_:)``.
    public var propertyValue: Value { .string(self) }
    /// The text of a ``Value/string(_:)``.
    @inline(__always)
    public init?(propertyValue value: Value) {
        guard case .string(let v) = value else { return nil }
        self = v
    }
}

extension Data: PropertyValue {
    /// ``PropertyType/data``.
    public static var propertyType: PropertyType { .data }
    /// ``Value/data(_:)``.
    public var propertyValue: Value { .data(self) }
    /// The bytes of a ``Value/data(_:)``.
    @inline(__always)
    public init?(propertyValue value: Value) {
        guard case .data(let v) = value else { return nil }
        self = v
    }
}

extension Date: PropertyValue {
    /// ``PropertyType/date``.
    public static var propertyType: PropertyType { .date }
    /// ``Value/date(_:)``.
    public var propertyValue: Value { .date(self) }
    /// The date of a ``Value/date(_:)``.
    @inline(__always)
    public init?(propertyValue value: Value) {
        guard case .date(let v) = value else { return nil }
        self = v
    }
}

extension UUID: PrimaryKeyValue {
    /// ``PropertyType/uuid``.
    public static var propertyType: PropertyType { .uuid }
    /// ``Value/uuid(_:)``.
    public var propertyValue: Value { .uuid(self) }
    /// The identifier of a ``Value/uuid(_:)``.
    @inline(__always)
    public init?(propertyValue value: Value) {
        guard case .uuid(let v) = value else { return nil }
        self = v
    }
}

extension Decimal: PropertyValue {
    /// ``PropertyType/decimal``.
    public static var propertyType: PropertyType { .decimal }
    /// ``Value/decimal(_:)``.
    public var propertyValue: Value { .decimal(self) }
    /// The number of a ``Value/decimal(_:)``.
    @inline(__always)
    public init?(propertyValue value: Value) {
        guard case .decimal(let v) = value else { return nil }
        self = v
    }
}

extension Optional: PropertyValue where Wrapped: PropertyValue {
    /// The wrapped type's.
    public static var propertyType: PropertyType { Wrapped.propertyType }
    /// True.
    public static var isOptional: Bool { true }
    /// ``Value/null`` for nil, else the wrapped value's.
    public var propertyValue: Value { self?.propertyValue ?? .null }
    /// The wrapped type's property, optional.
    public static func storedProperty(named name: String) -> Property {
        var property = Wrapped.storedProperty(named: name)
        property.isOptional = true
        return property
    }
    /// The wrapped type's.
    public static var embeddedType: (any EmbeddedModel.Type)? { Wrapped.embeddedType }
    /// Nil for ``Value/null``, else the wrapped type's value.
    @inline(__always)
    public init?(propertyValue value: Value) {
        if case .null = value {
            self = .none
            return
        }
        guard let wrapped = Wrapped(propertyValue: value) else { return nil }
        self = .some(wrapped)
    }
}

extension Value {
    /// The stored form of a Swift value: `Value(42)`, `Value("Ada")`,
    /// `Value(nil as Date?)`.
    public init(_ value: some PropertyValue) {
        self = value.propertyValue
    }
}
