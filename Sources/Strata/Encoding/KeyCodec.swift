import Foundation

/// Order-preserving encodings of primary keys and index keys.
///
/// LMDB compares keys as bytes, so each encoding sorts the way its values
/// do: integers big-endian with the sign bit flipped, strings as UTF-8
/// after a marker byte (so that the empty string is a valid key), UUIDs as
/// their 16 bytes, automatic ids as big-endian `UInt64`.
enum KeyCodec {
    /// LMDB's default maximum key size, which is also the limit on values
    /// in a duplicate-key database (where index entries keep object keys).
    static let maxKeySize = 511
    static let stringMarker: UInt8 = 0x01

    /// Appends the key for a primary key value. Returns false when the
    /// value's type does not match `type`.
    static func appendPrimaryKey(_ value: Value, type: PropertyType, to writer: inout ByteWriter) -> Bool {
        switch (type, value) {
        case (.int, .int(let v)):
            writer.appendBigEndian(UInt64(bitPattern: v) ^ (1 << 63))
        case (.string, .string(var v)):
            writer.append(stringMarker)
            v.withUTF8 { writer.append(contentsOf: $0) }
        case (.uuid, .uuid(let v)):
            writer.append(v)
        default:
            return false
        }
        return true
    }

    static func appendAutomaticID(_ id: UInt64, to writer: inout ByteWriter) {
        writer.appendBigEndian(id)
    }

    /// Checks, without decoding, that `bytes` can be a key of the given type
    /// (an automatic id when `type` is nil).
    @inline(__always)
    static func validateKey(_ bytes: UnsafeRawBufferPointer, type: PropertyType?) throws(DecodingFailure) {
        let valid =
            switch type {
            case nil, .int?: bytes.count == 8
            case .uuid?: bytes.count == 16
            case .string?: bytes.first == stringMarker
            default: false
            }
        if !valid {
            throw DecodingFailure(
                reason: "a key of \(bytes.count) bytes is not a valid \(type.map { "\($0)" } ?? "automatic id") key",
                offset: 0)
        }
    }

    /// Decodes a key written by ``appendPrimaryKey(_:type:to:)``, or an
    /// automatic id when `type` is nil.
    static func decodeKey(_ bytes: UnsafeRawBufferPointer, type: PropertyType?) throws(DecodingFailure) -> Value {
        switch type {
        case nil, .int?:
            guard bytes.count == 8 else {
                throw DecodingFailure(reason: "an integer key must be 8 bytes, found \(bytes.count)", offset: 0)
            }
            let raw = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
            return type == nil ? .int(Int64(bitPattern: raw)) : .int(Int64(bitPattern: raw ^ (1 << 63)))
        case .string?:
            guard bytes.first == stringMarker else {
                throw DecodingFailure(reason: "a string key must start with its marker byte", offset: 0)
            }
            return .string(String(decoding: UnsafeRawBufferPointer(rebasing: bytes.dropFirst()), as: UTF8.self))
        case .uuid?:
            guard bytes.count == 16 else {
                throw DecodingFailure(reason: "a UUID key must be 16 bytes, found \(bytes.count)", offset: 0)
            }
            return .uuid(UUID(uuid: bytes.loadUnaligned(as: uuid_t.self)))
        case let other?:
            throw DecodingFailure(reason: "\(other) cannot be a key", offset: 0)
        }
    }

    /// Appends the index key for a value: a tag byte and an order-preserving
    /// form of the value, cut at ``maxKeySize`` bytes. Returns true when the
    /// key reaches that size: it may have been cut, here or for another
    /// value that shares it, so equal keys do not prove equal values.
    @discardableResult
    static func appendIndexKey(_ value: Value, to writer: inout ByteWriter) -> Bool {
        let start = writer.count
        switch value {
        case .null:
            writer.append(RecordCodec.Tag.null.rawValue)
        case .bool(let v):
            writer.append(v ? RecordCodec.Tag.trueValue.rawValue : RecordCodec.Tag.falseValue.rawValue)
        case .int(let v):
            writer.append(RecordCodec.Tag.int.rawValue)
            writer.appendBigEndian(UInt64(bitPattern: v) ^ (1 << 63))
        case .double(let v):
            writer.append(RecordCodec.Tag.double.rawValue)
            writer.appendBigEndian(orderPreservingBits(v))
        case .date(let v):
            writer.append(RecordCodec.Tag.date.rawValue)
            writer.appendBigEndian(orderPreservingBits(v.timeIntervalSinceReferenceDate))
        case .uuid(let v):
            writer.append(RecordCodec.Tag.uuid.rawValue)
            writer.append(v)
        case .string(var v):
            writer.append(RecordCodec.Tag.string.rawValue)
            v.withUTF8 { writer.append(contentsOf: $0.prefix(maxKeySize - 1)) }
        case .data(let v):
            writer.append(RecordCodec.Tag.data.rawValue)
            writer.append(contentsOf: v.prefix(maxKeySize - 1))
        case .link(let key):
            // Orders links by their target's key; no index holds them.
            writer.append(RecordCodec.Tag.link.rawValue)
            appendIndexKey(key, to: &writer)
        case .list, .object:
            // Lists and embedded objects have no order; they sort by tag.
            writer.append(tag(of: value).rawValue)
        }
        switch value {
        case .string(let v): return v.utf8.count >= maxKeySize - 1
        case .data(let v): return v.count >= maxKeySize - 1
        default:
            assert(writer.count - start <= maxKeySize)
            return false
        }
    }

    /// Compares two keys as LMDB does by default: bytes, then length.
    static func compare(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Int {
        b.withUnsafeBytes { compare(a, $0) }
    }

    /// Compares two keys as LMDB does by default: bytes, then length.
    @inline(__always)
    static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        let common = min(a.count, b.count)
        let order = common == 0 ? 0 : Int(memcmp(a.baseAddress!, b.baseAddress!, common))
        return order != 0 ? order : a.count - b.count
    }

    /// Compares two values in the order of their index keys, without
    /// cutting long strings and data: values of different types by their
    /// tag (null first), numbers and dates numerically (-0.0 equals 0.0,
    /// NaN after infinity), strings and data by their bytes (for strings,
    /// Unicode scalar order), links by their target's key. Where two keys
    /// differ, their values compare the same way.
    static func compareInIndexOrder(_ a: Value, _ b: Value) -> Int {
        switch (a, b) {
        case (.int(let x), .int(let y)):
            return x < y ? -1 : (x == y ? 0 : 1)
        case (.double(let x), .double(let y)):
            return compareBits(orderPreservingBits(x), orderPreservingBits(y))
        case (.date(let x), .date(let y)):
            return compareBits(
                orderPreservingBits(x.timeIntervalSinceReferenceDate),
                orderPreservingBits(y.timeIntervalSinceReferenceDate))
        case (.string(var x), .string(var y)):
            return x.withUTF8 { x in y.withUTF8 { y in compare(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y)) } }
        case (.data(let x), .data(let y)):
            return x.withUnsafeBytes { x in y.withUnsafeBytes { y in compare(x, y) } }
        case (.uuid(let x), .uuid(let y)):
            return withUnsafeBytes(of: x.uuid) { x in withUnsafeBytes(of: y.uuid) { y in compare(x, y) } }
        case (.link(let x), .link(let y)):
            // As their index keys order them: by the target's key.
            return compareInIndexOrder(x, y)
        default:
            return Int(tag(of: a).rawValue) - Int(tag(of: b).rawValue)
        }
    }

    /// The tag byte that starts the index key of `value`.
    static func tag(of value: Value) -> RecordCodec.Tag {
        switch value {
        case .null: .null
        case .bool(let v): v ? .trueValue : .falseValue
        case .int: .int
        case .double: .double
        case .string: .string
        case .data: .data
        case .date: .date
        case .uuid: .uuid
        case .link: .link
        case .list: .list
        case .object: .object
        }
    }

    private static func compareBits(_ x: UInt64, _ y: UInt64) -> Int {
        x < y ? -1 : (x == y ? 0 : 1)
    }

    /// Doubles as bytes that sort numerically; -0.0 and 0.0 share a key, and
    /// every NaN shares one key.
    static func orderPreservingBits(_ value: Double) -> UInt64 {
        let canonical = value.isNaN ? Double.nan : (value == 0 ? 0 : value)
        let bits = canonical.bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }
}
