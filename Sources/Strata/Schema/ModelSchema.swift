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
    /// The embedded model types the properties hold, by property (nil for
    /// the rest): read only when a configuration collects them, so a type
    /// may embed itself without recursing here.
    let embeddedTypes: [any EmbeddedModel.Type]
    /// Per property, in declaration order, the ``PersistableEnum`` it holds
    /// (itself, optional or in an array), or nil.
    let enumTypes: [(any PersistableEnum.Type)?]
    /// Per property, in declaration order, the embedded type it holds, or
    /// nil.
    let embeddedTypesByPosition: [(any EmbeddedModel.Type)?]

    /// Creates a model's schema.
    ///
    /// - Parameters:
    ///   - name: The stored type name, which may differ from the Swift
    ///     type's (several versions of one type in one app).
    ///   - embedded: Whether it is the schema of an ``EmbeddedModel``.
    ///   - properties: The stored properties, in the order the model
    ///     encodes and decodes them.
    public init(name: String, embedded: Bool = false, properties: [ModelProperty<Root>]) {
        let primaryKeys = properties.filter(\.isPrimaryKey).map(\.property.name)
        self.primaryKeyNames = primaryKeys
        self.objectSchema = ObjectSchema(
            name, primaryKey: primaryKeys.first, embedded: embedded, properties: properties.map(\.property))
        self.originalNames = properties.map(\.originalName)
        self.keyPaths = properties.map(\.keyPath)
        self.embeddedTypes = properties.compactMap(\.embeddedType)
        self.enumTypes = properties.map(\.enumType)
        self.embeddedTypesByPosition = properties.map(\.embeddedType)
    }

    /// The stored type name.
    public var name: String { objectSchema.name }

    /// The position of the stored property at `keyPath`, or nil when the
    /// key path is not a stored property (a computed or transient one).
    public func position(of keyPath: PartialKeyPath<Root>) -> Int? {
        keyPaths.firstIndex { $0 == keyPath }
    }

    /// The key path of the stored property at `position`.
    func keyPath(at position: Int) -> PartialKeyPath<Root> { keyPaths[position] }

    /// The stored property at `keyPath`, or nil.
    public func property(at keyPath: PartialKeyPath<Root>) -> Property? {
        position(of: keyPath).map { objectSchema.properties[$0] }
    }

    /// The value of `object`'s primary key property, or nil when the
    /// schema declares none.
    func primaryKeyValue(of object: Root) -> Value? {
        guard let name = objectSchema.primaryKey,
            let position = objectSchema.properties.firstIndex(where: { $0.name == name }),
            let value = object[keyPath: keyPaths[position]] as? any PropertyValue
        else { return nil }
        return value.propertyValue
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
    let embeddedType: (any EmbeddedModel.Type)?
    let enumType: (any PersistableEnum.Type)?

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
    ///   - onDelete: For a ``Link`` or an array of links, what deleting the
    ///     target does to the object holding the link. Default:
    ///     ``DeleteRule/nullify``.
    public init<V: PropertyValue>(
        _ keyPath: KeyPath<Root, V> & Sendable, _ name: String, primaryKey: Bool = false, indexed: Bool = false,
        default: V? = nil, originalName: String? = nil, onDelete: DeleteRule = .nullify
    ) {
        var property = V.storedProperty(named: name)
        property.defaultValue = `default`.map(\.propertyValue)
        property.isIndexed = indexed
        property.deleteRule = onDelete
        self.property = property
        self.isPrimaryKey = primaryKey
        self.originalName = originalName
        self.keyPath = keyPath
        self.embeddedType = V.embeddedType
        self.enumType = carriedEnum(V.self)
    }

    /// Whether a property of type `type` holds a ``PersistableEnum``.
    @usableFromInline
    static func isEnum(_ type: Any.Type) -> Bool { carriedEnum(type) != nil }
}

/// What a configuration keeps of a model: its stored schema and what it
/// declares beyond it, without its Swift type.
struct ModelDeclaration: Sendable {
    /// The Swift type's name, for messages.
    let swiftName: String
    let objectSchema: ObjectSchema
    /// The model's `storedTypeName`, which links to it use: the same as
    /// the schema's name, unless a hand-written conformance disagrees.
    var storedTypeName: String
    /// Per property, its name in the previous schema version, if renamed.
    let originalNames: [String?]
    /// Every property declared as the primary key.
    let primaryKeyNames: [String]
    /// The embedded types the model reaches, nearest first.
    let embeddedSchemas: [ObjectSchema]
    /// Per embedded type the model reaches, by stored name: per property,
    /// its name in the previous schema version, if renamed.
    let embeddedOriginalNames: [String: [String?]]

    /// The object types of `models`: each model's, then every embedded
    /// type they reach, each once.
    static func objectSchemas(of models: [ModelDeclaration]) -> [ObjectSchema] {
        models.map(\.objectSchema) + models.flatMap(\.embeddedSchemas).withoutRepeats
    }
}

extension ModelSchema {
    func declaration(swiftName: String, storedTypeName: String) -> ModelDeclaration {
        let embedded = reachableEmbeddedSchemas
        return ModelDeclaration(
            swiftName: swiftName, objectSchema: objectSchema, storedTypeName: storedTypeName,
            originalNames: originalNames,
            primaryKeyNames: primaryKeyNames, embeddedSchemas: embedded.map(\.schema),
            embeddedOriginalNames: Dictionary(
                embedded.map { ($0.schema.name, $0.originalNames) }, uniquingKeysWith: { first, _ in first }))
    }
}
