extension TableEngine {
    /// Appends the index key of `field`'s value in `record`: from the
    /// stored bytes, as the kind table makes it, when it can; else from the
    /// value a read gives (an absent field's default, a decimal, null).
    func appendIndexKey(_ table: ObjectTable, _ field: ObjectTable.Field, in record: RecordView, to writer: ByteWriter)
    {
        if let kind = field.storedKind, let base = record.bytes.baseAddress,
            let p = record.fieldOffset(forField: field.id, expectedAt: field.position),
            StoredKind.appendIndexKey(kind: kind, storedAt: p, base, record.bytes.count, to: writer) != nil
        {
            return
        }
        FileLayout.appendIndexKey(table.value(at: field.position, in: record), to: writer)
    }

    /// Reads, before a write replaces or deletes `before` (which may move
    /// its bytes), which index entries the write moves: per field of
    /// ``ObjectTable/indexedFields``, 8 bytes (big-endian) in
    /// ``indexScratch``' `ends`, 0 when the field's bytes are the same in
    /// `after`, else one past the end of its old index key, appended to
    /// its `old`. Returns whether any entry moves.
    func indexMoves(_ table: ObjectTable, before: RecordView, after: RecordView?) -> Bool {
        let scratch = indexScratch
        scratch.old.removeAll()
        scratch.ends.removeAll()
        var moves = false
        for field in table.indexedFields {
            if let after, before.storesSameField(field.id, expectedAt: field.position, as: after) {
                scratch.ends.appendBigEndian(0)
                continue
            }
            moves = true
            appendIndexKey(table, field, in: before, to: scratch.old)
            scratch.ends.appendBigEndian(UInt64(scratch.old.count) + 1)
        }
        return moves
    }

    /// Carries out the moves ``indexMoves(_:before:after:)`` read for the
    /// object with record key `key`: per moved field, removes its old entry
    /// and adds the one of `after` (nil: the object was deleted), unless
    /// the two keys are the same.
    func moveIndexEntries(_ table: ObjectTable, key: UnsafeRawBufferPointer, after: RecordView?) throws {
        let scratch = indexScratch
        try scratch.old.withUnsafeBytes { old in
            try scratch.ends.withUnsafeBytes { ends in
                var start = 0
                for (offset, field) in table.indexedFields.enumerated() {
                    let end = Int(UInt64(bigEndian: ends.loadUnaligned(fromByteOffset: offset * 8, as: UInt64.self)))
                    guard end > 0 else { continue }
                    let oldKey = UnsafeRawBufferPointer(rebasing: old[start ..< end - 1])
                    start = end - 1
                    let cursor = try scratch.cursor(field.index!, in: lmdb)
                    guard let after else {
                        try removeEntry(oldKey, key, cursor)
                        continue
                    }
                    scratch.new.removeAll()
                    appendIndexKey(table, field, in: after, to: scratch.new)
                    try scratch.new.withUnsafeBytes { newKey in
                        if oldKey.elementsEqual(newKey) { return }
                        try removeEntry(oldKey, key, cursor)
                        try cursor.put(key: newKey, value: key)
                    }
                }
            }
        }
    }

    /// Removes the index entry `indexKey` → `objectKey` through `cursor`,
    /// if there is one.
    @inline(__always)
    private func removeEntry(
        _ indexKey: UnsafeRawBufferPointer, _ objectKey: UnsafeRawBufferPointer, _ cursor: LMDBCursor
    )
        throws
    {
        if try cursor.seek(exactly: indexKey, value: objectKey) != nil { try cursor.deleteCurrent() }
    }

    /// Adds every index entry of the new record `after`, whose record key
    /// is `key`.
    func addIndexEntries(_ table: ObjectTable, key: UnsafeRawBufferPointer, _ after: RecordView) throws {
        let scratch = indexScratch
        let newKey = scratch.new
        for field in table.indexedFields {
            newKey.removeAll()
            appendIndexKey(table, field, in: after, to: newKey)
            let cursor = try scratch.cursor(field.index!, in: lmdb)
            try newKey.withUnsafeBytes { try cursor.put(key: $0, value: key) }
        }
    }

    /// Empties an index database and fills it from the records of `table`;
    /// `advance` is called once per object. Records are validated unless
    /// `trusted`: this transaction already validated or wrote every one.
    ///
    /// The entries are gathered and sorted in memory, at most
    /// ``IndexEntryRun/limit`` at a time: when every entry fits in one run,
    /// they go into the emptied index in order, each appended after the
    /// last (`MDB_APPEND`, `MDB_APPENDDUP` for another object of the same
    /// value), so that every page is written once, full; a larger table's
    /// runs are put sorted, one after the other.
    func buildIndex(
        _ index: DatabaseHandle, of field: ObjectTable.Field, in table: ObjectTable, trusted: Bool,
        advance: () -> Void
    ) throws {
        try lmdb.empty(index, delete: false)
        let indexKey = ByteWriter(capacity: 64)
        var run = IndexEntryRun()
        var flushed = false
        try lmdb.withCursor(index) { writer in
            try lmdb.withCursor(table.records) { cursor in
                var entry = try cursor.first()
                while let (key, record) = entry {
                    let view: RecordView
                    if trusted {
                        do throws(DecodingFailure) {
                            view = try RecordView(trusting: record)
                        } catch {
                            throw table.corruptRecord(error, key: key)
                        }
                    } else {
                        view = try table.validatedView(key: key, record: record)
                    }
                    indexKey.removeAll()
                    FileLayout.appendIndexKey(table.value(at: field.position, in: view), to: indexKey)
                    indexKey.withUnsafeBytes { run.add(key: $0, value: key) }
                    if run.isFull {
                        try run.write(through: writer, appending: false)
                        flushed = true
                    }
                    advance()
                    entry = try cursor.next()
                }
            }
            try run.write(through: writer, appending: !flushed)
        }
    }
}

/// Index entries (index key, record key) gathered in one buffer, to be
/// written sorted in the index's order: by key, then by value, bytes then
/// length, as LMDB compares both by default.
struct IndexEntryRun {
    /// The entries one run holds at most, and their bytes: what a rebuild
    /// keeps in memory beyond LMDB's dirty pages.
    static let limit = 1 << 20
    static let byteLimit = 64 << 20

    /// Where an entry's key starts in ``bytes``, its key's length and its
    /// value's (which follows the key): LMDB's keys and duplicate values
    /// are at most 511 bytes.
    private struct Entry {
        let start: UInt32
        let keyCount: UInt16
        let valueCount: UInt16
    }

    private var bytes: [UInt8] = []
    private var entries: [Entry] = []

    var isFull: Bool { entries.count >= IndexEntryRun.limit || bytes.count >= IndexEntryRun.byteLimit }

    mutating func add(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        entries.append(Entry(start: UInt32(bytes.count), keyCount: UInt16(key.count), valueCount: UInt16(value.count)))
        bytes.append(contentsOf: key)
        bytes.append(contentsOf: value)
    }

    /// Writes the entries sorted through `writer`, a cursor on the index,
    /// and empties the run. `appending`: the index is empty and these are
    /// all of its entries, so each sorts after the last one written.
    mutating func write(through writer: LMDBCursor, appending: Bool) throws {
        defer {
            entries.removeAll(keepingCapacity: true)
            bytes.removeAll(keepingCapacity: true)
        }
        try bytes.withUnsafeBytes { all in
            func key(_ entry: Entry) -> UnsafeRawBufferPointer {
                let start = Int(entry.start)
                return UnsafeRawBufferPointer(rebasing: all[start ..< start + Int(entry.keyCount)])
            }
            func value(_ entry: Entry) -> UnsafeRawBufferPointer {
                let start = Int(entry.start) + Int(entry.keyCount)
                return UnsafeRawBufferPointer(rebasing: all[start ..< start + Int(entry.valueCount)])
            }
            entries.sort { a, b in
                let order = KeyCodec.compare(key(a), key(b))
                return order != 0 ? order < 0 : KeyCodec.compare(value(a), value(b)) < 0
            }
            var previous: Entry?
            for entry in entries {
                let sameKey = previous.map { KeyCodec.compare(key($0), key(entry)) == 0 } ?? false
                if appending {
                    try writer.append(key: key(entry), value: value(entry), duplicate: sameKey)
                } else {
                    try writer.put(key: key(entry), value: value(entry))
                }
                previous = entry
            }
        }
    }
}
