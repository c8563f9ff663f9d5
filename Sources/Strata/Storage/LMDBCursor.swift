import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A position in a named database. Only reachable inside
/// ``LMDBTransaction/withCursor(_:_:)``.
final class LMDBCursor {
    /// An entry's key and value, both in the database's memory, never in
    /// a buffer the caller passed: valid until the transaction ends or, in
    /// a write transaction, until the next write.
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

    /// ``Strata/check(_:_:path:in:context:)`` for this cursor's calls. The
    /// transaction is read only on failure: reading an `unowned` reference
    /// retains it, which cost a tenth of a lookup on the page it was at.
    @inline(__always)
    private func check(_ rc: Int32, _ call: StaticString) throws {
        if rc != MDB_SUCCESS { try Strata.check(rc, call, path: path, in: transaction) }
    }

    /// Lets go of the cursor without closing it: its transaction keeps it
    /// (``LMDBTransaction/withLookupCursor(_:_:)``).
    func release() {
        handle = nil
    }

    @inline(__always)
    private func get(_ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil, value: UnsafeRawBufferPointer? = nil)
        throws -> Entry?
    {
        var k = MDB_val(mv_size: key?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: key?.baseAddress))
        var v = MDB_val(mv_size: value?.count ?? 0, mv_data: UnsafeMutableRawPointer(mutating: value?.baseAddress))
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_cursor_get")
        return (
            UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
            UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
        )
    }

    /// Moves with an operation that does not give back the entry it
    /// reaches, then reads that entry (`MDB_GET_CURRENT`). `MDB_GET_BOTH`
    /// and `MDB_GET_BOTH_RANGE` leave the key pointing at the caller's
    /// buffer (`MDB_GET_BOTH` the value too), which may be freed before
    /// the entry is read; `MDB_FIRST_DUP` and `MDB_LAST_DUP` do not set the
    /// key.
    private func move(_ op: MDB_cursor_op, key: UnsafeRawBufferPointer? = nil, value: UnsafeRawBufferPointer? = nil)
        throws -> Entry?
    {
        guard try get(op, key: key, value: value) != nil else { return nil }
        return try get(MDB_GET_CURRENT)
    }

    func first() throws -> Entry? { try get(MDB_FIRST) }
    /// The entry the cursor is at; nil when it is at none (`EINVAL`: it
    /// was never placed).
    func current() throws -> Entry? {
        var k = MDB_val()
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, MDB_GET_CURRENT)
        if rc == MDB_NOTFOUND || rc == EINVAL { return nil }
        try check(rc, "mdb_cursor_get")
        return (
            UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
            UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size)
        )
    }
    func last() throws -> Entry? { try get(MDB_LAST) }
    func next() throws -> Entry? { try get(MDB_NEXT) }
    /// The entry before the current one; in a duplicate-key database, the
    /// previous value of the key, else the last value of the previous key:
    /// the exact reverse of ``next()``.
    func previous() throws -> Entry? { try get(MDB_PREV) }
    /// The first value of the next key, skipping the current key's other
    /// values in a duplicate-key database.
    func nextKey() throws -> Entry? { try get(MDB_NEXT_NODUP) }
    /// Moves to the first key at or after `key` in LMDB's order
    /// (`MDB_SET_RANGE`); in a duplicate-key database, to its first value.
    func seek(atLeast key: UnsafeRawBufferPointer) throws -> Entry? { try get(MDB_SET_RANGE, key: key) }
    /// Moves to `key` exactly; in a duplicate-key database, to its first
    /// value. `MDB_SET_KEY`, not `MDB_SET`: it gives back the database's
    /// copy of the key, as `MDB_SET_RANGE` does.
    func seek(exactly key: UnsafeRawBufferPointer) throws -> Entry? { try get(MDB_SET_KEY, key: key) }
    /// Moves to the entry with exactly this key and value, in a
    /// duplicate-key database.
    func seek(exactly key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> Entry? {
        try move(MDB_GET_BOTH, key: key, value: value)
    }
    /// Moves to `key` and its first value at or after `value` in a
    /// duplicate-key database (`MDB_GET_BOTH_RANGE`).
    func seek(exactly key: UnsafeRawBufferPointer, atLeast value: UnsafeRawBufferPointer) throws -> Entry? {
        try move(MDB_GET_BOTH_RANGE, key: key, value: value)
    }
    /// The first value of the current key in a duplicate-key database.
    func firstDuplicate() throws -> Entry? { try move(MDB_FIRST_DUP) }
    /// The last value of the current key in a duplicate-key database.
    func lastDuplicate() throws -> Entry? { try move(MDB_LAST_DUP) }
    /// The next value of the current key in a duplicate-key database.
    func nextDuplicate() throws -> Entry? { try get(MDB_NEXT_DUP) }

    /// The number of values of the current key in a duplicate-key database.
    func duplicateCount() throws -> Int {
        var count = 0
        try check(mdb_cursor_count(handle, &count), "mdb_cursor_count")
        return count
    }

    /// Stores `value` under `key` through the cursor, which ends at the
    /// entry: a key on the page the cursor is at is found without a search
    /// from the tree's root. In a duplicate-key database, adds the pair
    /// (storing an existing pair again changes nothing), as
    /// ``LMDBTransaction/put(_:_:_:noOverwrite:)`` does. `key` and `value`
    /// must not point into the map.
    func put(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(mdb_cursor_put(handle, &k, &v, 0), "mdb_cursor_put")
    }

    /// Stores `value` under `key`, which sorts after every key of the
    /// database (`MDB_APPEND`: the page it fills is left full); returns
    /// false, writing nothing, when the key does not sort last.
    func append(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws -> Bool {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let rc = mdb_cursor_put(handle, &k, &v, UInt32(MDB_APPEND))
        if rc == MDB_KEYEXIST { return false }
        try check(rc, "mdb_cursor_put")
        return true
    }

    /// In a duplicate-key database that is being filled in order: stores
    /// the pair after every pair already in it, as a new last key
    /// (`MDB_APPEND`) or, `duplicate`, as the last value of the last key
    /// (`MDB_APPENDDUP`). LMDB refuses a pair that does not sort last;
    /// it is then stored where it sorts.
    func append(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, duplicate: Bool) throws {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let rc = mdb_cursor_put(handle, &k, &v, UInt32(duplicate ? MDB_APPENDDUP : MDB_APPEND))
        if rc == MDB_KEYEXIST { return try put(key: key, value: value) }
        try check(rc, "mdb_cursor_put")
    }

    /// Deletes the entry the cursor is at; the cursor then stands before
    /// the entry that followed it.
    func deleteCurrent() throws {
        try check(mdb_cursor_del(handle, 0), "mdb_cursor_del")
    }

    /// Replaces the value of the entry the cursor is at (`MDB_CURRENT`),
    /// without searching the tree again; `key` must be that entry's key,
    /// in memory that the put cannot move (not LMDB's copy). The value may
    /// change size.
    func replaceCurrent(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(mdb_cursor_put(handle, &k, &v, UInt32(MDB_CURRENT)), "mdb_cursor_put")
    }
}
