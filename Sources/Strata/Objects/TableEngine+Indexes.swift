extension TableEngine {
    /// The values of a record's indexed fields, in the order of
    /// ``ObjectTable/indexedFields``.
    func indexedValues(_ table: ObjectTable, _ record: RecordView) -> [Value] {
        table.indexedFields.map { table.value(at: $0.position, in: record) }
    }

    /// Adds or removes the index entry of one value of the object whose key
    /// is in `encoder.key`.
    func indexEntry(_ field: ObjectTable.Field, value: Value, _ encoder: ObjectEncoder, add: Bool) throws {
        encoder.index.removeAll()
        FileLayout.appendIndexKey(value, to: encoder.index)
        try encoder.index.withUnsafeBytes { indexKey in
            try encoder.key.withUnsafeBytes { objectKey in
                if add {
                    _ = try lmdb.put(field.index!, indexKey, objectKey)
                } else {
                    _ = try lmdb.delete(field.index!, indexKey, value: objectKey)
                }
            }
        }
    }

    /// Moves the index entries of indexed values that changed; `old` holds
    /// the stored object's indexed values, nil when it is new, and `new`
    /// returns each indexed field's new value, in order.
    func reindex(
        _ table: ObjectTable, old: [Value]?, _ encoder: ObjectEncoder, new: (ObjectTable.Field) -> Value
    ) throws {
        for (offset, field) in table.indexedFields.enumerated() {
            let newValue = new(field)
            if let oldValue = old?[offset] {
                if oldValue.isStored(identicallyTo: newValue) { continue }
                try indexEntry(field, value: oldValue, encoder, add: false)
            }
            try indexEntry(field, value: newValue, encoder, add: true)
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
