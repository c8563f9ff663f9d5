/// What every part of a running migration shares: the write transaction
/// and its table engine, the file's catalog and tables as they were, the
/// snapshot the `old` side is read from, and the settings.
final class MigrationScope {
    let settings: MigrationSettings
    let environment: Environment
    let txn: LMDBTransaction
    let store: CatalogStore
    /// The file's catalog before the migration, and its tables (every type,
    /// kept ones too) opened by an earlier, committed read transaction.
    let old: Catalog
    let oldTables: [TypeID: ObjectTable]
    /// The schema version the file moves to (in synced mode, never lower
    /// than the file's).
    let newVersion: UInt64
    /// Writes the objects the closure creates, through the new schema, and
    /// every record, index entry and counter the migration changes.
    let writeContext: ObjectContext
    private var snapshot: (txn: LMDBTransaction, context: ObjectContext)?

    var path: String { settings.path }
    var engine: TableEngine { writeContext.engine }

    init(
        settings: MigrationSettings, environment: Environment, txn: LMDBTransaction, store: CatalogStore,
        old: Catalog, oldTables: [TypeID: ObjectTable], evolved: Catalog
    ) {
        self.settings = settings
        self.environment = environment
        self.txn = txn
        self.store = store
        self.old = old
        self.oldTables = oldTables
        self.newVersion = settings.mode == .local ? settings.appSchemaVersion : evolved.fileSchemaVersion
        let widest = (evolved.types + old.types).map(\.properties.count).max() ?? 0
        self.writeContext = ObjectContext(
            lmdb: txn, tables: [:], meta: store.meta, path: settings.path,
            writingSchemaVersion: settings.appSchemaVersion, fieldCapacity: widest,
            subscribers: settings.changeSubscribers.map { $0() })
    }

    /// Ends the snapshot and the write context; the caller commits or
    /// aborts the write transaction.
    func end() {
        snapshot?.context.end()
        snapshot?.txn.finish()
        snapshot = nil
        writeContext.end()
    }

    /// Throws the damage that a read of an object (``DynamicObject``,
    /// which cannot throw) met in the snapshot or the write context.
    func throwDamage() throws {
        try snapshot?.context.lifetime.throwDamage()
        try writeContext.lifetime.throwDamage()
    }

    /// A read transaction on the state before the migration, and objects
    /// read through the old catalog.
    func snapshotContext() throws -> (txn: LMDBTransaction, context: ObjectContext) {
        if let snapshot { return snapshot }
        // Begun while this thread holds the write transaction, and writers
        // are serialized: it sees exactly the state before the migration.
        let reader = try environment.begin(readOnly: true)
        let tables = Dictionary(oldTables.values.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let context = ObjectContext(
            lmdb: reader, tables: tables, meta: store.meta, path: path,
            writingSchemaVersion: old.fileSchemaVersion)
        snapshot = (reader, context)
        return (reader, context)
    }

    /// Whether the type had a table before the migration: it existed, and
    /// was not embedded (an embedded type's objects live in their owners'
    /// records).
    func hadTable(_ type: TypeID) -> Bool {
        old[typeID: type].map { !$0.isEmbedded } ?? false
    }

    /// "from schema version 1 to 3": the step a message is about.
    var step: String { StrataError.migrationStep(from: old.fileSchemaVersion, to: newVersion) }

    /// The error of a call of the ``Migration`` API that broke a rule:
    /// `call` as the closure wrote it, the problem and what to do; `cause`
    /// is the error that showed it (a duplicate key), kept whole.
    func refusal(_ code: StrataError.Code, _ call: String, _ problem: String, cause: (any Error)? = nil)
        -> StrataError
    {
        .migrationRefused(
            code, call: call, problem: problem, path: path, from: old.fileSchemaVersion, to: newVersion, cause: cause)
    }

    /// An error this migration finds itself: `summary` names the step
    /// (with ``step``); the error ends saying that nothing was written.
    func problem(
        _ code: StrataError.Code, _ summary: String, items: [String] = [], remedy: String? = nil,
        typeName: String? = nil, key: String? = nil
    ) -> StrataError {
        .inMigration(
            code, path: path, from: old.fileSchemaVersion, to: newVersion, summary: summary, items: items,
            remedy: remedy, typeName: typeName, key: key)
    }

    /// Whether `error` was raised or restated by this migration already:
    /// it then names the step and the place, and must not be restated again
    /// on its way out of the closure.
    func isMigrationError(_ error: StrataError) -> Bool {
        error.phase == .migration && error.path == path
    }

    /// An error raised while migrating one object or calling one operation,
    /// restated so that it names the file, the version step and where it
    /// happened, and says that nothing was written; the original is kept
    /// whole as its cause. A `StrataError` keeps its code.
    func failure(_ error: any Error, at place: String, advice: String? = nil) -> StrataError {
        .migrationFailed(error, place: place, advice: advice, path: path, from: old.fileSchemaVersion, to: newVersion)
    }

    /// A record key of `table` as a person reads it; `oldKey` when the key
    /// was written under the old catalog, whose primary key may differ.
    func describeKey(_ key: UnsafeRawBufferPointer, of table: ObjectTable, oldKey: Bool) -> String {
        let keyTable = oldKey ? oldTables[table.type.id] ?? table : table
        return keyTable.describeKey(key)
    }
}
