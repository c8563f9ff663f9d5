/// Reading and writing ``Model`` values: each goes through the model's
/// ``ModelBinding`` and the table engine, the same path as dynamic writes.
extension ObjectContext {
    /// Inserts `object`; returns its primary key, or its automatic id.
    @inline(__always)
    func insert<M: Model>(_ object: M) throws -> M.Key {
        let binding = try binding(M.self)
        let encoder = engine.encoder
        if try binding.encodeRecord(object, into: encoder, schemaVersion: engine.writingSchemaVersion) {
            let starts = binding.recordFieldStarts(schemaVersion: engine.writingSchemaVersion)
            try engine.insert(binding.table, record: .encoded(fieldStarts: starts)) { binding.given($0) }
        } else {
            binding.encode(object)
            try engine.insert(binding.table) { binding.given($0) }
        }
        return writtenKey(binding, M.self)
    }

    /// Replaces the stored object with `object`'s primary key, or inserts
    /// it (`requireExisting` false) or throws (`requireExisting` true).
    func replace<M: Model>(_ object: M, requireExisting: Bool) throws -> M.Key {
        let binding = try binding(M.self)
        guard binding.table.primaryKey != nil else {
            if requireExisting {
                throw StrataError.noPrimaryKey(
                    typeName: binding.table.name, model: binding.modelName, action: "update",
                    remedy: "Give the model a @PrimaryKey property.", path: path)
            }
            return try insert(object)
        }
        let encoder = engine.encoder
        // An enum that read a newer app's case keeps it through the
        // general encoder; the fields this app does not declare (synced
        // mode's kept and learned ones) are spliced into the typed record.
        if !binding.fallbackPositions.isEmpty {
            binding.encode(object)
            if !binding.fallbackPositions.isEmpty { try keepUnknownValues(binding) }
            try engine.replace(binding.table, requireExisting: requireExisting) { binding.given($0) }
        } else if try binding.encodeRecord(object, into: encoder, schemaVersion: engine.writingSchemaVersion) {
            let starts = binding.recordFieldStarts(schemaVersion: engine.writingSchemaVersion)
            try engine.replace(binding.table, requireExisting: requireExisting, record: .encoded(fieldStarts: starts)) {
                binding.given($0)
            }
        } else {
            binding.encode(object)
            try engine.replace(binding.table, requireExisting: requireExisting) { binding.given($0) }
        }
        return writtenKey(binding, M.self)
    }

    /// Puts back, in the values that `binding` last encoded, each stored
    /// raw value that an enum read as its ``PersistableEnum/unknownCase``
    /// and that this app did not change: a newer app's case survives an
    /// older app's write of the object, field by field, at every depth
    /// (``ModelBinding/keeping(stored:written:as:depth:)``).
    ///
    /// Setting a property to the fallback case itself cannot be told from
    /// not touching it: the stored value stays then too.
    func keepUnknownValues(_ binding: ModelBinding) throws {
        guard let keyPosition = binding.primaryKeyPosition else { return }
        let table = binding.table
        let keyEncoder = engine.encoder
        guard (try? keyEncoder.encodeKey(binding.slots[keyPosition], table: table)) != nil else { return }
        try keyEncoder.key.withUnsafeBytes { keyBytes in
            guard let bytes = try lmdb.get(table.records, keyBytes) else { return }
            let record = try table.validatedView(key: keyBytes, record: bytes)
            for (position, type) in binding.fallbackPositions {
                guard let stored = binding.storedValue(at: position, in: record) else { continue }
                binding.slots[position] = ModelBinding.keeping(
                    stored: stored, written: binding.slots[position], as: type)
            }
        }
    }

    /// The key of the object last written through `binding`.
    @inline(__always)
    private func writtenKey<M: Model>(_ binding: ModelBinding, _ model: M.Type) -> M.Key {
        // `Int`, `Int64` and `String` keys straight from the encoded value.
        // A model in another module calls the typed API unspecialized, and
        // there the general path, `M.Key(propertyValue:)`, which returns an
        // `M.Key?`, looks up the metadata of `Optional<M.Key>` on every
        // call: 700 instructions per insert, more than encoding the record.
        // Once specialized, the comparisons of metatypes are constants.
        if let position = binding.primaryKeyPosition {
            switch binding.slots[position] {
            case .int(let value) where M.Key.self == Int.self && Int(exactly: value) != nil:
                return unsafeBitCast(Int(value), to: M.Key.self)
            case .int(let value) where M.Key.self == Int64.self:
                return unsafeBitCast(value, to: M.Key.self)
            case .string(let value) where M.Key.self == String.self:
                return unsafeBitCast(value, to: M.Key.self)
            default:
                break
            }
        }
        return anyWrittenKey(binding, M.self)
    }

    /// ``writtenKey(_:_:)`` for any key type, and for automatic ids.
    @inline(never)
    private func anyWrittenKey<M: Model>(_ binding: ModelBinding, _ model: M.Type) -> M.Key {
        if let key = binding.encodedPrimaryKey(as: M.Key.self) { return key }
        let key = engine.encoder.decodedKey(binding.table)
        guard let typed = M.Key(propertyValue: key) else {
            preconditionFailure(
                "The model \(binding.modelName) has no primary key property, so its Key must be Int64 (the automatic id), not \(M.Key.self)."
            )
        }
        return typed
    }

    /// Deletes the object with `key`; returns whether there was one.
    func delete<M: Model>(_ model: M.Type, primaryKey key: M.Key) throws -> Bool {
        try engine.delete(binding(M.self).table, key: key.propertyValue)
    }

    /// Deletes the stored object with `object`'s primary key.
    func delete<M: Model>(_ object: M) throws -> Bool {
        let binding = try binding(M.self)
        guard let position = binding.primaryKeyPosition else {
            throw StrataError.noPrimaryKey(
                typeName: binding.table.name, model: binding.modelName, action: "delete",
                remedy: "Delete it by its id with delete(\(binding.modelName).self, primaryKey:).", path: path)
        }
        binding.encode(object)
        return try engine.delete(binding.table, key: binding.slots[position])
    }

    /// Hands a decoder over the stored object of model `M` whose primary
    /// key is `key` to `decode`; false, calling nothing, when there is
    /// none. Not generic over the model's values: a typed lookup decodes
    /// the model in the app's module, specialized
    /// (``ReadTransaction/object(_:primaryKey:)``).
    @usableFromInline
    func decodeObject<M: Model>(
        _ model: M.Type, primaryKey key: Value, _ decode: (inout ModelDecoder) throws -> Void
    ) throws -> Bool {
        let binding = try binding(M.self)
        let table = binding.table
        // An int primary key, the common case, is encoded on the stack: the
        // encoder's buffer and its reference counts cost a tenth of a
        // lookup beside LMDB's search.
        if table.hasIntPrimaryKey, case .int(let value) = key {
            var bytes = StoredKind.intPrimaryKey(value)
            return try withUnsafeBytes(of: &bytes) { try decodeRecord(binding, key: $0, decode) }
        }
        let keyEncoder = engine.encoder
        // A key too long to store: no object has it.
        guard try keyEncoder.encodeLookupKey(key, table: table) else { return false }
        return try keyEncoder.key.withUnsafeBytes { try decodeRecord(binding, key: $0, decode) }
    }

    /// Hands a decoder over the record stored under `key`, an encoded
    /// key, to `decode`; false, calling nothing, when there is none.
    @inline(__always)
    private func decodeRecord(
        _ binding: ModelBinding, key: UnsafeRawBufferPointer, _ decode: (inout ModelDecoder) throws -> Void
    ) throws -> Bool {
        let table = binding.table
        guard let record = try lmdb.get(table.records, key) else { return false }
        var decoder = ModelDecoder(
            binding: binding, record: try table.headerCheckedView(key: key, record: record), key: key)
        try decode(&decoder)
        return true
    }
}
