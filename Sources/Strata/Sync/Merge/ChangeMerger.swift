import Foundation

/// Merges a peer's changes into a sync-enabled file, in one write
/// transaction: per object, the causal length decides whether it lives
/// (a delete beats concurrent edits; a re-insert after a delete beats
/// the delete); per field, the higher stamp wins. Applying the same
/// changes twice, in another order or grouped otherwise gives the same
/// state.
///
/// A field the file's catalog does not know is learned: added as a kept
/// property of its type, stored in the records and sent on to other
/// peers, and read by the app version that declares it. Writes keep the
/// peer's stamps (the recorder is suspended) and give every changed object
/// a new local sequence number, so that the changes travel on (A ↔ B ↔ C).
final class ChangeMerger {
    let engine: TableEngine
    let recorder: SyncRecorder
    let store: CatalogStore
    var log: SyncLog { recorder.log }
    /// The file's catalog, with what this apply learned.
    var catalog: Catalog
    /// The catalog as committed before this apply.
    private let committed: Catalog
    private var tables: [String: ObjectTable]
    var report = SyncApplyReport()
    private let keyWriter = ByteWriter(capacity: 64)
    /// Scratch space of ``merge(_:_:_:origins:target:)`` and
    /// ``write(_:key:keyValue:stored:newLife:embedded:version:clock:)``,
    /// emptied for each object and kept for the next: the fields of the
    /// entry that win, and the fields the record written overrides.
    private var winners: [Winner] = []
    private var overrides = ObjectEncoder.FieldOverrides()

    /// A field of an entry whose value wins over the file's.
    private struct Winner {
        var id: PropertyID
        var target: Target
        var value: Value
        var stamp: LocalStamp
    }

    init(engine: TableEngine, recorder: SyncRecorder, store: CatalogStore, tables: [String: ObjectTable]) throws {
        self.engine = engine
        self.recorder = recorder
        self.store = store
        self.tables = tables
        guard let catalog = try store.catalog(engine.lmdb) else {
            throw StrataError.corruptFile(path: store.path, "\(store.path) has no catalog.")
        }
        self.catalog = catalog
        self.committed = catalog
    }

    /// Where a changeset's field goes in this file.
    enum Target {
        /// A property the app declares.
        case declared(ObjectTable.Field)
        /// A kept or learned property: stored, not read by this app.
        case kept(PropertyID)
        /// The life of an embedded object (declared, kept or learned).
        case embedded(EmbeddedTarget)
        /// A field inside an embedded object.
        case inside(InsideTarget)
        /// Not stored (a list of embedded objects the file cannot learn).
        case skipped
    }

    /// Applies `content`: every entry, then the links restored by objects
    /// that appeared, then the learned catalog.
    func apply(_ content: ChangesetContent) throws {
        // The file's clock moves past every stamp received, once.
        try log.receive(content.latestTime)
        var types: [ObjectTable] = []
        for wire in content.types {
            guard let table = tables[wire.name] else {
                types.append(try keptTable(wire))
                continue
            }
            let local = WireType(table.type).keyDescriptor
            guard local == wire.keyDescriptor else {
                throw StrataError.changesetRefused(
                    path: store.path,
                    "it names type '\(wire.name)' with a primary key of type \(wire.keyDescriptor), and this file's '\(wire.name)' has a primary key of type \(local)",
                    remedy:
                        "The two apps declare different primary keys for '\(wire.name)'; one identity per type is required to sync."
                )
            }
            types.append(table)
        }
        let origins = try content.origins.map { try log.originIndex(of: $0) }
        var targets: [Target?] = Array(repeating: nil, count: content.fields.count)
        var leaving: [(ChangeEntry, ObjectTable)] = []
        for entry in content.entries {
            let table = types[entry.type]
            if entry.leavesView {
                leaving.append((entry, table))
                continue
            }
            try merge(entry, table, content, origins: origins) { index in
                try self.target(index, of: content, table, known: &targets)
            }
        }
        if !leaving.isEmpty { try remove(leaving, content, origins: origins) }
        try recorder.restoreLinks(in: engine)
        // With the generation raised: open `Database`s of the file adopt a
        // catalog that only learned (`Catalog.learnsOnly(since:)`).
        if catalog != committed { try store.write(catalog, engine.lmdb) }
    }

    /// Merges one object's entry.
    private func merge(
        _ entry: ChangeEntry, _ table: ObjectTable, _ content: ChangesetContent, origins: [UInt32],
        target: (Int) throws -> Target
    ) throws {
        keyWriter.removeAll()
        guard let keyField = table.primaryKey, KeyCodec.appendPrimaryKey(entry.key, type: keyField.type, to: keyWriter)
        else {
            throw StrataError.changesetRefused(
                path: store.path, "its key \(entry.key) is not a key of '\(table.name)'",
                remedy:
                    "The sender's '\(table.name)' is keyed otherwise; sync files whose apps declare one primary key per type."
            )
        }
        let key = keyWriter.bytes
        func local(_ stamp: WireStamp) -> LocalStamp { LocalStamp(time: stamp.time, origin: origins[stamp.origin]) }
        try key.withUnsafeBytes { key in
            var existing = try log.row(table.type.id, key)
            let previousSeq = existing?.seq
            let localLength = existing?.causalLength ?? 0
            guard entry.causalLength >= localLength else { return }
            let stored = try engine.storedView(table, key: key)
            let newLife = entry.causalLength > localLength
            // Taken, not copied: changing the row then copies no clocks.
            var row =
                existing.take() ?? ClockRow(causalLength: entry.causalLength, seq: 0, maxWriterVersion: 0, base: .none)
            row.causalLength = entry.causalLength
            row.maxWriterVersion = max(row.maxWriterVersion, entry.writerVersion)
            guard row.isLive else {
                // Deleted by a peer: no delete rule runs here (the peer
                // expanded its cascades); links to it are materialized.
                if newLife {
                    let seq = try log.seq()
                    row.seq = seq
                    row.stampAll(FieldClock(stamp: local(entry.stamp), seq: seq))
                    if stored != nil {
                        try deleteWithoutRules(table, key, clock: .peer(row: row, previousSeq: previousSeq))
                    } else {
                        try log.store(row, previousSeq: previousSeq, table.type.id, key)
                    }
                    report.deletedObjects += 1
                }
                return
            }
            // Which fields win: all of a new life's, else those whose stamp
            // is above the file's.
            winners.removeAll(keepingCapacity: true)
            var inside = EmbeddedChanges()
            for change in entry.fields {
                let stamp = local(change.stamp)
                let destination = try target(change.field)
                let id: PropertyID
                switch destination {
                case .declared(let field): id = field.id
                case .kept(let kept): id = kept
                case .embedded(let embedded):
                    guard case .int(let life) = change.value, life >= 0 else {
                        throw notFitting(
                            change.value, "\(table.name).\(content.name(of: content.fields[change.field]))")
                    }
                    inside.lives[embedded.path] = (UInt64(life), stamp, embedded)
                    continue
                case .inside(let field):
                    inside.values[field.path] = (field, change.value, stamp)
                    continue
                case .skipped: continue
                }
                if !newLife, let stored {
                    // A field the record does not hold was never written
                    // in this life (the row's base is not its stamp): one
                    // learned now, or one the inserting app did not declare.
                    let current =
                        stored.fieldOffset(forField: id, expectedAt: Int.max) == nil ? .none : row.stamp(of: id)
                    guard try isAbove(stamp, current) else { continue }
                }
                winners.append(Winner(id: id, target: destination, value: change.value, stamp: stamp))
            }
            let seq = try log.nextSeq()
            row.seq = seq
            // A new life starts empty: a field it has not received yet has
            // no stamp, so that any value of it wins when it comes.
            if newLife { row.stampAll(FieldClock(stamp: .none, seq: seq)) }
            for winner in winners { row.set(winner.id, FieldClock(stamp: winner.stamp, seq: seq)) }
            let embedded = try mergeEmbedded(inside, in: newLife ? nil : stored, row: &row, seq: seq)
            guard newLife || !winners.isEmpty || !embedded.fields.isEmpty || embedded.changed > 0 || stored == nil
            else { return }
            _ = try log.seq()
            try write(
                table, key: key, keyValue: entry.key, stored: stored, newLife: newLife, embedded: embedded.fields,
                version: entry.writerVersion, clock: .peer(row: row, previousSeq: previousSeq))
            report.changedObjects += 1
            report.changedFields += winners.count + embedded.changed
        }
    }

    func addLearnedType(_ name: String) { report.learnedTypes.insert(name) }

    /// Removes the objects that left this file's view
    /// (``ChangeEntry/leavesView``): deleted without a delete rule, as a
    /// peer's delete is, and their tombstones dropped at once, so that no
    /// peer hears of a delete (they live on the hub and on other devices).
    /// An object that holds a change of this file its peers have not all
    /// acknowledged stays, until it is sent.
    private func remove(
        _ leaving: [(entry: ChangeEntry, table: ObjectTable)], _ content: ChangesetContent, origins: [UInt32]
    ) throws {
        let acknowledged = try DatabaseSync.acknowledgedByAllPeers(log)
        var dropped: [TypeID: [[UInt8]]] = [:]
        for (entry, table) in leaving {
            keyWriter.removeAll()
            guard let keyField = table.primaryKey,
                KeyCodec.appendPrimaryKey(entry.key, type: keyField.type, to: keyWriter)
            else { continue }
            let key = keyWriter.bytes
            guard let row = try key.withUnsafeBytes({ try log.row(table.type.id, $0) }), row.isLive else { continue }
            // A change of this file that its peers may not have yet.
            if row.seq > acknowledged,
                ([row.base] + row.exceptions.map(\.clock)).contains(where: {
                    $0.stamp.origin == SyncLog.localOrigin && !$0.stamp.isNone && $0.seq > acknowledged
                })
            {
                report.keptLeavingObjects += 1
                continue
            }
            var delete = entry
            delete.causalLength = row.causalLength + 1
            let deleted = report.deletedObjects
            try merge(delete, table, content, origins: origins) { _ in .skipped }
            guard report.deletedObjects > deleted else { continue }
            report.deletedObjects = deleted
            report.leftObjects += 1
            dropped[table.type.id, default: []].append(key)
        }
        for (type, keys) in dropped { try log.dropTombstones(of: type, keys: keys) }
    }

    /// Whether `a` is a later write than `b`: by time, then by site.
    func isAbove(_ a: LocalStamp, _ b: LocalStamp) throws -> Bool {
        if a.time != b.time { return a.time > b.time }
        if a.origin == b.origin { return false }
        return try log.site(at: a.origin) > log.site(at: b.origin)
    }

    /// Writes the object's record: the stored fields (none for a new life)
    /// with the ``winners`` and the `embedded` fields over them, links
    /// materialized (an absent target's register is kept in the shadow
    /// database), through the engine's one write, which stores `clock` (the
    /// merged clock row) through sync capture and moves index entries and
    /// backlinks.
    private func write(
        _ table: ObjectTable, key: UnsafeRawBufferPointer, keyValue: Value, stored: RecordView?, newLife: Bool,
        embedded: [PropertyID: [UInt8]], version: UInt64, clock: ChangeOrigin
    ) throws {
        overrides.removeAll()
        for (id, bytes) in embedded { overrides.set(id, .encoded(bytes)) }
        // The key, whether the entry carries its field or not (it carries
        // the fields changed since the receiver's cursor): the record holds it.
        if let keyField = table.primaryKey { overrides.set(keyField.id, .value(keyValue.coerced(to: keyField.type))) }
        for winner in winners {
            let value = winner.value
            switch winner.target {
            case .declared(let field):
                let coerced = value.coerced(to: field.type)
                guard coerced.fits(field.type, optional: field.isOptional || field.isLink) else {
                    throw notFitting(value, "\(table.name).\(field.name)")
                }
                guard field.isLink else {
                    overrides.set(field.id, .value(coerced))
                    continue
                }
                let register = SyncLog.registerKey(table.type.id, field.id, key)
                let (materialized, absent) = try engine.materialize(coerced, field)
                if absent.isEmpty {
                    try log.dropShadow(register)
                } else {
                    try log.keepShadow(register, value: coerced, absent: absent)
                }
                overrides.set(field.id, .value(materialized))
            case .kept(let id):
                overrides.set(id, .value(value))
            case .embedded, .inside, .skipped:
                continue
            }
        }
        if newLife {
            // A new life: an earlier life's registers kept for absent
            // targets must not return when those targets come.
            for field in table.linkFields where !overrides.contains(field.id) {
                try log.dropShadow(SyncLog.registerKey(table.type.id, field.id, key))
            }
        }
        let base = newLife ? nil : stored
        let encoder = engine.encoder
        encoder.key.removeAll()
        encoder.key.append(contentsOf: key)
        try encoder.encode(
            table: table, schemaVersion: max(version, base?.effectiveSchemaVersion ?? 0), base: base,
            overrides: overrides)
        try engine.write(table, encoder, over: stored, origin: clock)
    }

    /// Deletes an object a peer deleted: its record, index entries and
    /// backlinks, storing `clock` (its tombstone) through sync capture; the
    /// links to it become null (their registers kept).
    private func deleteWithoutRules(_ table: ObjectTable, _ key: UnsafeRawBufferPointer, clock: ChangeOrigin) throws {
        let target = Array(key)
        for (holderTable, field) in engine.links.incoming[table.name] ?? [] {
            for holder in try engine.linkingKeys(field, to: target) {
                try holder.withUnsafeBytes { holderKey in
                    guard let stored = try engine.storedView(holderTable, key: holderKey),
                        let keyField = holderTable.primaryKey,
                        let holderValue = try? KeyCodec.decodeKey(holderKey, type: keyField.type)
                    else { return }
                    let register = SyncLog.registerKey(holderTable.type.id, field.id, holderKey)
                    let value = try log.shadowRegister(register) ?? holderTable.value(at: field.position, in: stored)
                    let (materialized, absent) = try engine.materialize(
                        value, field, excluding: (table.type.id, target))
                    try engine.update(holderTable, key: holderValue, [field.name: materialized], origin: .materialized)
                    try log.keepShadow(register, value: value, absent: absent)
                }
            }
        }
        _ = try engine.deleteRecordAndEntries(table, key: target, origin: clock)
    }
}

/// What applying a changeset changed in the file that applied it.
///
/// It counts effects, not the changeset's entries: an entry that changes
/// nothing here (a change the file already has, such as its own change
/// coming back from a hub or a peer, or one that loses to a newer value
/// the file holds) counts in no field. ``DatabaseSync/apply(_:)``,
/// ``DatabaseSync/exchange(with:)`` (both ways, in
/// ``SyncExchangeReport``) and a hub's ``SyncHubReport/received`` return
/// it; ``isEmpty`` says whether it changed and learned nothing.
///
/// ```swift
/// let report = try db.sync.apply(changeset)
/// print("\(report.changedObjects) objects changed, \(report.deletedObjects) deleted")
/// ```
public struct SyncApplyReport: Sendable, Equatable {
    /// The objects inserted or changed: those for which at least one of
    /// the changeset's field values won over the file's (or which the file
    /// did not have, or had deleted before a newer insert).
    public internal(set) var changedObjects = 0
    /// The field values written, over all ``changedObjects``: the
    /// changeset's values that won, each field of an embedded object
    /// counted on its own.
    public internal(set) var changedFields = 0
    /// The objects deleted: a delete newer than the object's life here.
    /// No delete rule runs (the sender already applied its cascades).
    public internal(set) var deletedObjects = 0
    /// The object types learned: types the app does not declare, which the
    /// file now stores as kept types (``SyncStatus/keptTypes``) and sends
    /// on, until an app version declares them.
    public internal(set) var learnedTypes: Set<String> = []
    /// The fields learned, as `Type.property`: properties the app does not
    /// declare on a type it declares, now kept (``SyncStatus/keptFields``).
    public internal(set) var learnedFields: Set<String> = []
    /// The fields not stored, as `Type.property: descriptor`: fields the
    /// app does not declare and the file cannot keep (a list of embedded
    /// objects, whose objects' fields are not named), so their values were
    /// dropped here. An app version that declares them receives them.
    public internal(set) var skippedFields: Set<String> = []
    /// The objects removed because they left this file's view on a hub:
    /// its sync rules or this file's subscriptions no longer select them
    /// (another device moved them elsewhere), or a subscription that
    /// selected them was removed (``DatabaseSync/unsubscribe(_:)``). No
    /// peer hears of a delete: they live on.
    public internal(set) var leftObjects = 0
    /// The objects that left this file's view but stay, because they hold
    /// changes made here that its peers have not all acknowledged: they
    /// are sent first (a hub whose rules refuse them says so, in
    /// ``SyncHubReport/refusedObjects``).
    public internal(set) var keptLeavingObjects = 0
}
