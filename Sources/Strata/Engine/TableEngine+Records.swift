/// The one write path of records: every record Strata writes, replaces or
/// deletes goes through ``write(_:key:before:after:origin:entries:placement:fieldStarts:)``,
/// which hands each write to the transaction's change subscribers
/// (``ChangeSubscriber``) and keeps the object's index entries and
/// backlinks.
extension TableEngine {
    /// The stored record with `key`, validated, or nil when there is none.
    /// Valid until the next write.
    func storedView(_ table: ObjectTable, key: UnsafeRawBufferPointer) throws -> RecordView? {
        guard let record = try lmdb.get(table.records, key) else { return nil }
        return try table.validatedView(key: key, record: record)
    }

    /// How a write keeps the object's index entries and backlinks.
    enum EntryUpkeep {
        /// Derived from the two records: only the entries of the indexed
        /// and link fields whose bytes changed move.
        case derived
        /// The table was emptied (`compact`'s repack): every entry of the
        /// new record is added.
        case added
        /// Left to the caller, which rebuilds them afterwards (a
        /// migration, whose records change shape under it).
        case rebuiltLater
    }

    /// Where the write puts the record.
    enum Placement {
        /// By key: appended when it sorts after every key of the table,
        /// else searched for.
        case byKey
        /// Only when the key is new: the write returns false, writing
        /// nothing, when it is taken.
        case newKey
        /// In place of `cursor`'s current entry, which is `before`'s.
        case current(LMDBCursor)
    }

    /// The one write of an object: every insert, update, replacement,
    /// delete, cascade and nullify, migration rewrite, `compact`'s repack
    /// and merged peer change comes here. It checks the new links' targets
    /// (before anything is written), tells the subscribers (one
    /// ``ChangeRecord`` carrying `origin`), puts or deletes the record, and
    /// moves the index entries and backlinks of the fields whose bytes
    /// differ between `before` and `after`.
    ///
    /// - Parameters:
    ///   - key: The object's record key; must not point into the map (a
    ///     put may move those bytes).
    ///   - before: The stored record, nil for a new object. Required
    ///     whenever there is one (for its entries and the subscribers).
    ///   - after: The new record's bytes, nil to delete the object.
    ///   - fieldStarts: Where `after`'s first fields start, packed as
    ///     ``RecordView/fieldStarts``, when its encoder knows (0: unknown).
    /// - Returns: False when nothing was written: `.newKey` found the key
    ///   taken, or a delete found no record.
    @discardableResult @inline(__always)
    func write(
        _ table: ObjectTable, key: UnsafeRawBufferPointer, before: RecordView?, after: UnsafeRawBufferPointer?,
        origin: ChangeOrigin = .local, entries: EntryUpkeep = .derived, placement: Placement = .byKey,
        fieldStarts: UInt64 = 0
    ) throws -> Bool {
        // A migration's rewrite with no one to tell needs neither view nor
        // entries: the test is made where the write is called, and the
        // record put right there.
        if entries == .rebuiltLater && !notifies {
            return try putOrDelete(table, key, before: before, after: after, nil, origin, placement)
        }
        return try write(
            table, key: key, before: before, after: after, origin, entries, placement, fieldStarts: fieldStarts)
    }

    /// ``write(_:key:before:after:origin:entries:placement:fieldStarts:)``
    /// with views of the records, for subscribers, index entries and
    /// backlinks.
    private func write(
        _ table: ObjectTable, key: UnsafeRawBufferPointer, before: RecordView?, after: UnsafeRawBufferPointer?,
        _ origin: ChangeOrigin, _ entries: EntryUpkeep, _ placement: Placement, fieldStarts: UInt64
    ) throws -> Bool {
        let afterView = after.map { bytes in
            do throws(DecodingFailure) {
                return try RecordView(trusting: bytes, fieldStarts: fieldStarts)
            } catch {
                preconditionFailure("A record Strata encoded for '\(table.name)' does not decode: \(error.reason)")
            }
        }
        switch entries {
        case .rebuiltLater:
            return try putOrDelete(table, key, before: before, after: after, afterView, origin, placement)
        case .derived where before != nil:
            return try replace(table, key: key, before: before!, after: after, afterView, origin, placement)
        case .derived, .added:
            // Every entry of the new record is added: a new object, or
            // the repack, which writes back links that resolved before
            // (their targets may not be written back yet).
            let newLinks = afterView.flatMap { table.linkFields.isEmpty ? nil : linkKeys(table, $0) }
            if entries == .derived, let newLinks { try checkLinkTargets(table, key: key, old: nil, new: newLinks) }
            guard try putOrDelete(table, key, before: before, after: after, afterView, origin, placement),
                let afterView
            else { return false }
            if !table.indexedFields.isEmpty { try addIndexEntries(table, key: key, afterView) }
            if let newLinks { try relink(table, key: key, old: nil, new: newLinks) }
            return true
        }
    }

    /// ``write(_:key:before:after:origin:entries:placement:fieldStarts:)`` over a
    /// stored record, deriving the entries that move from the two records.
    private func replace(
        _ table: ObjectTable, key: UnsafeRawBufferPointer, before: RecordView, after: UnsafeRawBufferPointer?,
        _ afterView: RecordView?, _ origin: ChangeOrigin, _ placement: Placement
    ) throws -> Bool {
        // Everything read from `before` is read before the put, which may
        // move the stored bytes.
        let movesIndexes = !table.indexedFields.isEmpty && indexMoves(table, before: before, after: afterView)
        var linkChanges: (old: [[[UInt8]]], new: [[[UInt8]]]?)?
        if !table.linkFields.isEmpty && (afterView == nil || linksDiffer(table, before, afterView!)) {
            let change = (old: linkKeys(table, before), new: afterView.map { linkKeys(table, $0) })
            if let new = change.new { try checkLinkTargets(table, key: key, old: change.old, new: new) }
            linkChanges = change
        }
        guard try putOrDelete(table, key, before: before, after: after, afterView, origin, placement) else {
            return false
        }
        if movesIndexes { try moveIndexEntries(table, key: key, after: afterView) }
        if let linkChanges { try relink(table, key: key, old: linkChanges.old, new: linkChanges.new) }
        return true
    }

    /// Tells the subscribers, then puts or deletes the record: a
    /// replacement or a delete is announced before, which may move the
    /// stored bytes; an insert after it, once it is sure.
    @inline(__always)
    private func putOrDelete(
        _ table: ObjectTable, _ key: UnsafeRawBufferPointer, before: RecordView?, after: UnsafeRawBufferPointer?,
        _ afterView: RecordView?, _ origin: ChangeOrigin, _ placement: Placement
    ) throws -> Bool {
        guard let after else {
            guard before != nil else { return false }
            if notifies { try announce(.deleted, table, key, before: before, after: nil, origin) }
            guard try lmdb.delete(table.records, key) else { return false }
            tally.recordWritten()
            return true
        }
        if notifies, before != nil { try announce(.replaced, table, key, before: before, after: afterView, origin) }
        switch placement {
        case .current(let cursor):
            try cursor.replaceCurrent(key: key, value: after)
        case .byKey, .newKey:
            let newKey = if case .newKey = placement { true } else { false }
            let appendable = try sortsLast(key, in: table)
            guard
                try appendable && lmdb.append(table.records, key, after)
                    || lmdb.put(table.records, key, after, noOverwrite: newKey)
            else { return false }
        }
        tally.recordWritten()
        if notifies, before == nil { try announce(.inserted, table, key, before: nil, after: afterView, origin) }
        return true
    }

    /// Hands one write to every subscriber.
    @inline(never)
    private func announce(
        _ kind: ChangeRecord.Kind, _ table: ObjectTable, _ key: UnsafeRawBufferPointer, before: RecordView?,
        after: RecordView?, _ origin: ChangeOrigin
    ) throws {
        let change = ChangeRecord(kind: kind, table: table, key: key, before: before, after: after, origin: origin)
        for subscriber in subscribers { try subscriber.objectChanged(change) }
    }

    /// Writes the record in `encoder` (record and key) over `stored`.
    @discardableResult
    func write(
        _ table: ObjectTable, _ encoder: ObjectEncoder, over stored: RecordView?, origin: ChangeOrigin = .local,
        entries: EntryUpkeep = .derived, placement: Placement = .byKey, fieldStarts: UInt64 = 0
    ) throws -> Bool {
        try encoder.key.withUnsafeBytes { key in
            try encoder.record.withUnsafeBytes { record in
                try write(
                    table, key: key, before: stored, after: record, origin: origin, entries: entries,
                    placement: placement, fieldStarts: fieldStarts)
            }
        }
    }

    /// Replaces the record with `key` through a cursor that walks the table
    /// in key order: the entry after the last one replaced is usually the
    /// one to replace, and replacing it in place skips a search of the tree.
    /// `key` must not point into the map (a put may move those bytes).
    /// Index entries and backlinks are left to the caller (a migration).
    @inline(__always)
    func replaceRecord(
        _ table: ObjectTable, key: UnsafeRawBufferPointer, record: UnsafeRawBufferPointer, walking cursor: LMDBCursor
    ) throws {
        var current: UnsafeRawBufferPointer?
        if let next = try cursor.next(), KeyCodec.compare(next.key, key) == 0 {
            current = next.value
        } else {
            current = try cursor.seek(exactly: key)?.value
        }
        // With entries rebuilt later, `before` serves the subscribers only,
        // and a replacement at the cursor needs none without them.
        let before = notifies ? try current.map { try table.validatedView(key: key, record: $0) } : nil
        try write(
            table, key: key, before: before, after: record, entries: .rebuiltLater,
            placement: current == nil ? .byKey : .current(cursor))
    }

    /// Deletes the record with `key`, leaving index entries and backlinks
    /// to the caller (a migration rebuilds them); returns false when there
    /// was none.
    func deleteRecord(_ table: ObjectTable, key: UnsafeRawBufferPointer) throws -> Bool {
        guard let stored = try storedView(table, key: key) else { return false }
        return try write(table, key: key, before: stored, after: nil, entries: .rebuiltLater)
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
