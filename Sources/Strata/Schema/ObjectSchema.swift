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

    /// Creates an object schema from a list of properties.
    public init(_ name: String, primaryKey: String? = nil, properties: [Property]) {
        self.name = name
        self.primaryKey = primaryKey
        self.properties = properties
    }

    /// Creates an object schema, listing its properties in a builder block.
    public init(_ name: String, primaryKey: String? = nil, @PropertyBuilder _ properties: () -> [Property]) {
        self.init(name, primaryKey: primaryKey, properties: properties())
    }

    /// The JSON keys of catalogs and snapshots, spelled out so that renaming
    /// a Swift property never changes the file format.
    private enum CodingKeys: String, CodingKey {
        case name, primaryKey, properties
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
