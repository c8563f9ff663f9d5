// @unchecked: immutable after init; ObjectTable and its fields are immutable too.
/// The links between the tables a transaction writes: for each type, the
/// link fields (of any table, its own included) that point to it.
final class LinkGraph: @unchecked Sendable {
    let tables: [String: ObjectTable]
    /// By target type name: the tables and link fields that point to it.
    let incoming: [String: [(table: ObjectTable, field: ObjectTable.Field)]]

    init(tables: [String: ObjectTable]) {
        self.tables = tables
        var incoming: [String: [(table: ObjectTable, field: ObjectTable.Field)]] = [:]
        for table in tables.values {
            for field in table.linkFields {
                guard let target = field.target else { continue }
                incoming[target, default: []].append((table, field))
            }
        }
        self.incoming = incoming
    }

    static let empty = LinkGraph(tables: [:])
}

extension TableEngine {
    // MARK: Keeping backlinks

    /// The keys each link field of `table` holds in `record`, as record
    /// keys of their targets, in field order.
    func linkKeys(_ table: ObjectTable, _ record: RecordView) -> [[[UInt8]]] {
        table.linkFields.map { field in
            guard let target = links.tables[field.target ?? ""] else { return [] }
            return table.linkedKeys(field, in: record).compactMap { recordKey($0, of: target) }
        }
    }

    /// The record key of the object of `table` whose key is `key`, or nil
    /// when `key` cannot be one.
    func recordKey(_ key: Value, of table: ObjectTable) -> [UInt8]? {
        let writer = ByteWriter(capacity: 32)
        if let primaryKey = table.primaryKey {
            guard KeyCodec.appendPrimaryKey(key, type: primaryKey.type, to: writer) else { return nil }
        } else {
            guard case .int(let id) = key, id > 0 else { return nil }
            KeyCodec.appendAutomaticID(UInt64(id), to: writer)
        }
        return writer.withUnsafeBytes { Array($0) }
    }

    /// Whether any link field's bytes differ between two records of
    /// `table`.
    func linksDiffer(_ table: ObjectTable, _ old: RecordView, _ new: RecordView) -> Bool {
        table.linkFields.contains { !old.storesSameField($0.id, expectedAt: $0.position, as: new) }
    }

    /// Checks, before the object with record key `key` is written, that
    /// every link it adds (`new` against `old`, the links of the record it
    /// replaces; nil for a new object) names an existing object, so that a
    /// refusal writes nothing. A link of an object to itself counts as
    /// existing.
    func checkLinkTargets(
        _ table: ObjectTable, key: UnsafeRawBufferPointer, old: [[[UInt8]]]?, new: [[[UInt8]]]
    ) throws {
        for (offset, field) in table.linkFields.enumerated() {
            guard let target = links.tables[field.target ?? ""] else { continue }
            let before = Set(old?[offset] ?? [])
            for added in new[offset] where !before.contains(added) {
                if target === table && added.elementsEqual(key) { continue }
                guard try added.withUnsafeBytes({ try lmdb.get(target.records, $0) }) == nil else { continue }
                throw StrataError.danglingLink(
                    typeName: table.name, property: field.name, key: table.describeKey(key),
                    target: target.name, targetKey: added.withUnsafeBytes { target.describeKey($0) },
                    remedy: "Insert it first.", nothingWritten: true, path: path)
            }
        }
    }

    /// Brings the backlinks of the object with record key `key` up to date
    /// after its record was written: `old` holds the links of the record
    /// it replaced (nil for a new object), `new` those of the record
    /// written (nil: it was deleted).
    func relink(_ table: ObjectTable, key: UnsafeRawBufferPointer, old: [[[UInt8]]]?, new: [[[UInt8]]]?) throws {
        for (offset, field) in table.linkFields.enumerated() {
            guard let backlinks = field.backlinks else { continue }
            let before = Set(old?[offset] ?? [])
            let after = Set(new?[offset] ?? [])
            guard before != after else { continue }
            for added in after.subtracting(before) {
                _ = try added.withUnsafeBytes { try lmdb.put(backlinks, $0, key) }
            }
            for removed in before.subtracting(after) {
                _ = try removed.withUnsafeBytes { try lmdb.delete(backlinks, $0, value: key) }
            }
        }
    }

    /// The record keys of the objects whose `field` links to the object
    /// with record key `target`, in key order.
    func linkingKeys(_ field: ObjectTable.Field, to target: [UInt8]) throws -> [[UInt8]] {
        guard let backlinks = field.backlinks else { return [] }
        return try linkingKeys(in: backlinks, to: target)
    }

    /// The record keys that the backlinks database `backlinks` lists for
    /// the object of record key `target`, in key order.
    func linkingKeys(in backlinks: DatabaseHandle, to target: [UInt8]) throws -> [[UInt8]] {
        try target.withUnsafeBytes { target in
            try lmdb.withCursor(backlinks) { cursor in
                var keys: [[UInt8]] = []
                var entry = try cursor.seek(exactly: target)
                while let found = entry {
                    keys.append(Array(found.value))
                    entry = try cursor.nextDuplicate()
                }
                return keys
            }
        }
    }

    /// How many objects the backlinks database `backlinks` lists for the
    /// object of record key `target`, without reading them.
    func linkingCount(in backlinks: DatabaseHandle, to target: [UInt8]) throws -> Int {
        try target.withUnsafeBytes { target in
            try lmdb.withCursor(backlinks) { cursor in
                try cursor.seek(exactly: target) == nil ? 0 : cursor.duplicateCount()
            }
        }
    }

    // MARK: Deleting with rules

    /// Deletes the object of `table` with record key `key` and applies the
    /// delete rules of every link to it, and of every object deleted in
    /// turn (a ``DeletePlan``). Nothing is written when a deny rule
    /// refuses. Returns false when there was no such object.
    func deleteApplyingRules(_ table: ObjectTable, key: [UInt8]) throws -> Bool {
        guard try key.withUnsafeBytes({ try lmdb.get(table.records, $0) }) != nil else { return false }
        let plan = try deletePlan([(table, key)])
        if !plan.refusals.isEmpty {
            throw StrataError.deleteDenied(
                typeName: table.name, key: key.withUnsafeBytes { table.describeKey($0) },
                cascades: plan.doomed.count > 1,
                linking: plan.refusalItems, path: path)
        }
        try execute(plan)
        return true
    }

    /// The plan of deleting `objects`, through this transaction's links.
    func deletePlan(_ objects: [DeletePlan.Object]) throws -> DeletePlan {
        try DeletePlan(deleting: objects, incoming: { links.incoming[$0] ?? [] }, linking: linkingKeys)
    }

    /// Carries out a plan that nothing refuses: unlinks, then deletes.
    func execute(_ plan: DeletePlan) throws {
        precondition(plan.refusals.isEmpty, "A delete plan that a deny rule refuses was carried out.")
        for link in plan.unlinks {
            try unlink(link.table, link.field, source: link.source, target: link.target)
        }
        for (doomedTable, doomedKey) in plan.doomed {
            _ = try deleteRecordAndEntries(doomedTable, key: doomedKey)
        }
    }

    /// Removes every link of `field` in the object `source` of `table` to
    /// the object with record key `target`: a link becomes null, a list
    /// drops it.
    private func unlink(_ table: ObjectTable, _ field: ObjectTable.Field, source: [UInt8], target: [UInt8]) throws {
        guard let targetTable = links.tables[field.target ?? ""] else { return }
        try source.withUnsafeBytes { sourceBytes in
            guard let stored = try storedView(table, key: sourceBytes) else { return }
            let updated: Value
            switch table.value(at: field.position, in: stored) {
            case .list(let elements):
                updated = .list(elements.filter { recordKey($0.linkKey ?? .null, of: targetTable) != target })
            default:
                updated = .null
            }
            try rewrite(table, key: sourceBytes, stored: stored, with: [field.position: updated])
        }
    }

    /// Sets fields of the object of `table` with record key `key` (values
    /// by field position) and writes its record back, leaving its index
    /// entries and backlinks to the caller (a migration rebuilds both once
    /// it is done).
    func replaceFields(_ table: ObjectTable, key: [UInt8], with values: [Int: Value]) throws {
        try key.withUnsafeBytes { keyBytes in
            guard let stored = try storedView(table, key: keyBytes) else { return }
            try rewrite(table, key: keyBytes, stored: stored, with: values, entries: .rebuiltLater)
        }
    }

    /// Writes the record `stored` of the object with record key `key` again,
    /// with `values` at their field positions.
    private func rewrite(
        _ table: ObjectTable, key: UnsafeRawBufferPointer, stored: RecordView, with values: [Int: Value],
        entries: EntryUpkeep = .derived
    ) throws {
        let encoder = self.encoder
        encoder.key.removeAll()
        encoder.key.append(contentsOf: key)
        try encoder.encode(table: table, schemaVersion: writingSchemaVersion, automaticKey: .keep, base: stored) {
            position in
            values[position].map(ObjectEncoder.FieldSource.value) ?? .stored
        }
        try write(table, encoder, over: stored, entries: entries)
    }

    /// Deletes one object's record, its index entries and its own links'
    /// backlinks, without looking at the links to it.
    func deleteRecordAndEntries(_ table: ObjectTable, key: [UInt8], origin: ChangeOrigin = .local) throws -> Bool {
        try key.withUnsafeBytes { keyBytes in
            guard let stored = try storedView(table, key: keyBytes) else { return false }
            return try write(table, key: keyBytes, before: stored, after: nil, origin: origin)
        }
    }

    /// Whether deleting objects of `table` needs the rule-applying path:
    /// something links to the type, or its objects hold links.
    func hasLinks(_ table: ObjectTable) -> Bool {
        !table.linkFields.isEmpty || links.incoming[table.name] != nil
    }
}
