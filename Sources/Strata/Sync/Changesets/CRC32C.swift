/// CRC-32C (Castagnoli, the polynomial 0x1EDC6F41, reflected 0x82F63B78):
/// the checksum that ends every changeset.
///
/// Computed eight bytes at a time from eight tables ("slicing-by-8",
/// Kounavis and Berry, 2005), which reads a changeset of megabytes in a
/// few milliseconds without the processor's CRC instruction.
///
/// ```swift
/// CRC32C.checksum(Array("123456789".utf8))  // 0xE3069283
/// ```
enum CRC32C {
    /// The reflected polynomial.
    static let polynomial: UInt32 = 0x82F6_3B78

    /// Eight tables of 256 entries, one after the other: table 0 is the
    /// byte-at-a-time table; table k advances a byte's remainder past k
    /// more zero bytes.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0 ..< 256 {
            var crc = UInt32(byte)
            for _ in 0 ..< 8 { crc = crc & 1 == 1 ? (crc >> 1) ^ polynomial : crc >> 1 }
            tables[byte] = crc
        }
        for k in 1 ..< 8 {
            for byte in 0 ..< 256 {
                let previous = tables[(k - 1) * 256 + byte]
                tables[k * 256 + byte] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// The checksum of `bytes`, continuing from `initial` (the checksum of
    /// the bytes before them; 0 to start).
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing initial: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return initial }
        return tables.withUnsafeBufferPointer { table in
            let t = table.baseAddress!
            var crc = ~initial
            var p = 0
            let count = bytes.count
            while count - p >= 8 {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: p, as: UInt64.self))
                let low = UInt32(truncatingIfNeeded: word) ^ crc
                let high = UInt32(truncatingIfNeeded: word >> 32)
                crc =
                    t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
                p += 8
            }
            while p < count {
                let byte = base.load(fromByteOffset: p, as: UInt8.self)
                crc = (crc >> 8) ^ t[Int((crc ^ UInt32(byte)) & 0xFF)]
                p += 1
            }
            return ~crc
        }
    }

    /// The checksum of a byte collection: `[UInt8]`, `Data`, a slice.
    static func checksum(_ bytes: some Collection<UInt8>) -> UInt32 {
        if let crc = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0)) }) {
            return crc
        }
        return Array(bytes).withUnsafeBytes { checksum($0) }
    }
}
