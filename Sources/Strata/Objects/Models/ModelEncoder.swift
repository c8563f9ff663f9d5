import Foundation

/// Receives the stored properties of a ``Model`` value, in schema order.
///
/// Strata makes one per write and reuses its storage; a model only calls
/// `encode(_:)` once per stored property.
///
/// A write through a model's binding writes each primitive value straight
/// into record bytes: the field's id, tag and payload (as `StoredKind`
/// lays them out), keeping no `Value` but those the write needs again:
/// the primary key and the links, lists and embedded objects, which the
/// engine's checking codec encodes. Elsewhere (and for a type whose records hold fields
/// the model lacks) the values go into slots by position.
public struct ModelEncoder: ~Copyable {
    let slots: UnsafeMutablePointer<Value>
    let capacity: Int
    private(set) var count = 0
    /// Per position, the field each value is written as; nil when values
    /// go into slots only.
    private let fields: UnsafePointer<ModelBinding.RecordField>?
    /// Where the field bytes go, when ``fields`` is set. A copy shares the
    /// buffer.
    private let writer: ByteWriter?
    /// ``writer``'s buffer, for the primitives written without a `Value`.
    private let sink: ByteSink?
    /// Per position, the writer's length after the value was written.
    private let ends: UnsafeMutablePointer<Int>?
    /// Set when a value did not fit its field as it is (another type, a
    /// null for a required property, a decimal no field stores): the write
    /// then goes through slots and the engine's encoder, which converts or
    /// explains.
    private(set) var misfit = false
    /// Whether every value also goes into ``slots``, not only those the
    /// field marks (``ModelBinding/RecordField/keepsValue``).
    private let keepsEveryValue: Bool

    init(slots: UnsafeMutablePointer<Value>, capacity: Int) {
        self.slots = slots
        self.capacity = capacity
        self.fields = nil
        self.writer = nil
        self.sink = nil
        self.ends = nil
        self.keepsEveryValue = true
    }

    init(
        slots: UnsafeMutablePointer<Value>, capacity: Int, fields: UnsafePointer<ModelBinding.RecordField>,
        writer: ByteWriter, ends: UnsafeMutablePointer<Int>, keepsEveryValue: Bool = false
    ) {
        self.slots = slots
        self.capacity = capacity
        self.fields = fields
        self.writer = writer
        self.sink = writer.sink
        self.ends = ends
        self.keepsEveryValue = keepsEveryValue
    }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode<V: PropertyValue>(_ value: V) {
        append(value.propertyValue)
    }

    @inline(__always)
    private mutating func append(_ value: Value) {
        precondition(count < capacity, "A model encoded more properties than its schema declares (\(capacity)).")
        let position = count
        count += 1
        guard let fields, let ends else {
            slots[position] = value
            return
        }
        let field = fields[position]
        if field.keepsValue || keepsEveryValue { slots[position] = value }
        let writer = self.writer.unsafelyUnwrapped
        if !field.isComposite && !misfit && !write(value, as: field, to: writer) { misfit = true }
        ends[position] = writer.count
    }

    /// Writes the field's id, tag and payload; false, writing nothing, when
    /// the value does not fit the field as it is.
    @inline(__always)
    private func write(_ value: Value, as field: ModelBinding.RecordField, to writer: ByteWriter) -> Bool {
        if case .null = value {
            guard field.isOptional else { return false }
            writer.appendVarint(field.id)
            writer.append(RecordCodec.Tag.null.rawValue)
            return true
        }
        guard StoredKind(of: value) == field.kind, StoredKind.admits(value) else { return false }
        writer.appendVarint(field.id)
        return StoredKind.appendTagged(value, to: writer)
    }

    /// Writes the next field straight from a primitive of `kind` (its tag
    /// `tag`, its payload what `payload` appends) when the field takes it
    /// as it is; else hands `value` to the general path.
    @inline(__always)
    private mutating func write(
        _ kind: StoredKind, tag: RecordCodec.Tag, _ value: @autoclosure () -> Value, payload: (ByteSink) -> Void
    ) {
        let position = count
        if let fields, let sink, position < capacity, !misfit, fields[position].kind == kind {
            let field = fields[position]
            if field.keepsValue || keepsEveryValue { slots[position] = value() }
            count = position + 1
            sink.appendVarint(field.id)
            sink.append(tag.rawValue)
            payload(sink)
            ends.unsafelyUnwrapped[position] = sink.count
            return
        }
        append(value())
    }

    // One overload per stored type, which the calls of a model in another
    // module pick over the generic method: the generic one runs there
    // unspecialized, through witness tables and type metadata, about a
    // hundred instructions per property. The common kinds write their
    // bytes here without a `Value`; the others call the generic method
    // here, where the compiler specializes it.

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Bool) {
        write(.bool, tag: value ? .trueValue : .falseValue, .bool(value)) { _ in }
    }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Bool?) {
        if let value { encode(value) } else { append(.null) }
    }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Int) {
        write(.int, tag: .int, .int(Int64(value))) { StoredKind.appendIntPayload(Int64(value), to: $0) }
    }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Int?) {
        if let value { encode(value) } else { append(.null) }
    }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Int64) {
        write(.int, tag: .int, .int(value)) { StoredKind.appendIntPayload(value, to: $0) }
    }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Int64?) {
        if let value { encode(value) } else { append(.null) }
    }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Double) {
        write(.double, tag: .double, .double(value)) { StoredKind.appendBitsPayload(value, to: $0) }
    }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Double?) {
        if let value { encode(value) } else { append(.null) }
    }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: String) {
        write(.string, tag: .string, .string(value)) { StoredKind.appendStringPayload(value, to: $0) }
    }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: String?) {
        if let value { encode(value) } else { append(.null) }
    }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Data) { append(value.propertyValue) }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Data?) { append(value.propertyValue) }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Date) {
        write(.date, tag: .date, .date(value)) {
            StoredKind.appendBitsPayload(value.timeIntervalSinceReferenceDate, to: $0)
        }
    }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Date?) {
        if let value { encode(value) } else { append(.null) }
    }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: UUID) { append(value.propertyValue) }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: UUID?) { append(value.propertyValue) }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Decimal) { append(value.propertyValue) }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Decimal?) { append(value.propertyValue) }
}
