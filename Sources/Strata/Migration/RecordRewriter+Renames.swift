extension RecordRewriter {
    /// After a rename of a property of a type whose objects the migration
    /// already wrote: those records hold the target under the id it had
    /// before the rename (`fresh`) and lack the source's values. Rewrites
    /// them with the source's values from the snapshot (objects created in
    /// the migration, which the snapshot lacks, keep what they were given),
    /// and swaps in the type's table under the new ids.
    func propertyRenamed(in type: CatalogType, fresh: PropertyID, source: PropertyID) throws {
        guard let written = tables[type.id] else { return }
        let table = ObjectTable(
            type: type, records: written.records, indexes: [:], related: catalog.working.types, path: path)
        install(table)
        guard let oldTable = scope.oldTables[type.id], let target = table.shape.position(ofField: source) else {
            return
        }
        let (reader, _) = try scope.snapshotContext()
        // Each field of the new table, as the written records hold it: the
        // two shapes differ only in the renamed field's id, so its name
        // pairs them.
        let writtenPositions = table.shape.fields.map { written.shape.position(of: $0.name) }
        let renameEncoder = ObjectEncoder(fieldCapacity: table.fields.count)
        let overrides = UnsafeMutableBufferPointer<Value?>.allocate(capacity: table.fields.count)
        overrides.initialize(repeating: nil)
        defer {
            overrides.deinitialize()
            overrides.deallocate()
        }
        try txn.withCursor(table.records) { cursor in
            var entry = try cursor.first()
            while let (key, record) = entry {
                let copy = CopiedBytes(key: key, record: record)
                let view = try table.validatedView(key: copy.key, record: copy.record)
                guard let given = view.value(forField: fresh, expectedAt: Int.max) else {
                    entry = try cursor.next()
                    continue
                }
                for position in overrides.indices {
                    overrides[position] = writtenPositions[position].map { written.value(at: $0, in: view) }
                }
                if let stored = try reader.get(oldTable.records, copy.key),
                    let oldView = try? RecordView(validating: stored)
                {
                    overrides[target] =
                        oldView.value(forField: source, expectedAt: Int.max) ?? table.fields[target].valueWhenAbsent
                } else {
                    overrides[target] = given
                }
                try renameEncoder.encode(
                    table: table, schemaVersion: view.effectiveSchemaVersion, automaticKey: .keep, base: nil
                ) { position in
                    .value(overrides[position] ?? table.fields[position].valueWhenAbsent)
                }
                _ = try renameEncoder.record.withUnsafeBytes {
                    try engine.write(
                        table, key: copy.key, before: view, after: $0, entries: .rebuiltLater,
                        placement: .current(cursor))
                }
                indexes.markChanged(source, of: type.id)
                entry = try cursor.next()
            }
        }
    }
}
