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
