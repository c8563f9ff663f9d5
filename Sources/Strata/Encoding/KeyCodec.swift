import Foundation

/// Order-preserving encodings of primary keys and index keys.
///
/// LMDB compares keys as bytes, so each encoding sorts the way its values
/// do. Each primitive kind's encoding is ``StoredKind``'s; automatic ids
/// are big-endian `UInt64`.
enum KeyCodec {
    /// LMDB's default maximum key size, which is also the limit on values
    /// in a duplicate-key database (where index entries keep object keys).
    static let maxKeySize = 511
    static let stringMarker: UInt8 = 0x01

    /// Appends the key for a primary key value. Returns false when the
    /// value's type does not match `type`.
    static func appendPrimaryKey(_ value: Value, type: PropertyType, to writer: ByteWriter) -> Bool {
        guard let kind = StoredKind(type) else { return false }
        return StoredKind.appendPrimaryKey(value, kind: kind, to: writer)
    }

    static func appendAutomaticID(_ id: UInt64, to writer: ByteWriter) {
        writer.appendBigEndian(id)
    }

    /// Checks, without decoding, that `bytes` can be a key of the given type
    /// (an automatic id when `type` is nil).
    @inline(__always)
    static func validateKey(_ bytes: UnsafeRawBufferPointer, type: PropertyType?) throws(DecodingFailure) {
        let valid =
            switch type {
            case nil: bytes.count == 8
            case let type?: StoredKind(type)?.isValidPrimaryKey(bytes) ?? false
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
        guard let type else {
            guard bytes.count == 8 else {
                throw DecodingFailure(reason: "an integer key must be 8 bytes, found \(bytes.count)", offset: 0)
            }
            return .int(Int64(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))))
        }
        guard let kind = StoredKind(type) else {
            throw DecodingFailure(reason: "\(type) cannot be a key", offset: 0)
        }
        return try kind.decodePrimaryKey(bytes)
    }

    /// Appends the index key for a value: a tag byte and an order-preserving
    /// form of the value, cut at ``maxKeySize`` bytes. Returns true when the
    /// key reaches that size: it may have been cut, here or for another
    /// value that shares it, so equal keys do not prove equal values.
    @discardableResult
    static func appendIndexKey(_ value: Value, to writer: ByteWriter) -> Bool {
        let start = writer.count
        if let cut = StoredKind.appendIndexKey(value, to: writer) {
            assert(cut || writer.count - start <= maxKeySize)
            return cut
        }
        switch value {
        case .link(let key):
            // Orders links by their target's key; no index holds them.
            writer.append(RecordCodec.Tag.link.rawValue)
            appendIndexKey(key, to: writer)
        default:
            // Null has no payload; lists and embedded objects have no
            // order: they sort by tag.
            writer.append(tag(of: value).rawValue)
        }
        return false
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
    /// tag (null first), values of one kind as ``StoredKind`` orders them
    /// (numbers, dates and decimals numerically, -0.0 equal to 0.0, NaN
    /// after infinity; strings and data by their bytes, for strings
    /// Unicode scalar order), links by their target's key. Where two keys
    /// differ, their values compare the same way.
    static func compareInIndexOrder(_ a: Value, _ b: Value) -> Int {
        if let order = StoredKind.compare(a, b) { return order }
        if case .link(let x) = a, case .link(let y) = b {
            // As their index keys order them: by the target's key.
            return compareInIndexOrder(x, y)
        }
        return Int(tag(of: a).rawValue) - Int(tag(of: b).rawValue)
    }

    /// The tag byte that starts the index key of `value`.
    static func tag(of value: Value) -> RecordCodec.Tag {
        switch value {
        case .null: .null
        case .bool(let v): v ? .trueValue : .falseValue
        case .link: .link
        case .list: .list
        case .object: .object
        default: StoredKind(of: value)!.tag
        }
    }

    /// Doubles as bytes that sort numerically; -0.0 and 0.0 share a key, and
    /// every NaN shares one key.
    static func orderPreservingBits(_ value: Double) -> UInt64 {
        let canonical = value.isNaN ? Double.nan : (value == 0 ? 0 : value)
        let bits = canonical.bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }
}
