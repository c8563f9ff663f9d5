import Foundation

/// A growable byte buffer for encoding; reused across records so that
/// encoding does not allocate once it has reached its working size.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    @inline(__always)
    mutating func append(_ byte: UInt8) { bytes.append(byte) }

    @inline(__always)
    mutating func appendVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    @inline(__always)
    mutating func appendLittleEndian(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inline(__always)
    mutating func appendBigEndian(_ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ uuid: UUID) {
        withUnsafeBytes(of: uuid.uuid) { bytes.append(contentsOf: $0) }
    }

    mutating func append<C: Collection>(contentsOf collection: C) where C.Element == UInt8 {
        bytes.append(contentsOf: collection)
    }
}

/// Why bytes failed to decode. Turned into a ``StrataError`` by the caller,
/// which knows which file, type and object the bytes belong to.
struct DecodingFailure: Error, Equatable {
    var reason: String
    var offset: Int
}

/// A bounds-checked reader over bytes that may be damaged: every read checks
/// the remaining length first, and lengths read from the bytes are checked
/// against what is left before anything is allocated.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset: Int

    init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }
    var isAtEnd: Bool { offset >= bytes.count }

    @inline(__always)
    mutating func readByte() throws(DecodingFailure) -> UInt8 {
        guard offset < bytes.count else { throw DecodingFailure(reason: "unexpected end of bytes", offset: offset) }
        defer { offset += 1 }
        return bytes[offset]
    }

    @inline(__always)
    mutating func readVarint() throws(DecodingFailure) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        let start = offset
        while true {
            guard offset < bytes.count else { throw DecodingFailure(reason: "unexpected end of bytes in a varint", offset: start) }
            let byte = bytes[offset]
            offset += 1
            if shift == 63 && byte > 1 { throw DecodingFailure(reason: "varint overflows 64 bits", offset: start) }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    @inline(__always)
    mutating func readLittleEndianUInt64() throws(DecodingFailure) -> UInt64 {
        guard remaining >= 8 else { throw DecodingFailure(reason: "unexpected end of bytes in an 8-byte value", offset: offset) }
        defer { offset += 8 }
        return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// Reads a varint length and returns that many bytes, without copying.
    @inline(__always)
    mutating func readLengthPrefixed() throws(DecodingFailure) -> UnsafeRawBufferPointer {
        let start = offset
        let length = try readVarint()
        guard length <= UInt64(remaining) else {
            throw DecodingFailure(reason: "length \(length) exceeds the \(remaining) bytes left", offset: start)
        }
        return try read(count: Int(length))
    }

    @inline(__always)
    mutating func read(count: Int) throws(DecodingFailure) -> UnsafeRawBufferPointer {
        guard count <= remaining else { throw DecodingFailure(reason: "unexpected end of bytes", offset: offset) }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset ..< offset + count])
    }
}
