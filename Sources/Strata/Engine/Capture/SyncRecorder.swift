/// Sync capture: the subscriber every write transaction of a sync-enabled
/// file has. For each object the engine writes, it stamps the fields whose
/// bytes changed with the transaction's stamp (an insert: every declared
/// field), moves the object into the change log's run of this change, and
/// turns a delete into a tombstone; all in the transaction that writes the
/// records.
///
/// Fields this app does not declare (kept and learned ones) are never
/// stamped by it: their bytes are carried over untouched, and a new
/// object's empty values for them carry no stamp, so they lose to any
/// peer's value.
final class SyncRecorder: ChangeSubscriber {
    let log: SyncLog
    /// Objects that appeared in this transaction while registers named
    /// them as absent targets: their holders are restored before commit.
    private var appeared: [(TypeID, [UInt8])] = []
    /// Whether any register names an absent target (read once).
    private lazy var hasDangling: Bool = (try? log.lmdb.entryCount(log.handles.dangling)).map { $0 > 0 } ?? true

    init(log: SyncLog) {
        self.log = log
    }

    /// Notes an object that now exists, for ``restoreLinks(in:)``.
    func objectAppeared(_ type: TypeID, _ key: UnsafeRawBufferPointer) {
        // Read once, so also ask the log: a register of this transaction
        // may name an object that appears later in it.
        if hasDangling || log.addedDangling { appeared.append((type, Array(key))) }
    }

    func transactionWillCommit(_ engine: TableEngine) throws {
        try restoreLinks(in: engine)
    }

    /// Writes again, from their registers, the link fields that name the
    /// objects that appeared: a link to one is stored again, a list of
    /// links holds it again. Not stamped: the registers did not change.
    func restoreLinks(in engine: TableEngine) throws {
        guard !appeared.isEmpty else { return }
        let targets = appeared
        appeared = []
        let tables = Dictionary(engine.links.tables.values.map { ($0.type.id, $0) }, uniquingKeysWith: { a, _ in a })
        for (type, key) in targets {
            for register in try log.takeDangling(type, key) {
                guard let (holderType, fieldID, holderKey) = SyncLog.parseRegisterKey(register),
                    let table = tables[holderType], let field = table.fields.first(where: { $0.id == fieldID }),
                    let keyField = table.primaryKey, let value = try log.shadowRegister(register)
                else { continue }
                guard try holderKey.withUnsafeBytes({ try engine.lmdb.get(table.records, $0) }) != nil,
                    let holder = holderKey.withUnsafeBytes({ try? KeyCodec.decodeKey($0, type: keyField.type) })
                else {
                    try log.dropShadow(register)
                    continue
                }
                let (stored, absent) = try engine.materialize(value, field)
                try engine.update(table, key: holder, [field.name: stored], origin: .materialized)
                if absent.isEmpty {
                    try log.dropShadow(register)
                } else {
                    try log.keepShadow(register, value: value, absent: absent)
                }
            }
        }
    }

    /// Stamps the app's changes; stores a merged peer change's clock row
    /// as the merger computed it; leaves links materialized from the
    /// registers as they are.
    func objectChanged(_ change: ChangeRecord) throws {
        switch change.origin {
        case .local:
            try stamp(change)
        case .peer(let row, let previousSeq):
            try log.store(row, previousSeq: previousSeq, change.table.type.id, change.key)
            if change.after != nil { objectAppeared(change.table.type.id, change.key) }
        case .materialized:
            break
        }
    }

    /// Stamps one change of the app's.
    private func stamp(_ change: ChangeRecord) throws {
        if change.kind == .replaced, try restamp(change) { return }
        let table = change.table
        let type = table.type.id
        // A new object past every clock row has none: no search.
        let isNew = try change.kind == .inserted && log.isBeyondClocks(type, change.key)
        let existing = isNew ? nil : try log.row(type, change.key)
        let (stamp, seq) = try log.change()
        let version = log.writerVersion
        switch change.kind {
        case .inserted:
            var row = ClockRow.written(table, stamp: stamp, seq: seq, writerVersion: version)
            if let existing {
                // A key this file knows: a deliberate re-insert of a deleted
                // object (its causal length rises to odd), or a record that
                // came back under a live row (kept as it is).
                row.causalLength = existing.isLive ? existing.causalLength : existing.causalLength + 1
                row.maxWriterVersion = max(existing.maxWriterVersion, version)
                // The links the record holds now are the registers: an
                // earlier life's kept for absent targets must not return.
                for field in table.linkFields {
                    try log.dropShadow(SyncLog.registerKey(type, field.id, change.key))
                }
            }
            try log.store(row, previousSeq: existing?.seq, type, change.key, beyondClocks: isNew)
            objectAppeared(type, change.key)
        case .replaced:
            let existingSeq = existing?.seq
            // Consumed: the row's lists then have one owner, and change in place.
            guard var row = consume existing, row.isLive else {
                // An object written before its row existed: stamped whole,
                // once a field changed.
                var changes = false
                change.forEachChangedField { id, inBefore in
                    changes = changes || Self.fieldChange(id, inBefore: inBefore, change) != nil
                }
                guard changes else { return }
                let row = ClockRow.written(table, stamp: stamp, seq: seq, writerVersion: version)
                try log.store(row, previousSeq: existingSeq, type, change.key)
                return
            }
            let previous = row.seq
            let clock = FieldClock(stamp: stamp, seq: seq)
            var (stamped, unstamped) = (false, false)
            // Declared embedded objects whose bytes changed: stamped per path.
            var embedded: [ObjectTable.Field] = []
            // The fields are stamped as the records are compared: no list
            // of them is made (sync capture runs for every write).
            try change.forEachChangedField { id, inBefore in
                switch Self.fieldChange(id, inBefore: inBefore, change) {
                case .unwritten:
                    row.set(id, .none)
                    unstamped = true
                case .embedded(let field):
                    embedded.append(field)
                    stamped = true
                case .written(let field):
                    row.set(id, clock)
                    stamped = true
                    // The app wrote this link: its register is the record's now.
                    if field.isLink { try log.dropShadow(SyncLog.registerKey(type, id, change.key)) }
                case nil:
                    break
                }
            }
            guard stamped else {
                if unstamped { try log.store(row, previousSeq: previous, type, change.key) }
                return
            }
            for field in embedded {
                Self.recordEmbedded(
                    ClockPath(field.id), field.embedded!, before: change.before.flatMap { .init(field, in: $0) },
                    after: change.after.flatMap { .init(field, in: $0) }, row: &row, clock: clock)
            }
            row.seq = seq
            row.maxWriterVersion = max(row.maxWriterVersion, version)
            // Rebased when the listed fields outnumber the others.
            if let after = change.after, 2 * row.exceptions.count > after.fieldCount {
                row.rebase(over: Self.paths(in: after, table))
            }
            try log.store(row, previousSeq: previous, type, change.key)
        case .deleted:
            try tombstone(existing, stamp: stamp, seq: seq, type, change.key)
        }
    }

    /// Stamps a replacement that wrote only fields of the record itself
    /// (no embedded object, no field filled in unwritten) straight in the
    /// stored clock row (``SyncLog/restamp(_:_:fields:clock:fieldCount:)``);
    /// false, having stamped nothing, when the change or the row needs
    /// ``stamp(_:)``'s decoded row.
    private func restamp(_ change: ChangeRecord) throws -> Bool {
        guard let before = change.before, let after = change.after else { return false }
        return try withUnsafeTemporaryAllocation(of: PropertyID.self, capacity: before.fieldCount + after.fieldCount) {
            ids in
            var (count, plain, links) = (0, true, false)
            change.forEachChangedField { id, inBefore in
                switch Self.fieldChange(id, inBefore: inBefore, change) {
                case .written(let field):
                    ids.initializeElement(at: count, to: id)
                    count += 1
                    links = links || field.isLink
                case .unwritten, .embedded:
                    plain = false
                case nil:
                    break
                }
            }
            guard plain, count > 0 else { return false }
            let type = change.table.type.id
            let (stamp, seq) = try log.change()
            let written = UnsafeBufferPointer(rebasing: ids[..<count])
            guard
                try log.restamp(
                    type, change.key, fields: written, clock: FieldClock(stamp: stamp, seq: seq),
                    fieldCount: after.fieldCount)
            else { return false }
            // The app wrote these links: their registers are the records' now.
            if links {
                for id in written where change.table.linkFields.contains(where: { $0.id == id }) {
                    try log.dropShadow(SyncLog.registerKey(type, id, change.key))
                }
            }
            return true
        }
    }

    /// How a write changed a field the records compare different.
    private enum FieldEdit {
        /// A field the old record lacked, filled in with the value it read
        /// as (a kept field's empty value, a declared one's default): left
        /// unstamped, so that any peer's write beats it.
        case unwritten
        /// A declared embedded object: stamped per path.
        case embedded(ObjectTable.Field)
        /// A declared field the app wrote.
        case written(ObjectTable.Field)
    }

    /// How the replacement `change` changed field `id`, which the old
    /// record holds when `inBefore`; nil for a field this app does not
    /// declare (its bytes are carried over, never stamped by it).
    @inline(__always)
    private static func fieldChange(_ id: PropertyID, inBefore: Bool, _ change: ChangeRecord) -> FieldEdit? {
        let table = change.table
        let field = table.shape.position(ofField: id).map { table.fields[$0] }
        if !inBefore, let after = change.after,
            field.map({ table.value(at: $0.position, in: after) == $0.valueWhenAbsent }) ?? true
        {
            return .unwritten
        }
        guard let field else { return nil }
        return field.type == .embedded && field.embedded != nil ? .embedded(field) : .written(field)
    }

    func tableWillEmpty(_ table: ObjectTable, in engine: TableEngine) throws {
        let (stamp, seq) = try log.change()
        for key in try engine.recordKeys(of: table) {
            try key.withUnsafeBytes { key in
                try tombstone(try log.row(table.type.id, key), stamp: stamp, seq: seq, table.type.id, key)
            }
        }
    }

    /// Marks the object deleted: its causal length rises to even, and every
    /// field takes the delete's stamp.
    private func tombstone(
        _ existing: ClockRow?, stamp: LocalStamp, seq: UInt64, _ type: TypeID, _ key: UnsafeRawBufferPointer
    ) throws {
        var row = existing ?? ClockRow(causalLength: 1, seq: seq, maxWriterVersion: log.writerVersion, base: stamp)
        guard row.isLive else { return }
        let previous = existing?.seq
        row.causalLength += 1
        row.seq = seq
        row.stampAll(FieldClock(stamp: stamp, seq: seq))
        row.maxWriterVersion = max(row.maxWriterVersion, log.writerVersion)
        try log.store(row, previousSeq: previous, type, key)
    }
}
