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
    let catalog: Catalog
    let tables: [String: ObjectTable]
    let meta: DatabaseHandle

    static let metaDatabaseName = "__strata.meta"
    static let catalogKey = Array("catalog".utf8)
    static func schemaKey(_ version: UInt64) -> [UInt8] { Array("schema.v\(version)".utf8) }

    /// Opens the database file, creating it when it does not exist.
    ///
    /// - Parameter configuration: The file, schema and schema version.
    /// - Throws: ``StrataError`` when the schema is invalid, the file is not
    ///   a Strata database or is damaged, or the file's schema or schema
    ///   version differs from the configuration's. The file is left as it was.
    public init(configuration: Configuration) throws {
        let path = configuration.path
        let problems = configuration.schema.validationProblems()
        guard problems.isEmpty else {
            throw StrataError(.invalidSchema, "The schema for \(path) is invalid:\n" + problems.map { "- " + $0 }.joined(separator: "\n"), path: path)
        }
        var options = EnvironmentOptions()
        options.readOnly = configuration.readOnly
        options.initialMapSize = configuration.initialMapSize
        options.noMetaSync = configuration.durability == .noMetaSync
        options.noSync = configuration.durability == .noSync
        let environment = try Environment.open(path: path, options: options)
        let prepared: Prepared
        do {
            environment.setupLock.lock()
            defer { environment.setupLock.unlock() }
            prepared = try Database.prepare(environment, configuration)
        } catch {
            environment.release()
            throw error
        }
        self.configuration = configuration
        self.environment = environment
        self.catalog = prepared.catalog
        self.tables = prepared.tables
        self.meta = prepared.meta
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

    /// The schema version recorded in the file.
    public var schemaVersion: UInt64 { catalog.schemaVersion }

    /// The schema recorded in the file.
    public var schema: Schema { catalog.schema }

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
    private let isClosed = ClosedFlag()

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
        if isClosed.set() { environment.release() }
    }

    deinit {
        if isClosed.set() { environment.release() }
    }

    private func checkOpen() throws {
        if isClosed.value {
            throw StrataError(.closed, "\(path) was closed. Open it again to use it.", path: path)
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
            let transaction = ReadTransaction(context: makeContext(lmdb))
            defer { transaction.context.end() }
            return try body(transaction)
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
            throw StrataError(.readOnly, "\(path) was opened read-only; open it without readOnly to write.", path: path)
        }
        return try environment.withWriteTransaction { lmdb in
            let transaction = WriteTransaction(context: makeContext(lmdb))
            defer { transaction.context.end() }
            let result = try body(transaction)
            try transaction.context.flush()
            return result
        }
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

    private func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }

    private func makeContext(_ lmdb: LMDBTransaction) -> ObjectContext {
        ObjectContext(lmdb: lmdb, tables: tables, meta: meta, path: path, schemaVersion: catalog.schemaVersion)
    }
}

// @unchecked: `closed` is only read and written while holding `lock`.
/// Whether a database was closed; set once.
private final class ClosedFlag: @unchecked Sendable {
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
