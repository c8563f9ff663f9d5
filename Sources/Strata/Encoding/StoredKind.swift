import Foundation

/// The primitive kinds of stored value, one description each: its record
/// tag and payload, its order-preserving key, how its values compare,
/// which values fit it, its empty value, whether it can be a primary key
/// or indexed, the Swift types a model declares it with, and how it reads
/// in messages and in `strata dump`.
///
/// Every layer that treats a primitive value by its kind asks here: the
/// record codec (``RecordCodec``, ``RecordView``), the key codec
/// (``KeyCodec``), the value checks (``Value/fits(_:optional:)``),
/// queries (``KeyCodec/compareInIndexOrder(_:_:)``,
/// ``Value/isStored(identicallyTo:)``), `verify`, ``PropertyType``'s
/// rules, and the command-line tool's formatting. The relationship types
/// (link, list, embedded) are not kinds: their values are read through
/// their property's description (``CompositeCodec``).
///
/// Adding a kind: a case here and in each `switch` of this file (the
/// compiler lists them), a record tag (``RecordCodec/Tag``), the case of
/// ``PropertyType`` and of ``Value``, the Swift type's ``PropertyValue``
/// conformance and its `ModelEncoder`/`ModelDecoder` overloads, and the
/// macro's name list (`StoredType.swift`, which a test checks against
/// ``swiftTypeNames``). `docs/FileFormat.md` documents the bytes.
enum StoredKind: CaseIterable, Sendable {
    case bool, int, double, string, data, date, uuid, decimal

    /// The kind of `type`, or nil for a relationship type.
    @inline(__always)
    init?(_ type: PropertyType) {
        switch type {
        case .bool: self = .bool
        case .int: self = .int
        case .double: self = .double
        case .string: self = .string
        case .data: self = .data
        case .date: self = .date
        case .uuid: self = .uuid
        case .decimal: self = .decimal
        case .link, .list, .embedded: return nil
        }
    }

    /// The kind of a non-null primitive value; nil for null, links, lists
    /// and embedded objects.
    @inline(__always)
    init?(of value: Value) {
        switch value {
        case .bool: self = .bool
        case .int: self = .int
        case .double: self = .double
        case .string: self = .string
        case .data: self = .data
        case .date: self = .date
        case .uuid: self = .uuid
        case .decimal: self = .decimal
        case .null, .link, .list, .object: return nil
        }
    }

    /// The kind a record tag stores; nil for null, the relationships, and
    /// unknown tags.
    @inline(__always)
    init?(tag: UInt8) {
        switch RecordCodec.Tag(rawValue: tag) {
        case .falseValue?, .trueValue?: self = .bool
        case .int?: self = .int
        case .double?: self = .double
        case .string?: self = .string
        case .data?: self = .data
        case .date?: self = .date
        case .uuid?: self = .uuid
        case .decimal?: self = .decimal
        case .null?, .link?, .list?, .object?, nil: return nil
        }
    }

    var propertyType: PropertyType {
        switch self {
        case .bool: .bool
        case .int: .int
        case .double: .double
        case .string: .string
        case .data: .data
        case .date: .date
        case .uuid: .uuid
        case .decimal: .decimal
        }
    }

    /// The record tag of the kind's values; for a bool, whose value is its
    /// tag, the tag of `false` (``tags`` has both).
    @inline(__always)
    var tag: RecordCodec.Tag {
        switch self {
        case .bool: .falseValue
        case .int: .int
        case .double: .double
        case .string: .string
        case .data: .data
        case .date: .date
        case .uuid: .uuid
        case .decimal: .decimal
        }
    }

    /// The record tags of the kind's values (a bool's value is its tag).
    var tags: [RecordCodec.Tag] {
        switch self {
        case .bool: [.falseValue, .trueValue]
        case .int: [.int]
        case .double: [.double]
        case .string: [.string]
        case .data: [.data]
        case .date: [.date]
        case .uuid: [.uuid]
        case .decimal: [.decimal]
        }
    }

    /// How a payload of the kind is laid out, which is all ``RecordView``
    /// needs to skip it.
    enum Payload: Equatable {
        /// None: the tag is the value.
        case none
        /// A zigzag varint.
        case varint
        /// A fixed number of bytes.
        case fixed(Int)
        /// A varint byte count, then that many bytes.
        case sized
    }

    var payload: Payload {
        switch self {
        case .bool: .none
        case .int: .varint
        case .double, .date: .fixed(8)
        case .uuid: .fixed(16)
        case .string, .data, .decimal: .sized
        }
    }

    /// Whether a property of the kind can be an object type's primary key.
    var canBePrimaryKey: Bool {
        switch self {
        case .int, .string, .uuid: true
        case .bool, .double, .data, .date, .decimal: false
        }
    }

    /// Whether a property of the kind can be indexed.
    var canBeIndexed: Bool {
        switch self {
        case .bool, .int, .string, .date, .uuid, .decimal: true
        case .double, .data: false
        }
    }

    /// The value a required property reads as when a record has no value
    /// for it and the schema gives no default.
    var emptyValue: Value {
        switch self {
        case .bool: .bool(false)
        case .int: .int(0)
        case .double: .double(0)
        case .string: .string("")
        case .data: .data(Data())
        case .date: .date(Date(timeIntervalSinceReferenceDate: 0))
        case .uuid: .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        case .decimal: .decimal(0)
        }
    }

    /// The Swift types, by name without module, that `@Model` stores as
    /// the kind. The macro cannot import Strata, so it keeps its own list;
    /// a test checks the two agree.
    var swiftTypeNames: [String] {
        switch self {
        case .bool: ["Bool"]
        case .int: ["Int", "Int64"]
        case .double: ["Double"]
        case .string: ["String"]
        case .data: ["Data"]
        case .date: ["Date"]
        case .uuid: ["UUID"]
        case .decimal: ["Decimal"]
        }
    }

    /// The kind in a sentence about a stored value: "an int", "a decimal".
    var noun: String {
        switch self {
        case .bool: "a bool"
        case .int: "an int"
        case .double: "a double"
        case .string: "a string"
        case .data: "data"
        case .date: "a date"
        case .uuid: "a uuid"
        case .decimal: "a decimal"
        }
    }

    // MARK: Values

    /// Whether `value`, of this kind, may be stored: every value but a
    /// decimal NaN, which has no order and no stored form.
    @inline(__always)
    static func admits(_ value: Value) -> Bool {
        if case .decimal(let v) = value { return DecimalStorage.isStorable(v) }
        return true
    }

    /// `value` converted to `type` where that loses nothing: an integer to
    /// a double or a decimal, a double literal to the decimal its shortest
    /// text spells (9.99 is 9.99); else nil.
    @inline(__always)
    static func coerce(_ value: Value, to type: PropertyType) -> Value? {
        switch (type, value) {
        case (.double, .int(let v)): Double(exactly: v).map { .double($0) }
        case (.decimal, .int(let v)): .decimal(Decimal(v))
        case (.decimal, .double(let v)): decimal(fromLiteral: v)
        default: nil
        }
    }

    @inline(never)
    private static func decimal(fromLiteral value: Double) -> Value? {
        guard value.isFinite else { return nil }
        return Decimal(string: "\(value)", locale: Locale(identifier: "en_US_POSIX")).map { .decimal($0) }
    }

    /// Whether two values of one kind are stored as the same key: strings
    /// by their exact UTF-8 bytes, doubles and dates with -0.0 equal to 0.0
    /// and every NaN equal to NaN, decimals numerically (1.0 and 1.00).
    /// False for values of different kinds, and nil when neither is a
    /// primitive value.
    static func identical(_ a: Value, _ b: Value) -> Bool? {
        switch (a, b) {
        case (.string(let x), .string(let y)):
            x.utf8.elementsEqual(y.utf8)
        case (.double(let x), .double(let y)):
            KeyCodec.orderPreservingBits(x) == KeyCodec.orderPreservingBits(y)
        case (.date(let x), .date(let y)):
            KeyCodec.orderPreservingBits(x.timeIntervalSinceReferenceDate)
                == KeyCodec.orderPreservingBits(y.timeIntervalSinceReferenceDate)
        case (.decimal(let x), .decimal(let y)):
            DecimalStorage.compare(x, y) == 0
        case (.bool, _), (.int, _), (.double, _), (.string, _), (.data, _), (.date, _), (.uuid, _), (.decimal, _):
            a == b
        default:
            nil
        }
    }

    // MARK: Records

    /// Appends an int's payload: a zigzag varint.
    @inline(__always)
    static func appendIntPayload(_ value: Int64, to sink: ByteSink) {
        sink.appendVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// Appends a string's payload: its UTF-8 length, then its UTF-8 bytes.
    @inline(__always)
    static func appendStringPayload(_ value: String, to sink: ByteSink) {
        // A native or small string lends its bytes without a copy.
        let written: Void? = value.utf8.withContiguousStorageIfAvailable { utf8 in
            sink.appendVarint(UInt64(utf8.count))
            sink.append(contentsOf: UnsafeRawBufferPointer(utf8))
        }
        if written == nil { appendBridgedString(value, to: sink) }
    }

    /// ``appendStringPayload(_:to:)`` for a string without contiguous
    /// UTF-8 (a bridged one): made native first.
    @inline(never)
    private static func appendBridgedString(_ value: String, to sink: ByteSink) {
        var copy = value
        copy.withUTF8 { utf8 in
            sink.appendVarint(UInt64(utf8.count))
            sink.append(contentsOf: UnsafeRawBufferPointer(utf8))
        }
    }

    /// Appends a double's or a date's payload: the 8 bytes of the double's
    /// bit pattern (a date's seconds since 2001), little-endian.
    @inline(__always)
    static func appendBitsPayload(_ value: Double, to sink: ByteSink) {
        sink.appendLittleEndian(value.bitPattern)
    }

    /// Appends the tag and payload of a primitive value; false, writing
    /// nothing, for null and the relationships.
    @inline(__always)
    static func appendTagged(_ value: Value, to writer: ByteWriter) -> Bool {
        switch value {
        case .bool(let v):
            writer.append(v ? RecordCodec.Tag.trueValue.rawValue : RecordCodec.Tag.falseValue.rawValue)
        case .int(let v):
            writer.append(RecordCodec.Tag.int.rawValue)
            appendIntPayload(v, to: writer.sink)
        case .double(let v):
            writer.append(RecordCodec.Tag.double.rawValue)
            appendBitsPayload(v, to: writer.sink)
        case .string(let v):
            writer.append(RecordCodec.Tag.string.rawValue)
            appendStringPayload(v, to: writer.sink)
        case .data(let v):
            writer.append(RecordCodec.Tag.data.rawValue)
            writer.appendVarint(UInt64(v.count))
            writer.append(contentsOf: v)
        case .date(let v):
            writer.append(RecordCodec.Tag.date.rawValue)
            appendBitsPayload(v.timeIntervalSinceReferenceDate, to: writer.sink)
        case .uuid(let v):
            writer.append(RecordCodec.Tag.uuid.rawValue)
            writer.append(v)
        case .decimal(let v):
            writer.append(RecordCodec.Tag.decimal.rawValue)
            DecimalStorage.appendPayload(v, to: writer)
        case .null, .link, .list, .object:
            return false
        }
        return true
    }

    /// Reads the payload of a primitive value whose tag, `tag`, was just
    /// read, at `p` of a validated record; nil for another tag or a damaged
    /// payload.
    @inline(__always)
    static func read(tag: UInt8, _ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Value? {
        switch tag {
        case RecordCodec.Tag.falseValue.rawValue: return .bool(false)
        case RecordCodec.Tag.trueValue.rawValue: return .bool(true)
        case RecordCodec.Tag.int.rawValue:
            guard let raw = RecordView.varint(base, &p, end) else { return nil }
            return .int(Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1))
        case RecordCodec.Tag.double.rawValue:
            defer { p += 8 }
            return .double(
                Double(bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: p, as: UInt64.self))))
        case RecordCodec.Tag.date.rawValue:
            defer { p += 8 }
            return .date(
                Date(
                    timeIntervalSinceReferenceDate: Double(
                        bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: p, as: UInt64.self)))))
        case RecordCodec.Tag.string.rawValue, RecordCodec.Tag.data.rawValue:
            guard let length = RecordView.varint(base, &p, end), length <= UInt64(end - p) else { return nil }
            let payload = UnsafeRawBufferPointer(start: base + p, count: Int(length))
            p += Int(length)
            return tag == RecordCodec.Tag.string.rawValue
                ? .string(String(decoding: payload, as: UTF8.self)) : .data(Data(payload))
        case RecordCodec.Tag.uuid.rawValue:
            defer { p += 16 }
            return .uuid(UUID(uuid: base.loadUnaligned(fromByteOffset: p, as: uuid_t.self)))
        case RecordCodec.Tag.decimal.rawValue:
            return readDecimal(base, &p, end)
        default:
            return nil
        }
    }

    @inline(never)
    private static func readDecimal(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Value? {
        guard let length = RecordView.varint(base, &p, end), length <= UInt64(end - p) else { return nil }
        defer { p += Int(length) }
        return DecimalStorage.readPayload(base, p, length: Int(length)).map { .decimal($0) }
    }

    /// Skips the payload of a value of `kind`, whose tag `tag` was just
    /// read, at `p`; false when it runs past `end` or is not what the kind
    /// writes. ``RecordView/skip(_:_:_:)`` tests the first kinds' tags
    /// itself, before it asks here.
    @inline(never)
    static func skipPayload(_ kind: StoredKind, tag: UInt8, _ base: UnsafeRawPointer, _ p: inout Int, _ end: Int)
        -> Bool
    {
        switch kind.payload {
        case .none:
            return true
        case .varint:
            return RecordView.varint(base, &p, end) != nil
        case .fixed(let size):
            p += size
            return p <= end
        case .sized:
            guard let length = RecordView.varint(base, &p, end), length <= UInt64(end - p),
                isValidSizedPayload(tag: tag, base, p, length: Int(length))
            else { return false }
            p += Int(length)
            return true
        }
    }

    /// Whether the sized payload of `length` bytes at `p`, after a tag of
    /// this shape, holds what its kind writes: any bytes for a string or
    /// data, a well-formed decimal.
    @inline(__always)
    static func isValidSizedPayload(tag: UInt8, _ base: UnsafeRawPointer, _ p: Int, length: Int) -> Bool {
        tag != RecordCodec.Tag.decimal.rawValue || DecimalStorage.isValidPayload(base, p, length: length)
    }
}
