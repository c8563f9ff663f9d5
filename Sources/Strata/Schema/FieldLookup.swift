// @unchecked: the buffers are written once in init and only read afterwards.
/// Finds a field by name faster than a `Dictionary<String, _>`, whose
/// SipHash dominates the cost of reading one property: an open-addressing
/// table keyed by a cheap hash of the name's length and end bytes, checked
/// with `==` (which is one comparison when both sides are the same literal).
///
/// Its storage is raw memory that the owning ``RecordShape`` frees, so that
/// a lookup touches no reference count.
struct FieldLookup: @unchecked Sendable {
    private let slots: UnsafeMutableBufferPointer<Int32>
    private let names: UnsafeMutableBufferPointer<String>
    /// The UTF-8 length of each name: for a small type, a lookup compares
    /// lengths first and calls `==` only on a name of the right length.
    private let lengths: UnsafeMutableBufferPointer<Int>
    private let mask: Int
    /// Up to this many fields, a linear search by length beats hashing.
    private static let linearLimit = 16

    init(names: [String]) {
        var capacity = 8
        while capacity < names.count * 2 { capacity *= 2 }
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: -1)
        for (position, name) in names.enumerated() {
            var slot = FieldLookup.hash(name) & (capacity - 1)
            while slots[slot] >= 0 { slot = (slot + 1) & (capacity - 1) }
            slots[slot] = Int32(position)
        }
        self.names = .allocate(capacity: names.count)
        _ = self.names.initialize(from: names)
        lengths = .allocate(capacity: names.count)
        _ = lengths.initialize(from: names.map(\.utf8.count))
        mask = capacity - 1
    }

    /// Frees the storage; called once, by the owning shape's `deinit`.
    func deallocate() {
        names.deinitialize()
        names.deallocate()
        lengths.deallocate()
        slots.deallocate()
    }

    @inline(__always)
    private static func hash(_ name: String) -> Int {
        let hash = name.utf8.withContiguousStorageIfAvailable { bytes -> Int in
            guard let first = bytes.first, let last = bytes.last else { return 0 }
            return bytes.count &* 31 &+ Int(first) &* 131 &+ Int(last) &* 7
        }
        if let hash { return hash }
        let utf8 = name.utf8
        guard let first = utf8.first else { return 0 }
        return utf8.count &* 31 &+ Int(first) &* 131 &+ Int(utf8[utf8.index(before: utf8.endIndex)]) &* 7
    }

    @inline(__always)
    func position(of name: String) -> Int? {
        if names.count <= FieldLookup.linearLimit {
            let length = name.utf8.count
            for position in 0 ..< names.count where lengths[position] == length && names[position] == name {
                return position
            }
            return nil
        }
        var slot = FieldLookup.hash(name) & mask
        while true {
            let position = Int(slots[slot])
            if position < 0 { return nil }
            if names[position] == name { return position }
            slot = (slot + 1) & mask
        }
    }
}
