extension Database.Configuration {
    /// Creates a configuration whose schema is derived from model types,
    /// with dynamic object types beside them if you need both in one file.
    ///
    /// ```swift
    /// let config = Database.Configuration(path: "people.strata", models: [Person.self, Dog.self])
    /// ```
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - schemaVersion: The version of the schema. Default: 1.
    ///   - models: The model types; each becomes one object type, named by
    ///     its stored name.
    ///   - objectSchemas: Object types read and written with the dynamic API.
    public init(
        path: String, schemaVersion: UInt64 = 1, models: [any Model.Type], objectSchemas: [ObjectSchema] = []
    ) {
        let declarations = models.map { declaration(of: $0) }
        self.init(
            path: path, schemaVersion: schemaVersion,
            schema: Schema(ModelDeclaration.objectSchemas(of: declarations) + objectSchemas))
        self.models = declarations
    }

    /// Creates a configuration for the schema version `schema` describes,
    /// able to migrate files written at any of `versions`, with typed
    /// `migrations` between them.
    ///
    /// ```swift
    /// enum AppV1: VersionedSchema { static let version: UInt64 = 1; static let models: [any Model.Type] = [PersonV1.self] }
    /// enum AppV2: VersionedSchema { static let version: UInt64 = 2; static let models: [any Model.Type] = [Person.self] }
    ///
    /// let config = Database.Configuration(
    ///     path: "people.strata", schema: AppV2.self, versions: [AppV1.self],
    ///     migrations: [
    ///         .step(from: AppV1.self, to: AppV2.self) {
    ///             $0.map(PersonV1.self, to: Person.self) { old in
    ///                 Person(id: old.id, fullName: "\(old.firstName) \(old.lastName)")
    ///             }
    ///         },
    ///     ])
    /// ```
    ///
    /// A file at a declared older version must have the schema that
    /// version's models describe; opening it otherwise throws
    /// ``StrataError`` (``StrataError/Code/invalidSchema``) listing every
    /// difference. Versions without a step for a type follow the automatic
    /// rules, and renames declared on models (`@Renamed(from:)`) apply by
    /// themselves. A file several versions behind runs every step it needs
    /// per object, in one pass.
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - schema: The current version: its models make the schema, its
    ///     version the schema version.
    ///   - versions: The older shipped versions a file may still be at.
    ///   - migrations: The typed steps between consecutive versions,
    ///     oldest first (``MigrationStep/step(from:to:_:)``).
    ///   - objectSchemas: Object types read and written with the dynamic API.
    public init(
        path: String, schema: any VersionedSchema.Type, versions: [any VersionedSchema.Type] = [],
        migrations: [MigrationStep] = [], objectSchemas: [ObjectSchema] = []
    ) {
        self.init(path: path, schemaVersion: schema.version, models: schema.models, objectSchemas: objectSchemas)
        self.versionName = String(describing: schema)
        self.olderVersions = versions.map { version in
            VersionDeclaration(
                version: version.version, name: String(describing: version),
                models: version.models.map { declaration(of: $0) })
        }
        self.migrations = migrations
    }
}
