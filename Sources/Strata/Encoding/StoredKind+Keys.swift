import Foundation

/// The order-preserving keys and the comparison of each stored kind.
extension StoredKind {

    /// The key of an `int` primary key: the value with its sign bit flipped,
    /// stored big-endian, so that keys sort as the values do.
    @inline(__always)
    static func intKeyBits(_ value: Int64) -> UInt64 { UInt64(bitPattern: value) ^ (1 << 63) }

    /// The eight bytes of the key of an `int` primary key, in memory order:
    /// what ``appendPrimaryKey(_:kind:to:)`` appends, for a reader that
    /// keeps the key on the stack.
    @inline(__always)
    static func intPrimaryKey(_ value: Int64) -> UInt64 { intKeyBits(value).bigEndian }

    /// Appends the primary key of a value of the kind; false when the kind
    /// cannot be a primary key or the value is of another kind. Integers
    /// big-endian with the sign bit flipped, strings as UTF-8 after a
    /// marker byte (so that the empty string is a valid key), UUIDs as
    /// their 16 bytes.
    static func appendPrimaryKey(_ value: Value, kind: StoredKind, to writer: ByteWriter) -> Bool {
        switch (kind, value) {
        case (.int, .int(let v)):
            writer.appendBigEndian(intKeyBits(v))
        case (.string, .string(var v)):
            writer.append(KeyCodec.stringMarker)
            v.withUTF8 { writer.append(contentsOf: $0) }
        case (.uuid, .uuid(let v)):
            writer.append(v)
        default:
            return false
        }
        return true
    }

    /// Whether `bytes` can be a primary key of the kind.
    @inline(__always)
    func isValidPrimaryKey(_ bytes: UnsafeRawBufferPointer) -> Bool {
        switch self {
        case .int: bytes.count == 8
        case .uuid: bytes.count == 16
        case .string: bytes.first == KeyCodec.stringMarker
        case .bool, .double, .data, .date, .decimal: false
        }
    }

    /// Decodes a primary key of the kind written by
    /// ``appendPrimaryKey(_:kind:to:)``.
    func decodePrimaryKey(_ bytes: UnsafeRawBufferPointer) throws(DecodingFailure) -> Value {
        switch self {
        case .int:
            guard bytes.count == 8 else {
                throw DecodingFailure(reason: "an integer key must be 8 bytes, found \(bytes.count)", offset: 0)
            }
            return .int(Int64(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)) ^ (1 << 63)))
        case .string:
            guard bytes.first == KeyCodec.stringMarker else {
                throw DecodingFailure(reason: "a string key must start with its marker byte", offset: 0)
            }
            return .string(String(decoding: UnsafeRawBufferPointer(rebasing: bytes.dropFirst()), as: UTF8.self))
        case .uuid:
            guard bytes.count == 16 else {
                throw DecodingFailure(reason: "a UUID key must be 16 bytes, found \(bytes.count)", offset: 0)
            }
            return .uuid(UUID(uuid: bytes.loadUnaligned(as: uuid_t.self)))
        case .bool, .double, .data, .date, .decimal:
            throw DecodingFailure(reason: "\(propertyType) cannot be a key", offset: 0)
        }
    }

    /// Appends the index key of the value of kind `kind` stored at `p` of
    /// a validated record (its tag, then its payload), straight from the
    /// bytes: what ``appendIndexKey(_:to:)`` appends for the value read
    /// there. Nil, writing nothing, when the tag is not one of `kind`'s
    /// (the value a read gives is then another) or the kind's key needs
    /// the value (a decimal). Returns true when the key reaches
    /// `KeyCodec.maxKeySize` bytes (so it may have been cut).
    static func appendIndexKey(
        kind: StoredKind, storedAt p: Int, _ base: UnsafeRawPointer, _ end: Int, to writer: ByteWriter
    ) -> Bool? {
        let tag = base.load(fromByteOffset: p, as: UInt8.self)
        guard StoredKind(tag: tag) == kind else { return nil }
        var q = p + 1
        switch kind {
        case .bool:
            writer.append(tag)
        case .int:
            guard let raw = RecordView.varint(base, &q, end) else { return nil }
            writer.append(tag)
            writer.appendBigEndian(
                UInt64(bitPattern: Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)) ^ (1 << 63))
        case .double, .date:
            guard q + 8 <= end else { return nil }
            let bits = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: q, as: UInt64.self))
            writer.append(tag)
            writer.appendBigEndian(KeyCodec.orderPreservingBits(Double(bitPattern: bits)))
        case .string, .data:
            let limit = KeyCodec.maxKeySize - 1
            guard let length = RecordView.varint(base, &q, end), length <= UInt64(end - q) else { return nil }
            writer.append(tag)
            writer.append(contentsOf: UnsafeRawBufferPointer(start: base + q, count: min(Int(length), limit)))
            return Int(length) >= limit
        case .uuid:
            guard q + 16 <= end else { return nil }
            writer.append(tag)
            writer.append(contentsOf: UnsafeRawBufferPointer(start: base + q, count: 16))
        case .decimal:
            return nil
        }
        return false
    }

    /// Appends the index key of a primitive value, its tag first, cut at
    /// `KeyCodec.maxKeySize` bytes; nil, writing nothing, for null and the
    /// relationships. Returns true when the key reaches that size (so it
    /// may have been cut). Integers big-endian with the sign bit flipped;
    /// doubles and dates by ``KeyCodec/orderPreservingBits(_:)``; strings
    /// and data as their bytes; decimals by ``DecimalStorage/appendKey(_:to:)``.
    @inline(__always)
    static func appendIndexKey(_ value: Value, to writer: ByteWriter) -> Bool? {
        let limit = KeyCodec.maxKeySize - 1
        switch value {
        case .bool(let v):
            writer.append(v ? RecordCodec.Tag.trueValue.rawValue : RecordCodec.Tag.falseValue.rawValue)
        case .int(let v):
            writer.append(RecordCodec.Tag.int.rawValue)
            writer.appendBigEndian(UInt64(bitPattern: v) ^ (1 << 63))
        case .double(let v):
            writer.append(RecordCodec.Tag.double.rawValue)
            writer.appendBigEndian(KeyCodec.orderPreservingBits(v))
        case .date(let v):
            writer.append(RecordCodec.Tag.date.rawValue)
            writer.appendBigEndian(KeyCodec.orderPreservingBits(v.timeIntervalSinceReferenceDate))
        case .uuid(let v):
            writer.append(RecordCodec.Tag.uuid.rawValue)
            writer.append(v)
        case .string(var v):
            writer.append(RecordCodec.Tag.string.rawValue)
            v.withUTF8 { writer.append(contentsOf: $0.prefix(limit)) }
            return v.utf8.count >= limit
        case .data(let v):
            writer.append(RecordCodec.Tag.data.rawValue)
            writer.append(contentsOf: v.prefix(limit))
            return v.count >= limit
        case .decimal(let v):
            writer.append(RecordCodec.Tag.decimal.rawValue)
            DecimalStorage.appendKey(v, to: writer)
        case .null, .link, .list, .object:
            return nil
        }
        return false
    }

    /// Compares two primitive values of one kind in the order of their
    /// index keys, without cutting long strings and data; nil when they
    /// are not two values of one kind.
    @inline(__always)
    static func compare(_ a: Value, _ b: Value) -> Int? {
        switch (a, b) {
        case (.int(let x), .int(let y)):
            x < y ? -1 : (x == y ? 0 : 1)
        case (.double(let x), .double(let y)):
            compareBits(KeyCodec.orderPreservingBits(x), KeyCodec.orderPreservingBits(y))
        case (.date(let x), .date(let y)):
            compareBits(
                KeyCodec.orderPreservingBits(x.timeIntervalSinceReferenceDate),
                KeyCodec.orderPreservingBits(y.timeIntervalSinceReferenceDate))
        case (.string(var x), .string(var y)):
            x.withUTF8 { x in
                y.withUTF8 { y in KeyCodec.compare(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y)) }
            }
        case (.data(let x), .data(let y)):
            x.withUnsafeBytes { x in y.withUnsafeBytes { y in KeyCodec.compare(x, y) } }
        case (.uuid(let x), .uuid(let y)):
            withUnsafeBytes(of: x.uuid) { x in withUnsafeBytes(of: y.uuid) { y in KeyCodec.compare(x, y) } }
        case (.decimal(let x), .decimal(let y)):
            DecimalStorage.compare(x, y)
        default:
            nil
        }
    }

    private static func compareBits(_ x: UInt64, _ y: UInt64) -> Int {
        x < y ? -1 : (x == y ? 0 : 1)
    }
}
