import CLMDB

/// A named database (LMDB's `MDB_dbi`) inside an environment.
typealias DatabaseHandle = MDB_dbi

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

    @inline(__always)
    func verify(_ rc: Int32, _ call: StaticString) throws {
        guard rc != MDB_SUCCESS else { return }
        if rc == MDB_MAP_FULL { ranOutOfMapSpace = true }
        try check(rc, call, path: path)
    }

    private var path: String { environment.path }

    private var txn: OpaquePointer {
        guard let handle else { preconditionFailure("Transaction on \(environment.path) used after it ended.") }
        return handle
    }

    /// Commits the transaction. A read transaction is committed too, so that
    /// the named databases it opened stay open for later transactions.
    func commit() throws {
        let txn = self.txn
        handle = nil
        defer { environment.transactionEnded(readOnly: isReadOnly) }
        try verify(mdb_txn_commit(txn), "mdb_txn_commit")
    }

    /// Aborts the transaction if it is still active.
    func finish() {
        guard let txn = handle else { return }
        handle = nil
        mdb_txn_abort(txn)
        environment.transactionEnded(readOnly: isReadOnly)
    }

    // MARK: Named databases

    /// Opens the named database `name`, creating it when `create` is true.
    /// Returns nil when it does not exist and `create` is false.
    /// Call only while holding ``Environment/setupLock``.
    func openDatabase(_ name: String, duplicateKeys: Bool = false, create: Bool) throws -> DatabaseHandle? {
        var flags: UInt32 = 0
        if duplicateKeys { flags |= UInt32(MDB_DUPSORT) }
        if create { flags |= UInt32(MDB_CREATE) }
        var dbi: MDB_dbi = 0
        let rc = mdb_dbi_open(txn, name, flags, &dbi)
        if rc == MDB_NOTFOUND && !create { return nil }
        if rc == MDB_INCOMPATIBLE {
            throw StrataError(.corruptFile, "The named database '\(name)' in \(path) has unexpected flags; the file was not written by this version of Strata.", path: path, lmdbCode: .incompatible)
        }
        try verify(rc, "mdb_dbi_open")
        // mdb_dbi_open does not compare an existing database's flags with
        // the ones asked for; a database with other flags would take writes
        // the wrong way (replacing index entries instead of adding them).
        var stored: UInt32 = 0
        try verify(mdb_dbi_flags(txn, dbi, &stored), "mdb_dbi_flags")
        if (stored & UInt32(MDB_DUPSORT) != 0) != duplicateKeys {
            throw StrataError(.corruptFile, "The named database '\(name)' in \(path) has unexpected flags; the file was not written by this version of Strata.", path: path, lmdbCode: .incompatible)
        }
        return dbi
    }

    /// The number of pages on LMDB's free list, which the file holds but no
    /// data uses (until a later write reuses them). Each entry of the free
    /// list (`FREE_DBI`, handle 0) is a list of page numbers that starts
    /// with its length.
    func freePageCount() throws -> Int {
        var cursor: OpaquePointer?
        try verify(mdb_cursor_open(txn, 0, &cursor), "mdb_cursor_open")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val(), value = MDB_val()
        var free = 0
        var rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
        while rc == MDB_SUCCESS {
            if value.mv_size >= MemoryLayout<Int>.size, let data = value.mv_data {
                free += data.loadUnaligned(as: Int.self)
            }
            rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
        }
        if rc != MDB_NOTFOUND { try verify(rc, "mdb_cursor_get") }
        return free
    }

    /// Opens the unnamed main database, which lists the named ones.
    func openMainDatabase() throws -> DatabaseHandle {
        var dbi: MDB_dbi = 0
        try verify(mdb_dbi_open(txn, nil, 0, &dbi), "mdb_dbi_open")
        return dbi
    }

    /// Removes every entry of a named database, and the database itself when
    /// `delete` is true.
    func empty(_ dbi: DatabaseHandle, delete: Bool) throws {
        try verify(mdb_drop(txn, dbi, delete ? 1 : 0), "mdb_drop")
    }

    /// The number of entries in a named database: O(1).
    func entryCount(_ dbi: DatabaseHandle) throws -> Int {
        var stat = MDB_stat()
        try verify(mdb_stat(txn, dbi, &stat), "mdb_stat")
        return stat.ms_entries
    }

    // MARK: Entries

    func get(_ dbi: DatabaseHandle, _ key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let rc = mdb_get(txn, dbi, &k, &v)
        if rc == MDB_NOTFOUND { return nil }
        try verify(rc, "mdb_get")
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
    func put(_ dbi: DatabaseHandle, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer,
             noOverwrite: Bool = false) throws -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let flags = noOverwrite ? UInt32(MDB_NOOVERWRITE) : 0
        let rc = mdb_put(txn, dbi, &k, &v, flags)
        if rc == MDB_KEYEXIST && noOverwrite { return false }
        try verify(rc, "mdb_put")
        return true
    }

    /// Stores a value whose key sorts after every key in `dbi` (not a
    /// duplicate-key database), skipping LMDB's search for its place.
    /// Returns false, writing nothing, when the key does not sort last.
    func append(_ dbi: DatabaseHandle, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let rc = mdb_put(txn, dbi, &k, &v, UInt32(MDB_APPEND))
        if rc == MDB_KEYEXIST { return false }
        try verify(rc, "mdb_put")
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
    func delete(_ dbi: DatabaseHandle, _ key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer? = nil) throws -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let rc: Int32
        if let value {
            var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
            rc = mdb_del(txn, dbi, &k, &v)
        } else {
            rc = mdb_del(txn, dbi, &k, nil)
        }
        if rc == MDB_NOTFOUND { return false }
        try verify(rc, "mdb_del")
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
        try verify(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open")
        let wrapper = LMDBCursor(handle: cursor!, transaction: self)
        defer { wrapper.close() }
        return try body(wrapper)
    }
}

/// A position in a named database. Only reachable inside
/// ``LMDBTransaction/withCursor(_:_:)``.
final class LMDBCursor {
    typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

    private var handle: OpaquePointer?
    private unowned let transaction: LMDBTransaction
    private var path: String { transaction.environment.path }

    init(handle: OpaquePointer, transaction: LMDBTransaction) {
        self.handle = handle
        self.transaction = transaction
    }

    deinit {
        precondition(handle == nil, "An LMDB cursor on \(path) was not closed.")
    }

    func close() {
        if let handle { mdb_cursor_close(handle) }
        handle = nil
    }

    @inline(__always)
    private func get(_ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil, value: UnsafeRawBufferPointer? = nil) throws -> Entry? {
        var k = MDB_val(mv_size: key?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: key?.baseAddress))
        var v = MDB_val(mv_size: value?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: value?.baseAddress))
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        if rc != MDB_SUCCESS { try check(rc, "mdb_cursor_get", path: path) }
        return (UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
                UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    func first() throws -> Entry? { try get(MDB_FIRST) }
    func last() throws -> Entry? { try get(MDB_LAST) }
    func next() throws -> Entry? { try get(MDB_NEXT) }
    /// Moves to `key` exactly; in a duplicate-key database, to its first value.
    func seek(exactly key: UnsafeRawBufferPointer) throws -> Entry? { try get(MDB_SET_KEY, key: key) }
    /// Moves to the entry with exactly this key and value, in a
    /// duplicate-key database.
    func seek(exactly key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> Entry? {
        try get(MDB_GET_BOTH, key: key, value: value)
    }
    /// The first value of the current key in a duplicate-key database.
    func firstDuplicate() throws -> Entry? { try get(MDB_FIRST_DUP) }
    /// The last value of the current key in a duplicate-key database.
    func lastDuplicate() throws -> Entry? { try get(MDB_LAST_DUP) }
    /// The next value of the current key in a duplicate-key database.
    func nextDuplicate() throws -> Entry? { try get(MDB_NEXT_DUP) }

    /// Replaces the value of the entry the cursor is at (`MDB_CURRENT`),
    /// without searching the tree again; `key` must be that entry's key,
    /// in memory that the put cannot move (not LMDB's copy). The value may
    /// change size.
    func replaceCurrent(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try transaction.verify(mdb_cursor_put(handle, &k, &v, UInt32(MDB_CURRENT)), "mdb_cursor_put")
    }
}
