import Foundation

/// A growable byte buffer for encoding, reused across records so that
/// encoding stops allocating once it has reached its working size.
///
/// Its bytes live in raw memory owned by a class, and its length in a raw
/// header: appending is a store and an increment, with no uniqueness or
/// exclusivity check. The price is reference semantics: copies of a writer
/// share one buffer, so each writer has one owner that uses it at a time.
struct ByteWriter {
    private final class Storage {
        let header: UnsafeMutablePointer<ByteSink.Header>

        init(capacity: Int) {
            let capacity = max(capacity, 16)
            header = .allocate(capacity: 1)
            header.initialize(
                to: ByteSink.Header(base: .allocate(byteCount: capacity, alignment: 8), count: 0, capacity: capacity))
        }

        deinit {
            header.pointee.base.deallocate()
            header.deallocate()
        }
    }

    private let storage: Storage

    init(capacity: Int = 64) { storage = Storage(capacity: capacity) }

    /// The buffer without its owner, for a hot loop that keeps the writer
    /// alive itself: appending through it touches no reference count.
    @inline(__always)
    var sink: ByteSink { ByteSink(header: storage.header) }

    /// The number of bytes written.
    var count: Int { storage.header.pointee.count }

    /// A copy of the bytes written.
    var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Calls `body` with the bytes written, valid during the call only.
    @inline(__always)
    func withUnsafeBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let header = storage.header.pointee
        return try body(UnsafeRawBufferPointer(start: header.base, count: header.count))
    }

    /// Forgets the bytes written, keeping the memory.
    func removeAll() { storage.header.pointee.count = 0 }

    @inline(__always)
    func append(_ byte: UInt8) { sink.append(byte) }

    @inline(__always)
    func appendVarint(_ value: UInt64) { sink.appendVarint(value) }

    @inline(__always)
    func appendLittleEndian(_ value: UInt64) { sink.appendLittleEndian(value) }

    @inline(__always)
    func appendBigEndian(_ value: UInt64) { sink.appendBigEndian(value) }

    func append(_ uuid: UUID) {
        Swift.withUnsafeBytes(of: uuid.uuid) { append(contentsOf: $0) }
    }

    @inline(__always)
    func append(contentsOf raw: UnsafeRawBufferPointer) { sink.append(contentsOf: raw) }

    func append(contentsOf buffer: UnsafeBufferPointer<UInt8>) {
        append(contentsOf: UnsafeRawBufferPointer(buffer))
    }

    func append(contentsOf data: Data) {
        data.withUnsafeBytes { append(contentsOf: $0) }
    }

    func append(contentsOf array: [UInt8]) {
        array.withUnsafeBytes { append(contentsOf: $0) }
    }

    func append<C: Collection>(contentsOf collection: C) where C.Element == UInt8 {
        for byte in collection { append(byte) }
    }
}

/// The buffer of a ``ByteWriter``, reached through a raw pointer to its
/// header: appending is a store and an increment. Valid while the writer
/// it came from lives.
struct ByteSink {
    struct Header {
        var base: UnsafeMutableRawPointer
        var count: Int
        var capacity: Int
    }

    let header: UnsafeMutablePointer<Header>

    /// The number of bytes written.
    @inline(__always)
    var count: Int { header.pointee.count }

    /// Room for `extra` more bytes; returns where they go.
    @inline(__always)
    private func reserve(_ extra: Int) -> UnsafeMutableRawPointer {
        if header.pointee.count + extra > header.pointee.capacity { grow(extra) }
        return header.pointee.base + header.pointee.count
    }

    @inline(never)
    private func grow(_ extra: Int) {
        let capacity = max(header.pointee.capacity * 2, header.pointee.count + extra)
        let base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        base.copyMemory(from: header.pointee.base, byteCount: header.pointee.count)
        header.pointee.base.deallocate()
        header.pointee.base = base
        header.pointee.capacity = capacity
    }

    @inline(__always)
    private func advance(_ n: Int) { header.pointee.count += n }

    @inline(__always)
    func append(_ byte: UInt8) {
        reserve(1).storeBytes(of: byte, as: UInt8.self)
        advance(1)
    }

    @inline(__always)
    func appendVarint(_ value: UInt64) {
        let out = reserve(10)
        var v = value
        var n = 0
        while v >= 0x80 {
            out.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: n, as: UInt8.self)
            v >>= 7
            n += 1
        }
        out.storeBytes(of: UInt8(v), toByteOffset: n, as: UInt8.self)
        advance(n + 1)
    }

    @inline(__always)
    func appendLittleEndian(_ value: UInt64) {
        reserve(8).storeBytes(of: value.littleEndian, as: UInt64.self)
        advance(8)
    }

    @inline(__always)
    func appendBigEndian(_ value: UInt64) {
        reserve(8).storeBytes(of: value.bigEndian, as: UInt64.self)
        advance(8)
    }

    @inline(__always)
    func append(contentsOf raw: UnsafeRawBufferPointer) {
        guard let source = raw.baseAddress, raw.count > 0 else { return }
        reserve(raw.count).copyMemory(from: source, byteCount: raw.count)
        advance(raw.count)
    }
}

/// Why bytes failed to decode. Turned into a ``StrataError`` by the caller,
/// which knows which file, type and object the bytes belong to.
struct DecodingFailure: Error, Equatable {
    var reason: String
    var offset: Int
}
