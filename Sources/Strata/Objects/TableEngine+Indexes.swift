#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension TableEngine {
    /// The indexed values a write moves: per indexed field whose bytes
    /// differ between `before` and `after` (every one for an insert or a
    /// delete), its value in each (nil: no record). Only those fields are
    /// decoded.
    func changedIndexValues(_ table: ObjectTable, before: RecordView?, after: RecordView?) -> [(
        field: ObjectTable.Field, old: Value?, new: Value?
    )] {
        var changes: [(field: ObjectTable.Field, old: Value?, new: Value?)] = []
        for field in table.indexedFields {
            if let before, let after {
                let old = before.encodedField(field.id, expectedAt: field.position)?.bytes
                let new = after.encodedField(field.id, expectedAt: field.position)?.bytes
                if let old, let new, old.count == new.count, memcmp(old.baseAddress!, new.baseAddress!, old.count) == 0
                {
                    continue
                }
            }
            let old = before.map { table.value(at: field.position, in: $0) }
            let new = after.map { table.value(at: field.position, in: $0) }
            if let old, let new, old.isStored(identicallyTo: new) { continue }
            changes.append((field, old, new))
        }
        return changes
    }

    /// Adds or removes the index entry of one value of the object whose
    /// record key is `objectKey`.
    func indexEntry(_ field: ObjectTable.Field, value: Value, objectKey: UnsafeRawBufferPointer, add: Bool) throws {
        let indexKey = encoder.index
        indexKey.removeAll()
        FileLayout.appendIndexKey(value, to: indexKey)
        try indexKey.withUnsafeBytes { indexKey in
            if add {
                _ = try lmdb.put(field.index!, indexKey, objectKey)
            } else {
                _ = try lmdb.delete(field.index!, indexKey, value: objectKey)
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
