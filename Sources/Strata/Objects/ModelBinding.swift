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
    private let tablePositions: UnsafeMutableBufferPointer<Int>
    /// Per table field position, the model position, or -1.
    private let modelPositions: UnsafeMutableBufferPointer<Int>
    /// Per model position, the table field's id (0 when the table has no
    /// such field): what a typed read looks for, kept here so that reading
    /// a property touches neither the table nor its reference count.
    private let fieldIDs: UnsafeMutableBufferPointer<PropertyID>
    /// Per model position, what a record without the field reads as.
    let absentValues: UnsafeMutableBufferPointer<Value>
    /// Filled by ``encode(_:)``.
    let slots: UnsafeMutableBufferPointer<Value>

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
    }

    deinit {
        tablePositions.deallocate()
        modelPositions.deallocate()
        fieldIDs.deallocate()
        absentValues.deinitialize()
        absentValues.deallocate()
        slots.deinitialize()
        slots.deallocate()
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

    /// What the model's property at `position` reads as for `record`: the
    /// stored value, or the value of a property the record lacks.
    @inline(__always)
    func value(at position: Int, in record: RecordView) -> Value {
        storedValue(at: position, in: record) ?? absentValues[position]
    }

    /// The stored integer of the model's property at `position`, or nil
    /// when the record has none or stores another type there.
    @inline(__always)
    func storedInt(at position: Int, in record: RecordView) -> Int64? {
        let tablePosition = tablePositions[position]
        guard tablePosition >= 0 else { return nil }
        return record.int(forField: fieldIDs[position], expectedAt: tablePosition)
    }

    /// The stored string of the model's property at `position`, or nil
    /// when the record has none or stores another type there.
    @inline(__always)
    func storedString(at position: Int, in record: RecordView) -> String? {
        let tablePosition = tablePositions[position]
        guard tablePosition >= 0 else { return nil }
        return record.string(forField: fieldIDs[position], expectedAt: tablePosition)
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
