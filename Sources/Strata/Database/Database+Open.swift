import Foundation

extension Database {
    struct Prepared {
        var catalog: Catalog
        var tables: [String: ObjectTable]
        var meta: DatabaseHandle
    }

    /// Reads the file's catalog and checks it against the configuration, or
    /// writes a new catalog into a new file. Called with the environment's
    /// setup lock held, since it opens named databases.
    static func prepare(_ environment: Environment, _ configuration: Configuration) throws -> Prepared {
        let path = configuration.path
        if let prepared = try loadExisting(environment, configuration) { return prepared }
        guard !configuration.readOnly else {
            throw StrataError(.notAStrataFile, "\(path) is an empty database with no Strata catalog; a read-only open cannot create one. Open it once without readOnly.", path: path)
        }
        return try environment.withWriteTransaction { txn in
            let meta = try txn.openDatabase(metaDatabaseName, create: true)!
            // Another process may have created the file since the read above.
            if try txn.get(meta, catalogKey) != nil { return try load(txn, meta: meta, configuration) }
            let catalog = Catalog(schema: configuration.schema, schemaVersion: configuration.schemaVersion)
            try txn.put(meta, catalogKey, catalog.encoded())
            try txn.put(meta, schemaKey(catalog.schemaVersion), Catalog.json(catalog.schema))
            return Prepared(catalog: catalog, tables: try openTables(txn, catalog, create: true, path: path), meta: meta)
        }
    }

    /// The file's catalog and tables, or nil for a new or empty file.
    private static func loadExisting(_ environment: Environment, _ configuration: Configuration) throws -> Prepared? {
        let txn = try environment.begin(readOnly: true)
        // Aborts on every path but the successful commit, which keeps the
        // named databases the transaction opened.
        defer { txn.finish() }
        let main = try txn.openMainDatabase()
        if let meta = try txn.openDatabase(metaDatabaseName, create: false) {
            let prepared = try load(txn, meta: meta, configuration)
            try txn.commit()
            return prepared
        }
        if try txn.entryCount(main) > 0 {
            let path = configuration.path
            throw StrataError(.notAStrataFile, "\(path) is an LMDB database without a Strata catalog, not a Strata database. Check the path; Strata leaves the file as it is.", path: path)
        }
        return nil
    }

    private static func load(_ txn: LMDBTransaction, meta: DatabaseHandle, _ configuration: Configuration) throws -> Prepared {
        let path = configuration.path
        guard let bytes = try txn.get(meta, catalogKey) else {
            throw StrataError(.corruptFile, "\(path) has Strata's metadata but no catalog; the file is damaged. Restore it from a backup.", path: path)
        }
        let catalog = try Catalog.decode(bytes, path: path)
        try checkCompatible(catalog, configuration)
        return Prepared(catalog: catalog, tables: try openTables(txn, catalog, create: false, path: path), meta: meta)
    }

    /// The rules for reopening a file: the same version and schema open;
    /// a lower version, or any difference, is an error that says why.
    static func checkCompatible(_ catalog: Catalog, _ configuration: Configuration) throws {
        let path = configuration.path
        let fileVersion = catalog.schemaVersion
        let version = configuration.schemaVersion
        guard catalog.mode == .local else {
            throw StrataError(.migrationRequired, "\(path) is a \(catalog.mode.rawValue)-mode database; this version of Strata opens local-mode databases only. Open it with a version of Strata that supports \(catalog.mode.rawValue) mode.", path: path)
        }
        if version < fileVersion {
            throw StrataError(.schemaVersionTooLow, "Schema version \(version) is lower than the file's version \(fileVersion) (\(path)). Open it with version \(fileVersion) or later.", path: path)
        }
        let changes = schemaChanges(from: catalog.schema, to: configuration.schema)
        if version == fileVersion && changes.isEmpty { return }
        var message = "Opening \(path) needs a migration: the file is at schema version \(fileVersion) and the configuration asks for version \(version)"
        if changes.isEmpty {
            message += " with the same schema.\n"
        } else {
            message += ", with these changes:\n" + changes.map { "- \($0.description)" }.joined(separator: "\n") + "\n"
        }
        message += "This version of Strata cannot migrate files yet: open the file with schema version \(fileVersion) and the schema it was written with."
        throw StrataError(.migrationRequired, message, path: path)
    }

    static func openTables(_ txn: LMDBTransaction, _ catalog: Catalog, create: Bool, path: String) throws -> [String: ObjectTable] {
        var tables: [String: ObjectTable] = [:]
        for type in catalog.types {
            guard let records = try txn.openDatabase(type.recordsDatabaseName, create: create) else {
                throw StrataError(.corruptFile, "The records of '\(type.name)' are missing from \(path); the file is damaged. Restore it from a backup.", path: path)
            }
            var indexes: [UInt32: DatabaseHandle] = [:]
            for property in type.properties where property.hasIndex(in: type) {
                guard let index = try txn.openDatabase(type.indexDatabaseName(property), duplicateKeys: true, create: create) else {
                    throw StrataError(.corruptFile, "The index on '\(type.name).\(property.property.name)' is missing from \(path); the file is damaged. Restore it from a backup.", path: path)
                }
                indexes[property.id] = index
            }
            tables[type.name] = ObjectTable(type: type, records: records, indexes: indexes, path: path)
        }
        return tables
    }


}
