import Foundation

/// A cursor over a changeset's bytes that checks every read: each one
/// throws a ``StrataError/Code/invalidChangeset`` naming what it was
/// reading and where, rather than run past ``end``. A length or count read
/// from the bytes is checked against the bytes left before anything is
/// read or allocated. Valid while the bytes it reads are.
struct ChangesetReader {
    let base: UnsafeRawPointer
    /// The offset of the next byte to read.
    var p: Int
    /// Where reading stops: the checksum's offset, or the end of the list
    /// or embedded object being read.
    var end: Int

    init(_ base: UnsafeRawPointer, from p: Int, to end: Int) {
        self.base = base
        self.p = p
        self.end = end
    }

    /// The refusal of bytes that end inside `what`, which starts at `start`.
    func truncated(_ what: String, at start: Int) -> StrataError {
        .invalidChangeset("it ends inside \(what)", offset: start)
    }

    /// The refusal of `what`, found at `offset`.
    func malformed(_ what: String, at offset: Int) -> StrataError {
        .invalidChangeset(what, offset: offset)
    }

    /// Reads one byte of `what`.
    mutating func byte(_ what: @autoclosure () -> String) throws(StrataError) -> UInt8 {
        guard p < end else { throw truncated(what(), at: p) }
        defer { p += 1 }
        return base.load(fromByteOffset: p, as: UInt8.self)
    }

    /// Reads a varint of `what`: at most ten bytes, within 64 bits.
    mutating func varint(_ what: @autoclosure () -> String) throws(StrataError) -> UInt64 {
        let start = p
        guard let value = RecordView.varint(base, &p, end) else {
            throw p >= end ? truncated(what(), at: start) : malformed("\(what()) overflows 64 bits", at: start)
        }
        return value
    }

    /// Reads a zigzag varint of `what`, as a difference modulo 2^64.
    mutating func zigzag(_ what: @autoclosure () -> String) throws(StrataError) -> UInt64 {
        let raw = try varint(what())
        return UInt64(bitPattern: Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1))
    }

    /// Reads eight bytes of `what`, little-endian.
    mutating func littleEndian64(_ what: @autoclosure () -> String) throws(StrataError) -> UInt64 {
        guard end - p >= 8 else { throw truncated(what(), at: p) }
        defer { p += 8 }
        return UInt64(littleEndian: base.loadUnaligned(fromByteOffset: p, as: UInt64.self))
    }

    /// Reads a site id: 16 bytes.
    mutating func siteID(_ what: @autoclosure () -> String) throws(StrataError) -> SiteID {
        guard end - p >= 16 else { throw truncated(what(), at: p) }
        defer { p += 16 }
        return SiteID(
            high: UInt64(bigEndian: base.loadUnaligned(fromByteOffset: p, as: UInt64.self)),
            low: UInt64(bigEndian: base.loadUnaligned(fromByteOffset: p + 8, as: UInt64.self)))
    }

    /// Reads a length and that many bytes of valid UTF-8.
    mutating func utf8(_ what: @autoclosure () -> String) throws(StrataError) -> String {
        let start = p
        let length = try varint(what())
        guard length <= UInt64(end - p) else { throw truncated(what(), at: start) }
        let bytes = UnsafeRawBufferPointer(start: base + p, count: Int(length))
        let text = String(decoding: bytes, as: UTF8.self)
        // Decoding repairs invalid UTF-8 with U+FFFD: valid bytes are the
        // ones that come back unchanged.
        guard text.utf8.elementsEqual(bytes) else { throw malformed("\(what()) is not valid UTF-8", at: start) }
        p += Int(length)
        return text
    }

    /// Reads the key of a position in the sender's change log
    /// (``LogPosition``): a length and that many bytes, none or a type id
    /// and a record key.
    mutating func positionKey(_ what: @autoclosure () -> String) throws(StrataError) -> [UInt8] {
        let start = p
        let length = try varint(what())
        guard length <= UInt64(end - p) else { throw truncated(what(), at: start) }
        guard LogPosition.isValidKey(length: Int(length)) else {
            throw malformed("\(what()) has \(length) bytes, which no change-log key has", at: start)
        }
        defer { p += Int(length) }
        return Array(UnsafeRawBufferPointer(start: base + p, count: Int(length)))
    }

    /// Reads the count of a table or list of `what`, each of which takes at
    /// least `least` bytes: a count the bytes left cannot hold is refused
    /// before anything is allocated for it.
    mutating func count(of what: @autoclosure () -> String, least: Int) throws(StrataError) -> Int {
        let start = p
        let count = try varint("the count of \(what())")
        guard count <= UInt64((end - p) / least) else {
            throw malformed("\(count) \(what()) are more than the \(end - p) bytes left can hold", at: start)
        }
        return Int(count)
    }

    /// Reads an index into a table of `limit` entries of `what`.
    mutating func index(of what: @autoclosure () -> String, below limit: Int) throws(StrataError) -> Int {
        let start = p
        let index = try varint("an index of \(what())")
        guard index < UInt64(limit) else {
            throw malformed("\(what()) index \(index) is out of range (the table has \(limit))", at: start)
        }
        return Int(index)
    }
}
