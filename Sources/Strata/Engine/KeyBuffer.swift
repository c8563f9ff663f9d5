/// A key (a record key, or a sync log key) copied into memory its owner
/// allocates once and frees (``free()``), for the code that runs for every
/// object a sync-enabled file writes: copying a key in, reading and
/// comparing it involve no reference counting, where each use of a
/// ``ByteWriter`` (a class behind a struct) retains and releases it, and
/// those atomic operations were a tenth of a synced update's time.
///
/// Holds up to ``capacity`` bytes: LMDB's largest key (511), and a change
/// log key's 12 bytes before a record key.
struct KeyBuffer {
    static let capacity = 528
    private let start: UnsafeMutableRawPointer
    private(set) var count = 0

    init() {
        start = UnsafeMutableRawPointer.allocate(byteCount: KeyBuffer.capacity, alignment: 8)
    }

    /// Frees the memory; the buffer must not be used after.
    func free() { start.deallocate() }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: start, count: count) }
    var isEmpty: Bool { count == 0 }

    mutating func set(_ key: UnsafeRawBufferPointer) {
        precondition(key.count <= KeyBuffer.capacity, "A key of \(key.count) bytes is longer than LMDB allows")
        if let base = key.baseAddress, key.count > 0 { start.copyMemory(from: base, byteCount: key.count) }
        count = key.count
    }

    mutating func removeAll() { count = 0 }

    /// Whether the buffer holds exactly `key`.
    func holds(_ key: UnsafeRawBufferPointer) -> Bool { KeyCodec.compare(bytes, key) == 0 }

    /// Sets a change-log key: `seq:u64be ‖ type:u32be ‖ key`.
    mutating func setLogKey(seq: UInt64, type: TypeID, key: UnsafeRawBufferPointer) {
        precondition(key.count + 12 <= KeyBuffer.capacity, "A key of \(key.count) bytes is longer than LMDB allows")
        start.storeBytes(of: seq.bigEndian, as: UInt64.self)
        start.storeBytes(of: type.rawValue.bigEndian, toByteOffset: 8, as: UInt32.self)
        if let base = key.baseAddress, key.count > 0 { (start + 12).copyMemory(from: base, byteCount: key.count) }
        count = 12 + key.count
    }
}
