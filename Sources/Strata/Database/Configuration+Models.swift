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
            path: path, schemaVersion: schemaVersion, schema: Schema(declarations.map(\.objectSchema) + objectSchemas))
        self.models = declarations
    }
}
