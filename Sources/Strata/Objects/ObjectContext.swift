import Foundation

/// The state one transaction needs to read and write objects: the LMDB
/// transaction, the open tables, and reusable encoding buffers.
final class ObjectContext {
    let lmdb: LMDBTransaction
    var tables: [String: ObjectTable]
    let meta: DatabaseHandle
    let path: String
    /// Stamped on every record this transaction writes.
    let schemaVersion: UInt64
    let lifetime = TransactionLifetime()
    /// Whether objects get copies of their bytes (write transactions, where
    /// a later write may move the bytes a view points at).
    let copiesObjects: Bool

    /// Made on first use: most read transactions never encode anything. A
    /// copy shares its buffers, so a method takes a local copy, uses it and
    /// needs not put it back.
    private lazy var encoder = ObjectEncoder(fieldCapacity: fieldCapacity ?? tables.values.map(\.fields.count).max() ?? 0)
    /// The widest table this context may see, when tables are added later.
    private let fieldCapacity: Int?
    /// Last automatic id per type, written back by ``flush()``.
    private var sequences: [UInt32: (table: ObjectTable, last: UInt64)] = [:]
    /// Counts record puts; tests use it to prove which operations rewrite.
    private(set) var recordWrites = 0

    init(lmdb: LMDBTransaction, tables: [String: ObjectTable], meta: DatabaseHandle, path: String, schemaVersion: UInt64, fieldCapacity: Int? = nil) {
        self.fieldCapacity = fieldCapacity
        self.lmdb = lmdb
        self.tables = tables
        self.meta = meta
        self.path = path
        self.schemaVersion = schemaVersion
        self.copiesObjects = !lmdb.isReadOnly
    }

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
            throw StrataError(.unknownObjectType, "The schema of \(path) has no object type '\(name)'. Its types are: \(known).", path: path)
        }
        lastTable = table
        return table
    }

    // MARK: Reading

    /// Checks a key and its record, and returns a view of the record.
    @inline(__always)
    func validatedView(table: ObjectTable, key: UnsafeRawBufferPointer, record: UnsafeRawBufferPointer) throws -> RecordView {
        try ObjectContext.validatedView(table: table, key: key, record: record)
    }

    /// Checks a key and its record, and returns a view of the record.
    @inline(__always)
    static func validatedView(table: ObjectTable, key: UnsafeRawBufferPointer, record: UnsafeRawBufferPointer) throws -> RecordView {
        do throws(DecodingFailure) {
            try KeyCodec.validateKey(key, type: table.primaryKey?.type)
            return try RecordView(validating: record)
        } catch {
            throw table.corruptRecord(error, key: key)
        }
    }

    /// Makes an object over a record, validating the record first.
    @inline(__always)
    func object(table: ObjectTable, key: UnsafeRawBufferPointer, record: UnsafeRawBufferPointer) throws -> DynamicObject {
        let view = try validatedView(table: table, key: key, record: record)
        guard copiesObjects else {
            return DynamicObject(table: table, key: key, record: view, lifetime: lifetime.token, copy: nil)
        }
        let copy = CopiedBytes(key: key, record: record)
        // The copy has the same layout, so the validated view applies to it.
        return DynamicObject(table: table, key: copy.key, record: view.rebased(onto: copy.record), lifetime: lifetime.token, copy: copy)
    }

    func object(_ typeName: String, key: Value) throws -> DynamicObject? {
        let table = try table(typeName)
        var keyEncoder = self.encoder
        try keyEncoder.encodeKey(key, table: table)
        // A cursor rather than mdb_get: it returns LMDB's own copy of the key,
        // which stays valid for the whole transaction.
        return try keyEncoder.key.withUnsafeBytes { keyBytes in
            try lmdb.withCursor(table.records) { cursor in
                guard let entry = try cursor.seek(exactly: keyBytes) else { return nil }
                return try object(table: table, key: entry.key, record: entry.value)
            }
        }
    }

    // MARK: Writing

    private func encode(_ values: [String: Value], table: ObjectTable, into encoder: inout ObjectEncoder, keepKey: Bool = false) throws {
        let automaticKey: ObjectEncoder.AutomaticKey = keepKey ? .keep : .new { try self.nextAutomaticID(table) }
        try encoder.encode(values, table: table, schemaVersion: schemaVersion, automaticKey: automaticKey)
    }

    /// In synced mode, encodes again over the stored record with the key in
    /// `encoder.key`, so that the values of kept properties, which older app
    /// versions wrote and this one cannot see, survive the replacement.
    private func preserveKeptValues(_ values: [String: Value], table: ObjectTable, into encoder: inout ObjectEncoder) throws {
        guard !table.keptFields.isEmpty else { return }
        var keyCopy = ByteWriter(capacity: encoder.key.count)
        encoder.key.withUnsafeBytes { keyCopy.append(contentsOf: $0) }
        try keyCopy.withUnsafeBytes { keyBytes in
            guard let record = try lmdb.get(table.records, keyBytes) else { return }
            let stored = try validatedView(table: table, key: keyBytes, record: record)
            try encoder.encode(values, table: table, schemaVersion: schemaVersion, automaticKey: .keep, preserving: stored)
        }
    }

    func nextAutomaticID(_ table: ObjectTable) throws -> UInt64 {
        var last = sequences[table.type.id]?.last
        if last == nil {
            if let bytes = try lmdb.get(meta, table.sequenceKey) {
                guard bytes.count == 8 else {
                    throw StrataError(.corruptFile, "The automatic-id counter of '\(table.name)' in \(path) is damaged (\(bytes.count) bytes instead of 8). Restore the file from a backup.", path: path)
                }
                last = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
            } else {
                last = 0
            }
        }
        guard let current = last, current < UInt64(Int64.max) else {
            throw StrataError(.corruptFile, "The automatic-id counter of '\(table.name)' in \(path) is damaged (it is at its maximum). Restore the file from a backup.", path: path)
        }
        sequences[table.type.id] = (table, current + 1)
        return current + 1
    }

    /// Writes back the automatic-id counters; called before commit.
    func flush() throws {
        for (table, last) in sequences.values {
            var writer = ByteWriter(capacity: 8)
            writer.appendBigEndian(last)
            try lmdb.put(meta, table.sequenceKey, writer.bytes)
        }
        sequences.removeAll()
    }

    private func putRecord(_ table: ObjectTable, _ encoder: ObjectEncoder, noOverwrite: Bool) throws -> Bool {
        recordWrites += 1
        return try encoder.key.withUnsafeBytes { key in
            let appendable = try sortsLast(key, in: table)
            return try encoder.record.withUnsafeBytes { record in
                if appendable, try lmdb.append(table.records, key, record) { return true }
                return try lmdb.put(table.records, key, record, noOverwrite: noOverwrite)
            }
        }
    }

    /// The largest key known to be in the last table written, so that keys
    /// written in ascending order (automatic ids, sequential primary keys)
    /// go in with `MDB_APPEND` instead of a search of the tree.
    private var frontierTable: ObjectTable?
    private var frontierKey: [UInt8] = []

    /// Whether `key` sorts after every key of `table`; moves the frontier to
    /// `key` when it does, as the caller is about to write it.
    private func sortsLast(_ key: UnsafeRawBufferPointer, in table: ObjectTable) throws -> Bool {
        if frontierTable !== table {
            frontierKey = try lmdb.lastKey(table.records) ?? []
            frontierTable = table
        }
        guard KeyCodec.compare(key, frontierKey) > 0 else { return false }
        frontierKey.removeAll(keepingCapacity: true)
        frontierKey.append(contentsOf: key)
        return true
    }

    /// Adds or removes the index entry of one value of the object whose key
    /// is in `encoder.key`.
    private func indexEntry(_ field: ObjectTable.Field, value: Value, _ encoder: inout ObjectEncoder, add: Bool) throws {
        encoder.index.removeAll()
        KeyCodec.appendIndexKey(value, to: &encoder.index)
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

    /// Inserts a new object; returns its primary key or automatic id.
    func insert(_ typeName: String, _ values: [String: Value]) throws -> Value {
        let table = try table(typeName)
        var encoder = self.encoder
        try encode(values, table: table, into: &encoder)
        guard try putRecord(table, encoder, noOverwrite: true) else {
            let key = encoder.decodedKey(table)
            if table.primaryKey == nil {
                throw StrataError(.corruptFile, "The automatic-id counter of '\(table.name)' in \(path) is behind its objects: id \(key) is taken. Restore the file from a backup.", path: path)
            }
            throw StrataError(.duplicatePrimaryKey, "An object of type '\(table.name)' with primary key \(key) already exists in \(path). Use upsert to replace it or update to change it.", path: path)
        }
        for field in table.indexedFields {
            try indexEntry(field, value: encoder.resolved(field, from: values), &encoder, add: true)
        }
        return encoder.decodedKey(table)
    }

    /// The current values of the stored object whose key is in
    /// `encoder.key`, or nil when there is none.
    private func storedValues(_ table: ObjectTable, _ encoder: ObjectEncoder) throws -> [String: Value]? {
        try encoder.key.withUnsafeBytes { keyBytes -> [String: Value]? in
            guard let record = try lmdb.get(table.records, keyBytes) else { return nil }
            let view = try validatedView(table: table, key: keyBytes, record: record)
            return DynamicObject(table: table, key: keyBytes, record: view, lifetime: lifetime.token, copy: nil).values
        }
    }

    /// Replaces the object with the same primary key, or inserts it.
    func upsert(_ typeName: String, _ values: [String: Value]) throws -> Value {
        let table = try table(typeName)
        guard table.primaryKey != nil else { return try insert(typeName, values) }
        var encoder = self.encoder
        try encode(values, table: table, into: &encoder)
        try preserveKeptValues(values, table: table, into: &encoder)
        let old = table.indexedFields.isEmpty ? nil : try storedValues(table, encoder)
        _ = try putRecord(table, encoder, noOverwrite: false)
        try reindex(table, old: old, new: values, &encoder)
        return encoder.decodedKey(table)
    }

    /// Changes some properties of an existing object.
    func update(_ typeName: String, key: Value, _ changes: [String: Value]) throws {
        let table = try table(typeName)
        var encoder = self.encoder
        try encoder.encodeKey(key, table: table)
        guard let old = try storedValues(table, encoder) else {
            throw StrataError(.objectNotFound, "There is no '\(table.name)' with key \(key) in \(path) to update. Use insert or upsert to create it.", path: path)
        }
        var new = old
        for (name, value) in changes {
            let field = try table.field(named: name)
            if field.isPrimaryKey, let current = old[name], !value.coerced(to: field.type).isStored(identicallyTo: current) {
                guard value.coerced(to: field.type).fits(field.type, optional: false) else {
                    throw StrataError(.invalidValue, "The primary key '\(table.name).\(name)' is \(field.type), but \(value) was given (in \(path)). Nothing was written.", path: path)
                }
                throw StrataError(.invalidValue, "The primary key '\(table.name).\(name)' cannot be changed by an update (in \(path)); delete the object and insert it with the new key.", path: path)
            }
            new[name] = value
        }
        try encode(new, table: table, into: &encoder, keepKey: true)
        try preserveKeptValues(new, table: table, into: &encoder)
        _ = try putRecord(table, encoder, noOverwrite: false)
        try reindex(table, old: old, new: new, &encoder)
    }

    /// Moves the index entries of indexed values that changed.
    private func reindex(_ table: ObjectTable, old: [String: Value]?, new: [String: Value], _ encoder: inout ObjectEncoder) throws {
        for field in table.indexedFields {
            let newValue = encoder.resolved(field, from: new)
            if let oldValue = old?[field.name] {
                if oldValue.isStored(identicallyTo: newValue) { continue }
                try indexEntry(field, value: oldValue, &encoder, add: false)
            }
            try indexEntry(field, value: newValue, &encoder, add: true)
        }
    }

    /// Deletes one object; returns false when there was none.
    func delete(_ typeName: String, key: Value) throws -> Bool {
        let table = try table(typeName)
        var encoder = self.encoder
        try encoder.encodeKey(key, table: table)
        let old = table.indexedFields.isEmpty ? nil : try storedValues(table, encoder)
        guard try encoder.key.withUnsafeBytes({ try lmdb.delete(table.records, $0) }) else { return false }
        if let old {
            for field in table.indexedFields {
                try indexEntry(field, value: old[field.name] ?? field.valueWhenAbsent, &encoder, add: false)
            }
        }
        return true
    }

    /// How many times a table was emptied in this transaction. Emptying a
    /// table (`mdb_drop`) unpositions every cursor on it, and the next step
    /// of such a cursor starts over at the first entry, so a walk in
    /// progress stops when this changes.
    private(set) var tablesEmptied = 0

    /// Deletes every object of a type.
    func deleteAll(_ typeName: String) throws {
        let table = try table(typeName)
        tablesEmptied += 1
        if frontierTable === table { frontierTable = nil }
        try lmdb.empty(table.records, delete: false)
        for field in table.indexedFields { try lmdb.empty(field.index!, delete: false) }
    }
}
