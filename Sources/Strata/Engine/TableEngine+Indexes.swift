#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension TableEngine {
    /// Appends the index key of `field`'s value in `record`: from the
    /// stored bytes, as the kind table makes it, when it can; else from the
    /// value a read gives (an absent field's default, a decimal, null).
    func appendIndexKey(_ table: ObjectTable, _ field: ObjectTable.Field, in record: RecordView, to writer: ByteWriter)
    {
        if let kind = StoredKind(field.type), let base = record.bytes.baseAddress,
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
    /// `oldKeys.ends`, 0 when the field's bytes are the same in `after`,
    /// else one past the end of its old index key, appended to
    /// `oldKeys.keys`. Nothing for a new object, all of whose entries are
    /// added. Returns whether any entry moves.
    func indexMoves(
        _ table: ObjectTable, before: RecordView?, after: RecordView?, oldKeys: (keys: ByteWriter, ends: ByteWriter)
    ) -> Bool {
        oldKeys.keys.removeAll()
        oldKeys.ends.removeAll()
        guard let before else { return true }
        var moves = false
        for field in table.indexedFields {
            if let after, let old = before.encodedField(field.id, expectedAt: field.position)?.bytes,
                let new = after.encodedField(field.id, expectedAt: field.position)?.bytes,
                old.count == new.count, memcmp(old.baseAddress!, new.baseAddress!, old.count) == 0
            {
                oldKeys.ends.appendBigEndian(0)
                continue
            }
            moves = true
            appendIndexKey(table, field, in: before, to: oldKeys.keys)
            oldKeys.ends.appendBigEndian(UInt64(oldKeys.keys.count) + 1)
        }
        return moves
    }

    /// Carries out the moves ``indexMoves(_:before:after:oldKeys:)`` read
    /// for the object with record key `key`: per moved field, removes its
    /// old entry and adds the one of `after` (nil: the object was
    /// deleted), unless the two keys are the same.
    func moveIndexEntries(
        _ table: ObjectTable, key: UnsafeRawBufferPointer, oldKeys: (keys: ByteWriter, ends: ByteWriter),
        after: RecordView?
    ) throws {
        let newKey = encoder.index
        try oldKeys.keys.withUnsafeBytes { old in
            try oldKeys.ends.withUnsafeBytes { ends in
                var start = 0
                for (offset, field) in table.indexedFields.enumerated() {
                    var oldKey: UnsafeRawBufferPointer?
                    if !ends.isEmpty {
                        let end = Int(
                            UInt64(bigEndian: ends.loadUnaligned(fromByteOffset: offset * 8, as: UInt64.self)))
                        guard end > 0 else { continue }
                        oldKey = UnsafeRawBufferPointer(rebasing: old[start ..< end - 1])
                        start = end - 1
                    }
                    newKey.removeAll()
                    if let after { appendIndexKey(table, field, in: after, to: newKey) }
                    try newKey.withUnsafeBytes { newKey in
                        if let oldKey, after != nil, oldKey.elementsEqual(newKey) { return }
                        if let oldKey { _ = try lmdb.delete(field.index!, oldKey, value: key) }
                        if after != nil { _ = try lmdb.put(field.index!, newKey, key) }
                    }
                }
            }
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
