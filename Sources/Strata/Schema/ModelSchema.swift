/// The static schema of a model type: its stored name, its properties in
/// declaration order, and the key path of each.
///
/// The `@Model` macro writes it; a hand-written ``Model`` lists its
/// properties in the order its `encode(to:)` writes and its
/// `init(from:)` reads them:
///
/// ```swift
/// static let schema = ModelSchema<Person>(name: "Person", properties: [
///     .init(\.id, "id", primaryKey: true),
///     .init(\.name, "name"),
///     .init(\.age, "age", indexed: true, default: 0),
/// ])
/// ```
public struct ModelSchema<Root>: Sendable {
    /// The stored object type: what the file and dynamic code see.
    public let objectSchema: ObjectSchema
    /// Per property, in declaration order, the name it had in the previous
    /// schema version, for properties declared with an original name.
    public let originalNames: [String?]
    private let keyPaths: [PartialKeyPath<Root> & Sendable]
    /// Every property declared as the primary key: more than one is an
    /// error when a database is opened with the model.
    let primaryKeyNames: [String]

    /// Creates a model's schema.
    ///
    /// - Parameters:
    ///   - name: The stored type name, which may differ from the Swift
    ///     type's (several versions of one type in one app).
    ///   - properties: The stored properties, in the order the model
    ///     encodes and decodes them.
    public init(name: String, properties: [ModelProperty<Root>]) {
        let primaryKeys = properties.filter(\.isPrimaryKey).map(\.property.name)
        self.primaryKeyNames = primaryKeys
        self.objectSchema = ObjectSchema(name, primaryKey: primaryKeys.first, properties: properties.map(\.property))
        self.originalNames = properties.map(\.originalName)
        self.keyPaths = properties.map(\.keyPath)
    }

    /// The stored type name.
    public var name: String { objectSchema.name }

    /// The position of the stored property at `keyPath`, or nil when the
    /// key path is not a stored property (a computed or transient one).
    public func position(of keyPath: PartialKeyPath<Root>) -> Int? {
        keyPaths.firstIndex { $0 == keyPath }
    }

    /// The stored property at `keyPath`, or nil.
    public func property(at keyPath: PartialKeyPath<Root>) -> Property? {
        position(of: keyPath).map { objectSchema.properties[$0] }
    }
}

/// One stored property of a model: its key path, its stored name, and how
/// it is stored.
public struct ModelProperty<Root>: Sendable {
    /// The stored property.
    public let property: Property
    /// Whether it is the primary key.
    public let isPrimaryKey: Bool
    /// Its name in the previous schema version, when it was renamed.
    public let originalName: String?
    let keyPath: PartialKeyPath<Root> & Sendable

    /// Describes a stored property.
    ///
    /// - Parameters:
    ///   - keyPath: The property's key path.
    ///   - name: Its stored name (usually the Swift name).
    ///   - primaryKey: Whether it identifies the objects.
    ///   - indexed: Whether an index is kept on it.
    ///   - default: The value existing objects read when the property is
    ///     new to them: the schema default.
    ///   - originalName: Its name in the previous schema version, when it
    ///     is renamed there: the rename needs no migration code.
    public init<V: PropertyValue>(
        _ keyPath: KeyPath<Root, V> & Sendable, _ name: String, primaryKey: Bool = false, indexed: Bool = false,
        default: V? = nil, originalName: String? = nil
    ) {
        self.property = Property(
            name, V.propertyType, optional: V.isOptional, default: `default`.map(\.propertyValue), indexed: indexed)
        self.isPrimaryKey = primaryKey
        self.originalName = originalName
        self.keyPath = keyPath
    }
}

/// What a configuration keeps of a model: its stored schema and what it
/// declares beyond it, without its Swift type.
struct ModelDeclaration: Sendable {
    /// The Swift type's name, for messages.
    let swiftName: String
    let objectSchema: ObjectSchema
    /// Per property, its name in the previous schema version, if renamed.
    let originalNames: [String?]
    /// Every property declared as the primary key.
    let primaryKeyNames: [String]
}

extension ModelSchema {
    func declaration(swiftName: String) -> ModelDeclaration {
        ModelDeclaration(
            swiftName: swiftName, objectSchema: objectSchema, originalNames: originalNames,
            primaryKeyNames: primaryKeyNames)
    }
}
