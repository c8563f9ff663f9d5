import Foundation

/// What one transaction reads and writes objects through: the open tables
/// by name, zero-copy object views over the map, and the table engine that
/// writes.
@usableFromInline
final class ObjectContext {
    let lmdb: LMDBTransaction
    var tables: [String: ObjectTable] {
        didSet {
            bindings.removeAll()
            lastBinding = nil
            lastTable = nil
            engine.links = ObjectContext.linkGraph(tables)
        }
    }
    /// Model bindings made so far, by model type; reset when ``tables`` changes.
    private var bindings: [ObjectIdentifier: ModelBinding] = [:]
    private var lastBinding: ModelBinding?
    let path: String
    /// Writes every record, index entry and counter of this transaction.
    let engine: TableEngine
    let lifetime = TransactionLifetime()
    /// Whether objects get copies of their bytes (write transactions, where
    /// a later write may move the bytes a view points at).
    let copiesObjects: Bool

    /// - Parameters:
    ///   - writingSchemaVersion: Stamped on every record this transaction
    ///     writes: the app's schema version.
    ///   - fieldCapacity: The widest table this context may see, when
    ///     tables are added later; by default the widest of `tables`.
    ///   - subscribers: Told of every write of the transaction, besides
    ///     observation's recorder (see ``TableEngine``).
    ///   - sync: Sync capture, on a sync-enabled file: told of every write
    ///     too, and what a merge of a peer's changes writes clock rows through.
    init(
        lmdb: LMDBTransaction, tables: [String: ObjectTable], meta: DatabaseHandle, path: String,
        writingSchemaVersion: UInt64, fieldCapacity: Int? = nil, subscribers: [any ChangeSubscriber] = [],
        sync: SyncRecorder? = nil
    ) {
        self.lmdb = lmdb
        self.tables = tables
        self.path = path
        self.copiesObjects = !lmdb.isReadOnly
        self.engine = TableEngine(
            lmdb: lmdb, meta: meta, path: path, writingSchemaVersion: writingSchemaVersion,
            fieldCapacity: fieldCapacity ?? tables.values.map(\.fields.count).max() ?? 0, subscribers: subscribers,
            sync: sync)
        engine.links = ObjectContext.linkGraph(tables)
    }

    /// The links between `tables`; the shared empty graph when no table
    /// holds a link, so that a schema without links pays nothing.
    private static func linkGraph(_ tables: [String: ObjectTable]) -> LinkGraph {
        tables.values.contains { !$0.linkFields.isEmpty } ? LinkGraph(tables: tables) : .empty
    }

    /// The schema version stamped on the records this transaction writes.
    var writingSchemaVersion: UInt64 { engine.writingSchemaVersion }

    /// Marks the transaction's zero-copy objects as no longer readable.
    func end() {
        lifetime.end()
    }

    /// The table last looked up: most transactions write or read one type
    /// many times, and comparing a name with the same literal is far cheaper
    /// than hashing it.
    private var lastTable: ObjectTable?

    @inline(__always)
    func table(_ name: String) throws -> ObjectTable {
        if let lastTable, lastTable.name == name { return lastTable }
        guard let table = tables[name] else {
            let known = tables.keys.sorted().joined(separator: ", ")
            throw StrataError.unknownType(name, known: known, path: path)
        }
        lastTable = table
        return table
    }

    /// How `model` reads and writes its table in this transaction: worked
    /// out on first use, then reused.
    @inline(__always)
    func binding<M: Model>(_ model: M.Type) throws -> ModelBinding {
        if let lastBinding, lastBinding.model == ObjectIdentifier(M.self) { return lastBinding }
        let binding: ModelBinding
        if let known = bindings[ObjectIdentifier(M.self)] {
            binding = known
        } else {
            binding = try ModelBinding(M.self, table: table(M.schema.name))
            bindings[ObjectIdentifier(M.self)] = binding
        }
        lastBinding = binding
        return binding
    }

    // MARK: Reading

    /// Makes an object over a record, validating the record first.
    @inline(__always)
    func object(table: ObjectTable, key: UnsafeRawBufferPointer, record: UnsafeRawBufferPointer) throws -> DynamicObject
    {
        object(table: table, key: key, view: try table.validatedView(key: key, record: record))
    }

    /// The object of a validated record: a view of the mapped bytes in a
    /// read transaction, of a copy in a write transaction.
    @inline(__always)
    func object(table: ObjectTable, key: UnsafeRawBufferPointer, view: RecordView) -> DynamicObject {
        guard copiesObjects else {
            return DynamicObject(table: table, key: key, record: view, lifetime: lifetime.token, copy: nil)
        }
        let copy = CopiedBytes(key: key, record: view.bytes)
        // The copy has the same layout, so the validated view applies to it.
        return DynamicObject(
            table: table, key: copy.key, record: view.rebased(onto: copy.record), lifetime: lifetime.token, copy: copy)
    }

    func object(_ typeName: String, key: Value) throws -> DynamicObject? {
        let table = try table(typeName)
        let keyEncoder = engine.encoder
        // A key too long to store: no object has it.
        guard try keyEncoder.encodeLookupKey(key, table: table) else { return nil }
        // A cursor rather than mdb_get: it returns LMDB's own copy of the key,
        // which stays valid for the whole transaction.
        return try keyEncoder.key.withUnsafeBytes { keyBytes in
            try lmdb.withLookupCursor(table.records) { cursor in
                guard let entry = try cursor.seek(exactly: keyBytes) else { return nil }
                return try object(table: table, key: entry.key, record: entry.value)
            }
        }
    }

    /// The position of `source`'s link property `property` (a link or a
    /// list of links) and the record key of the object with key `key` it
    /// would link to: what a query needs to walk that object's entries in
    /// the property's backlinks (``QueryPlan/keepLinking(to:through:)``).
    func backlinks(of source: ObjectTable, through property: String, to key: Value) throws -> (
        position: Int, target: [UInt8]
    ) {
        let field = try source.field(named: property)
        guard field.isLink, let targetName = field.target, field.backlinks != nil else {
            throw StrataError.notALink(typeName: source.name, property: property, toOne: false, path: path)
        }
        let target = try table(targetName)
        guard let targetKey = engine.recordKey(key.linkKey ?? key, of: target) else {
            throw StrataError.invalidValue(
                "\(key) cannot be the key of a '\(targetName)' (in \(path)): its key is \(target.primaryKey.map { "\($0.type)" } ?? "a positive int (automatic id)").",
                typeName: targetName, key: "\(key)", path: path)
        }
        return (field.position, targetKey)
    }

    /// The object that the to-one link `property` of `object` links to,
    /// or nil when the link is null.
    func linkedObject(_ object: DynamicObject, _ property: String) throws -> DynamicObject? {
        let field = try object.table.field(named: property)
        guard field.type == .link, let target = field.target else {
            throw StrataError.notALink(typeName: object.table.name, property: property, toOne: true, path: path)
        }
        guard let key = object[property].linkKey else { return nil }
        return try self.object(target, key: key)
    }

    // MARK: Writing, by type name

    func insert(_ typeName: String, _ values: [String: Value]) throws -> Value {
        try engine.insert(table(typeName), values)
    }

    func upsert(_ typeName: String, _ values: [String: Value]) throws -> Value {
        try engine.upsert(table(typeName), values)
    }

    func update(_ typeName: String, key: Value, _ changes: [String: Value]) throws {
        try engine.update(table(typeName), key: key, changes)
    }

    func delete(_ typeName: String, key: Value) throws -> Bool {
        try engine.delete(table(typeName), key: key)
    }

    func deleteAll(_ typeName: String) throws {
        try engine.deleteAll(table(typeName))
    }
}
