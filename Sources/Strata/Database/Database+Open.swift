import Foundation
import Logging

extension Database {
    /// What opening produced: the catalog and tables the database uses,
    /// and what the open did.
    struct Prepared {
        var catalog: Catalog
        var tables: [String: ObjectTable]
        var meta: DatabaseHandle
        var generation: UInt64
        var plan: MigrationPlan
        /// Records the open's migration wrote or deleted, for tests.
        var recordWrites: Int
    }

    /// The file's catalog as last committed, with every type's table open.
    struct Existing {
        var catalog: Catalog
        var generation: UInt64
        var tables: [UInt32: ObjectTable]
        var meta: DatabaseHandle
    }

    /// Another process changed the catalog between reading it and writing:
    /// the plan is stale and the open starts over.
    private struct CatalogMoved: Error {}
    /// The plan says to delete the file; only the caller, which holds the
    /// environment lease, can do that.
    struct DeleteAndRecreate: Error {}

    static let generationKey = Array("generation".utf8)

    /// Opens the environment and reads, creates or migrates the file.
    static func openAndPrepare(_ configuration: Configuration) throws -> (Environment, Prepared) {
        var options = EnvironmentOptions()
        options.readOnly = configuration.readOnly
        options.initialMapSize = configuration.initialMapSize
        options.noMetaSync = configuration.durability == .noMetaSync
        options.noSync = configuration.durability == .noSync
        var deleted = false
        while true {
            let environment = try Environment.open(path: configuration.path, options: options)
            do {
                environment.setupLock.lock()
                defer { environment.setupLock.unlock() }
                let clock = Stopwatch()
                let prepared = try prepare(environment, configuration)
                configuration.logger?.info("Opened \(configuration.path): \(prepared.plan.action.rawValue), schema version \(prepared.catalog.schemaVersion), \(prepared.plan.steps.count) schema changes, \(clock.milliseconds) ms")
                return (environment, prepared)
            } catch is DeleteAndRecreate where !deleted {
                environment.release()
                configuration.logger?.notice("Deleting \(configuration.path) instead of migrating it (deleteIfMigrationNeeded)")
                try Environment.deleteFiles(atPath: configuration.path)
                deleted = true
            } catch {
                environment.release()
                configuration.logger?.error("Opening \(configuration.path) failed: \(error)")
                throw error
            }
        }
    }

    /// Works out the plan for the file as it is and carries it out. Called
    /// with the environment's setup lock held, since it opens named
    /// databases.
    static func prepare(_ environment: Environment, _ configuration: Configuration) throws -> Prepared {
        for _ in 0 ..< 16 {
            let existing = try readExisting(environment, path: configuration.path)
            if let existing, !existing.catalog.orphanedDatabases.isEmpty, !configuration.readOnly, environment.isExclusive {
                try deleteOrphanedDatabases(environment, existing)
                continue
            }
            let plan = MigrationPlan(catalog: existing?.catalog, configuration: configuration)
            if let error = plan.error { throw error }
            do {
                switch plan.action {
                case .open:
                    guard let existing else { break }
                    return Prepared(catalog: existing.catalog, tables: visibleTables(existing.tables, configuration),
                                    meta: existing.meta, generation: existing.generation, plan: plan, recordWrites: 0)
                case .createFile:
                    return try create(environment, configuration, plan)
                case .updateCatalog, .migrate:
                    guard let existing else { break }
                    return try migrate(environment, configuration, existing, plan)
                case .deleteAndRecreate:
                    throw DeleteAndRecreate()
                case .refuse:
                    break
                }
            } catch is CatalogMoved {
                continue
            }
            preconditionFailure("Migration plan \(plan.action) for \(configuration.path) has no catalog or no error")
        }
        throw StrataError(.storage, "The catalog of \(configuration.path) kept changing while it was being opened (other processes opening it with other schemas). Try again.", path: configuration.path)
    }

    /// The file's catalog and tables, or nil for a new or empty file.
    static func readExisting(_ environment: Environment, path: String) throws -> Existing? {
        let txn = try environment.begin(readOnly: true)
        // Aborts on every path but the successful commit, which keeps the
        // named databases the transaction opened.
        defer { txn.finish() }
        let main = try txn.openMainDatabase()
        guard let meta = try txn.openDatabase(metaDatabaseName, create: false) else {
            if try txn.entryCount(main) > 0 {
                throw StrataError(.notAStrataFile, "\(path) is an LMDB database without a Strata catalog, not a Strata database. Check the path; Strata leaves the file as it is.", path: path)
            }
            return nil
        }
        guard let bytes = try txn.get(meta, catalogKey) else {
            throw StrataError(.corruptFile, "\(path) has Strata's metadata but no catalog; the file is damaged. Restore it from a backup.", path: path)
        }
        let catalog = try Catalog.decode(bytes, path: path)
        let existing = Existing(catalog: catalog, generation: try generation(txn, meta: meta, path: path),
                                tables: try openTables(txn, catalog, create: false, path: path), meta: meta)
        try txn.commit()
        return existing
    }

    private static func create(_ environment: Environment, _ configuration: Configuration, _ plan: MigrationPlan) throws -> Prepared {
        try environment.withWriteTransaction { txn in
            let meta = try txn.openDatabase(metaDatabaseName, create: true)!
            // Another process may have created the file since it was read.
            if try txn.get(meta, catalogKey) != nil { throw CatalogMoved() }
            let catalog = Catalog(schema: configuration.schema, schemaVersion: configuration.schemaVersion, mode: configuration.mode)
            try txn.put(meta, catalogKey, catalog.encoded())
            try txn.put(meta, schemaKey(catalog.schemaVersion), Array(SchemaSnapshot(schemaVersion: catalog.schemaVersion, schema: configuration.schema).jsonData()))
            try txn.put(meta, generationKey, encodeGeneration(1))
            let tables = try openTables(txn, catalog, create: true, path: configuration.path)
            return Prepared(catalog: catalog, tables: visibleTables(tables, configuration), meta: meta,
                            generation: 1, plan: plan, recordWrites: 0)
        }
    }

    /// Deletes the named databases that migrations emptied, while no other
    /// `Database` of this process has the file open, so that closing their
    /// handles cannot disturb anyone. Other processes keep their own
    /// handles and find the databases gone only after they reopen.
    private static func deleteOrphanedDatabases(_ environment: Environment, _ existing: Existing) throws {
        let path = environment.path
        try environment.withWriteTransaction { txn in
            guard let bytes = try txn.get(existing.meta, catalogKey) else { return }
            var catalog = try Catalog.decode(bytes, path: path)
            // Never a database the catalog still names, whatever the list says.
            var inUse: Set<String> = []
            for type in catalog.types {
                inUse.insert(type.recordsDatabaseName)
                for property in type.properties where property.hasIndex(in: type) { inUse.insert(type.indexDatabaseName(property)) }
            }
            for name in catalog.orphanedDatabases where !inUse.contains(name) {
                if let dbi = try txn.openDatabase(name, duplicateKeys: name.contains(".i"), create: false) {
                    try txn.empty(dbi, delete: true)
                }
            }
            catalog.orphanedDatabases = []
            try txn.put(existing.meta, catalogKey, catalog.encoded())
        }
    }

    private static func migrate(_ environment: Environment, _ configuration: Configuration, _ existing: Existing, _ plan: MigrationPlan) throws -> Prepared {
        guard let evolved = plan.evolved else { preconditionFailure("A migration plan without a catalog") }
        let path = configuration.path
        // A migration rewrites pages copy-on-write: make room first, so that
        // it rarely has to roll back, grow the map and run again.
        try environment.growMapIfIdle(toAtLeast: 2 * environment.fileUsage().usedSize + 16 << 20)
        return try environment.withWriteTransaction { txn in
            guard try generation(txn, meta: existing.meta, path: path) == existing.generation else { throw CatalogMoved() }
            let runner = MigrationRunner(configuration: configuration, environment: environment, txn: txn, meta: existing.meta,
                                         old: existing.catalog, oldTables: existing.tables, evolved: evolved)
            let catalog = try runner.run(closure: plan.runsMigrationClosure ? configuration.migration : nil)
            let tables = try openTables(txn, catalog, create: false, path: path)
            return Prepared(catalog: catalog, tables: visibleTables(tables, configuration), meta: existing.meta,
                            generation: existing.generation &+ 1, plan: plan, recordWrites: runner.totalRecordWrites)
        }
    }

    /// The tables of the types the configuration names: a read-only open
    /// may leave some of the file's types out.
    private static func visibleTables(_ tables: [UInt32: ObjectTable], _ configuration: Configuration) -> [String: ObjectTable] {
        var visible: [String: ObjectTable] = [:]
        for table in tables.values where !table.type.isKept && configuration.schema[table.name] != nil {
            visible[table.name] = table
        }
        return visible
    }

    /// Every type's table, kept types included, by type id.
    static func openTables(_ txn: LMDBTransaction, _ catalog: Catalog, create: Bool, path: String) throws -> [UInt32: ObjectTable] {
        var tables: [UInt32: ObjectTable] = [:]
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
            tables[type.id] = ObjectTable(type: type, records: records, indexes: indexes, path: path)
        }
        return tables
    }

    /// The catalog's generation: raised by every change of the catalog, so
    /// that a `Database` notices that another one changed the schema.
    static func generation(_ txn: LMDBTransaction, meta: DatabaseHandle, path: String) throws -> UInt64 {
        guard let bytes = try txn.get(meta, generationKey) else { return 0 }
        guard bytes.count == 8 else {
            throw StrataError(.corruptFile, "The catalog generation of \(path) is damaged (\(bytes.count) bytes instead of 8). Restore the file from a backup.", path: path)
        }
        return UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
    }

    static func encodeGeneration(_ generation: UInt64) -> [UInt8] {
        withUnsafeBytes(of: generation.bigEndian) { Array($0) }
    }
}

/// Measures elapsed time for log messages.
struct Stopwatch {
    private let start = DispatchTime.now().uptimeNanoseconds

    /// Milliseconds since the stopwatch was made, with one decimal.
    var milliseconds: String {
        String(format: "%.1f", Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
    }
}
