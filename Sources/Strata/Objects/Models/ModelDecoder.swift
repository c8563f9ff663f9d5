import Foundation

/// Hands the stored properties of one object to a ``Model``'s
/// `init(from:)`, in schema order.
///
/// Each property is read from the record in place through a map from the
/// model's positions to the record's field ids that the transaction
/// computes once per model and type, not per object.
///
/// The record need not be validated whole first: each read checks the
/// bytes it walks, and a property that the fast reads cannot answer (its
/// field absent, of another type, composite, or damaged) validates the
/// whole record once before it is read, so a damaged field that is read
/// throws ``StrataError/Code/corruptFile``.
public struct ModelDecoder: ~Copyable {
    unowned(unsafe) let binding: ModelBinding
    /// The record, or nil when the values come from ``values``; replaced by
    /// its validated view the first time a read needs the whole record.
    var record: RecordView?
    /// Where the reads in field order have got to in ``record``.
    private var cursor: FieldCursor
    /// The values by model position, when there is no record (an object
    /// converted from another model of the same type in a migration).
    let values: UnsafePointer<Value>?
    /// The object's key, for messages.
    let key: UnsafeRawBufferPointer
    /// The binding's map by model position: the table field's position
    /// (-1: none) and its id. Read through raw pointers, so that the
    /// common reads touch neither the binding nor its reference count.
    private let tablePositions: UnsafePointer<Int>
    private let fieldIDs: UnsafePointer<PropertyID>
    private let count: Int
    private var position = 0

    init(binding: ModelBinding, record: RecordView, key: UnsafeRawBufferPointer) {
        self.init(binding: binding, record: record, values: nil, key: key)
    }

    init(binding: ModelBinding, values: UnsafePointer<Value>, key: UnsafeRawBufferPointer) {
        self.init(binding: binding, record: nil, values: values, key: key)
    }

    private init(binding: ModelBinding, record: RecordView?, values: UnsafePointer<Value>?, key: UnsafeRawBufferPointer)
    {
        self.binding = binding
        self.record = record
        cursor = FieldCursor(offset: record?.fieldsOffset ?? 0, index: 0, passed: 0)
        self.values = values
        self.key = key
        tablePositions = UnsafePointer(binding.tablePositions.baseAddress!)
        fieldIDs = UnsafePointer(binding.fieldIDs.baseAddress!)
        count = binding.count
    }

    /// The effective schema version of the object being decoded: the
    /// version of the app that last wrote it (``DynamicObject/schemaVersion``
    /// in the dynamic API). Nil when the values do not come from a stored
    /// record (a later step of a typed migration). A model can keep it in a
    /// property that is not stored:
    ///
    /// ```swift
    /// init(from decoder: inout ModelDecoder) throws {
    ///     id = try decoder.decode(Int.self)
    ///     writtenBy = decoder.schemaVersion
    /// }
    /// ```
    public var schemaVersion: UInt64? { record?.effectiveSchemaVersion }

    /// The next property's value.
    ///
    /// - Throws: ``StrataError`` with code ``StrataError/Code/invalidValue``
    ///   when the stored value does not fit `V` (a file written by a peer
    ///   with another schema, or edited by hand), naming the type, the
    ///   property and the object's primary key.
    @inline(__always)
    public mutating func decode<V: PropertyValue>(_ type: V.Type) throws -> V {
        try decode(as: V.self)
    }

    /// The next property's value, of the type the assignment expects:
    /// `self.owner = try decoder.decode()`. The same as `decode(_:)`, for
    /// a type that would have to be spelled out otherwise.
    @inline(__always)
    public mutating func decode<V: PropertyValue>() throws -> V {
        try decode(as: V.self)
    }

    // One overload per stored type, for the same reason as ModelEncoder's:
    // a model in another module calls these instead of the generic method,
    // which they call here, specialized.

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Bool.Type) throws -> Bool { try decode(as: Bool.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Bool?.Type) throws -> Bool? { try decodeOptional(Bool.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Int.Type) throws -> Int { try decode(as: Int.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Int?.Type) throws -> Int? { try decodeOptional(Int.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Int64.Type) throws -> Int64 { try decode(as: Int64.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Int64?.Type) throws -> Int64? { try decodeOptional(Int64.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Double.Type) throws -> Double { try decode(as: Double.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Double?.Type) throws -> Double? { try decodeOptional(Double.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: String.Type) throws -> String { try decode(as: String.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: String?.Type) throws -> String? { try decodeOptional(String.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Data.Type) throws -> Data { try decode(as: Data.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Data?.Type) throws -> Data? { try decodeOptional(Data.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Date.Type) throws -> Date { try decode(as: Date.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Date?.Type) throws -> Date? { try decodeOptional(Date.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: UUID.Type) throws -> UUID { try decode(as: UUID.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: UUID?.Type) throws -> UUID? { try decodeOptional(UUID.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Decimal.Type) throws -> Decimal { try decode(as: Decimal.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Decimal?.Type) throws -> Decimal? { try decodeOptional(Decimal.self) }

    @inline(__always)
    private mutating func decode<V: PropertyValue>(as type: V.Type) throws -> V {
        let position = self.position
        precondition(position < count, "A model decoded more properties than its schema declares (\(count)).")
        self.position += 1
        // The common types straight from the record, without a `Value`
        // (`Int`, `Int64`, `String`, `Double`, `Bool`, `Date`).
        // Above all, without the `V?` that `V(propertyValue:)` returns: a
        // model in another module calls this unspecialized, and there each
        // `V?` looks up the metadata of `Optional<V>`, 400 instructions per
        // property, half of a typed scan. Once specialized, the comparisons
        // of metatypes are constants. A field that is absent or stored with
        // another type takes the general path below, with its defaults and
        // errors.
        // The fields are read in order through `cursor`, each walked once.
        if let record, tablePositions[position] >= 0 {
            let id = fieldIDs[position]
            if V.self == Int.self, let value = record.int(forField: id, from: &cursor),
                let exact = Int(exactly: value)
            {
                return unsafeBitCast(exact, to: V.self)
            }
            if V.self == Int64.self, let value = record.int(forField: id, from: &cursor) {
                return unsafeBitCast(value, to: V.self)
            }
            if V.self == String.self, let value = record.string(forField: id, from: &cursor) {
                return unsafeBitCast(value, to: V.self)
            }
            if V.self == Double.self, let bits = record.bitPattern(forField: id, from: &cursor, tag: .double) {
                return unsafeBitCast(Double(bitPattern: bits), to: V.self)
            }
            if V.self == Bool.self, let value = record.bool(forField: id, from: &cursor) {
                return unsafeBitCast(value, to: V.self)
            }
            if V.self == Date.self, let bits = record.bitPattern(forField: id, from: &cursor, tag: .date) {
                let date = Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits))
                return unsafeBitCast(date, to: V.self)
            }
        }
        return try decodeValue(V.self, at: position)
    }

    /// The next property's value for an optional property of the
    /// concrete overloads: a stored null is nil without a ``Value``, and
    /// a stored value reads as `V` does.
    @inline(__always)
    private mutating func decodeOptional<V: PropertyValue>(_ type: V.Type) throws -> V? {
        let position = self.position
        if let record, position < count, tablePositions[position] >= 0,
            let isNull = record.isNull(forField: fieldIDs[position], from: &cursor)
        {
            guard isNull else { return try decode(as: V.self) }
            self.position += 1
            return nil
        }
        precondition(position < count, "A model decoded more properties than its schema declares (\(count)).")
        self.position += 1
        return try decodeValue(V?.self, at: position)
    }

    /// ``decode(_:)`` through the stored ``Value``, for any type.
    /// A record not validated whole is validated here first, once: the
    /// fast reads could not tell an absent field from a damaged one.
    @inline(never)
    private mutating func decodeValue<V: PropertyValue>(_ type: V.Type, at position: Int) throws -> V {
        let stored: Value
        if let values {
            stored = values[position]
        } else if let record {
            let whole: RecordView
            do throws(DecodingFailure) {
                whole = try record.validated()
            } catch {
                throw binding.table.corruptRecord(error, key: key)
            }
            self.record = whole
            stored = binding.storedValue(at: position, in: whole) ?? binding.absentValues[position]
        } else {
            stored = binding.absentValues[position]
        }
        if let value = V(propertyValue: stored) { return value }
        throw binding.misfit(stored, at: position, as: V.self, key: key)
    }
}
