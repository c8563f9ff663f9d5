/// Carries out a ``MigrationPlan`` whose action changes the file (a
/// migration, or a catalog update), inside one write transaction: catalog,
/// records, indexes and schema version commit together or not at all.
///
/// The runner orders the work; each part has one job:
/// - ``MigrationScope``: what every part shares (the transaction, the
///   pre-migration snapshot, the old catalog, the settings);
/// - ``MigrationCatalog``: the catalog as the closure shapes it (renames,
///   deleted types);
/// - ``RecordRewriter``: the walk of one type's records and their write-back;
/// - ``MigrationIndexes``: which indexes went stale, and rebuilding them;
/// - ``CatalogStore``: writing the catalog, the snapshot and the generation.
///
/// The old side of every object is read from a read transaction begun
/// inside the write transaction, so it is the exact pre-migration snapshot
/// whatever the closure creates, deletes or rewrites; no object is visited
/// twice and memory does not grow with the number of objects.
final class MigrationRunner {
    let scope: MigrationScope
    let records: RecordRewriter
    let catalog: MigrationCatalog

    private var path: String { scope.path }
    private var settings: MigrationSettings { scope.settings }

    init(
        settings: MigrationSettings, environment: Environment, txn: LMDBTransaction, store: CatalogStore,
        old: Catalog, oldTables: [TypeID: ObjectTable], evolved: Catalog
    ) {
        scope = MigrationScope(
            settings: settings, environment: environment, txn: txn, store: store,
            old: old, oldTables: oldTables, evolved: evolved)
        records = RecordRewriter(scope: scope)
        catalog = MigrationCatalog(scope: scope, records: records, evolved: evolved)
        records.catalog = catalog
    }

    /// Runs the closure (for a migration), rewrites what must be rewritten,
    /// brings the indexes up to date and writes the catalog; returns it.
    func run(closure: MigrationBlock?) throws -> Catalog {
        let logger = settings.logger
        let total = Stopwatch()
        let old = scope.old
        logger?.info("Migrating \(path) \(scope.step)\(closure == nil ? " without a migration closure" : "")")
        defer { scope.end() }
        if let closure {
            let migration = Migration(
                runner: self, oldSchema: old.schema, newSchema: settings.schema,
                oldSchemaVersion: old.fileSchemaVersion, newSchemaVersion: scope.newVersion)
            defer { migration.invalidate() }
            let clock = Stopwatch()
            do {
                try closure(migration, old.fileSchemaVersion)
                logger?.info(
                    "Migration closure of \(path) done: \(tally.recordWrites) records written, \(clock.milliseconds) ms"
                )
            } catch let error as StrataError {
                throw error
            } catch {
                throw scope.failure(error, at: "outside enumerateObjects")
            }
            try catalog.checkOpenRenames()
        }
        try records.rewriteUnwalked()
        let clock = Stopwatch()
        try records.indexes.finish(catalog, tables: records.tables, scope: scope)
        logger?.debug("Indexes of \(path) up to date: \(clock.milliseconds) ms")
        try scope.engine.flush()
        try writeCatalog()
        logger?.info(
            "Migration of \(path) to schema version \(scope.newVersion) ready to commit: \(tally.recordWrites) records written, \(total.milliseconds) ms"
        )
        return catalog.working
    }

    /// Records written or deleted by this migration so far: logged, and
    /// reported to ``Instrumentation``.
    var tally: Instrumentation.Tally { scope.engine.tally }

    private func writeCatalog() throws {
        let store = scope.store
        try store.write(catalog.working, scope.txn)
        // In synced mode, the app that introduced a version wrote its snapshot.
        try store.writeSnapshot(
            settings.schema, version: settings.appSchemaVersion, replacing: settings.mode == .local, scope.txn)
        try store.raiseGeneration(scope.txn)
    }

    // MARK: The Migration API

    func enumerate(_ name: String, _ body: RecordRewriter.Body) throws {
        try records.enumerate(name, body)
    }

    func create(_ name: String, _ values: [String: Value]) throws -> Value {
        let call = "migration.create(\"\(name)\", value: ...)"
        guard let type = catalog.newType(named: name) else {
            throw scope.refusal(
                .unknownObjectType, call,
                "the new schema has no type '\(name)'. Its types are: \(settings.schema.typeNames.joined(separator: ", "))."
            )
        }
        let table = try records.table(for: type)
        records.created(in: type.id)
        do {
            return try scope.engine.insert(table, values)
        } catch let error as StrataError where error.code == .duplicatePrimaryKey {
            let key = (table.primaryKey?.name).flatMap { values[$0] }.map { "\($0)" } ?? "?"
            throw scope.refusal(
                .duplicatePrimaryKey, call,
                "a '\(type.name)' with primary key \(key) already exists. Give the new object another key, or change the existing one in enumerateObjects(ofType: \"\(type.name)\")."
            )
        } catch {
            throw scope.failure(error, at: "in \(call)")
        }
    }

    func deleteData(_ name: String) throws -> Bool {
        guard let type = try catalog.deleteType(name) else { return false }
        try records.indexes.retire(type.recordsDatabase, catalog: catalog, scope: scope)
        for property in type.properties where property.hasIndex(in: type) {
            let index = type.indexDatabase(property)
            try records.indexes.retire(index, catalog: catalog, scope: scope)
            records.dropped(index)
        }
        try scope.engine.deleteSequence(of: type.id)
        return true
    }

    func renameProperty(onType typeName: String, from oldName: String, to newName: String) throws {
        try catalog.renameProperty(onType: typeName, from: oldName, to: newName)
    }

    func renameType(from oldName: String, to newName: String) throws {
        try catalog.renameType(from: oldName, to: newName)
    }
}
