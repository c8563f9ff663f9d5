/// The one write path of records: every record Strata writes, replaces or
/// deletes goes through these methods, which hand each write to the
/// transaction's change subscribers (``ChangeSubscriber``).
extension TableEngine {
    /// The stored record with `key`, validated, or nil when there is none.
    /// Valid until the next write.
    func storedView(_ table: ObjectTable, key: UnsafeRawBufferPointer) throws -> RecordView? {
        guard let record = try lmdb.get(table.records, key) else { return nil }
        return try table.validatedView(key: key, record: record)
    }

    /// Stores the record and key in `encoder`. With `noOverwrite`, returns
    /// false and writes nothing when the key exists. Without it,
    /// `replacing` is the stored record the put replaces, which every
    /// caller reads while the transaction has subscribers (nil: there is
    /// none, so the put inserts).
    func putRecord(
        _ table: ObjectTable, _ encoder: ObjectEncoder, noOverwrite: Bool, replacing stored: RecordView? = nil
    ) throws -> Bool {
        tally.recordWritten()
        return try encoder.key.withUnsafeBytes { key in
            try encoder.record.withUnsafeBytes { record in
                // A replacement is announced before the put, which may move
                // the stored bytes; an insert after it, once it is sure.
                if notifies && !noOverwrite {
                    try announce(stored == nil ? .inserted : .replaced, table, key, before: stored, after: record)
                }
                let appendable = try sortsLast(key, in: table)
                let written =
                    try appendable && lmdb.append(table.records, key, record)
                    || lmdb.put(table.records, key, record, noOverwrite: noOverwrite)
                if notifies && noOverwrite && written {
                    try announce(.inserted, table, key, before: nil, after: record)
                }
                return written
            }
        }
    }

    /// Hands one write to every subscriber; `after` is encoded record bytes.
    @inline(never)
    func announce(
        _ kind: ChangeRecord.Kind, _ table: ObjectTable, _ key: UnsafeRawBufferPointer, before: RecordView?,
        after: UnsafeRawBufferPointer?
    ) throws {
        let afterView = after.map { bytes in
            do throws(DecodingFailure) {
                return try RecordView(trusting: bytes)
            } catch {
                preconditionFailure("A record Strata encoded for '\(table.name)' does not decode: \(error.reason)")
            }
        }
        let change = ChangeRecord(kind: kind, table: table, key: key, before: before, after: afterView)
        for subscriber in subscribers { try subscriber.objectChanged(change) }
    }

    /// Replaces the record with `key` through a cursor that walks the table
    /// in key order: the entry after the last one replaced is usually the
    /// one to replace, and replacing it in place skips a search of the tree.
    /// `key` must not point into the map (a put may move those bytes).
    func replaceRecord(
        _ table: ObjectTable, key: UnsafeRawBufferPointer, record: UnsafeRawBufferPointer, walking cursor: LMDBCursor
    ) throws {
        var current: UnsafeRawBufferPointer?
        if let next = try cursor.next(), KeyCodec.compare(next.key, key) == 0 {
            current = next.value
        } else {
            current = try cursor.seek(exactly: key)?.value
        }
        if let current {
            try replaceCurrent(table, key: key, stored: current, record: record, cursor: cursor)
        } else {
            tally.recordWritten()
            if notifies { try announce(.inserted, table, key, before: nil, after: record) }
            try lmdb.put(table.records, key, record)
        }
    }

    /// Replaces the record at `cursor`'s position, `stored`, whose key is
    /// `key`, with `record`.
    func replaceCurrent(
        _ table: ObjectTable, key: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer,
        record: UnsafeRawBufferPointer, cursor: LMDBCursor
    ) throws {
        tally.recordWritten()
        if notifies {
            try announce(
                .replaced, table, key, before: try table.validatedView(key: key, record: stored), after: record)
        }
        try cursor.replaceCurrent(key: key, value: record)
    }

    /// Deletes the record with `key`, leaving index entries to the caller;
    /// returns false when there was none. `stored` is the record when the
    /// caller has read it already.
    func deleteRecord(_ table: ObjectTable, key: UnsafeRawBufferPointer, stored: RecordView? = nil) throws -> Bool {
        if notifies {
            guard let before = try stored ?? storedView(table, key: key) else { return false }
            try announce(.deleted, table, key, before: before, after: nil)
        }
        guard try lmdb.delete(table.records, key) else { return false }
        tally.recordWritten()
        return true
    }

    /// Empties a table's records without touching its indexes, for a
    /// migration that inserts every object again under new keys.
    /// Subscribers hear of it first unless `repacking`.
    func emptyRecords(_ table: ObjectTable, repacking: Bool = false) throws {
        tablesEmptied += 1
        if notifies && !repacking {
            for subscriber in subscribers { try subscriber.tableWillEmpty(table, in: self) }
        }
        if frontierTable.pointee === table { frontierTable.pointee = nil }
        try lmdb.empty(table.records, delete: false)
    }

    /// Whether `key` sorts after every key of `table`; moves the frontier to
    /// `key` when it does, as the caller is about to write it.
    fileprivate func sortsLast(_ key: UnsafeRawBufferPointer, in table: ObjectTable) throws -> Bool {
        // A copy shares the buffer.
        let frontier = frontierKey
        if frontierTable.pointee !== table {
            frontier.removeAll()
            if let last = try lmdb.lastKey(table.records) { frontier.append(contentsOf: last) }
            frontierTable.pointee = table
        }
        guard frontier.withUnsafeBytes({ KeyCodec.compare(key, $0) }) > 0 else { return false }
        frontier.removeAll()
        frontier.append(contentsOf: key)
        return true
    }
}
