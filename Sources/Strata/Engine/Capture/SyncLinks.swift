/// Links in a sync-enabled file are registers holding their targets' keys,
/// and a register may name an object this file does not have (not arrived
/// yet, or deleted by a peer). The record then *materializes* the
/// register: a link to an absent target reads null, a list of links leaves
/// it out, so that every record only links to objects that exist (and
/// `verify` stays clean). The register itself is kept in the shadow
/// database, with a dangling entry per absent target; when the target
/// appears, the records of its holders are written again from their
/// registers.
extension SyncLog {
    /// The key of a register in the shadow database: `type ‖ field ‖ holder key`.
    static func registerKey(_ type: TypeID, _ field: PropertyID, _ holder: UnsafeRawBufferPointer) -> [UInt8] {
        bigEndian(type.rawValue) + bigEndian(field.rawValue) + Array(holder)
    }

    /// The key of a target in the dangling database: `type ‖ key`.
    static func targetKey(_ type: TypeID, _ key: [UInt8]) -> [UInt8] {
        bigEndian(type.rawValue) + key
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
    }

    /// The register of a link field whose record holds less than it names;
    /// nil when the record holds the register itself.
    func shadowRegister(_ register: [UInt8]) throws -> Value? {
        guard let bytes = try lmdb.get(handles.shadow, register), let base = bytes.baseAddress else { return nil }
        var p = 0
        guard let value = RecordView.read(base, &p, bytes.count), p == bytes.count else {
            throw StrataError.corruptFile(path: path, "A link register in the sync data of \(path) is damaged.")
        }
        return value
    }

    /// Keeps `value` as the register of a link field whose record holds
    /// less, and notes each absent target it names (`absent`: their
    /// types' ids and record keys).
    func keepShadow(_ register: [UInt8], value: Value, absent: [(TypeID, [UInt8])]) throws {
        let writer = ByteWriter(capacity: 32)
        RecordCodec.appendTagged(writer, value)
        try writer.withUnsafeBytes { bytes in
            try register.withUnsafeBytes { _ = try lmdb.put(handles.shadow, $0, bytes) }
        }
        if !absent.isEmpty { addedDangling = true }
        for (type, key) in absent {
            _ = try lmdb.put(handles.dangling, SyncLog.targetKey(type, key), register)
        }
    }

    /// Forgets the shadow register of a field whose record now holds its
    /// register (its dangling entries are dropped when their target appears).
    func dropShadow(_ register: [UInt8]) throws {
        _ = try lmdb.delete(handles.shadow, register)
    }

    /// The registers naming the target `type`/`key`, removed from the
    /// dangling database: the caller restores them.
    func takeDangling(_ type: TypeID, _ key: [UInt8]) throws -> [[UInt8]] {
        let target = SyncLog.targetKey(type, key)
        var registers: [[UInt8]] = []
        try lmdb.withCursor(handles.dangling) { cursor in
            var entry = try target.withUnsafeBytes { try cursor.seek(exactly: $0) }
            while let found = entry {
                registers.append(Array(found.value))
                entry = try cursor.nextDuplicate()
            }
        }
        if !registers.isEmpty { _ = try lmdb.delete(handles.dangling, target) }
        return registers
    }

    /// The parts of a shadow key.
    static func parseRegisterKey(_ bytes: [UInt8]) -> (type: TypeID, field: PropertyID, holder: [UInt8])? {
        guard bytes.count > 8 else { return nil }
        func number(_ at: Int) -> UInt32 { bytes[at ..< at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        return (TypeID(number(0)), PropertyID(number(4)), Array(bytes[8...]))
    }
}

extension TableEngine {
    /// What a link field's record stores for register `value`: the links
    /// whose targets exist. Returns it with the targets that do not
    /// (their types' ids and record keys).
    /// `excluding` names an object about to be deleted, taken as absent.
    func materialize(_ value: Value, _ field: ObjectTable.Field, excluding: (TypeID, [UInt8])? = nil) throws -> (
        Value, absent: [(TypeID, [UInt8])]
    ) {
        guard let target = links.tables[field.target ?? ""] else { return (value, []) }
        /// The record key of `key` when its object is absent.
        func exists(_ key: Value) throws -> [UInt8]? {
            guard let recordKey = recordKey(key, of: target) else { return nil }
            if let excluding, excluding.0 == target.type.id, excluding.1 == recordKey { return recordKey }
            return try recordKey.withUnsafeBytes { try lmdb.get(target.records, $0) } == nil ? recordKey : nil
        }
        switch value {
        case .link(let key):
            guard let missing = try exists(key) else { return (value, []) }
            return (.null, [(target.type.id, missing)])
        case .list(let elements):
            var kept: [Value] = []
            var absent: [(TypeID, [UInt8])] = []
            for element in elements {
                if let key = element.linkKey, let missing = try exists(key) {
                    absent.append((target.type.id, missing))
                } else {
                    kept.append(element)
                }
            }
            return (absent.isEmpty ? value : .list(kept), absent)
        default:
            return (value, [])
        }
    }
}
