/// The one engine that writes object tables: records, their indexes and the
/// automatic-id counters, with every value validated on the way in.
///
/// Ordinary write transactions, migrations (objects the closure creates,
/// records it rewrites, index builds), `verify` and `compact` all go
/// through it, so that a record and its index entries can only be written
/// one way. One engine serves one LMDB transaction.
final class TableEngine {
    let lmdb: LMDBTransaction
    let meta: DatabaseHandle
    /// The database file, for messages.
    let path: String
    /// The schema version stamped on every record this engine writes: the
    /// app's, which in synced mode may differ from the file's.
    let writingSchemaVersion: UInt64

    /// Made on first use: most read transactions never encode anything. A
    /// copy shares its buffers, so a method takes a local copy, uses it and
    /// needs not put it back.
    private(set) lazy var encoder = ObjectEncoder(fieldCapacity: fieldCapacity)
    private let fieldCapacity: Int
    /// Last automatic id per type, written back by ``flush()``.
    private var sequences: [TypeID: (table: ObjectTable, last: UInt64)] = [:]
    /// The largest key known to be in the last table written, so that keys
    /// written in ascending order (automatic ids, sequential primary keys)
    /// go in with `MDB_APPEND` instead of a search of the tree.
    /// Both live behind `let`s, in raw memory: as stored `var`s of this
    /// class, each access paid a runtime exclusivity check
    /// (`swift_beginAccess`), and the key array its uniqueness checks, 500
    /// instructions per insert in all (a tenth of a typed insert).
    let frontierTable: UnsafeMutablePointer<ObjectTable?>
    let frontierKey = ByteWriter(capacity: 64)
    /// The buffers and cursors of index writes, made by the first write
    /// that keeps index entries: most transactions only read, and should
    /// not pay for them. In raw memory like the frontier: a `lazy var`
    /// paid an exclusivity check on every indexed write.
    var indexScratch: IndexScratch {
        if let scratch = indexScratchStorage.pointee { return scratch }
        let scratch = IndexScratch()
        indexScratchStorage.pointee = scratch
        return scratch
    }
    private let indexScratchStorage: UnsafeMutablePointer<IndexScratch?>
    /// Reported to ``Instrumentation`` when the transaction commits. In
    /// raw memory, like the frontier: as a stored `var`, every counted
    /// write paid an exclusivity check.
    var tally: Instrumentation.Tally {
        unsafeAddress { UnsafePointer(tallyStorage) }
        unsafeMutableAddress { tallyStorage }
    }
    private let tallyStorage: UnsafeMutablePointer<Instrumentation.Tally>
    /// Observation's subscriber, which notes the keys this transaction
    /// writes and deletes for the file's commit feed; made only while
    /// someone in the process observes the file.
    let feedRecorder: CommitFeedRecorder?
    /// Everyone told of each write (``ChangeSubscriber``): the feed
    /// recorder and those the transaction was given.
    let subscribers: [any ChangeSubscriber]
    /// Sync capture, on a sync-enabled file (one of ``subscribers``).
    let sync: SyncRecorder?
    /// Whether ``subscribers`` is not empty: a `let`, so that a write with
    /// no subscriber pays one test of a constant and reads nothing more.
    let notifies: Bool
    /// The tables that link to each other, for link checks, backlinks and
    /// delete rules; set by the transaction's context.
    var links = LinkGraph.empty

    /// How many times a table was emptied in this transaction. Emptying a
    /// table (`mdb_drop`) unpositions every cursor on it, and the next step
    /// of such a cursor starts over at the first entry, so a walk in
    /// progress stops when this changes.
    var tablesEmptied = 0

    /// - Parameters:
    ///   - fieldCapacity: The largest number of fields of any table the
    ///     engine will write.
    ///   - subscribers: Told of every write, besides the commit feed's
    ///     recorder, which the engine makes itself while the file is
    ///     observed, unless `recordsForFeed` is false (a transaction whose
    ///     commit is published as unknown, like `compact`'s, which writes
    ///     every object).
    ///   - sync: Sync capture, on a sync-enabled file: a subscriber too.
    init(
        lmdb: LMDBTransaction, meta: DatabaseHandle, path: String, writingSchemaVersion: UInt64, fieldCapacity: Int,
        subscribers: [any ChangeSubscriber] = [], recordsForFeed: Bool = true, sync: SyncRecorder? = nil
    ) {
        self.lmdb = lmdb
        self.meta = meta
        self.path = path
        self.writingSchemaVersion = writingSchemaVersion
        self.fieldCapacity = fieldCapacity
        let recorder =
            lmdb.isReadOnly || !recordsForFeed || !lmdb.environment.feed.isWatched ? nil : CommitFeedRecorder()
        feedRecorder = recorder
        self.subscribers = (recorder.map { [$0] } ?? []) + subscribers + (sync.map { [$0] } ?? [])
        self.sync = sync
        notifies = !self.subscribers.isEmpty
        frontierTable = .allocate(capacity: 1)
        indexScratchStorage = .allocate(capacity: 1)
        indexScratchStorage.initialize(to: nil)
        frontierTable.initialize(to: nil)
        tallyStorage = .allocate(capacity: 1)
        tallyStorage.initialize(to: Instrumentation.Tally())
    }

    deinit {
        frontierTable.deinitialize(count: 1)
        indexScratchStorage.deinitialize(count: 1)
        indexScratchStorage.deallocate()
        frontierTable.deallocate()
        tallyStorage.deinitialize(count: 1)
        tallyStorage.deallocate()
    }

    // MARK: Objects

    /// Inserts a new object; returns its primary key or automatic id.
    func insert(_ table: ObjectTable, _ values: [String: Value]) throws -> Value {
        let encoder = self.encoder
        try encoder.match(values, table: table)
        try insert(table) { encoder.given($0, from: values) }
        return encoder.decodedKey(table)
    }

    /// Where the record of an insert or a replacement comes from.
    enum RecordSource {
        /// Encoded by the engine from the values `given` returns.
        case values
        /// Already in ``encoder``, record and primary key, written by a
        /// model's binding (``ModelBinding/encodeRecord(_:into:schemaVersion:)``);
        /// `given` still answers for the primary key, for messages.
        /// `fieldStarts`: where the record's first fields start, packed as
        /// ``RecordView/fieldStarts`` (0: unknown).
        case encoded(fieldStarts: UInt64)

        var isEncoded: Bool { if case .encoded = self { true } else { false } }
    }

    /// Inserts a new object whose values `given` returns by field (nil: not
    /// given, so the default), stamped with `schemaVersion` (by default the
    /// version this transaction writes). The key is left in ``encoder``.
    @inline(__always)
    func insert(
        _ table: ObjectTable, schemaVersion: UInt64? = nil, record: RecordSource = .values,
        _ given: (ObjectTable.Field) -> Value?
    ) throws {
        let encoder = self.encoder
        switch record {
        case .values:
            try encoder.encode(
                table: table, schemaVersion: schemaVersion ?? writingSchemaVersion, automaticKey: newID(table),
                base: nil
            ) { given(table.fields[$0]).map(ObjectEncoder.FieldSource.value) ?? .absent }
        case .encoded where table.primaryKey == nil:
            encoder.key.removeAll()
            KeyCodec.appendAutomaticID(try nextAutomaticID(table), to: encoder.key)
            if !table.keptFields.isEmpty { encoder.spliceUndeclared(table, base: nil) }
        case .encoded:
            if !table.keptFields.isEmpty { encoder.spliceUndeclared(table, base: nil) }
        }
        let starts = fieldStarts(record, spliced: !table.keptFields.isEmpty)
        guard try write(table, encoder, over: nil, placement: .newKey, fieldStarts: starts) else {
            let key = encoder.decodedKey(table)
            if table.primaryKey == nil {
                throw StrataError.corruptCounter(
                    typeName: table.name, path: path, problem: "behind its objects: id \(key) is taken")
            }
            throw StrataError.duplicatePrimaryKey(typeName: table.name, key: "\(key)", path: path)
        }
    }

    /// Where the first fields of the record in ``encoder`` start, when
    /// `record` says and no fields were spliced into it (`spliced`).
    @inline(__always)
    private func fieldStarts(_ record: RecordSource, spliced: Bool) -> UInt64 {
        guard case .encoded(let starts) = record, !spliced else { return 0 }
        return starts
    }

    /// Replaces the object with the same primary key, or inserts it.
    func upsert(_ table: ObjectTable, _ values: [String: Value]) throws -> Value {
        let encoder = self.encoder
        try encoder.match(values, table: table)
        try replace(table, requireExisting: false) { encoder.given($0, from: values) }
        return encoder.decodedKey(table)
    }

    /// Replaces every property of the object with the primary key that
    /// `given` returns, or inserts it unless `requireExisting`. The key is
    /// left in ``encoder``.
    ///
    /// The stored object, if any, is read once: for its index entries and,
    /// in synced mode, for the properties this app's schema does not
    /// declare, which the new record keeps as they are stored.
    func replace(
        _ table: ObjectTable, requireExisting: Bool, record: RecordSource = .values,
        _ given: (ObjectTable.Field) -> Value?
    ) throws {
        guard let primaryKey = table.primaryKey else {
            precondition(!requireExisting, "An update of a type without a primary key goes by its id")
            return try insert(table, record: record, given)
        }
        let encoder = self.encoder
        let needsStored =
            requireExisting || !table.indexedFields.isEmpty || !table.keptFields.isEmpty || !table.linkFields.isEmpty
            || table.keepsEmbeddedFields || table.preservesUnknownFields || notifies
        // The key alone first: when it cannot be encoded, the full encoding
        // below throws the error that explains why.
        if needsStored, let key = given(primaryKey) ?? primaryKey.defaultValue,
            record.isEncoded || (try? encoder.encodeKey(key, table: table)) != nil
        {
            let keyBytes = encoder.key.bytes
            return try keyBytes.withUnsafeBytes { keyBytes in
                let stored = try storedView(table, key: keyBytes)
                if requireExisting && stored == nil {
                    throw StrataError.objectNotFound(typeName: table.name, key: "\(key)", path: path)
                }
                switch record {
                case .values:
                    try encoder.encode(
                        table: table, schemaVersion: writingSchemaVersion, automaticKey: .keep, base: stored
                    ) { given(table.fields[$0]).map(ObjectEncoder.FieldSource.value) ?? .absent }
                case .encoded where !table.keptFields.isEmpty || table.preservesUnknownFields:
                    encoder.spliceUndeclared(table, base: stored)
                case .encoded:
                    break
                }
                let spliced = !table.keptFields.isEmpty || table.preservesUnknownFields
                try write(table, encoder, over: stored, fieldStarts: fieldStarts(record, spliced: spliced))
            }
        }
        switch record {
        case .values:
            try encoder.encode(table: table, schemaVersion: writingSchemaVersion, automaticKey: .keep, base: nil) {
                given(table.fields[$0]).map(ObjectEncoder.FieldSource.value) ?? .absent
            }
        case .encoded where !table.keptFields.isEmpty:
            encoder.spliceUndeclared(table, base: nil)
        case .encoded:
            break
        }
        // Nothing to keep up (no index, link, kept field or subscriber):
        // the record overwrites whatever the key holds, unread.
        try write(table, encoder, over: nil, fieldStarts: fieldStarts(record, spliced: !table.keptFields.isEmpty))
    }

    /// Changes some properties of an existing object; `origin` says who
    /// (the app, or sync materializing links from its registers).
    func update(
        _ table: ObjectTable, key: Value, _ changes: [String: Value], origin: ChangeOrigin = .local
    ) throws {
        let encoder = self.encoder
        try encoder.match(changes, table: table)
        try encoder.encodeKey(key, table: table)
        let keyBytes = encoder.key.bytes
        try keyBytes.withUnsafeBytes { keyBytes in
            guard let stored = try storedView(table, key: keyBytes) else {
                throw StrataError.objectNotFound(typeName: table.name, key: "\(key)", path: path)
            }
            if let primaryKey = table.primaryKey, let value = encoder.given(primaryKey, from: changes),
                !value.coerced(to: primaryKey.type).isStored(
                    identicallyTo: table.value(at: primaryKey.position, in: stored))
            {
                let name = primaryKey.name
                guard value.coerced(to: primaryKey.type).fits(primaryKey.type, optional: false) else {
                    throw StrataError.primaryKeyDoesNotFit(
                        typeName: table.name, property: name, expected: "\(primaryKey.type)", given: "\(value)",
                        path: path)
                }
                throw StrataError.invalidValue(
                    "The primary key '\(table.name).\(name)' cannot be changed by an update (in \(path)).",
                    typeName: table.name, property: name, key: "\(key)",
                    remedy: "Delete the object and insert it with the new key.", path: path)
            }
            // A copy shares the matched names. The key is in the encoder
            // already; the unchanged fields are copied byte for byte.
            let matched = encoder
            try encoder.encode(table: table, schemaVersion: writingSchemaVersion, automaticKey: .keep, base: stored) {
                position in
                matched.given(table.fields[position], from: changes).map(ObjectEncoder.FieldSource.value) ?? .stored
            }
            try write(table, encoder, over: stored, origin: origin)
        }
    }

    /// Deletes one object; returns false when there was none (a key too
    /// long to store names none).
    func delete(_ table: ObjectTable, key: Value) throws -> Bool {
        let encoder = self.encoder
        guard try encoder.encodeLookupKey(key, table: table) else { return false }
        let keyBytes = encoder.key.bytes
        if hasLinks(table) { return try deleteApplyingRules(table, key: keyBytes) }
        return try keyBytes.withUnsafeBytes { keyBytes in
            guard let stored = try storedView(table, key: keyBytes) else { return false }
            return try write(table, key: keyBytes, before: stored, after: nil)
        }
    }

    /// The record keys of every object of `table`, in key order.
    func recordKeys(of table: ObjectTable) throws -> [[UInt8]] {
        var keys: [[UInt8]] = []
        try lmdb.withCursor(table.records) { cursor in
            var entry = try cursor.first()
            while let found = entry {
                keys.append(Array(found.key))
                entry = try cursor.next()
            }
        }
        return keys
    }

    /// Deletes every object of a type, and its index entries. When other
    /// objects link to the type, the delete rules of every link apply, as
    /// for one ``DeletePlan`` of all its objects: a deny from an object
    /// that stays refuses the whole call before anything is deleted.
    func deleteAll(_ table: ObjectTable) throws {
        if links.incoming[table.name] != nil {
            let plan = try deletePlan(try recordKeys(of: table).map { (table, $0) })
            guard plan.refusals.isEmpty else {
                throw StrataError.deleteDenied(
                    typeName: table.name, key: nil, linking: plan.refusalItems, path: path)
            }
            try execute(plan)
            return
        }
        try emptyTable(table)
    }

    /// Empties a table's records, indexes and backlinks, applying no delete
    /// rule. Subscribers hear of it unless `repacking` (`compact`, which
    /// writes every record back and tells them of each).
    func emptyTable(_ table: ObjectTable, repacking: Bool = false) throws {
        try emptyRecords(table, repacking: repacking)
        for field in table.indexedFields { try lmdb.empty(field.index!, delete: false) }
        for field in table.linkFields {
            if let backlinks = field.backlinks { try lmdb.empty(backlinks, delete: false) }
        }
    }

    // MARK: Automatic ids

    /// Where a new object of `table` gets its key: a new automatic id when
    /// it has no primary key (the closure is made only then: it costs an
    /// allocation per object).
    @inline(__always)
    func newID(_ table: ObjectTable) -> ObjectEncoder.AutomaticKey {
        table.primaryKey == nil ? .new { try self.nextAutomaticID(table) } : .keep
    }

    /// The next automatic id of a type without a primary key.
    func nextAutomaticID(_ table: ObjectTable) throws -> UInt64 {
        var last = sequences[table.type.id]?.last
        if last == nil {
            if let bytes = try lmdb.get(meta, table.sequenceKey) {
                guard let stored = FileLayout.counter(bytes) else {
                    throw StrataError.corruptCounter(
                        typeName: table.name, path: path, problem: "damaged (\(bytes.count) bytes instead of 8)")
                }
                last = stored
            } else {
                last = 0
            }
        }
        guard let current = last, current < UInt64(Int64.max) else {
            throw StrataError.corruptCounter(
                typeName: table.name, path: path, problem: "damaged (it is at its maximum)")
        }
        sequences[table.type.id] = (table, current + 1)
        return current + 1
    }

    /// Writes back the automatic-id counters; called before commit.
    func flush() throws {
        for (table, last) in sequences.values {
            try lmdb.put(meta, table.sequenceKey, FileLayout.counterBytes(last))
        }
        sequences.removeAll()
    }

    /// Forgets the counter of a type whose data is deleted.
    func deleteSequence(of type: TypeID) throws {
        sequences[type] = nil
        _ = try lmdb.delete(meta, FileLayout.MetaKey.sequence(type))
    }
}
