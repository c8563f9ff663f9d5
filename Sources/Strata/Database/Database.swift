import Foundation

/// A Strata database file, open for reading and writing objects.
///
/// A `Database` is `Sendable`: share one instance between threads and
/// tasks. Reads run concurrently and never wait for a writer; writes are
/// serialized. All access goes through transactions scoped to a closure:
///
/// ```swift
/// let db = try Database(configuration: config)
/// try db.write { tx in
///     try tx.insert("Person", ["id": 1, "firstName": "Ada", "lastName": "Lovelace", "age": 36])
/// }
/// let adults = try db.read { tx in
///     try tx.objects("Person").filter { $0["age"].int! >= 18 }.count
/// }
/// ```
///
/// Opening the same file twice in one process shares one LMDB environment,
/// which LMDB requires.
public final class Database: Sendable {
    /// The configuration the database was opened with.
    public let configuration: Configuration
    let environment: Environment
    let tables: [String: ObjectTable]
    let store: CatalogStore
    /// The catalog this database was opened with, and what the file
    /// learned since from peers.
    let adopted: AdoptedCatalog
    /// What opening did.
    let openingPlan: MigrationPlan
    /// The running observations of this database.
    let observers = ObserverRegistry()
    /// The sync databases, when sync is enabled on the file.
    let syncHandles: SyncHandles?

    /// Opens the database file, creating it when it does not exist, and
    /// migrating it when its schema version is lower than the configured one.
    ///
    /// What opening does is decided by the same rules as
    /// ``migrationPlan(for:)``: see docs/Migrations.md for the table. A
    /// migration runs in one write transaction: if anything fails, including
    /// the migration closure, the file is left exactly as it was.
    ///
    /// - Parameter configuration: The file, schema, schema version, mode and
    ///   migration closure.
    /// - Throws: ``StrataError`` when the schema is invalid, the file is not
    ///   a Strata database or is damaged, the schema change is not allowed
    ///   (a lower version, a change that needs a higher version, a
    ///   destructive change in synced mode), or the migration fails.
    public convenience init(configuration: Configuration) throws {
        try self.init(configuration: configuration, includingKeptTypes: false)
    }

    /// Opens the database; with `includingKeptTypes`, the types the file
    /// keeps without the schema naming them are readable too (inspection).
    init(configuration: Configuration, includingKeptTypes: Bool) throws {
        let path = configuration.path
        let problems = configuration.validationProblems
        guard problems.isEmpty else {
            throw StrataError.invalidSchema(problems, path: path)
        }
        // Checked before the file is opened, so that a refused new file is
        // not left behind.
        if let problem = MigrationPlan.configurationProblem(configuration.migrationSettings) { throw problem }
        let (environment, prepared) = try Database.openAndPrepare(configuration, includingKeptTypes: includingKeptTypes)
        self.configuration = configuration
        self.environment = environment
        self.tables = prepared.tables
        self.store = prepared.store
        self.adopted = AdoptedCatalog(prepared.catalog, generation: prepared.generation)
        self.openingPlan = prepared.plan
        self.syncHandles = prepared.sync
        Instrumentation.opened(path, migration: prepared.migrationTally)
    }

    /// What opening the file with `configuration` would do — the schema
    /// changes, how each is handled, whether the migration closure runs, or
    /// the error opening would throw — worked out without writing anything.
    ///
    /// ```swift
    /// let plan = try Database.migrationPlan(for: config)
    /// if plan.action == .migrate { showMigrationScreen() }
    /// ```
    ///
    /// - Parameter configuration: The configuration an open would use.
    /// - Returns: The plan; a refusal is a plan whose ``MigrationPlan/error``
    ///   is set, not a thrown error.
    /// - Throws: ``StrataError`` when the schema is invalid or the file cannot
    ///   be read (not a Strata file, damaged).
    public static func migrationPlan(for configuration: Configuration) throws -> MigrationPlan {
        let path = configuration.path
        let problems = configuration.validationProblems
        guard problems.isEmpty else {
            throw StrataError.invalidSchema(problems, path: path)
        }
        guard FileManager.default.fileExists(atPath: path) else {
            return MigrationPlan(catalog: nil, settings: configuration.migrationSettings)
        }
        var options = configuration.environmentOptions
        options.readOnly = true
        let environment = try Environment.open(path: path, options: options)
        defer { environment.release() }
        environment.setupLock.lock()
        defer { environment.setupLock.unlock() }
        let existing = try readExisting(environment, path: path)
        return MigrationPlan(catalog: existing?.catalog, settings: configuration.migrationSettings)
    }

    /// Opens a database on a thread of its own, so that a long open never
    /// blocks the caller's thread.
    ///
    /// - Parameter configuration: The file, schema and schema version.
    /// - Throws: The errors of ``init(configuration:)``.
    public static func open(configuration: Configuration) async throws -> Database {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try Database(configuration: configuration) })
            }
        }
    }

    /// The database file's path.
    public var path: String { configuration.path }

    /// The file's catalog: the one this database was opened with, and the
    /// types and fields the file learned from peers since (as of this
    /// database's last transaction).
    var catalog: Catalog { adopted.catalog }

    /// The schema version recorded in the file when this database opened
    /// it. In local mode it equals the configuration's
    /// ``Configuration/schemaVersion``, the app's; in synced mode a newer app
    /// may have raised it, and this app's objects are still stamped with
    /// the configuration's.
    public var fileSchemaVersion: UInt64 { adopted.opened.fileSchemaVersion }

    /// The schema version recorded in the file.
    @available(
        *, deprecated, renamed: "fileSchemaVersion",
        message: "Use fileSchemaVersion (the file's) or configuration.schemaVersion (the app's)."
    )
    public var schemaVersion: UInt64 { fileSchemaVersion }

    /// The schema recorded in the file.
    public var schema: Schema { adopted.opened.schema }

    /// The size of the database file and how many of its bytes are in use.
    ///
    /// - Throws: ``StrataError`` when LMDB cannot begin a transaction.
    public var fileSize: (total: Int, used: Int) {
        get throws {
            try checkOpen()
            let usage = try environment.fileUsage()
            return (usage.fileSize, usage.usedSize)
        }
    }

    /// Whether ``close()`` was called.
    private let isClosed = OnceFlag()

    /// Closes the database: later transactions through it throw
    /// ``StrataError/Code/closed``. The file itself is closed once every
    /// `Database` for it in this process is closed or released, after the
    /// transactions running on it have finished. Closing twice does nothing.
    ///
    /// Releasing the last reference to a `Database` closes it too; call this
    /// to close at a known moment, for example before moving or deleting
    /// the file. Calling it inside one of the database's own transactions
    /// stops the program.
    public func close() {
        guard isClosed.set() else { return }
        observers.closeAll(self)
        environment.release()
    }

    deinit {
        if isClosed.set() { environment.release() }
    }

    func checkOpen() throws {
        if isClosed.value {
            throw StrataError.closed(path: path)
        }
    }

    // MARK: Transactions

    /// Runs `body` in a read transaction and returns its result.
    ///
    /// The transaction sees one consistent snapshot of the file, however
    /// long it runs and whatever is written meanwhile. The transaction and
    /// the objects read through it are valid only during `body`.
    ///
    /// - Throws: What `body` throws, or a ``StrataError`` from storage.
    public func read<T>(_ body: (ReadTransaction) throws -> T) throws -> T {
        try checkOpen()
        return try environment.withReadTransaction { lmdb in
            try checkGeneration(lmdb)
            let transaction = ReadTransaction(context: makeContext(lmdb))
            defer { transaction.context.end() }
            let result = try body(transaction)
            // Damage that a read of an object met, which it could not throw.
            try transaction.context.lifetime.throwDamage()
            return result
        }
    }

    /// Runs `body` in a write transaction and commits it when `body` returns.
    ///
    /// Writes are serialized: a second writer waits for the first. When
    /// `body` throws, nothing it wrote is kept. When the memory map fills
    /// up, Strata rolls the transaction back, doubles the map and runs
    /// `body` again, so keep side effects other than database writes out of
    /// it. A write transaction cannot be nested in another on the same thread.
    ///
    /// - Throws: What `body` throws, or a ``StrataError``: a write on a
    ///   read-only database, a storage failure.
    @discardableResult
    public func write<T>(_ body: (WriteTransaction) throws -> T) throws -> T {
        try checkOpen()
        guard !configuration.readOnly else {
            throw StrataError.readOnly(path: path)
        }
        let (result, tally) = try environment.withWriteTransaction { lmdb in
            try checkGeneration(lmdb)
            let transaction = WriteTransaction(
                context: makeContext(
                    lmdb, subscribers: configuration.changeSubscribers.map { $0() }, sync: syncRecorder(lmdb)))
            defer { transaction.context.end() }
            let result = try body(transaction)
            try transaction.context.lifetime.throwDamage()
            let engine = transaction.context.engine
            for subscriber in engine.subscribers { try subscriber.transactionWillCommit(engine) }
            try engine.flush()
            if let changes = engine.feedRecorder?.changes {
                lmdb.committedChanges = changes
                lmdb.publishesCommit = !changes.isEmpty
            }
            return (result, engine.tally)
        }
        Instrumentation.report(tally, path: path)
        return result
    }

    /// Runs `body` in a read transaction on a thread of its own.
    ///
    /// - Throws: What `body` throws, or a ``StrataError`` from storage.
    public func read<T: Sendable>(_ body: @escaping @Sendable (ReadTransaction) throws -> T) async throws -> T {
        try await onOwnThread { try self.read(body) }
    }

    /// Runs `body` in a write transaction on a thread of its own: LMDB
    /// requires a write transaction to begin and end on one thread, so it
    /// never spans a suspension point.
    ///
    /// - Throws: What `body` throws, or a ``StrataError``.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (WriteTransaction) throws -> T) async throws -> T {
        try await onOwnThread { try self.write(body) }
    }

    /// Runs `work` on a thread of its own, off the cooperative pool that
    /// a blocking LMDB call would hold.
    func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Sync capture for a write transaction of a sync-enabled file.
    private func syncRecorder(_ lmdb: LMDBTransaction) -> SyncRecorder? {
        syncHandles.map { handles in
            SyncRecorder(
                log: SyncLog(
                    lmdb: lmdb, meta: store.meta, handles: handles, writerVersion: configuration.schemaVersion,
                    path: path))
        }
    }

    private func makeContext(
        _ lmdb: LMDBTransaction, subscribers: [any ChangeSubscriber] = [], sync: SyncRecorder? = nil
    ) -> ObjectContext {
        // In synced mode the file's version may be another app version's;
        // objects are stamped with this app's.
        ObjectContext(
            lmdb: lmdb, tables: tables, meta: store.meta, path: path, writingSchemaVersion: configuration.schemaVersion,
            subscribers: subscribers, sync: sync)
    }

    /// Refuses a transaction when another `Database` or process changed the
    /// catalog since this one was opened: its tables may be gone, and its
    /// idea of the schema is. A catalog that only learned kept types and
    /// fields from a peer (sync) is adopted instead: it changes nothing this
    /// database reads.
    private func checkGeneration(_ lmdb: LMDBTransaction) throws {
        let current = try store.generation(lmdb)
        if adopted.isCurrent(current) { return }
        let stored = try? store.catalog(lmdb)
        if let stored, adopted.adopt(stored, at: current) { return }
        throw StrataError.schemaChanged(
            path: path, openedAt: adopted.opened.fileSchemaVersion, now: stored?.fileSchemaVersion)
    }
}

// @unchecked: `closed` is only read and written while holding `lock`.
/// A flag set once: whether a database was closed, an observation stopped.
final class OnceFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var closed = false

    var value: Bool { lock.withLock { closed } }

    /// Sets the flag; returns whether this call set it.
    func set() -> Bool {
        lock.withLock {
            defer { closed = true }
            return !closed
        }
    }
}
