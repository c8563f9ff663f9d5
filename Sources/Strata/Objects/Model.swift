import Foundation

/// A Swift type whose values are stored as objects: usually a struct
/// declared with the `@Model` macro, which writes this conformance.
///
/// A conformance has three parts: the static ``schema`` (the stored type
/// name and the stored properties, in order), ``encode(to:)``, which hands
/// the stored properties to the encoder in that order, and
/// ``init(from:)``, which reads them back in the same order. Properties are
/// matched by position, never by name: writing a model costs no dictionary
/// and no string hashing.
///
/// Written by hand, it looks like this:
///
/// ```swift
/// struct Person: Model {
///     typealias Key = Int
///     var id: Int
///     var name: String
///     var age: Int = 0
///
///     static let schema = ModelSchema<Person>(name: "Person", properties: [
///         .init(\.id, "id", primaryKey: true),
///         .init(\.name, "name"),
///         .init(\.age, "age", indexed: true, default: 0),
///     ])
///
///     func encode(to encoder: inout ModelEncoder) {
///         encoder.encode(id)
///         encoder.encode(name)
///         encoder.encode(age)
///     }
///
///     init(from decoder: inout ModelDecoder) throws {
///         id = try decoder.decode(Int.self)
///         name = try decoder.decode(String.self)
///         age = try decoder.decode(Int.self)
///     }
/// }
/// ```
///
/// A property that a stored object has no value for (one added in a later
/// schema version) reads as the schema's default, else as null when it is
/// optional, else as its type's empty value.
public protocol Model: SendableMetatype {
    /// The type of the primary key: the ``ModelSchema`` property declared
    /// `primaryKey: true`, or `Int64` (the automatic id) for a model
    /// without one.
    associatedtype Key: PrimaryKeyValue

    /// The stored type name, the same as ``ModelSchema/name`` of
    /// ``schema``.
    ///
    /// Links to the model read this name instead of ``schema``, so that
    /// models may link to each other in a cycle (a `Person` whose
    /// `friends` are people): a schema that named its link targets through
    /// their schemas would need itself while it is being made. The
    /// `@Model` macro writes it; the default reads ``schema``, which a
    /// hand-written model in such a cycle must not rely on: give it
    /// `static var storedTypeName: String { "Person" }`.
    static var storedTypeName: String { get }

    /// The stored type name and properties.
    static var schema: ModelSchema<Self> { get }

    /// Hands each stored property to `encoder`, in the order of ``schema``.
    func encode(to encoder: inout ModelEncoder)

    /// Reads each stored property from `decoder`, in the order of ``schema``.
    ///
    /// - Throws: What the decoder throws, a ``StrataError`` for a stored
    ///   value that does not fit the property.
    init(from decoder: inout ModelDecoder) throws
}

/// Receives the stored properties of a ``Model`` value, in schema order.
///
/// Strata makes one per write and reuses its storage; a model only calls
/// `encode(_:)` once per stored property.
///
/// A write through a model's binding writes each primitive value straight
/// into record bytes: the field's id, tag and payload, keeping no `Value`
/// but those of the primary key and the indexed properties, which the
/// write needs again. Elsewhere (and for a type whose records hold fields
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
    /// Per position, the writer's length after the value was written.
    private let ends: UnsafeMutablePointer<Int>?
    /// Set when a value did not fit its field as it is (another type, a
    /// null for a required property, a decimal no field stores): the write
    /// then goes through slots and the engine's encoder, which converts or
    /// explains.
    private(set) var misfit = false

    init(slots: UnsafeMutablePointer<Value>, capacity: Int) {
        self.slots = slots
        self.capacity = capacity
        self.fields = nil
        self.writer = nil
        self.ends = nil
    }

    init(
        slots: UnsafeMutablePointer<Value>, capacity: Int, fields: UnsafePointer<ModelBinding.RecordField>,
        writer: ByteWriter, ends: UnsafeMutablePointer<Int>
    ) {
        self.slots = slots
        self.capacity = capacity
        self.fields = fields
        self.writer = writer
        self.ends = ends
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
        if field.keepsValue { slots[position] = value }
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

    // One overload per stored type, which the calls of a model in another
    // module pick over the generic method: the generic one runs there
    // unspecialized, through witness tables and type metadata, about a
    // hundred instructions per property. Each overload calls the generic
    // method here, where the compiler specializes it.

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Bool) { append(value.propertyValue) }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Bool?) { append(value.propertyValue) }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Int) { append(value.propertyValue) }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Int?) { append(value.propertyValue) }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Int64) { append(value.propertyValue) }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Int64?) { append(value.propertyValue) }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Double) { append(value.propertyValue) }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Double?) { append(value.propertyValue) }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: String) { append(value.propertyValue) }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: String?) { append(value.propertyValue) }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Data) { append(value.propertyValue) }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Data?) { append(value.propertyValue) }

    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Date) { append(value.propertyValue) }
    /// Stores the next property's value.
    @inline(__always)
    public mutating func encode(_ value: Date?) { append(value.propertyValue) }

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

/// Hands the stored properties of one object to a ``Model``'s
/// `init(from:)`, in schema order.
///
/// Each property is read from the record in place through a map from the
/// model's positions to the record's field ids that the transaction
/// computes once per model and type, not per object.
public struct ModelDecoder: ~Copyable {
    unowned(unsafe) let binding: ModelBinding
    /// The record, or nil when the values come from ``values``.
    let record: RecordView?
    /// The values by model position, when there is no record (an object
    /// converted from another model of the same type in a migration).
    let values: UnsafePointer<Value>?
    /// The object's key, for messages.
    let key: UnsafeRawBufferPointer
    private var position = 0

    init(binding: ModelBinding, record: RecordView, key: UnsafeRawBufferPointer) {
        self.binding = binding
        self.record = record
        self.values = nil
        self.key = key
    }

    init(binding: ModelBinding, values: UnsafePointer<Value>, key: UnsafeRawBufferPointer) {
        self.binding = binding
        self.record = nil
        self.values = values
        self.key = key
    }

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
    public mutating func decode(_ type: Bool?.Type) throws -> Bool? { try decode(as: Bool?.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Int.Type) throws -> Int { try decode(as: Int.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Int?.Type) throws -> Int? { try decode(as: Int?.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Int64.Type) throws -> Int64 { try decode(as: Int64.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Int64?.Type) throws -> Int64? { try decode(as: Int64?.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Double.Type) throws -> Double { try decode(as: Double.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Double?.Type) throws -> Double? { try decode(as: Double?.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: String.Type) throws -> String { try decode(as: String.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: String?.Type) throws -> String? { try decode(as: String?.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Data.Type) throws -> Data { try decode(as: Data.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Data?.Type) throws -> Data? { try decode(as: Data?.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Date.Type) throws -> Date { try decode(as: Date.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Date?.Type) throws -> Date? { try decode(as: Date?.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: UUID.Type) throws -> UUID { try decode(as: UUID.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: UUID?.Type) throws -> UUID? { try decode(as: UUID?.self) }

    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Decimal.Type) throws -> Decimal { try decode(as: Decimal.self) }
    /// The next property's value, as the generic `decode(_:)` reads it.
    @inline(__always)
    public mutating func decode(_ type: Decimal?.Type) throws -> Decimal? { try decode(as: Decimal?.self) }

    @inline(__always)
    private mutating func decode<V: PropertyValue>(as type: V.Type) throws -> V {
        let position = self.position
        precondition(
            position < binding.count, "A model decoded more properties than its schema declares (\(binding.count)).")
        self.position += 1
        // The common types straight from the record, without a `Value`.
        // Above all, without the `V?` that `V(propertyValue:)` returns: a
        // model in another module calls this unspecialized, and there each
        // `V?` looks up the metadata of `Optional<V>`, 400 instructions per
        // property, half of a typed scan. Once specialized, the comparisons
        // of metatypes are constants. A field that is absent or stored with
        // another type takes the general path below, with its defaults and
        // errors.
        if let record {
            if V.self == Int.self, let value = binding.storedInt(at: position, in: record),
                let exact = Int(exactly: value)
            {
                return unsafeBitCast(exact, to: V.self)
            }
            if V.self == Int64.self, let value = binding.storedInt(at: position, in: record) {
                return unsafeBitCast(value, to: V.self)
            }
            if V.self == String.self, let value = binding.storedString(at: position, in: record) {
                return unsafeBitCast(value, to: V.self)
            }
        }
        return try decodeValue(V.self, at: position)
    }

    /// ``decode(_:)`` through the stored ``Value``, for any type.
    @inline(never)
    private func decodeValue<V: PropertyValue>(_ type: V.Type, at position: Int) throws -> V {
        let stored: Value
        if let values {
            stored = values[position]
        } else if let record, let found = binding.storedValue(at: position, in: record) {
            stored = found
        } else {
            stored = binding.absentValues[position]
        }
        if let value = V(propertyValue: stored) { return value }
        throw binding.misfit(stored, at: position, as: V.self, key: key)
    }
}

extension Model {
    /// ``ModelSchema/name`` of ``schema``.
    public static var storedTypeName: String { schema.name }

    /// The stored object type of the model: ``ModelSchema/objectSchema``
    /// of ``schema``.
    public static var objectSchema: ObjectSchema { schema.objectSchema }

    /// The model's schema, without its Swift type.
    static var declaration: ModelDeclaration {
        schema.declaration(swiftName: String(describing: Self.self), storedTypeName: storedTypeName)
    }
}

/// The declaration of a model known by its existential metatype.
func declaration(of model: any Model.Type) -> ModelDeclaration {
    func open<M: Model>(_ model: M.Type) -> ModelDeclaration { M.declaration }
    return open(model)
}

extension Model {
    /// The value's stored properties by stored name: what the dynamic API
    /// reads for the object once it is written.
    ///
    /// For tests, fixtures and tools; writing a model never builds this
    /// dictionary.
    public var storedValues: [String: Value] {
        let properties = Self.schema.objectSchema.properties
        let slots = UnsafeMutablePointer<Value>.allocate(capacity: max(properties.count, 1))
        slots.initialize(repeating: .null, count: properties.count)
        defer {
            slots.deinitialize(count: properties.count)
            slots.deallocate()
        }
        var encoder = ModelEncoder(slots: slots, capacity: properties.count)
        encode(to: &encoder)
        var values: [String: Value] = [:]
        for (position, property) in properties.enumerated() { values[property.name] = slots[position] }
        return values
    }
}
