import Foundation

/// A read-only view of a record's bytes, read without copying. The view
/// is valid as long as the bytes are.
///
/// A view is either validated whole (``init(validating:)``: every field's
/// structure checked in one walk, what `verify` and every writer use) or
/// checked lazily (``init(checkingHeader:)``: the header only, for a read
/// that checks the bounds of the fields it touches, as a scan or a typed
/// lookup does; ``isValidated`` tells which). Every field read stays within
/// the bytes either way; a read of a lazily checked view that finds a field
/// absent, of another type, composite or damaged validates the whole record
/// (``validated()``) before it trusts that answer.
struct RecordView {
    let bytes: UnsafeRawBufferPointer
    /// The object's effective schema version: the one it was last written under.
    let effectiveSchemaVersion: UInt64
    /// Kept as 32-bit and 16-bit numbers so that a view, and the object
    /// holding it, stay small enough to copy cheaply (records over 4 GiB are
    /// refused; the header is at most 21 bytes).
    private let storedFieldCount: UInt32
    private let storedFieldsOffset: UInt16
    /// Whether the whole record's structure was checked (or the bytes are
    /// this transaction's own), rather than only its header.
    let isValidated: Bool
    var fieldCount: Int { Int(storedFieldCount) }
    var fieldsOffset: Int { Int(storedFieldsOffset) }
    /// Where the first eight fields start (0 when unknown), recorded by the
    /// validation pass so that reading a field of a record written under the
    /// current schema is one jump instead of a walk.
    /// Packed as eight one-byte offsets in one word (0 when a field starts
    /// past byte 255): a vector or a pair of words filled field by field
    /// makes the processor stall when the view is copied whole.
    let fieldStarts: UInt64

    /// Checks the whole record's structure: every length within bounds,
    /// every tag known, ids strictly increasing, no trailing bytes. After
    /// this, reading a field cannot run past the record.
    @_transparent
    init(validating bytes: UnsafeRawBufferPointer) throws(DecodingFailure) {
        let (base, version, count, offset) = try RecordView.header(bytes)
        self.bytes = bytes
        self.effectiveSchemaVersion = version
        self.storedFieldCount = UInt32(count)
        self.storedFieldsOffset = UInt16(offset)
        self.isValidated = true
        let end = bytes.count
        var p = offset
        var starts: UInt64 = 0
        var previous: UInt64 = 0
        for index in 0 ..< Int(count) {
            let fieldStart = p
            if index < 8 && p <= 0xFF { starts |= UInt64(p) << (8 * UInt64(index)) }
            // Ids and small varints are one byte: test for that before the
            // general decoder.
            var id: UInt64
            if p < end, base.load(fromByteOffset: p, as: UInt8.self) < 0x80 {
                id = UInt64(base.load(fromByteOffset: p, as: UInt8.self))
                p += 1
            } else {
                guard let wide = RecordView.varint(base, &p, end) else {
                    throw DecodingFailure(reason: "damaged field id", offset: fieldStart)
                }
                id = wide
            }
            guard id <= UInt64(UInt32.max), index == 0 || id > previous else {
                throw DecodingFailure(reason: "field id \(id) out of order or out of range", offset: fieldStart)
            }
            previous = id
            // The common payloads, one-byte ints and short strings, are
            // skipped here; the rest through `skip`. (The compiler does not
            // inline `skip` into this loop, and the call is a tenth of a scan.)
            guard p < end else { throw DecodingFailure(reason: "field \(id) has no value", offset: fieldStart) }
            let tag = base.load(fromByteOffset: p, as: UInt8.self)
            if tag == RecordCodec.Tag.int.rawValue {
                // A varint: bytes with the high bit set, then one without.
                // Up to nine bytes cannot overflow 64 bits; longer ones go
                // through the strict decoder.
                var q = p + 1
                while q < end && q - p < 9 && base.load(fromByteOffset: q, as: UInt8.self) >= 0x80 { q += 1 }
                if q < end && base.load(fromByteOffset: q, as: UInt8.self) < 0x80 {
                    p = q + 1
                } else {
                    p += 1
                    guard RecordView.varint(base, &p, end) != nil else {
                        throw DecodingFailure(reason: "damaged value of field \(id)", offset: fieldStart)
                    }
                }
            } else if tag == RecordCodec.Tag.string.rawValue, p + 1 < end,
                case let length = Int(base.load(fromByteOffset: p + 1, as: UInt8.self)), length < 0x80,
                length <= end - p - 2
            {
                p += 2 + length
            } else if RecordCodec.Tag.isComposite(tag) {
                guard CompositeBytes.skipChecking(base, &p, end) else {
                    throw DecodingFailure(reason: "damaged value of field \(id)", offset: fieldStart)
                }
            } else if !RecordView.skip(base, &p, end) {
                throw DecodingFailure(reason: "damaged value of field \(id)", offset: fieldStart)
            }
        }
        guard p == end else {
            throw DecodingFailure(reason: "\(end - p) unexpected bytes after the last field", offset: p)
        }
        self.fieldStarts = starts
    }

    /// Checks the record's header only (its length, layout, schema version
    /// and field count, as ``init(validating:)`` does): a view for a read
    /// that checks the bounds of the fields it touches rather than walking
    /// the whole record first. A damaged field the read does not touch goes
    /// unnoticed by it; `verify` walks every record whole.
    @inline(__always)
    init(checkingHeader bytes: UnsafeRawBufferPointer) throws(DecodingFailure) {
        let (_, version, count, offset) = try RecordView.header(bytes)
        self.init(
            bytes: bytes, schemaVersion: version, fieldCount: Int(count), fieldsOffset: offset, fieldStarts: 0,
            isValidated: false)
    }

    /// The header's checks, shared by both kinds of view: the bytes' start,
    /// the schema version, the field count (at most half the bytes left:
    /// every field takes at least two) and where the fields start.
    @inline(__always)
    private static func header(_ bytes: UnsafeRawBufferPointer) throws(DecodingFailure) -> (
        UnsafeRawPointer, UInt64, UInt64, Int
    ) {
        guard let base = bytes.baseAddress, bytes.count >= 3 else {
            throw DecodingFailure(reason: "a record of \(bytes.count) bytes is too short", offset: 0)
        }
        let end = bytes.count
        guard base.load(as: UInt8.self) == RecordCodec.layoutVersion else {
            throw DecodingFailure(reason: "unknown record layout \(base.load(as: UInt8.self))", offset: 0)
        }
        var p = 1
        guard let version = RecordView.varint(base, &p, end) else {
            throw DecodingFailure(reason: "damaged schema version", offset: p)
        }
        guard let count = RecordView.varint(base, &p, end), count <= UInt64((end - p) / 2) else {
            throw DecodingFailure(reason: "field count exceeds what the record can hold", offset: p)
        }
        guard end <= Int(UInt32.max) else {
            throw DecodingFailure(reason: "a record of \(end) bytes is larger than Strata writes", offset: 0)
        }
        return (base, version, count, p)
    }

    /// This view validated whole: itself when it is, else a view made by
    /// ``init(validating:)`` over the same bytes.
    @inline(__always)
    func validated() throws(DecodingFailure) -> RecordView {
        isValidated ? self : try RecordView(validating: bytes)
    }

    /// A view of a record that this transaction already validated or wrote
    /// itself: reads the header only. Field reads stay bounds-checked; they
    /// walk the fields instead of jumping to a remembered start.
    init(trusting bytes: UnsafeRawBufferPointer) throws(DecodingFailure) {
        try self.init(trusting: bytes, fieldStarts: 0)
    }

    /// A view of a record that this transaction just encoded, with where
    /// its first fields start (``fieldStarts``' packing) as the encoder
    /// wrote them: reading one of them is a jump, not a walk.
    init(trusting bytes: UnsafeRawBufferPointer, fieldStarts: UInt64) throws(DecodingFailure) {
        guard let base = bytes.baseAddress, bytes.count >= 3, base.load(as: UInt8.self) == RecordCodec.layoutVersion
        else {
            throw DecodingFailure(reason: "a record without a valid header", offset: 0)
        }
        var p = 1
        guard let version = RecordView.varint(base, &p, bytes.count),
            let count = RecordView.varint(base, &p, bytes.count),
            count <= UInt64(bytes.count)
        else {
            throw DecodingFailure(reason: "a record without a valid header", offset: p)
        }
        self.init(
            bytes: bytes, schemaVersion: version, fieldCount: Int(count), fieldsOffset: p, fieldStarts: fieldStarts,
            isValidated: true)
    }

    private init(
        bytes: UnsafeRawBufferPointer, schemaVersion: UInt64, fieldCount: Int, fieldsOffset: Int, fieldStarts: UInt64,
        isValidated: Bool
    ) {
        self.bytes = bytes
        self.effectiveSchemaVersion = schemaVersion
        self.storedFieldCount = UInt32(truncatingIfNeeded: fieldCount)
        self.storedFieldsOffset = UInt16(truncatingIfNeeded: fieldsOffset)
        self.isValidated = isValidated
        self.fieldStarts = fieldStarts
    }

    /// The same view over an identical copy of the bytes.
    func rebased(onto copy: UnsafeRawBufferPointer) -> RecordView {
        precondition(copy.count == bytes.count)
        return RecordView(
            bytes: copy, schemaVersion: effectiveSchemaVersion, fieldCount: fieldCount, fieldsOffset: fieldsOffset,
            fieldStarts: fieldStarts, isValidated: isValidated)
    }

    /// Reads a varint at `p`, advancing it; nil when it runs past `end` or
    /// overflows 64 bits.
    @inline(__always)
    static func varint(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> UInt64? {
        guard p < end else { return nil }
        let first = base.load(fromByteOffset: p, as: UInt8.self)
        p += 1
        if first < 0x80 { return UInt64(first) }
        var result = UInt64(first & 0x7F)
        var shift: UInt64 = 7
        while p < end {
            let byte = base.load(fromByteOffset: p, as: UInt8.self)
            p += 1
            if shift == 63 && byte > 1 { return nil }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }

    /// Skips the tag and payload at `p`; false when they are damaged.
    /// The tags of the first kinds are tested first, as a chain of
    /// comparisons, most frequent first, rather than a `switch`, whose jump
    /// table mispredicts on mixed records; any other kind is skipped by its
    /// ``StoredKind/payload`` shape (a test checks the chain against every
    /// kind), and the relationships by ``CompositeBytes/skip(_:_:_:)``.
    @inline(__always)
    static func skip(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Bool {
        let tag = base.load(fromByteOffset: p, as: UInt8.self)
        p += 1
        if tag == RecordCodec.Tag.int.rawValue {
            if p < end, base.load(fromByteOffset: p, as: UInt8.self) < 0x80 {
                p += 1
                return true
            }
            return varint(base, &p, end) != nil
        }
        if tag == RecordCodec.Tag.string.rawValue || tag == RecordCodec.Tag.data.rawValue {
            let length: UInt64
            if p < end, base.load(fromByteOffset: p, as: UInt8.self) < 0x80 {
                length = UInt64(base.load(fromByteOffset: p, as: UInt8.self))
                p += 1
            } else {
                guard let wide = varint(base, &p, end) else { return false }
                length = wide
            }
            guard length <= UInt64(end - p) else { return false }
            p += Int(length)
            return true
        }
        if tag <= RecordCodec.Tag.trueValue.rawValue { return true }
        if tag == RecordCodec.Tag.double.rawValue || tag == RecordCodec.Tag.date.rawValue {
            p += 8
            return p <= end
        }
        if tag == RecordCodec.Tag.uuid.rawValue {
            p += 16
            return p <= end
        }
        if let kind = StoredKind(tag: tag) { return StoredKind.skipPayload(kind, tag: tag, base, &p, end) }
        p -= 1
        return CompositeBytes.skip(base, &p, end)
    }

    /// Skips the tag and payload at `p` of a validated record: a field's
    /// value, a list element.
    static func skipValue(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Bool {
        skip(base, &p, end)
    }
}
