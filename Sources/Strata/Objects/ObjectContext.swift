import Foundation

/// The state one transaction needs to read and write objects: the LMDB
/// transaction, the open tables, and reusable encoding buffers.
final class ObjectContext {
    let lmdb: LMDBTransaction
    let tables: [String: ObjectTable]
    let meta: DatabaseHandle
    let path: String
    /// Stamped on every record this transaction writes.
    let schemaVersion: UInt64
    let owner: ObjectBytesOwner
    /// Whether objects get copies of their bytes (write transactions, where
    /// a later write may move the bytes a view points at).
    let copiesObjects: Bool

    var recordWriter = ByteWriter(capacity: 512)
    var keyWriter = ByteWriter(capacity: 64)
    var indexWriter = ByteWriter(capacity: 64)
    /// Last automatic id per type, written back by ``flush()``.
    private var sequences: [UInt32: UInt64] = [:]
    /// Counts record puts; tests use it to prove which operations rewrite.
    private(set) var recordWrites = 0

    init(lmdb: LMDBTransaction, tables: [String: ObjectTable], meta: DatabaseHandle, path: String, schemaVersion: UInt64) {
        self.lmdb = lmdb
        self.tables = tables
        self.meta = meta
        self.path = path
        self.schemaVersion = schemaVersion
        self.copiesObjects = !lmdb.isReadOnly
        self.owner = lmdb.isReadOnly ? TransactionLifetime(path: path) : ObjectBytesOwner(path: path)
    }

    /// Marks the transaction's zero-copy objects as no longer readable.
    func end() {
        (owner as? TransactionLifetime)?.isAlive = false
    }

    func table(_ name: String) throws -> ObjectTable {
        guard let table = tables[name] else {
            let known = tables.keys.sorted().joined(separator: ", ")
            throw StrataError(.unknownObjectType, "The schema of \(path) has no object type '\(name)'. Its types are: \(known).", path: path)
        }
        return table
    }

    // MARK: Reading

    /// Makes an object over a record, validating the record first.
    @inline(__always)
    func object(table: ObjectTable, key: UnsafeRawBufferPointer, record: UnsafeRawBufferPointer) throws -> DynamicObject {
        let view: RecordView
        do throws(DecodingFailure) {
            view = try RecordView(validating: record)
        } catch {
            throw table.corruptRecord(error, key: key, path: path)
        }
        guard copiesObjects else { return DynamicObject(table: table, key: key, record: view, owner: owner) }
        let copy = CopiedBytes(key: key, record: record, path: path)
        // The copy has the same layout, so the validated view applies to it.
        return DynamicObject(table: table, key: copy.key, record: view.rebased(onto: copy.record), owner: copy)
    }

    /// Encodes a primary key given by the caller into `keyWriter`.
    func encodeKey(_ value: Value, table: ObjectTable) throws {
        keyWriter.removeAll()
        if let field = table.primaryKey {
            let value = value.coerced(to: field.type)
            guard KeyCodec.appendPrimaryKey(value, type: field.type, to: &keyWriter) else {
                throw StrataError(.invalidValue, "The primary key of '\(table.name)' is \(field.type), but \(value) was given (in \(path)).", path: path)
            }
        } else {
            guard case .int(let id) = value, id > 0 else {
                throw StrataError(.invalidValue, "'\(table.name)' has no primary key; its objects are identified by positive integer ids, but \(value) was given (in \(path)).", path: path)
            }
            KeyCodec.appendAutomaticID(UInt64(id), to: &keyWriter)
        }
        try checkKeySize(keyWriter.bytes.count, table: table)
    }

    private func checkKeySize(_ size: Int, table: ObjectTable) throws {
        guard size <= KeyCodec.maxKeySize else {
            throw StrataError(.keyTooLarge, "The primary key of this '\(table.name)' encodes to \(size) bytes; LMDB allows at most \(KeyCodec.maxKeySize) (in \(path)). Use a shorter key.", path: path)
        }
    }

    func object(_ typeName: String, key: Value) throws -> DynamicObject? {
        let table = try table(typeName)
        try encodeKey(key, table: table)
        // A cursor rather than mdb_get: it returns LMDB's own copy of the key,
        // which stays valid for the whole transaction.
        return try keyWriter.bytes.withUnsafeBytes { (keyBytes) throws -> DynamicObject? in
            do {
                return try lmdb.withCursor(table.records) { cursor in
                    guard let entry = try cursor.seek(exactly: keyBytes) else { return nil }
                    return try object(table: table, key: entry.key, record: entry.value)
                }
            } catch let error as StrataError {
                throw error
            } catch {
                preconditionFailure("unexpected error \(error)")
            }
        }
    }

    // MARK: Writing

    /// The value to store for `field`, from the caller's values or the
    /// schema's default. Checks type and nullability.
    @inline(__always)
    private func resolvedValue(_ field: ObjectTable.Field, in values: [String: Value], table: ObjectTable, found: inout Int) throws -> Value {
        let value: Value
        if let given = values[field.name] {
            found += 1
            value = given.coerced(to: field.type)
        } else if let defaultValue = field.defaultValue {
            value = defaultValue
        } else if field.isOptional {
            value = .null
        } else {
            throw StrataError(.missingValue, "Property '\(table.name).\(field.name)' is required and has no default, but no value was given (in \(path)). Nothing was written.", path: path)
        }
        guard value.fits(field.type, optional: field.isOptional) else { throw invalidValue(value, for: field, table: table) }
        return value
    }

    private func invalidValue(_ value: Value, for field: ObjectTable.Field, table: ObjectTable) -> StrataError {
        let expected = field.isOptional ? "\(field.type)?" : "\(field.type)"
        if value.isNull {
            return StrataError(.invalidValue, "Property '\(table.name).\(field.name)' is required (\(expected)) but null was given (in \(path)). Nothing was written.", path: path)
        }
        return StrataError(.invalidValue, "Property '\(table.name).\(field.name)' is \(expected), but \(value) of type \(value.propertyType!) was given (in \(path)). Nothing was written.", path: path)
    }

    /// Encodes a whole object into `recordWriter` and its key into
    /// `keyWriter`, checking every value first.
    private func encode(_ values: [String: Value], table: ObjectTable) throws {
        recordWriter.removeAll()
        keyWriter.removeAll()
        RecordCodec.beginRecord(&recordWriter, schemaVersion: schemaVersion, fieldCount: table.fields.count)
        var found = 0
        for field in table.fields {
            let value = try resolvedValue(field, in: values, table: table, found: &found)
            RecordCodec.appendField(&recordWriter, id: field.id, value: value)
            if field.isPrimaryKey {
                _ = KeyCodec.appendPrimaryKey(value, type: field.type, to: &keyWriter)
                try checkKeySize(keyWriter.bytes.count, table: table)
            }
        }
        if found != values.count {
            let unknown = values.keys.filter { table.fieldsByName[$0] == nil }.sorted()
            throw table.unknownProperty(unknown.first ?? "", path: path)
        }
        if table.primaryKey == nil {
            KeyCodec.appendAutomaticID(try nextAutomaticID(table), to: &keyWriter)
        }
    }

    private func nextAutomaticID(_ table: ObjectTable) throws -> UInt64 {
        var last = sequences[table.type.id]
        if last == nil {
            last = try lmdb.get(meta, table.sequenceKey).map { bytes in
                bytes.count == 8 ? UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)) : 0
            } ?? 0
        }
        let next = last! + 1
        sequences[table.type.id] = next
        return next
    }

    /// Writes back the automatic-id counters; called before commit.
    func flush() throws {
        for (typeID, last) in sequences {
            var writer = ByteWriter(capacity: 8)
            writer.appendBigEndian(last)
            try lmdb.put(meta, Array("seq.t\(typeID)".utf8), writer.bytes)
        }
        sequences.removeAll()
    }

    private func putRecord(_ table: ObjectTable, noOverwrite: Bool) throws -> Bool {
        recordWrites += 1
        return try keyWriter.bytes.withUnsafeBytes { (key) throws in
            try recordWriter.bytes.withUnsafeBytes { (record) throws in
                try lmdb.put(table.records, key, record, noOverwrite: noOverwrite)
            }
        }
    }

    private func indexEntry(_ field: ObjectTable.Field, value: Value, key: [UInt8], add: Bool) throws {
        indexWriter.removeAll()
        KeyCodec.appendIndexKey(value, to: &indexWriter)
        try indexWriter.bytes.withUnsafeBytes { (indexKey) throws in
            try key.withUnsafeBytes { (objectKey) throws in
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
        try encode(values, table: table)
        guard try putRecord(table, noOverwrite: true) else {
            let key = values[table.primaryKey?.name ?? ""] ?? .null
            throw StrataError(.duplicatePrimaryKey, "An object of type '\(table.name)' with primary key \(key) already exists in \(path). Use upsert to replace it or update to change it.", path: path)
        }
        if !table.indexedFields.isEmpty {
            let key = keyWriter.bytes
            var found = 0
            for field in table.indexedFields {
                try indexEntry(field, value: try resolvedValue(field, in: values, table: table, found: &found), key: key, add: true)
            }
        }
        return try decodedKey(table)
    }

    private func decodedKey(_ table: ObjectTable) throws -> Value {
        try keyWriter.bytes.withUnsafeBytes { (key) throws in
            do throws(DecodingFailure) {
                return try KeyCodec.decodeKey(key, type: table.primaryKey?.type)
            } catch {
                throw StrataError(.invalidValue, "Internal key encoding failed for '\(table.name)': \(error.reason).", path: path)
            }
        }
    }

    /// The current values of the stored object at `keyWriter`'s key, or nil.
    private func storedValues(_ table: ObjectTable) throws -> [String: Value]? {
        let key = keyWriter.bytes
        return try key.withUnsafeBytes { (keyBytes) throws -> [String: Value]? in
            guard let record = try lmdb.get(table.records, keyBytes) else { return nil }
            do throws(DecodingFailure) {
                let view = try RecordView(validating: record)
                let object = DynamicObject(table: table, key: keyBytes, record: view, owner: owner)
                return object.values
            } catch {
                throw table.corruptRecord(error, key: keyBytes, path: path)
            }
        }
    }

    /// Replaces the object with the same primary key, or inserts it.
    func upsert(_ typeName: String, _ values: [String: Value]) throws -> Value {
        let table = try table(typeName)
        guard table.primaryKey != nil else { return try insert(typeName, values) }
        try encode(values, table: table)
        let old = table.indexedFields.isEmpty ? nil : try storedValues(table)
        _ = try putRecord(table, noOverwrite: false)
        try reindex(table, old: old, new: values)
        return try decodedKey(table)
    }

    /// Changes some properties of an existing object.
    func update(_ typeName: String, key: Value, _ changes: [String: Value]) throws {
        let table = try table(typeName)
        try encodeKey(key, table: table)
        guard let old = try storedValues(table) else {
            throw StrataError(.objectNotFound, "There is no '\(table.name)' with key \(key) in \(path) to update. Use insert or upsert to create it.", path: path)
        }
        var new = old
        for (name, value) in changes {
            let field = try table.field(named: name, path: path)
            if field.isPrimaryKey && value.coerced(to: field.type) != old[name] {
                throw StrataError(.invalidValue, "The primary key '\(table.name).\(name)' cannot be changed by an update (in \(path)); delete the object and insert it with the new key.", path: path)
            }
            new[name] = value
        }
        try encode(new, table: table)
        _ = try putRecord(table, noOverwrite: false)
        try reindex(table, old: old, new: new)
    }

    /// Moves index entries of changed indexed values.
    private func reindex(_ table: ObjectTable, old: [String: Value]?, new: [String: Value]) throws {
        guard !table.indexedFields.isEmpty else { return }
        let key = keyWriter.bytes
        var found = 0
        for field in table.indexedFields {
            let newValue = try resolvedValue(field, in: new, table: table, found: &found)
            if let oldValue = old?[field.name] {
                if oldValue == newValue && !newValue.isNaN { continue }
                try indexEntry(field, value: oldValue, key: key, add: false)
            }
            try indexEntry(field, value: newValue, key: key, add: true)
        }
    }

    /// Deletes one object; returns false when there was none.
    func delete(_ typeName: String, key: Value) throws -> Bool {
        let table = try table(typeName)
        try encodeKey(key, table: table)
        let old = table.indexedFields.isEmpty ? nil : try storedValues(table)
        let deleted = try lmdb.delete(table.records, keyWriter.bytes)
        if deleted, let old {
            let key = keyWriter.bytes
            for field in table.indexedFields {
                try indexEntry(field, value: old[field.name] ?? field.valueWhenAbsent, key: key, add: false)
            }
        }
        return deleted
    }

    /// Deletes every object of a type.
    func deleteAll(_ typeName: String) throws {
        let table = try table(typeName)
        try lmdb.empty(table.records, delete: false)
        for field in table.indexedFields { try lmdb.empty(field.index!, delete: false) }
    }
}

extension Value {
    var isNaN: Bool { if case .double(let v) = self { v.isNaN } else { false } }
}
