/// Rewriting a type into a fresh tree: a walk that writes every record of
/// its type empties the type's records database (`mdb_drop` without
/// delete: every page of the old tree goes to the free list, the
/// database's root is reset) and appends each record it keeps, in the key
/// order of the snapshot it reads from, with `MDB_APPEND`. LMDB then fills
/// each leaf page and starts the next one, writing every page once,
/// instead of finding, splitting and copying the old pages one record at a
/// time. The snapshot (a read transaction begun before the migration's
/// writes) still sees the old tree, so the walk reads it whole; the write
/// transaction commits both or neither.
extension RecordRewriter {
    /// The walk in progress that appends into its emptied table.
    struct AppendingWalk {
        let type: TypeID
        let table: ObjectTable
        let oldTable: ObjectTable
        /// The key of the object being walked, in the snapshot's map.
        var current = UnsafeRawBufferPointer(start: nil, count: 0)
    }

    /// Whether a first walk of `target`'s type may empty its table and
    /// append: the type keeps its keys (in the snapshot's order), it had a
    /// table whose database the new one is, that table holds exactly the
    /// snapshot's records still (nothing of this migration wrote into it,
    /// nor into any table outside a walk), no change subscriber needs the
    /// record each write replaces, and no link becomes embedded.
    func canAppend(_ target: Target, old: CatalogType?) -> Bool {
        let type = target.table.type.id
        guard let old, !target.rekey, target.conversions.isEmpty, !engine.notifies,
            let oldTable = scope.oldTables[old.id], oldTable.records == target.table.records
        else { return false }
        return !touched.contains(type) && engine.tally.recordWrites - writesBefore == writesInWalks
    }

    /// Whether the type's properties differ between the file's catalog and
    /// the new one: a closure then likely sets something on every object.
    func reshapes(_ target: Target, from old: CatalogType?) -> Bool {
        guard let old else { return false }
        return Set(old.properties.map(\.id)) != Set(target.table.type.properties.map(\.id))
    }

    /// Appends a record under `key`, which sorts after every key written
    /// so far by the walk; puts it by key should it not.
    @inline(__always)
    func append(_ key: UnsafeRawBufferPointer, _ record: UnsafeRawBufferPointer, _ writer: LMDBCursor) throws {
        if try !writer.append(key: key, value: record) {
            try writer.put(key: key, value: record)
        }
    }

    /// Appends the record of an object the walk leaves as it was.
    @inline(__always)
    func carryOver(_ key: UnsafeRawBufferPointer, _ record: UnsafeRawBufferPointer, _ writer: LMDBCursor) throws {
        try append(key, record, writer)
    }

    /// Makes the table of the walk that appends whole again, before
    /// something reads or writes it by key (an object created in the type,
    /// a link followed into it, a nested walk): the snapshot's records from
    /// the one being walked on are appended as they are, and the walk goes
    /// on replacing records where they are.
    func stopAppending() throws {
        guard let walk = appending else { return }
        appending = nil
        let reader = try scope.snapshotContext().txn
        try reader.withCursor(walk.oldTable.records) { cursor in
            try txn.withCursor(walk.table.records) { writer in
                var entry = try cursor.seek(atLeast: walk.current)
                while let (key, record) = entry {
                    // The object being walked may be written already: it
                    // then sorts last, and stays.
                    _ = try writer.append(key: key, value: record)
                    entry = try cursor.next()
                }
            }
        }
    }
}
