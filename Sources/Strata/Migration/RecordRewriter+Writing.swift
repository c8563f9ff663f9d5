extension RecordRewriter {
    /// Writes back one object: deleted, changed, or rewritten because its
    /// type's keys or value types changed. Left alone otherwise.
    func write(_ object: MutableObject, _ target: Target, _ writer: LMDBCursor) throws {
        let table = target.table
        if object.isDeleted {
            // A re-keyed table starts empty: the object is simply not
            // inserted again.
            if !target.rekey { _ = try engine.deleteRecord(table, key: object.key) }
            walkWrote = true
            indexes.markStale(table.type.id)
            return
        }
        guard object.isDirty || target.rewriteAll else { return }
        walkChangedPositions |= object.changedPositions
        walkWrote = true
        let automaticKey: ObjectEncoder.AutomaticKey =
            target.rekey && table.primaryKey == nil ? engine.newID(table) : .keep
        let keyEncoded: Bool
        do {
            keyEncoded = try encoder.encodeRewrite(
                table: table, schemaVersion: scope.newVersion, automaticKey: automaticKey,
                newKeys: target.rekey, base: object.base, overrides: object.overrides,
                storedPositions: target.storedPositions)
        } catch {
            throw scope.failure(
                error,
                at: "writing the '\(table.name)' object \(scope.describeKey(object.key, of: table, oldKey: true))",
                advice: "Give every required property of the new schema a value of its type in the migration closure.")
        }
        if target.rekey {
            guard try engine.putRecord(table, encoder, noOverwrite: true) else {
                throw StrataError(
                    .duplicatePrimaryKey,
                    "After the migration of \(path) \(scope.step), two '\(table.name)' objects have the primary key \(encoder.decodedKey(table)). Give them distinct values in the migration closure, or delete one with migration.delete. Nothing was written; the file is still at version \(old.fileSchemaVersion).",
                    path: path)
            }
            return
        }
        if keyEncoded {
            try encoder.key.withUnsafeBytes { key in
                guard KeyCodec.compare(key, object.key) == 0 else {
                    throw StrataError(
                        .migrationFailed,
                        "The migration of \(path) \(scope.step) changed the primary key of a '\(table.name)' object from \(scope.describeKey(object.key, of: table, oldKey: true)) to \(scope.describeKey(key, of: table, oldKey: false)), but the new schema keeps the primary key of '\(table.name)'. Create a new object with migration.create and delete this one with migration.delete instead. Nothing was written; the file is still at version \(old.fileSchemaVersion).",
                        path: path)
                }
            }
        }
        try encoder.record.withUnsafeBytes { record in
            try engine.replaceRecord(table, key: object.key, record: record, walking: writer)
        }
    }

    /// After a rename of a property of a type whose objects the migration
    /// already wrote: those records hold the target under the id it had
    /// before the rename (`fresh`) and lack the source's values. Rewrites
    /// them with the source's values from the snapshot (objects created in
    /// the migration, which the snapshot lacks, keep what they were given),
    /// and swaps in the type's table under the new ids.
    func propertyRenamed(in type: CatalogType, fresh: PropertyID, source: PropertyID) throws {
        guard let written = tables[type.id] else { return }
        let table = ObjectTable(type: type, records: written.records, indexes: [:], path: path)
        install(table)
        guard let oldTable = scope.oldTables[type.id], let target = table.fields.firstIndex(where: { $0.id == source })
        else { return }
        let (reader, _) = try scope.snapshotContext()
        let storedPositions = table.fields.map { field in written.fields.firstIndex { $0.name == field.name } ?? Int.max
        }
        // Each field of the new table, as the written records hold it.
        let writtenFields = table.fields.map { field in written.fields.first { $0.name == field.name } }
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
                    overrides[position] = writtenFields[position].map { written.value(at: $0.position, in: view) }
                }
                if let stored = try reader.get(oldTable.records, copy.key),
                    let oldView = try? RecordView(validating: stored)
                {
                    overrides[target] =
                        oldView.value(forField: source, expectedAt: Int.max) ?? table.fields[target].valueWhenAbsent
                } else {
                    overrides[target] = given
                }
                try encoder.encodeRewrite(
                    table: table, schemaVersion: view.effectiveSchemaVersion, automaticKey: .keep, newKeys: false,
                    base: nil, overrides: overrides, storedPositions: storedPositions)
                engine.tally.recordWritten()
                try encoder.record.withUnsafeBytes { try cursor.replaceCurrent(key: copy.key, value: $0) }
                indexes.markChanged(source, of: type.id)
                entry = try cursor.next()
            }
        }
    }
}
