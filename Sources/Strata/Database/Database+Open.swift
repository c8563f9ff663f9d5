import Foundation
import Logging

extension Database {
    /// What opening produced: the catalog and tables the database uses,
    /// and what the open did.
    struct Prepared {
        var catalog: Catalog
        var tables: [String: ObjectTable]
        var store: CatalogStore
        var generation: UInt64
        var plan: MigrationPlan
        /// What a migration wrote, for ``Instrumentation``.
        var migrationTally = Instrumentation.Tally()
        /// The sync databases of a sync-enabled file.
        var sync: SyncHandles?
    }

    /// The file's catalog as last committed, with every type's table open.
    struct Existing {
        var catalog: Catalog
        var generation: UInt64
        var tables: [TypeID: ObjectTable]
        var store: CatalogStore
    }

    /// Another process changed the catalog between reading it and writing:
    /// the plan is stale and the open starts over.
    private struct CatalogMoved: Error {}
    /// The plan says to delete the file; only the caller, which holds the
    /// environment lease, can do that.
    struct DeleteAndRecreate: Error {}

    /// Opens the environment and reads, creates or migrates the file.
    static func openAndPrepare(_ configuration: Configuration, includingKeptTypes: Bool) throws -> (
        Environment, Prepared
    ) {
        var deleted = false
        while true {
            let environment = try Environment.open(path: configuration.path, options: configuration.environmentOptions)
            do {
                environment.setupLock.lock()
                defer { environment.setupLock.unlock() }
                let clock = Stopwatch()
                let prepared = try prepareSync(
                    environment, configuration,
                    try prepare(environment, configuration, includingKeptTypes: includingKeptTypes))
                configuration.logger?.info(
                    "Opened \(configuration.path): \(prepared.plan.action.rawValue), schema version \(prepared.catalog.fileSchemaVersion), \(prepared.plan.steps.count) schema changes, \(clock.milliseconds) ms"
                )
                return (environment, prepared)
            } catch is DeleteAndRecreate where !deleted {
                environment.release()
                configuration.logger?.notice(
                    "Deleting \(configuration.path) instead of migrating it (deleteIfMigrationNeeded)")
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
    static func prepare(_ environment: Environment, _ configuration: Configuration, includingKeptTypes: Bool) throws
        -> Prepared
    {
        let settings = configuration.migrationSettings
        func visible(_ tables: [TypeID: ObjectTable]) -> [String: ObjectTable] {
            visibleTables(tables, configuration, includingKeptTypes: includingKeptTypes)
        }
        for _ in 0 ..< 16 {
            let existing = try readExisting(environment, path: configuration.path)
            if let existing, !existing.catalog.orphanedDatabases.isEmpty, !configuration.readOnly,
                environment.isExclusive
            {
                try deleteOrphanedDatabases(environment, existing)
                continue
            }
            let plan = MigrationPlan(catalog: existing?.catalog, settings: settings)
            if let error = plan.error { throw error }
            do {
                switch plan.action {
                case .open:
                    guard let existing else { break }
                    return Prepared(
                        catalog: existing.catalog, tables: visible(existing.tables), store: existing.store,
                        generation: existing.generation, plan: plan)
                case .createFile:
                    var (prepared, tables) = try create(environment, configuration, plan)
                    prepared.tables = visible(tables)
                    return prepared
                case .updateCatalog, .migrate:
                    guard let existing else { break }
                    var (prepared, tables) = try migrate(environment, settings, existing, plan)
                    prepared.tables = visible(tables)
                    return prepared
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
        throw StrataError.storage(
            path: configuration.path,
            "The catalog of \(configuration.path) kept changing while it was being opened (other processes opening it with other schemas).",
            remedy: "Try again.")
    }

    /// The file's catalog and tables, or nil for a new or empty file.
    static func readExisting(_ environment: Environment, path: String) throws -> Existing? {
        let txn = try environment.begin(readOnly: true)
        // Aborts on every path but the successful commit, which keeps the
        // named databases the transaction opened.
        defer { txn.finish() }
        let main = try txn.openMainDatabase()
        guard let meta = try CatalogStore.openMeta(txn, create: false) else {
            if try txn.entryCount(main) > 0 {
                throw StrataError.notAStrataFile(path: path, because: "it is an LMDB database without a Strata catalog")
            }
            return nil
        }
        let store = CatalogStore(meta: meta, path: path)
        guard let catalog = try store.catalog(txn) else {
            throw StrataError.corruptFile(
                path: path, "\(path) has Strata's metadata but no catalog; the file is damaged.")
        }
        let existing = Existing(
            catalog: catalog, generation: try store.generation(txn),
            tables: try ObjectTable.openAll(txn, catalog, create: false, path: path), store: store)
        try txn.commit()
        return existing
    }

    /// Creates the file; returns what opening produced, and every type's
    /// table, opened in the same transaction.
    private static func create(_ environment: Environment, _ configuration: Configuration, _ plan: MigrationPlan) throws
        -> (Prepared, [TypeID: ObjectTable])
    {
        try environment.withWriteTransaction { txn in
            let store = CatalogStore(meta: try CatalogStore.openMeta(txn, create: true)!, path: configuration.path)
            // Another process may have created the file since it was read.
            if try store.hasCatalog(txn) { throw CatalogMoved() }
            let catalog = Catalog(
                schema: configuration.schema, schemaVersion: configuration.schemaVersion, mode: configuration.mode)
            let generation = try store.write(catalog, txn)
            try store.writeSnapshot(configuration.schema, version: catalog.fileSchemaVersion, replacing: true, txn)
            let tables = try ObjectTable.openAll(txn, catalog, create: true, path: configuration.path)
            return (Prepared(catalog: catalog, tables: [:], store: store, generation: generation, plan: plan), tables)
        }
    }

    /// Deletes the named databases that migrations emptied, while no other
    /// `Database` of this process has the file open, so that closing their
    /// handles cannot disturb anyone. Other processes keep their own
    /// handles and find the databases gone only after they reopen.
    private static func deleteOrphanedDatabases(_ environment: Environment, _ existing: Existing) throws {
        try environment.withWriteTransaction { txn in
            guard var catalog = try existing.store.catalog(txn) else { return }
            // Never a database the catalog still names, whatever the list says.
            let inUse = Set(catalog.types.flatMap(\.databases))
            for name in catalog.orphanedDatabases {
                guard let database = FileLayout.database(named: name), !inUse.contains(database) else { continue }
                if let handle = try txn.openDatabase(database, create: false) {
                    try txn.empty(handle, delete: true)
                }
            }
            catalog.orphanedDatabases = []
            try existing.store.write(catalog, txn)
        }
    }

    private static func migrate(
        _ environment: Environment, _ settings: MigrationSettings, _ existing: Existing,
        _ plan: MigrationPlan
    ) throws -> (Prepared, [TypeID: ObjectTable]) {
        guard let evolved = plan.evolved else { preconditionFailure("A migration plan without a catalog") }
        // A migration rewrites pages copy-on-write: make room first, so that
        // it rarely has to roll back, grow the map and run again.
        try environment.map.growIfIdle(toAtLeast: 2 * environment.fileUsage().usedSize + 16 << 20)
        return try environment.withWriteTransaction { txn in
            guard try existing.store.generation(txn) == existing.generation else { throw CatalogMoved() }
            let runner = MigrationRunner(
                settings: settings, environment: environment, txn: txn, store: existing.store,
                old: existing.catalog, oldTables: existing.tables, evolved: evolved)
            let catalog = try runner.run(closure: plan.runsMigrationClosure ? settings.effectiveMigration : nil)
            let prepared = Prepared(
                catalog: catalog, tables: [:], store: existing.store,
                generation: existing.generation &+ 1, plan: plan, migrationTally: runner.tally)
            return (prepared, try ObjectTable.openAll(txn, catalog, create: false, path: settings.path))
        }
    }

    /// The tables of the types the configuration names: a read-only open
    /// may leave some of the file's types out. Kept types are left out too,
    /// unless the file is opened for inspection.
    private static func visibleTables(
        _ tables: [TypeID: ObjectTable], _ configuration: Configuration,
        includingKeptTypes: Bool
    ) -> [String: ObjectTable] {
        var visible: [String: ObjectTable] = [:]
        for table in tables.values
        where table.type.isKept ? includingKeptTypes : configuration.schema[table.name] != nil {
            visible[table.name] = table
        }
        return visible
    }
}
