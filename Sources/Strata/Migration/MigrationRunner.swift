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
        records = RecordRewriter(scope: scope, evolved: evolved)
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
            } catch let error as StrataError where scope.isMigrationError(error) {
                throw error
            } catch {
                throw scope.failure(error, at: "outside enumerateObjects")
            }
            try scope.throwDamage()
            try catalog.checkOpenRenames()
        }
        try records.rewriteUnwalked()
        try records.finishEmbedding(policies: records.embeddingPolicies)
        try records.links.finish(
            catalog, tables: records.tables, getsNewKeys: records.getsNewKeys, indexes: &records.indexes, scope: scope)
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
        try records.created(in: type.id)
        do {
            return try scope.engine.insert(table, values)
        } catch let error as StrataError where error.code == .duplicatePrimaryKey {
            let key = (table.primaryKey?.name).flatMap { values[$0] }.map { "\($0)" } ?? "?"
            throw scope.refusal(
                .duplicatePrimaryKey, call,
                "a '\(type.name)' with primary key \(key) already exists. Give the new object another key, or change the existing one in enumerateObjects(ofType: \"\(type.name)\").",
                cause: error)
        } catch {
            throw scope.failure(error, at: "in \(call)")
        }
    }

    func deleteData(_ name: String) throws -> Bool {
        let call = "migration.deleteData(forType: \"\(name)\")"
        guard let type = try catalog.deleteType(name) else { return false }
        try applyDeleteRules(toLinksInto: type, call: call)
        try records.indexes.retire(type.recordsDatabase, catalog: catalog, scope: scope)
        for property in type.properties where property.hasIndex(in: type) {
            let index = type.indexDatabase(property)
            try records.indexes.retire(index, catalog: catalog, scope: scope)
            records.dropped(index)
        }
        try scope.engine.deleteSequence(of: type.id)
        return true
    }

    /// Before the objects of `deleted` go: the objects that linked to them
    /// under a cascade rule go too, and a deny rule refuses. Links under
    /// nullify went with their properties, which the new schema cannot
    /// have (they would name a type it lacks).
    private func applyDeleteRules(toLinksInto deleted: CatalogType, call: String) throws {
        guard let oldName = scope.old[typeID: deleted.id]?.name else { return }
        let (reader, _) = try scope.snapshotContext()
        var denied: [String] = []
        for source in scope.old.types where source.id != deleted.id {
            // Objects of a type this migration also removes stay as they are.
            guard let table = scope.oldTables[source.id], let kept = catalog.working[typeID: source.id], !kept.isKept
            else { continue }
            for field in table.linkFields where field.target == oldName && field.actionOnDeletedTarget != .unlink {
                guard let backlinks = field.backlinks else { continue }
                var sources: [[UInt8]] = []
                try reader.withCursor(backlinks) { cursor in
                    var entry = try cursor.first()
                    while let (_, source) = entry {
                        sources.append(Array(source))
                        entry = try cursor.next()
                    }
                }
                if field.actionOnDeletedTarget == .refuse {
                    denied += sources.prefix(20).map { key in
                        key.withUnsafeBytes {
                            "'\(table.name)' \(table.describeKey($0)) (through '\(table.name).\(field.name)')"
                        }
                    }
                } else {
                    records.links.doom(sources, of: source.id)
                }
            }
        }
        guard denied.isEmpty else {
            throw scope.refusal(
                .deleteDenied, call,
                "objects link to '\(oldName)' under a deny rule:\n\(denied.map { "- " + $0 }.joined(separator: "\n"))\nDelete them, or call deleteData for their types first."
            )
        }
    }

    func setEmbeddingPolicy(_ policy: EmbeddingPolicy, forType typeName: String) throws {
        guard let type = catalog.newType(named: typeName), type.isEmbedded, scope.hadTable(type.id) else {
            throw scope.refusal(
                .invalidConfiguration, "migration.setEmbeddingPolicy(_:forType: \"\(typeName)\")",
                "the new schema has no embedded type '\(typeName)' that was top-level before the migration.")
        }
        records.embeddingPolicies[type.name] = policy
    }

    func oldObject(linkedFrom object: DynamicObject, through property: String) throws -> DynamicObject? {
        try scope.snapshotContext().context.linkedObject(object, property)
    }

    func newObject(linkedFrom object: MutableObject, through property: String) throws -> DynamicObject? {
        let field = try object.table.field(named: property)
        guard field.type == .link, let targetName = field.target, let target = catalog.newType(named: targetName)
        else {
            throw scope.refusal(
                .invalidValue, "migration.newObject(linkedFrom:through: \"\(property)\")",
                "'\(object.table.name).\(property)' is not a to-one link of the new schema.")
        }
        guard let key = object[property].linkKey else { return nil }
        let table = try records.table(for: target)
        // A walk appending into the target's table has not written it whole.
        if records.appending?.type == target.id { try records.stopAppending() }
        return try scope.writeContext.object(table.name, key: key)
    }

    func renameProperty(onType typeName: String, from oldName: String, to newName: String) throws {
        try catalog.renameProperty(onType: typeName, from: oldName, to: newName)
    }

    func renameType(from oldName: String, to newName: String) throws {
        try catalog.renameType(from: oldName, to: newName)
    }
}
