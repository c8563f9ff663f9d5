import Foundation

extension RecordView {
    /// Where the tag of field `id` is, or nil when the record has no such
    /// field; for readers that decode a field themselves (relationships).
    func fieldOffset(forField id: PropertyID, expectedAt position: Int) -> Int? {
        tagOffset(forField: id, expectedAt: position)
    }

    /// The value stored for field `id`, or nil when the record has no such
    /// field. `position` is where the field would be in a record written
    /// under the current schema: tried first, before walking the fields.
    ///
    /// In a view not validated whole (``isValidated`` false) the field's
    /// extent is checked before its payload is read, and a link or list
    /// reads as nil, as ``checkedValue(forField:expectedAt:)`` does.
    @inline(__always)
    func value(forField id: PropertyID, expectedAt position: Int) -> Value? {
        guard isValidated else { return checkedValue(forField: id, expectedAt: position) }
        guard let base = bytes.baseAddress, var p = tagOffset(forField: id, expectedAt: position) else { return nil }
        let end = bytes.count
        // One-byte integers are the most common value read in scans.
        if p + 1 < end, base.load(fromByteOffset: p, as: UInt8.self) == RecordCodec.Tag.int.rawValue {
            let byte = base.load(fromByteOffset: p + 1, as: UInt8.self)
            if byte < 0x80 { return .int(Int64(byte >> 1) ^ -Int64(byte & 1)) }
        }
        return RecordView.read(base, &p, end)
    }

    /// The primitive value stored for field `id`, read from a view that
    /// need not be validated whole: the bytes walked to reach the field, and
    /// the field's own extent, are checked before its payload is read. Nil
    /// when the record has no such field, stores a link, list or embedded
    /// object there, or the bytes on the way are damaged: a reader that
    /// must tell these apart validates the whole record then.
    @inline(__always)
    func checkedValue(forField id: PropertyID, expectedAt position: Int) -> Value? {
        guard let base = bytes.baseAddress, let tag = tagOffset(forField: id, expectedAt: position) else { return nil }
        let end = bytes.count
        let tagByte = base.load(fromByteOffset: tag, as: UInt8.self)
        // One-byte integers are the most common value read in scans.
        if tagByte == RecordCodec.Tag.int.rawValue, tag + 1 < end {
            let byte = base.load(fromByteOffset: tag + 1, as: UInt8.self)
            if byte < 0x80 { return .int(Int64(byte >> 1) ^ -Int64(byte & 1)) }
        }
        guard !RecordCodec.Tag.isComposite(tagByte) else { return nil }
        var fieldEnd = tag
        guard RecordView.skip(base, &fieldEnd, end) else { return nil }
        var p = tag
        return RecordView.read(base, &p, fieldEnd)
    }

    /// Where the tag of field `id` is, or nil when the record has no such
    /// field: the search of every field read, by value or by type.
    @inline(__always)
    private func tagOffset(forField id: PropertyID, expectedAt position: Int) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let end = bytes.count
        let wanted = UInt64(id.rawValue)
        if position < 8 && position < fieldCount {
            var p = Int(truncatingIfNeeded: (fieldStarts >> (8 * UInt64(position))) & 0xFF)
            if p != 0, RecordView.varint(base, &p, end) == wanted { return p < end ? p : nil }
        }
        var p = fieldsOffset
        for _ in 0 ..< fieldCount {
            guard let fieldID = RecordView.varint(base, &p, end) else { return nil }
            if fieldID == wanted { return p < end ? p : nil }
            if fieldID > wanted { return nil }
            guard RecordView.skipField(base, &p, end) else { return nil }
        }
        return nil
    }

    /// Skips the tag and payload at `p` as ``RecordView/skip(_:_:_:)``
    /// does, the common ones, one-byte ints and short strings, here: the
    /// compiler does not inline `skip` into the walks to a field, and the
    /// call cost a scan reading one property a tenth of its instructions.
    @inline(__always)
    static func skipField(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Bool {
        guard p + 1 < end else { return p < end && skip(base, &p, end) }
        let tag = base.load(fromByteOffset: p, as: UInt8.self)
        let next = Int(base.load(fromByteOffset: p + 1, as: UInt8.self))
        if tag == RecordCodec.Tag.int.rawValue && next < 0x80 {
            p += 2
            return true
        }
        if tag == RecordCodec.Tag.string.rawValue && next < 0x80 && next <= end - p - 2 {
            p += 2 + next
            return true
        }
        return skip(base, &p, end)
    }

    /// Where the tag of field `id` is, walking on from `cursor` (from the
    /// first field again when `id` is not past the fields it passed); nil
    /// when the record has no such field or the bytes walked are damaged.
    /// The cursor is left at the field: the reader passes it
    /// (``FieldCursor/pass(_:to:)``) once it has read the value. Every
    /// byte walked is checked against the record's end, so this reads any
    /// view, validated whole or not; a model's decode reads its fields in
    /// order this way, each field walked once.
    @inline(__always)
    func tagOffset(forField id: PropertyID, from cursor: inout FieldCursor) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        let end = bytes.count
        let wanted = UInt64(id.rawValue)
        if wanted < cursor.passed { cursor = FieldCursor(self) }
        while cursor.index < fieldCount {
            var p = cursor.offset
            // Ids are one byte but in very wide types.
            let fieldID: UInt64
            if p < end, base.load(fromByteOffset: p, as: UInt8.self) < 0x80 {
                fieldID = UInt64(base.load(fromByteOffset: p, as: UInt8.self))
                p += 1
            } else {
                guard let wide = RecordView.varint(base, &p, end) else { return nil }
                fieldID = wide
            }
            guard p < end, fieldID <= wanted else { return nil }
            if fieldID == wanted { return p }
            guard RecordView.skipField(base, &p, end) else { return nil }
            cursor.offset = p
            cursor.index += 1
            cursor.passed = fieldID &+ 1
        }
        return nil
    }

    /// The integer stored for field `id`, or nil when the record has no
    /// such field, stores another type there, or is damaged on the way. A
    /// typed read: no ``Value`` is made.
    @inline(__always)
    func int(forField id: PropertyID, from cursor: inout FieldCursor) -> Int64? {
        guard let base = bytes.baseAddress, var p = tagOffset(forField: id, from: &cursor),
            base.load(fromByteOffset: p, as: UInt8.self) == RecordCodec.Tag.int.rawValue
        else { return nil }
        p += 1
        guard let raw = RecordView.varint(base, &p, bytes.count) else { return nil }
        cursor.pass(id, to: p)
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    /// The 8-byte payload (a double's or a date's bit pattern) stored for
    /// field `id` under `tag`, or nil when the record has no such field,
    /// stores another type there, or is damaged on the way. A typed read:
    /// no ``Value`` is made.
    @inline(__always)
    func bitPattern(forField id: PropertyID, from cursor: inout FieldCursor, tag: RecordCodec.Tag) -> UInt64? {
        guard let base = bytes.baseAddress, let p = tagOffset(forField: id, from: &cursor),
            base.load(fromByteOffset: p, as: UInt8.self) == tag.rawValue, p + 9 <= bytes.count
        else { return nil }
        cursor.pass(id, to: p + 9)
        return UInt64(littleEndian: base.loadUnaligned(fromByteOffset: p + 1, as: UInt64.self))
    }

    /// The boolean stored for field `id`, or nil when the record has no
    /// such field, stores another type there, or is damaged on the way. A
    /// typed read.
    @inline(__always)
    func bool(forField id: PropertyID, from cursor: inout FieldCursor) -> Bool? {
        guard let base = bytes.baseAddress, let p = tagOffset(forField: id, from: &cursor) else { return nil }
        let value: Bool
        switch base.load(fromByteOffset: p, as: UInt8.self) {
        case RecordCodec.Tag.trueValue.rawValue: value = true
        case RecordCodec.Tag.falseValue.rawValue: value = false
        default: return nil
        }
        cursor.pass(id, to: p + 1)
        return value
    }

    /// Whether field `id` is stored as null; nil when the record has no
    /// such field or is damaged on the way. Passes the field when it is.
    @inline(__always)
    func isNull(forField id: PropertyID, from cursor: inout FieldCursor) -> Bool? {
        guard let base = bytes.baseAddress, let p = tagOffset(forField: id, from: &cursor) else { return nil }
        guard base.load(fromByteOffset: p, as: UInt8.self) == RecordCodec.Tag.null.rawValue else { return false }
        cursor.pass(id, to: p + 1)
        return true
    }

    /// The string stored for field `id`, or nil when the record has no
    /// such field, stores another type there, or is damaged on the way. A
    /// typed read: no ``Value`` is made.
    @inline(__always)
    func string(forField id: PropertyID, from cursor: inout FieldCursor) -> String? {
        guard let base = bytes.baseAddress, var p = tagOffset(forField: id, from: &cursor),
            base.load(fromByteOffset: p, as: UInt8.self) == RecordCodec.Tag.string.rawValue
        else { return nil }
        p += 1
        guard let length = RecordView.varint(base, &p, bytes.count), length <= UInt64(bytes.count - p) else {
            return nil
        }
        cursor.pass(id, to: p + Int(length))
        // Copied, then checked in place: invalid UTF-8 is repaired as
        // `String(decoding:as:)` repairs it, for about 50 instructions less
        // per short string (built inline), a third of what it cost.
        let utf8 = UnsafeRawBufferPointer(start: base + p, count: Int(length))
        return String(unsafeUninitializedCapacity: utf8.count) { buffer in
            UnsafeMutableRawBufferPointer(buffer).copyMemory(from: utf8)
            return utf8.count
        }
    }

    /// The encoded bytes of field `id` (its id, tag and payload, as a
    /// record stores them) and its tag, or nil when the record has no such
    /// field: what a rewrite copies when a value does not change.
    func encodedField(_ id: PropertyID, expectedAt position: Int) -> (tag: UInt8, bytes: UnsafeRawBufferPointer)? {
        guard let base = bytes.baseAddress else { return nil }
        let end = bytes.count
        let wanted = UInt64(id.rawValue)
        var start = fieldsOffset
        if position < 8 && position < fieldCount {
            let guess = Int(truncatingIfNeeded: (fieldStarts >> (8 * UInt64(position))) & 0xFF)
            var p = guess
            if guess != 0, RecordView.varint(base, &p, end) == wanted {
                start = guess
            }
        }
        var p = start
        for _ in 0 ..< fieldCount {
            let fieldStart = p
            guard let fieldID = RecordView.varint(base, &p, end) else { return nil }
            if fieldID > wanted { return nil }
            let tag = base.load(fromByteOffset: p, as: UInt8.self)
            guard RecordView.skip(base, &p, end) else { return nil }
            if fieldID == wanted {
                return (tag, UnsafeRawBufferPointer(start: base + fieldStart, count: p - fieldStart))
            }
        }
        return nil
    }

    /// Whether field `id` is stored with the same bytes here and in
    /// `other` (both absent counts as the same): the test of whether a
    /// write moves the field's index entry or backlinks.
    func storesSameField(_ id: PropertyID, expectedAt position: Int, as other: RecordView) -> Bool {
        let mine = encodedField(id, expectedAt: position)?.bytes
        let theirs = other.encodedField(id, expectedAt: position)?.bytes
        guard let mine, let theirs else { return mine == nil && theirs == nil }
        return mine.count == theirs.count && memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0
    }

    /// Calls `body` with every field's id and encoded bytes (its id, tag
    /// and payload, as ``encodedField(_:expectedAt:)`` gives them), in id
    /// order.
    func forEachEncodedField(_ body: (PropertyID, UnsafeRawBufferPointer) throws -> Void) rethrows {
        guard let base = bytes.baseAddress else { return }
        let end = bytes.count
        var p = fieldsOffset
        for _ in 0 ..< fieldCount {
            let start = p
            guard let id = RecordView.varint(base, &p, end), RecordView.skip(base, &p, end) else { return }
            try body(
                PropertyID(UInt32(truncatingIfNeeded: id)),
                UnsafeRawBufferPointer(start: base + start, count: p - start))
        }
    }

    /// Calls `body` with every field's id and value, in id order.
    func forEachField(_ body: (PropertyID, Value) throws -> Void) rethrows {
        guard let base = bytes.baseAddress else { return }
        let end = bytes.count
        var p = fieldsOffset
        for _ in 0 ..< fieldCount {
            guard let id = RecordView.varint(base, &p, end), let value = RecordView.read(base, &p, end) else { return }
            try body(PropertyID(UInt32(truncatingIfNeeded: id)), value)
        }
    }

    /// Reads the tag and payload at `p` of a validated record. An embedded
    /// object, or a list of them, needs its type's layout: it reads as nil.
    @inline(__always)
    static func read(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Value? {
        let tag = base.load(fromByteOffset: p, as: UInt8.self)
        p += 1
        switch tag {
        case RecordCodec.Tag.null.rawValue:
            return .null
        case RecordCodec.Tag.link.rawValue, RecordCodec.Tag.list.rawValue:
            p -= 1
            return readComposite(base, &p, end)
        default:
            return StoredKind.read(tag: tag, base, &p, end)
        }
    }

    /// Reads the link or list at `p` (its tag): a link's key, or a list's
    /// elements, each read once as ``CompositeBytes`` walks to it.
    @inline(never)
    private static func readComposite(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Value? {
        if base.load(fromByteOffset: p, as: UInt8.self) == RecordCodec.Tag.link.rawValue {
            p += 1
            return read(base, &p, end).map { .link($0) }
        }
        guard var contents = CompositeBytes(base, at: p, end: end) else { return nil }
        p = contents.end
        var elements: [Value] = []
        elements.reserveCapacity(Int(min(contents.count, UInt64(contents.end - contents.position))))
        while let element = contents.nextElement({ read(base, &$0, $1) }) { elements.append(element) }
        return contents.isDamaged ? nil : .list(elements)
    }
}

/// Where a reader of a record's fields in increasing id order has got to:
/// the first field it has not passed. See
/// ``RecordView/tagOffset(forField:from:)``.
struct FieldCursor {
    /// The offset of that field's first byte (its id).
    var offset: Int
    /// Its index among the record's fields.
    var index: Int
    /// One more than the id of the last field passed; 0 before the first.
    var passed: UInt64

    /// Moves past field `id`, whose value ends at `end`.
    @inline(__always)
    mutating func pass(_ id: PropertyID, to end: Int) {
        offset = end
        index += 1
        passed = UInt64(id.rawValue) &+ 1
    }
}

extension FieldCursor {
    /// A cursor at the first field of `record`.
    @inline(__always)
    init(_ record: RecordView) {
        self.init(offset: record.fieldsOffset, index: 0, passed: 0)
    }
}
