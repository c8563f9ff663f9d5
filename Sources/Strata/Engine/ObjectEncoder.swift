/// Reusable buffers for encoding one object — its record and its key —
/// and the values matched to its fields. Kept by a transaction
/// and reused for every write, so that encoding stops allocating once the
/// buffers have reached their working size.
///
/// A class whose buffers are `let`s of reference semantics: handing it
/// around costs one reference count, and writing into a buffer neither a
/// copy-on-write nor an exclusivity check.
final class ObjectEncoder {
    let record = ByteWriter(capacity: 256)
    let key = ByteWriter(capacity: 64)
    private let slots: Slots
    /// Scratch space of ``spliceUndeclared(_:base:)``: a `let`, so that
    /// using it pays no exclusivity check.
    let spliceBuffer = ByteWriter(capacity: 256)

    /// Where each field's value is in the caller's dictionary, by field
    /// position.
    private final class Slots {
        typealias Slot = Dictionary<String, Value>.Index?
        let pointer: UnsafeMutableBufferPointer<Slot>

        init(capacity: Int) {
            pointer = .allocate(capacity: max(capacity, 1))
            pointer.initialize(repeating: nil)
        }

        deinit {
            pointer.deinitialize()
            pointer.deallocate()
        }
    }

    /// - Parameter fieldCapacity: The largest number of fields of any table
    ///   the encoder will see.
    init(fieldCapacity: Int) {
        slots = Slots(capacity: fieldCapacity)
    }

    /// Where the key of an object without a primary key comes from.
    enum AutomaticKey {
        /// A new id, for an insert.
        case new(() throws -> UInt64)
        /// The key already in ``key``, for an update of an existing object.
        case keep
    }

    /// Matches the names of `given` to the table's fields, without hashing
    /// them: afterwards ``given(_:from:)`` answers by field position.
    ///
    /// - Throws: ``StrataError`` for a name the table does not have.
    func match(_ given: [String: Value], table: ObjectTable) throws {
        let slots = self.slots.pointer
        precondition(
            table.fields.count <= slots.count, "An encoder was made for fewer fields than '\(table.name)' has.")
        for position in 0 ..< table.fields.count { slots[position] = nil }
        var index = given.startIndex
        while index != given.endIndex {
            let name = given[index].key
            guard let position = table.position(of: name) else { throw table.unknownProperty(name) }
            slots[position] = index
            given.formIndex(after: &index)
        }
    }

    /// The value `given` has for `field`, as matched by the last
    /// ``match(_:table:)``; nil when it has none.
    @inline(__always)
    func given(_ field: ObjectTable.Field, from given: [String: Value]) -> Value? {
        slots.pointer[field.position].map { given[$0].value }
    }

    /// Where the value of one field of a record being encoded comes from.
    enum FieldSource {
        /// This value, checked against the field's type and coerced to it.
        case value(Value)
        /// A value already coerced to the field's type and checked against
        /// it (a migration's setter does both): written as it is, unless it
        /// is a key or a relationship, which are checked again.
        case checked(Value)
        /// Nothing was given: the field's default (an error for a required
        /// property without one).
        case absent
        /// The base record's: its bytes copied as they are when their type
        /// still fits the field (else the value of an absent field). An
        /// embedded object, or a list of them, is decoded and encoded again
        /// instead, so that each nesting level keeps the stored fields of
        /// properties this schema does not declare and drops those of
        /// removed ones, the rule of every other write.
        case stored
    }

    /// Encodes a record of `table`, and its key, field by field from what
    /// `source` says of each (by field position), over `base`, the stored record it replaces
    /// (nil for a new object): the one encoder of every write, migrations
    /// included.
    ///
    /// Every stored field of a property this app's schema does not declare
    /// (synced mode's kept fields) is carried over from `base` byte for
    /// byte, at every nesting level; a new object stores their empty values.
    ///
    /// The key: the primary key's value encodes it, unless its source is
    /// `.stored`, its bytes are copied and `rekeys` is false (then ``key``
    /// keeps what the caller put there; `rekeys`: a migration that gives
    /// the type new keys). A type
    /// without a primary key gets a new automatic id from `automaticKey`
    /// `.new`.
    ///
    /// - Parameter storedPositions: Per field position, where `base`
    ///   probably keeps the field (a guess that saves a walk of the record);
    ///   by default the field's own position.
    /// - Returns: Whether the key was encoded.
    @discardableResult
    @inline(__always)
    func encode(
        table: ObjectTable, schemaVersion: UInt64, automaticKey: AutomaticKey, base: RecordView?,
        storedPositions: [Int]? = nil, rekeys: Bool = false, _ source: (Int) throws -> FieldSource
    ) throws -> Bool {
        var keyEncoded = false
        record.removeAll()
        let hidden = table.keptFields
        // A sync-enabled file may hold fields its catalog learned after
        // this table was opened: every stored field of an id the table
        // does not know is carried over (the slower walk, only there).
        let unknown = table.preservesUnknownFields ? base.map { ObjectEncoder.unknownFields(table, in: $0) } ?? [] : []
        RecordCodec.beginRecord(
            record, schemaVersion: schemaVersion,
            fieldCount: table.fields.count + ObjectEncoder.keptCount(table, preserving: base) + unknown.count)
        var next = 0
        var nextUnknown = 0
        // By position, reading the table's compact per-field facts: the
        // full field description is copied only for a value to check or a
        // composite value to encode.
        for position in 0 ..< table.fields.count {
            let info = table.readInfo[position]
            while next < hidden.count && hidden[next].id < info.id {
                appendKept(hidden[next], preserving: base)
                next += 1
            }
            while nextUnknown < unknown.count && unknown[nextUnknown].id < info.id {
                record.append(contentsOf: unknown[nextUnknown].bytes)
                nextUnknown += 1
            }
            let given: Value?
            switch try source(position) {
            case .checked(let value) where !info.type.isComposite && !info.isPrimaryKey:
                RecordCodec.appendField(record, id: info.id, value: value)
                continue
            case .value(let value), .checked(let value):
                given = value
            case .absent:
                given = nil
            case .stored:
                let guess = storedPositions?[position] ?? position
                if let base, !info.isEmbedded, let stored = base.encodedField(info.id, expectedAt: guess),
                    RecordCodec.tag(stored.tag, fits: info.type, optional: info.isOptional)
                {
                    record.append(contentsOf: stored.bytes)
                    if info.isPrimaryKey && rekeys, let value = base.value(forField: info.id, expectedAt: guess) {
                        key.removeAll()
                        _ = KeyCodec.appendPrimaryKey(value, type: info.type, to: key)
                        keyEncoded = true
                    }
                    continue
                }
                given = base.map { table.value(at: position, in: $0) } ?? table.fields[position].valueWhenAbsent
            }
            let field = table.fields[position]
            let value = try ObjectEncoder.resolve(field, given: given, table: table)
            if field.type.isComposite {
                try CompositeCodec.appendField(
                    record, field, value, owner: table.name, path: table.path,
                    replacing: base.flatMap {
                        keepsStoredFields(field) ? CompositeCodec.Stored(field, in: $0) : nil
                    })
                continue
            }
            RecordCodec.appendField(record, id: field.id, value: value)
            if field.isPrimaryKey {
                key.removeAll()
                _ = KeyCodec.appendPrimaryKey(value, type: field.type, to: key)
                try checkKeySize(table: table)
                keyEncoded = true
            }
        }
        // Kept and unknown fields after the last declared one, in id order.
        while next < hidden.count || nextUnknown < unknown.count {
            if nextUnknown >= unknown.count || (next < hidden.count && hidden[next].id < unknown[nextUnknown].id) {
                appendKept(hidden[next], preserving: base)
                next += 1
            } else {
                record.append(contentsOf: unknown[nextUnknown].bytes)
                nextUnknown += 1
            }
        }
        if table.primaryKey == nil, case .new(let nextID) = automaticKey {
            key.removeAll()
            KeyCodec.appendAutomaticID(try nextID(), to: key)
            keyEncoded = true
        }
        return keyEncoded
    }

    /// The stored fields of `record` whose ids `table` neither declares,
    /// keeps nor retired: fields a sync-enabled file learned from a peer
    /// after the table was opened. Their bytes, id included.
    private static func unknownFields(_ table: ObjectTable, in record: RecordView) -> [(
        id: PropertyID, bytes: UnsafeRawBufferPointer
    )] {
        var unknown: [(id: PropertyID, bytes: UnsafeRawBufferPointer)] = []
        record.forEachEncodedField { id, bytes in
            if table.shape.position(ofField: id) == nil, !table.knowsHidden(id) { unknown.append((id, bytes)) }
        }
        return unknown
    }

    /// How many kept fields a record of `table` replacing `preserving`
    /// holds: those it stores, or all of them for a new object.
    private static func keptCount(_ table: ObjectTable, preserving: RecordView?) -> Int {
        guard let preserving else { return table.keptFields.count }
        return table.keptFields.count(where: { preserving.encodedField($0.id, expectedAt: Int.max) != nil })
    }

    /// A property this app's schema does not declare (synced mode) keeps
    /// its stored state when a record is replaced: a stored value stays, an
    /// absent field stays absent (so the app that declares it still reads
    /// its own default). A new object stores the empty value.
    private func appendKept(_ field: ObjectTable.KeptField, preserving: RecordView?) {
        guard let preserving else {
            CompositeCodec.appendEmpty(record, field)
            return
        }
        // Copied byte for byte: this app cannot read the value, only keep it.
        if let stored = preserving.encodedField(field.id, expectedAt: Int.max) {
            record.append(contentsOf: stored.bytes)
        }
    }

    /// Whether writing `field` over a stored value must read it: its
    /// embedded objects have kept properties to carry over.
    @inline(__always)
    private func keepsStoredFields(_ field: ObjectTable.Field) -> Bool {
        field.embedded?.keepsStoredFields == true
    }

    /// Encodes a primary key (or automatic id) given by the caller, for a
    /// write.
    ///
    /// - Throws: ``StrataError`` for a value that cannot be a key of
    ///   `table`, or a key longer than LMDB stores (`.keyTooLarge`).
    func encodeKey(_ value: Value, table: ObjectTable) throws {
        guard try encodeLookupKey(value, table: table) else { throw keyTooLarge(table) }
    }

    private func checkKeySize(table: ObjectTable) throws {
        guard key.count <= KeyCodec.maxKeySize else { throw keyTooLarge(table) }
    }

    /// The error for the key in ``key``, too long for LMDB to store.
    private func keyTooLarge(_ table: ObjectTable) -> StrataError {
        .keyTooLarge(typeName: table.name, size: key.count, limit: KeyCodec.maxKeySize, path: table.path)
    }

    /// Encodes a primary key (or automatic id) given by the caller, for a
    /// lookup: false when the key is longer than LMDB stores, so that no
    /// object has it (a read finds nothing, a delete deletes nothing).
    ///
    /// - Throws: ``StrataError`` for a value that cannot be a key of
    ///   `table`.
    func encodeLookupKey(_ value: Value, table: ObjectTable) throws -> Bool {
        let path = table.path
        key.removeAll()
        if let field = table.primaryKey {
            // An integer key of an integer property: eight bytes, nothing
            // to convert or check.
            if field.type == .int, case .int = value {
                _ = StoredKind.appendPrimaryKey(value, kind: .int, to: key)
                return true
            }
            let value = value.coerced(to: field.type)
            guard KeyCodec.appendPrimaryKey(value, type: field.type, to: key) else {
                throw StrataError.primaryKeyDoesNotFit(
                    typeName: table.name, property: field.name, expected: "\(field.type)", given: "\(value)",
                    nothingWritten: false, path: path)
            }
        } else {
            guard case .int(let id) = value, id > 0 else {
                throw StrataError.invalidValue(
                    "'\(table.name)' has no primary key; its objects are identified by positive integer ids, but \(value) was given (in \(path)).",
                    typeName: table.name, key: "\(value)", path: path)
            }
            KeyCodec.appendAutomaticID(UInt64(id), to: key)
        }
        return key.count <= KeyCodec.maxKeySize
    }

    /// The key in ``key``, decoded.
    func decodedKey(_ table: ObjectTable) -> Value {
        key.withUnsafeBytes { bytes in
            do throws(DecodingFailure) {
                return try KeyCodec.decodeKey(bytes, type: table.primaryKey?.type)
            } catch {
                preconditionFailure("A key Strata encoded for '\(table.name)' does not decode: \(error.reason)")
            }
        }
    }

    /// The value to store for `field`: the caller's, or the schema's
    /// default. Checks type and nullability.
    @inline(__always)
    static func resolve(_ field: ObjectTable.Field, given: Value?, table: ObjectTable) throws -> Value {
        let path = table.path
        let value: Value
        if let given {
            value = given.coerced(to: field.type)
        } else if let defaultValue = field.defaultValue {
            value = defaultValue
        } else if field.isOptional {
            value = .null
        } else if field.type.isComposite {
            // A list not given is empty; a required embedded object not
            // given is one of defaults (its own required properties are
            // checked when it is encoded).
            value = field.type.emptyValue
        } else {
            throw StrataError.missingValue(typeName: table.name, property: field.name, path: path)
        }
        guard value.fits(field.type, optional: field.isOptional) else {
            throw invalidValue(value, for: field, table: table)
        }
        return value
    }

    private static func invalidValue(_ value: Value, for field: ObjectTable.Field, table: ObjectTable) -> StrataError {
        let path = table.path
        let expected = field.isOptional ? "\(field.type)?" : "\(field.type)"
        guard let type = value.propertyType else {
            return .valueDoesNotFit(
                typeName: table.name, property: field.name, expected: expected, given: nil, path: path)
        }
        if type == field.type {
            // Of the type, but a value its kind does not admit (StoredKind.admits).
            return .valueDoesNotFit(
                typeName: table.name, property: field.name, expected: expected,
                given: "\(value) (a value no \(type) property can store)", path: path)
        }
        return .valueDoesNotFit(
            typeName: table.name, property: field.name, expected: expected, given: "\(value) of type \(type)",
            path: path)
    }
}
