/// The shape of one object type: its name, its properties, and its primary key.
///
/// ```swift
/// let person = ObjectSchema("Person", primaryKey: "id") {
///     Property("id", .int)
///     Property("name", .string)
///     Property("age", .int, default: 0, indexed: true)
/// }
/// ```
public struct ObjectSchema: Hashable, Sendable, Codable {
    /// The type's name, unique within the schema.
    public var name: String
    /// The name of the property whose value identifies each object, or nil
    /// for a type whose objects get automatic 64-bit ids.
    public var primaryKey: String?
    /// The properties, in declaration order.
    public var properties: [Property]
    /// Whether objects of this type are embedded: stored inside the record
    /// of the one object that owns them (through an
    /// ``PropertyType/embedded`` property, or a list of them), deleted with
    /// it, without a primary key or a table of their own. Default: `false`.
    public var isEmbedded: Bool

    /// Creates an object schema from a list of properties.
    public init(_ name: String, primaryKey: String? = nil, embedded: Bool = false, properties: [Property]) {
        self.name = name
        self.primaryKey = primaryKey
        self.properties = properties
        self.isEmbedded = embedded
    }

    /// Creates an object schema, listing its properties in a builder block.
    ///
    /// ```swift
    /// let address = ObjectSchema("Address", embedded: true) {
    ///     Property("street", .string)
    ///     Property("city", .string)
    /// }
    /// ```
    public init(
        _ name: String, primaryKey: String? = nil, embedded: Bool = false,
        @PropertyBuilder _ properties: () -> [Property]
    ) {
        self.init(name, primaryKey: primaryKey, embedded: embedded, properties: properties())
    }

    /// The JSON keys of catalogs and snapshots, spelled out so that renaming
    /// a Swift property never changes the file format.
    private enum CodingKeys: String, CodingKey {
        case name, primaryKey, properties, isEmbedded
    }

    /// Decodes an object schema; `isEmbedded` is absent from snapshots
    /// written before embedded objects.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        primaryKey = try container.decodeIfPresent(String.self, forKey: .primaryKey)
        properties = try container.decode([Property].self, forKey: .properties)
        isEmbedded = try container.decodeIfPresent(Bool.self, forKey: .isEmbedded) ?? false
    }

    /// Encodes an object schema; `isEmbedded` only when set, so a snapshot
    /// without embedded types is written as before them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encodeIfPresent(primaryKey, forKey: .primaryKey)
        try container.encode(properties, forKey: .properties)
        if isEmbedded { try container.encode(true, forKey: .isEmbedded) }
    }

    /// The property named `name`, if there is one.
    public subscript(property name: String) -> Property? {
        properties.first { $0.name == name }
    }
}

/// Builds the property list of an ``ObjectSchema`` from a block.
@resultBuilder
public enum PropertyBuilder {
    /// Collects the block's properties.
    public static func buildBlock(_ components: [Property]...) -> [Property] { components.flatMap { $0 } }
    /// Lifts one property into a list.
    public static func buildExpression(_ property: Property) -> [Property] { [property] }
    /// Lifts a list of properties, e.g. built by a loop.
    public static func buildExpression(_ properties: [Property]) -> [Property] { properties }
    /// Supports `if` without `else`.
    public static func buildOptional(_ component: [Property]?) -> [Property] { component ?? [] }
    /// Supports `if`/`else`, first branch.
    public static func buildEither(first component: [Property]) -> [Property] { component }
    /// Supports `if`/`else`, second branch.
    public static func buildEither(second component: [Property]) -> [Property] { component }
    /// Supports `for` loops.
    public static func buildArray(_ components: [[Property]]) -> [Property] { components.flatMap { $0 } }
}
