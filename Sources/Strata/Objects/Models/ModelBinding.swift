// @unchecked: made and used by one transaction, on its thread; its buffers are written in init and by encodes only.
/// How one ``Model`` type reads and writes the records of one table, worked
/// out once per transaction: which table field each model position is,
/// what a property the record lacks reads as, and the storage that
/// encoding a value fills.
final class ModelBinding: @unchecked Sendable {
    let model: ObjectIdentifier
    let table: ObjectTable
    /// The number of stored properties of the model.
    let count: Int
    /// The model's primary-key position, if it has one.
    let primaryKeyPosition: Int?
    /// The Swift type's name, for messages.
    let modelName: String
    let properties: [Property]
    /// Per model position, the table field's position, or -1 when the
    /// table has no such field.
    let tablePositions: UnsafeMutableBufferPointer<Int>
    /// Per table field position, the model position, or -1.
    private let modelPositions: UnsafeMutableBufferPointer<Int>
    /// Per model position, the table field's id (0 when the table has no
    /// such field): what a typed read looks for, kept here so that reading
    /// a property touches neither the table nor its reference count.
    let fieldIDs: UnsafeMutableBufferPointer<PropertyID>
    /// Per model position, what a record without the field reads as.
    let absentValues: UnsafeMutableBufferPointer<Value>
    /// Filled by ``encode(_:)``; by ``encodeRecord(_:into:schemaVersion:)``
    /// at the positions whose values the write needs again.
    let slots: UnsafeMutableBufferPointer<Value>
    /// Per model position, the field its value is written as, when the
    /// model writes records itself: the table's fields are the model's
    /// properties, no more (synced mode's kept fields need the stored
    /// record, and fields the model lacks their defaults). Nil otherwise.
    private let recordFields: UnsafeMutableBufferPointer<RecordField>?
    /// Whether the model writes records of the table itself.
    var writesRecords: Bool { recordFields != nil }
    /// Whether the model's properties are the table's fields in field
    /// order, all primitive: then their bytes go straight into the record;
    /// else into ``scratch``, to be put in field order.
    private let inOrder: Bool
    private let scratch = ByteWriter(capacity: 256)
    /// Per model position, where its bytes end in the buffer written.
    private let ends: UnsafeMutableBufferPointer<Int>
    /// The positions, below eight, of the indexed fields, whose starts
    /// ``recordFieldStarts(schemaVersion:)`` hands to the engine; none
    /// unless ``inOrder``.
    private let indexedPositions: [Int]
    /// The model positions of properties that may read a stored value as
    /// something else: those that hold a ``PersistableEnum`` with an
    /// ``PersistableEnum/unknownCase`` (which a raw value the enum does not
    /// know reads as) or an embedded type that reaches one, each with that
    /// enum or embedded type. A write of the object keeps such stored
    /// values (``ObjectContext/keepUnknownValues(_:)``).
    let fallbackPositions: [(position: Int, type: any PropertyValue.Type)]

    /// One model position, as writing its value into a record needs it.
    struct RecordField {
        /// The field id, as the record's varint holds it.
        let id: UInt64
        /// The kind of a primitive field; nil for a composite one.
        let kind: StoredKind?
        let isOptional: Bool
        /// A link, list or embedded object: written by the checking path
        /// (``CompositeCodec``) from the value.
        let isComposite: Bool
        /// Whether the write needs the value again (primary key or
        /// composite): it is kept in ``ModelBinding/slots``.
        let keepsValue: Bool
    }

    /// - Parameter bindsFields: False for a binding that only decodes from
    ///   values by position (a model of another schema version in a typed
    ///   migration): no property is matched with the table's fields.
    /// - Throws: ``StrataError`` with code ``StrataError/Code/invalidSchema``
    ///   when a property of the model has another type in the table.
    init<M: Model>(_ modelType: M.Type, table: ObjectTable, bindsFields: Bool = true) throws {
        let schema = M.schema
        model = ObjectIdentifier(M.self)
        self.table = table
        modelName = String(describing: M.self)
        let properties = schema.objectSchema.properties
        self.properties = properties
        count = properties.count
        primaryKeyPosition = schema.objectSchema.primaryKey.flatMap { name in properties.firstIndex { $0.name == name }
        }
        var mismatches: [String] = []
        var toTable = [Int](repeating: -1, count: count)
        var toModel = [Int](repeating: -1, count: table.fields.count)
        for (position, property) in properties.enumerated() where bindsFields {
            guard let tablePosition = table.shape.position(of: property.name) else { continue }
            let field = table.fields[tablePosition]
            guard field.type == property.type, field.target == property.target,
                field.elementType == property.elementType
            else {
                mismatches.append(
                    "Property '\(table.name).\(property.name)' is \(property.typeDescription) in the model \(M.self), but \(field.isOptional ? "\(field.type)?" : "\(field.type)") in the file."
                )
                continue
            }
            toTable[position] = field.position
            toModel[field.position] = position
        }
        guard mismatches.isEmpty else {
            throw StrataError.modelMismatch(
                model: "\(M.self)", typeName: table.name, mismatches: mismatches, path: table.path)
        }
        tablePositions = .allocate(capacity: max(count, 1))
        _ = tablePositions.initialize(from: toTable)
        modelPositions = .allocate(capacity: max(toModel.count, 1))
        _ = modelPositions.initialize(from: toModel)
        fieldIDs = .allocate(capacity: max(count, 1))
        _ = fieldIDs.initialize(from: toTable.map { $0 < 0 ? PropertyID(0) : table.fields[$0].id })
        absentValues = .allocate(capacity: max(count, 1))
        _ = absentValues.initialize(from: properties.map(\.valueWhenAbsent))
        slots = .allocate(capacity: max(count, 1))
        slots.initialize(repeating: .null)
        ends = .allocate(capacity: max(count, 1))
        ends.initialize(repeating: 0)
        let writesRecords =
            bindsFields && !table.keepsEmbeddedFields && count == table.fields.count
            && toTable.allSatisfy { $0 >= 0 }
        if writesRecords {
            let fields = toTable.map { position in
                let field = table.fields[position]
                return RecordField(
                    id: UInt64(field.id.rawValue), kind: field.storedKind, isOptional: field.isOptional,
                    isComposite: field.type.isComposite,
                    keepsValue: field.isPrimaryKey || field.type.isComposite)
            }
            recordFields = .allocate(capacity: max(count, 1))
            _ = recordFields!.initialize(from: fields)
        } else {
            recordFields = nil
        }
        inOrder = writesRecords && !table.hasCompositeFields && toTable == Array(0 ..< count)
        indexedPositions = inOrder ? table.indexedFields.map(\.position).filter { $0 < 8 } : []
        fallbackPositions = (0 ..< count).compactMap { position in
            guard toTable[position] >= 0 else { return nil }
            if let type = schema.enumTypes[position], type.hasUnknownCase { return (position, type) }
            if let type = schema.embeddedTypesByPosition[position], Self.readsFallbacks(type) {
                return (position, type)
            }
            return nil
        }
    }

    /// Whether the embedded type `type` holds, at any depth, an enum with
    /// an ``PersistableEnum/unknownCase``.
    private static func readsFallbacks<E: EmbeddedModel>(_ type: E.Type, depth: Int = 0) -> Bool {
        let schema = E.schema
        if schema.enumTypes.contains(where: { $0?.hasUnknownCase == true }) { return true }
        // An embedding cycle is refused when the database opens.
        return depth < 16 && schema.embeddedTypes.contains { readsFallbacks($0, depth: depth + 1) }
    }

    deinit {
        tablePositions.deallocate()
        modelPositions.deallocate()
        fieldIDs.deallocate()
        absentValues.deinitialize()
        absentValues.deallocate()
        slots.deinitialize()
        slots.deallocate()
        ends.deallocate()
        recordFields?.deallocate()
    }

    /// Fills ``slots`` with the stored properties of `object`.
    @inline(__always)
    func encode<M: Model>(_ object: M) {
        var encoder = ModelEncoder(slots: slots.baseAddress!, capacity: count)
        object.encode(to: &encoder)
        precondition(
            encoder.count == count,
            "The model \(modelName) encoded \(encoder.count) properties; its schema declares \(count).")
    }

    /// Encodes the record and key of `object` into `target` straight from
    /// the model's values, stamped with `schemaVersion`, leaving in
    /// ``slots`` the values the write needs again (primary key, indexed
    /// and composite properties).
    ///
    /// - Returns: False when the binding does not write records itself, or
    ///   a value does not fit its field as it is: then nothing is written
    ///   and the caller encodes `object` through ``encode(_:)`` and the
    ///   engine's encoder, which converts the value or explains why not.
    /// - Throws: What encoding a composite value or the key throws.
    @inline(__always)
    func encodeRecord<M: Model>(_ object: M, into target: ObjectEncoder, schemaVersion: UInt64) throws -> Bool {
        guard var encoder = recordEncoder(into: target, schemaVersion: schemaVersion) else { return false }
        object.encode(to: &encoder)
        return try finishRecord(encoder, into: target, schemaVersion: schemaVersion)
    }

    /// An encoder that writes a model's record into `target` (see
    /// ``encodeRecord(_:into:schemaVersion:)``), or nil when the binding
    /// does not write records itself. With `values`, every value is kept
    /// there too, by model position (a typed step, whose caller needs the
    /// values when the record cannot be written this way); else the values
    /// the write needs again go into ``slots``.
    @inline(__always)
    func recordEncoder(
        into target: ObjectEncoder, schemaVersion: UInt64, keepingValuesIn values: UnsafeMutablePointer<Value>? = nil
    ) -> ModelEncoder? {
        guard let recordFields else { return nil }
        let writer = inOrder ? target.record : scratch
        writer.removeAll()
        if inOrder { RecordCodec.beginRecord(writer, schemaVersion: schemaVersion, fieldCount: count) }
        return ModelEncoder(
            slots: values ?? slots.baseAddress!, capacity: count, fields: UnsafePointer(recordFields.baseAddress!),
            writer: writer, ends: ends.baseAddress!, keepsEveryValue: values != nil)
    }

    /// Completes the record that `encoder`, made by
    /// ``recordEncoder(into:schemaVersion:keepingValuesIn:)``, wrote: its
    /// fields in field order, its composite fields and its key. False when
    /// a value did not fit its field as it is.
    @inline(__always)
    func finishRecord(_ encoder: borrowing ModelEncoder, into target: ObjectEncoder, schemaVersion: UInt64) throws
        -> Bool
    {
        precondition(
            encoder.count == count,
            "The model \(modelName) encoded \(encoder.count) properties; its schema declares \(count).")
        guard let recordFields, !encoder.misfit else { return false }
        let values = encoder.slots
        if !inOrder { try assemble(into: target.record, schemaVersion: schemaVersion, values: values) }
        if let primaryKeyPosition {
            // An integer key is eight bytes: no conversion, no size check.
            if recordFields[primaryKeyPosition].kind == .int, case .int = values[primaryKeyPosition] {
                target.key.removeAll()
                _ = StoredKind.appendPrimaryKey(values[primaryKeyPosition], kind: .int, to: target.key)
            } else {
                try target.encodeKey(values[primaryKeyPosition], table: table)
            }
        }
        return true
    }

    /// Where the indexed fields of the record that
    /// ``finishRecord(_:into:schemaVersion:)`` completed start, packed as
    /// ``RecordView/fieldStarts`` (0 for the other fields: unknown), so
    /// that the engine reads them without a walk; 0 unless the model
    /// writes its fields in field order.
    @inline(__always)
    func recordFieldStarts(schemaVersion: UInt64) -> UInt64 {
        var starts: UInt64 = 0
        for position in indexedPositions {
            let start =
                position == 0
                ? RecordCodec.headerSize(schemaVersion: schemaVersion, fieldCount: count) : ends[position - 1]
            if start < 256 { starts |= UInt64(start) << (8 * UInt64(position)) }
        }
        return starts
    }

    /// Puts the fields written into ``scratch`` in field order, with the
    /// composite ones encoded from their values, after a record header.
    private func assemble(into record: ByteWriter, schemaVersion: UInt64, values: UnsafeMutablePointer<Value>) throws {
        guard let recordFields else { return }
        record.removeAll()
        RecordCodec.beginRecord(record, schemaVersion: schemaVersion, fieldCount: count)
        try scratch.withUnsafeBytes { bytes in
            for tablePosition in 0 ..< count {
                let position = modelPositions[tablePosition]
                guard !recordFields[position].isComposite else {
                    let field = table.fields[tablePosition]
                    let value = try ObjectEncoder.resolve(field, given: values[position], table: table)
                    try CompositeCodec.appendField(record, field, value, owner: table.name, path: table.path)
                    continue
                }
                let start = position == 0 ? 0 : ends[position - 1]
                record.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start ..< ends[position]]))
            }
        }
    }

    /// The value the last ``encode(_:)`` gave the table field `field`, or
    /// nil when the model has no such property.
    @inline(__always)
    func given(_ field: ObjectTable.Field) -> Value? {
        let position = modelPositions[field.position]
        return position < 0 ? nil : slots[position]
    }

    /// The primary key the last ``encode(_:)`` gave, as the model's type.
    func encodedPrimaryKey<K: PrimaryKeyValue>(as type: K.Type) -> K? {
        primaryKeyPosition.flatMap { K(propertyValue: slots[$0]) }
    }

    /// The stored value of the model's property at `position`, or nil when
    /// the record has none.
    @inline(__always)
    func storedValue(at position: Int, in record: RecordView) -> Value? {
        let tablePosition = tablePositions[position]
        guard tablePosition >= 0 else { return nil }
        if properties[position].type.isComposite { return table.compositeValue(at: tablePosition, in: record) }
        return record.value(forField: fieldIDs[position], expectedAt: tablePosition)
    }

    /// The table field of the model's property at `position`, or nil when
    /// the table has no such field.
    func field(at position: Int) -> ObjectTable.Field? {
        let tablePosition = tablePositions[position]
        return tablePosition < 0 ? nil : table.fields[tablePosition]
    }

    /// Decodes one object of the table.
    @inline(__always)
    func decode<M: Model>(_ type: M.Type, record: RecordView, key: UnsafeRawBufferPointer) throws -> M {
        var decoder = ModelDecoder(binding: self, record: record, key: key)
        return try M(from: &decoder)
    }

    /// The error for a stored value that the model's property cannot hold.
    func misfit<V>(_ stored: Value, at position: Int, as type: V.Type, key: UnsafeRawBufferPointer) -> StrataError {
        let property = properties[position]
        if let (raw, enumType) = Self.unknownRawValue(in: stored, as: V.self) {
            return .unknownEnumValue(
                raw, enumName: "\(enumType)", model: modelName, typeName: table.name, property: property.name,
                key: table.describeKey(key), path: table.path)
        }
        let what = stored.propertyType.map { "\(stored) of type \($0)" } ?? "null"
        let described = table.describeKey(key)
        return .invalidValue(
            "The '\(table.name)' object \(described) in \(table.path) stores \(what) for '\(property.name)', which the model \(modelName) reads as \(V.self).",
            typeName: table.name, property: property.name, key: described,
            remedy:
                "The file was written with another schema or edited by hand; read it with the model of its schema version.",
            path: table.path)
    }
}
