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
    func buildIndex(
        _ index: DatabaseHandle, of field: ObjectTable.Field, in table: ObjectTable, trusted: Bool,
        advance: () -> Void
    ) throws {
        try lmdb.empty(index, delete: false)
        let indexKey = ByteWriter(capacity: 64)
        let objectKey = ByteWriter(capacity: 64)
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
                // Copy the key: the put may spill the page it points into.
                objectKey.removeAll()
                objectKey.append(contentsOf: key)
                try indexKey.withUnsafeBytes { indexBytes in
                    try objectKey.withUnsafeBytes { _ = try lmdb.put(index, indexBytes, $0) }
                }
                advance()
                entry = try cursor.next()
            }
        }
    }
}
