import CLMDB

/// An LMDB transaction. Not thread-safe: begun, used and ended on one
/// thread. Byte buffers it returns point into the memory map and stay valid
/// until the transaction ends or, in a write transaction, until the next
/// write.
final class LMDBTransaction {
    let environment: Environment
    let isReadOnly: Bool
    private var handle: OpaquePointer?

    init(environment: Environment, handle: OpaquePointer, readOnly: Bool) {
        self.environment = environment
        self.handle = handle
        self.isReadOnly = readOnly
    }

    deinit {
        precondition(handle == nil, "An LMDB transaction on \(environment.path) was neither committed nor aborted.")
    }

    /// Whether an LMDB call in this transaction ran out of map space. LMDB
    /// then refuses every further write in the transaction, so the caller
    /// must grow the map and start over even if the error was caught and
    /// ignored on the way up.
    private(set) var ranOutOfMapSpace = false

    /// Called by ``check(_:_:path:in:context:)`` when a call in this
    /// transaction returned `MDB_MAP_FULL`.
    func noteRanOutOfMapSpace() {
        ranOutOfMapSpace = true
    }

    private var path: String { environment.path }

    private var txn: OpaquePointer {
        guard let handle else { preconditionFailure("Transaction on \(environment.path) used after it ended.") }
        return handle
    }

    /// What a write transaction changed, as the layer above records it;
    /// handed to the environment's ``CommitFeed`` after the commit.
    var committedChanges: CommittedChanges?
    /// Whether the commit is published to the environment's
    /// ``CommitFeed``: false when the layer above knows it changed nothing.
    var publishesCommit = true

    /// LMDB's id of the transaction: for a read transaction, that of the
    /// commit it sees.
    var id: Int { Int(mdb_txn_id(txn)) }

    /// Cursors kept open for lookups by key (``withLookupCursor(_:_:)``),
    /// one per database, closed before the transaction ends.
    private var lookupCursors: [(dbi: MDB_dbi, cursor: OpaquePointer)] = []

    /// Calls `body` with a cursor on `dbi` that the transaction keeps for
    /// later lookups: opening and closing a cursor (and its wrapper) for
    /// each lookup cost about 150 instructions of a lookup's 3,500. `body` must not
    /// keep the cursor, nor count on its position.
    func withLookupCursor<T>(_ dbi: DatabaseHandle, _ body: (LMDBCursor) throws -> T) throws -> T {
        var handle: OpaquePointer?
        for kept in lookupCursors where kept.dbi == dbi.rawValue {
            handle = kept.cursor
            break
        }
        if handle == nil {
            try check(mdb_cursor_open(txn, dbi.rawValue, &handle), "mdb_cursor_open", path: path, in: self)
            lookupCursors.append((dbi.rawValue, handle!))
        }
        let wrapper = LMDBCursor(handle: handle!, transaction: self)
        defer { wrapper.release() }
        return try body(wrapper)
    }

    /// Cursors that belong to one user for the whole transaction
    /// (``keptCursor(_:)``), closed before it ends.
    private var keptCursors: [LMDBCursor] = []

    /// A cursor on `dbi` that stays open, where its user left it, until the
    /// transaction ends: for a writer that comes back to the same part of a
    /// database again and again. LMDB finds a key on the page the cursor is
    /// at without searching the tree from its root, which in a write
    /// transaction looks each page up in the list of dirty pages (a put or
    /// a delete through a fresh cursor, or `mdb_put`, does both). The
    /// caller keeps the cursor and must not use it after the transaction.
    func keptCursor(_ dbi: DatabaseHandle) throws -> LMDBCursor {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, dbi.rawValue, &cursor), "mdb_cursor_open", path: path, in: self)
        let wrapper = LMDBCursor(handle: cursor!, transaction: self)
        keptCursors.append(wrapper)
        return wrapper
    }

    /// Closes the lookup and kept cursors: before the transaction ends,
    /// while LMDB still owns them.
    private func closeLookupCursors() {
        for kept in lookupCursors { mdb_cursor_close(kept.cursor) }
        lookupCursors.removeAll()
        for kept in keptCursors { kept.close() }
        keptCursors.removeAll()
    }

    /// Work the layer above holds back until the commit (the run of the
    /// sync change log being extended), done before LMDB commits.
    private var commitHooks: [() throws -> Void] = []

    /// Runs `body` when the transaction commits, before LMDB commits it:
    /// a throw fails the commit, and the caller aborts the transaction.
    /// Nothing runs when it is aborted.
    func onCommit(_ body: @escaping () throws -> Void) {
        commitHooks.append(body)
    }

    /// Commits the transaction. A read transaction is committed too, so that
    /// the named databases it opened stay open for later transactions.
    func commit() throws {
        let hooks = commitHooks
        commitHooks = []
        for hook in hooks { try hook() }
        closeLookupCursors()
        let txn = self.txn
        handle = nil
        defer { environment.transactionEnded(readOnly: isReadOnly) }
        try check(mdb_txn_commit(txn), "mdb_txn_commit", path: path, in: self)
    }

    /// Aborts the transaction if it is still active.
    func finish() {
        commitHooks = []
        guard let txn = handle else { return }
        closeLookupCursors()
        handle = nil
        mdb_txn_abort(txn)
        environment.transactionEnded(readOnly: isReadOnly)
    }

    // MARK: Named databases

    /// Opens a named database, creating it when `create` is true.
    /// Returns nil when it does not exist and `create` is false; throws when
    /// it exists with other flags than `database` declares.
    /// Call only while holding ``Environment/setupLock``.
    func openDatabase(_ database: NamedDatabase, create: Bool) throws -> DatabaseHandle? {
        var flags: UInt32 = 0
        if database.duplicateKeys { flags |= UInt32(MDB_DUPSORT) }
        if create { flags |= UInt32(MDB_CREATE) }
        var dbi: MDB_dbi = 0
        let rc = mdb_dbi_open(txn, database.name, flags, &dbi)
        if rc == MDB_NOTFOUND && !create { return nil }
        try check(rc, "mdb_dbi_open", path: path, in: self, context: .openingNamedDatabase(database.name))
        let handle = DatabaseHandle(rawValue: dbi)
        // mdb_dbi_open does not compare an existing database's flags with
        // the ones asked for; a database with other flags would take writes
        // the wrong way (replacing index entries instead of adding them).
        if try isDuplicateSorted(handle) != database.duplicateKeys {
            throw lmdbError(
                MDB_INCOMPATIBLE, "mdb_dbi_flags", path: path, context: .openingNamedDatabase(database.name))
        }
        return handle
    }

    /// Whether a named database keeps several sorted values per key, as
    /// stored in the file (`MDB_DUPSORT`).
    func isDuplicateSorted(_ dbi: DatabaseHandle) throws -> Bool {
        var stored: UInt32 = 0
        try check(mdb_dbi_flags(txn, dbi.rawValue, &stored), "mdb_dbi_flags", path: path, in: self)
        return stored & UInt32(MDB_DUPSORT) != 0
    }

    /// The names of every named database in the file: LMDB keeps each as a
    /// key of the unnamed main database. Call only while holding
    /// ``Environment/setupLock``.
    func namedDatabases() throws -> [String] {
        try withCursor(openMainDatabase()) { cursor in
            var names: [String] = []
            var entry = try cursor.first()
            while let (key, _) = entry {
                names.append(String(decoding: key, as: UTF8.self))
                entry = try cursor.next()
            }
            return names
        }
    }

    /// The number of pages on LMDB's free list, which the file holds but no
    /// data uses (until a later write reuses them). Each entry of the free
    /// list (`FREE_DBI`, handle 0) is a list of page numbers that starts
    /// with its length.
    func freePageCount() throws -> Int {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, 0, &cursor), "mdb_cursor_open", path: path, in: self)
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var value = MDB_val()
        var free = 0
        var rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
        while rc == MDB_SUCCESS {
            if value.mv_size >= MemoryLayout<Int>.size, let data = value.mv_data {
                free += data.loadUnaligned(as: Int.self)
            }
            rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
        }
        if rc != MDB_NOTFOUND { try check(rc, "mdb_cursor_get", path: path, in: self) }
        return free
    }

    /// Opens the unnamed main database, which lists the named ones.
    func openMainDatabase() throws -> DatabaseHandle {
        var dbi: MDB_dbi = 0
        try check(mdb_dbi_open(txn, nil, 0, &dbi), "mdb_dbi_open", path: path, in: self)
        return DatabaseHandle(rawValue: dbi)
    }

    /// Removes every entry of a named database, and the database itself when
    /// `delete` is true.
    func empty(_ dbi: DatabaseHandle, delete: Bool) throws {
        try check(mdb_drop(txn, dbi.rawValue, delete ? 1 : 0), "mdb_drop", path: path, in: self)
    }

    /// The number of entries in a named database: O(1).
    func entryCount(_ dbi: DatabaseHandle) throws -> Int {
        var stat = MDB_stat()
        try check(mdb_stat(txn, dbi.rawValue, &stat), "mdb_stat", path: path, in: self)
        return stat.ms_entries
    }

    // MARK: Entries

    /// The value of `key`, in the database's memory (`mdb_get` leaves its
    /// key argument pointing at the caller's buffer, so only the value is
    /// returned).
    func get(_ dbi: DatabaseHandle, _ key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let rc = mdb_get(txn, dbi.rawValue, &k, &v)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_get", path: path, in: self)
        return UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
    }

    func get(_ dbi: DatabaseHandle, _ key: [UInt8]) throws -> UnsafeRawBufferPointer? {
        try key.withUnsafeBytes { (key) throws in try get(dbi, key) }
    }

    /// Stores a value. With `noOverwrite`, returns false and writes nothing
    /// when the key exists. In a duplicate-key database, adds the pair
    /// (storing an existing pair again changes nothing); `noOverwrite` is
    /// not for those databases.
    @discardableResult
    func put(
        _ dbi: DatabaseHandle, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer,
        noOverwrite: Bool = false
    ) throws -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let flags = noOverwrite ? UInt32(MDB_NOOVERWRITE) : 0
        let rc = mdb_put(txn, dbi.rawValue, &k, &v, flags)
        if rc == MDB_KEYEXIST && noOverwrite { return false }
        try check(rc, "mdb_put", path: path, in: self)
        return true
    }

    /// Stores a value whose key sorts after every key in `dbi` (not a
    /// duplicate-key database), skipping LMDB's search for its place.
    /// Returns false, writing nothing, when the key does not sort last.
    func append(_ dbi: DatabaseHandle, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let rc = mdb_put(txn, dbi.rawValue, &k, &v, UInt32(MDB_APPEND))
        if rc == MDB_KEYEXIST { return false }
        try check(rc, "mdb_put", path: path, in: self)
        return true
    }

    /// The last (largest) key of `dbi`, copied, or nil when it is empty.
    func lastKey(_ dbi: DatabaseHandle) throws -> [UInt8]? {
        try withCursor(dbi) { cursor in try cursor.last().map { Array($0.key) } }
    }

    @discardableResult
    func put(_ dbi: DatabaseHandle, _ key: [UInt8], _ value: [UInt8], noOverwrite: Bool = false) throws -> Bool {
        try key.withUnsafeBytes { (k) throws in
            try value.withUnsafeBytes { (v) throws in try put(dbi, k, v, noOverwrite: noOverwrite) }
        }
    }

    /// Deletes a key (every duplicate of it), or only the pair `key`/`value`
    /// when a value is given. Returns false when nothing matched.
    @discardableResult
    func delete(_ dbi: DatabaseHandle, _ key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer? = nil) throws
        -> Bool
    {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let rc: Int32
        if let value {
            var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
            rc = mdb_del(txn, dbi.rawValue, &k, &v)
        } else {
            rc = mdb_del(txn, dbi.rawValue, &k, nil)
        }
        if rc == MDB_NOTFOUND { return false }
        try check(rc, "mdb_del", path: path, in: self)
        return true
    }

    @discardableResult
    func delete(_ dbi: DatabaseHandle, _ key: [UInt8]) throws -> Bool {
        try key.withUnsafeBytes { (k) throws in try delete(dbi, k) }
    }

    // MARK: Cursors

    /// Runs `body` with a cursor over `dbi`, closed when `body` returns.
    func withCursor<T>(_ dbi: DatabaseHandle, _ body: (LMDBCursor) throws -> T) throws -> T {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, dbi.rawValue, &cursor), "mdb_cursor_open", path: path, in: self)
        let wrapper = LMDBCursor(handle: cursor!, transaction: self)
        defer { wrapper.close() }
        return try body(wrapper)
    }
}
