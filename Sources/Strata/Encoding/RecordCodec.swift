import Foundation

/// The binary layout of an object record.
///
/// ```
/// record  = layout:u8(=1) schemaVersion:varint fieldCount:varint field*
/// field   = id:varint tag:u8 payload
/// payload = (none)                      null, false, true
///         | zigzag varint               int
///         | 8 bytes little-endian       double, date (seconds since 2001, bit pattern)
///         | length:varint bytes         string (UTF-8), data
///         | 16 bytes                    uuid
///         | key                         link: the target's key as a tagged
///                                       int, string or uuid value
///         | length:varint count:varint (tag payload)*
///                                       list (length: the bytes after it)
///         | length:varint fieldCount:varint field*
///                                       embedded object, fields by the
///                                       embedded type's property ids
/// ```
///
/// Fields are sorted by id, which is the property's stable catalog id. The
/// tag makes every field skippable without the catalog, so a reader passes
/// over retired or unknown ids, and a property that has no field reads as
/// its default.
enum RecordCodec {
    static let layoutVersion: UInt8 = 1

    /// The tag byte of a field: stored on disk, so a value never changes.
    enum Tag: UInt8 {
        case null = 0
        case falseValue = 1
        case trueValue = 2
        case int = 3
        case double = 4
        case string = 5
        case data = 6
        case date = 7
        case uuid = 8
        case link = 9
        case list = 10
        case object = 11
    }

    /// How deep lists and embedded objects may nest in a record: deeper
    /// ones are refused as damage rather than walked on the stack.
    static let maxNesting = 32

    /// Whether a stored value with `tag` may be read as a property of
    /// `type`: the same test as ``Value/fits(_:optional:)``, on the tag.
    @inline(__always)
    static func tag(_ tag: UInt8, fits type: PropertyType, optional: Bool) -> Bool {
        switch tag {
        case Tag.null.rawValue: optional
        case Tag.falseValue.rawValue, Tag.trueValue.rawValue: type == .bool
        case Tag.int.rawValue: type == .int
        case Tag.double.rawValue: type == .double
        case Tag.string.rawValue: type == .string
        case Tag.data.rawValue: type == .data
        case Tag.date.rawValue: type == .date
        case Tag.uuid.rawValue: type == .uuid
        case Tag.link.rawValue: type == .link
        case Tag.list.rawValue: type == .list
        case Tag.object.rawValue: type == .embedded
        default: false
        }
    }

    static func beginRecord(_ writer: inout ByteWriter, schemaVersion: UInt64, fieldCount: Int) {
        writer.append(layoutVersion)
        writer.appendVarint(schemaVersion)
        writer.appendVarint(UInt64(fieldCount))
    }

    /// Appends one field. Fields must be appended in increasing id order.
    /// An embedded object (``Value/object(_:)``) is written by its type's
    /// layout, never through here.
    @inline(__always)
    static func appendField(_ writer: inout ByteWriter, id: PropertyID, value: Value) {
        writer.appendVarint(UInt64(id.rawValue))
        appendTagged(&writer, value)
    }

    /// Appends a value's tag and payload: a field without its id, a list
    /// element, or a link's key.
    @inline(__always)
    static func appendTagged(_ writer: inout ByteWriter, _ value: Value) {
        switch value {
        case .null:
            writer.append(Tag.null.rawValue)
        case .bool(let v):
            writer.append(v ? Tag.trueValue.rawValue : Tag.falseValue.rawValue)
        case .int(let v):
            writer.append(Tag.int.rawValue)
            writer.appendVarint(UInt64(bitPattern: (v << 1) ^ (v >> 63)))
        case .double(let v):
            writer.append(Tag.double.rawValue)
            writer.appendLittleEndian(v.bitPattern)
        case .string(var v):
            writer.append(Tag.string.rawValue)
            v.withUTF8 { utf8 in
                writer.appendVarint(UInt64(utf8.count))
                writer.append(contentsOf: utf8)
            }
        case .data(let v):
            writer.append(Tag.data.rawValue)
            writer.appendVarint(UInt64(v.count))
            writer.append(contentsOf: v)
        case .date(let v):
            writer.append(Tag.date.rawValue)
            writer.appendLittleEndian(v.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let v):
            writer.append(Tag.uuid.rawValue)
            writer.append(v)
        case .link(let key):
            writer.append(Tag.link.rawValue)
            appendTagged(&writer, key)
        case .list(let elements):
            appendList(&writer, count: elements.count) { writer in
                for element in elements { appendTagged(&writer, element) }
            }
        case .object:
            preconditionFailure("An embedded object is encoded through its type's layout")
        }
    }

    /// Appends a list: its tag, its length, its element count, then what
    /// `elements` writes (each element's tag and payload).
    static func appendList(_ writer: inout ByteWriter, count: Int, _ elements: (inout ByteWriter) throws -> Void)
        rethrows
    {
        try appendSized(&writer, tag: .list) { body in
            body.appendVarint(UInt64(count))
            try elements(&body)
        }
    }

    /// Appends an embedded object: its tag, its length, its field count,
    /// then what `fields` writes (each field's id, tag and payload, in
    /// increasing id order).
    static func appendObject(_ writer: inout ByteWriter, fieldCount: Int, _ fields: (inout ByteWriter) throws -> Void)
        rethrows
    {
        try appendSized(&writer, tag: .object) { body in
            body.appendVarint(UInt64(fieldCount))
            try fields(&body)
        }
    }

    private static func appendSized(_ writer: inout ByteWriter, tag: Tag, _ body: (inout ByteWriter) throws -> Void)
        rethrows
    {
        var content = ByteWriter(capacity: 64)
        try body(&content)
        writer.append(tag.rawValue)
        writer.appendVarint(UInt64(content.count))
        content.withUnsafeBytes { writer.append(contentsOf: $0) }
    }
}

/// A read-only view of a record's bytes, validated once and then read
/// without copying. The view is valid as long as the bytes are.
struct RecordView {
    let bytes: UnsafeRawBufferPointer
    /// The object's effective schema version: the one it was last written under.
    let effectiveSchemaVersion: UInt64
    /// Kept as 32-bit numbers so that a view, and the object holding it,
    /// stay small enough to copy cheaply (records over 4 GiB are refused).
    private let storedFieldCount: UInt32
    private let storedFieldsOffset: UInt32
    var fieldCount: Int { Int(storedFieldCount) }
    private var fieldsOffset: Int { Int(storedFieldsOffset) }
    /// Where the first eight fields start (0 when unknown), recorded by the
    /// validation pass so that reading a field of a record written under the
    /// current schema is one jump instead of a walk.
    /// Packed as eight one-byte offsets in one word (0 when a field starts
    /// past byte 255): a vector or a pair of words filled field by field
    /// makes the processor stall when the view is copied whole.
    private let fieldStarts: UInt64

    /// Checks the whole record's structure: every length within bounds,
    /// every tag known, ids strictly increasing, no trailing bytes. After
    /// this, reading a field cannot run past the record.
    @_transparent
    init(validating bytes: UnsafeRawBufferPointer) throws(DecodingFailure) {
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
        self.bytes = bytes
        self.effectiveSchemaVersion = version
        guard end <= Int(UInt32.max) else {
            throw DecodingFailure(reason: "a record of \(end) bytes is larger than Strata writes", offset: 0)
        }
        self.storedFieldCount = UInt32(count)
        self.storedFieldsOffset = UInt32(p)
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
            } else if tag >= RecordCodec.Tag.link.rawValue {
                guard RecordView.skipComposite(base, &p, end, deep: true, depth: 0) else {
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

    /// A view of a record that this transaction already validated or wrote
    /// itself: reads the header only. Field reads stay bounds-checked; they
    /// walk the fields instead of jumping to a remembered start.
    init(trusting bytes: UnsafeRawBufferPointer) throws(DecodingFailure) {
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
        self.init(bytes: bytes, schemaVersion: version, fieldCount: Int(count), fieldsOffset: p, fieldStarts: 0)
    }

    private init(
        bytes: UnsafeRawBufferPointer, schemaVersion: UInt64, fieldCount: Int, fieldsOffset: Int, fieldStarts: UInt64
    ) {
        self.bytes = bytes
        self.effectiveSchemaVersion = schemaVersion
        self.storedFieldCount = UInt32(fieldCount)
        self.storedFieldsOffset = UInt32(fieldsOffset)
        self.fieldStarts = fieldStarts
    }

    /// The same view over an identical copy of the bytes.
    func rebased(onto copy: UnsafeRawBufferPointer) -> RecordView {
        precondition(copy.count == bytes.count)
        return RecordView(
            bytes: copy, schemaVersion: effectiveSchemaVersion, fieldCount: fieldCount, fieldsOffset: fieldsOffset,
            fieldStarts: fieldStarts)
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
    /// Written as a chain of comparisons, most frequent tags first, rather
    /// than a `switch`, whose jump table mispredicts on mixed records.
    @inline(__always)
    private static func skip(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Bool {
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
        p -= 1
        return skipComposite(base, &p, end, deep: false, depth: 0)
    }

    /// Skips a link, list or embedded object at `p` (its tag included).
    /// `deep` also checks everything inside: every element and field well
    /// formed, a link's key an int, string or uuid, field ids increasing,
    /// counts and lengths that agree. Validation goes deep once; later
    /// walks trust the lengths.
    @inline(never)
    static func skipComposite(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int, deep: Bool, depth: Int) -> Bool {
        guard p < end, depth < RecordCodec.maxNesting else { return false }
        let tag = base.load(fromByteOffset: p, as: UInt8.self)
        switch tag {
        case RecordCodec.Tag.link.rawValue:
            p += 1
            guard p < end else { return false }
            let keyTag = base.load(fromByteOffset: p, as: UInt8.self)
            guard
                keyTag == RecordCodec.Tag.int.rawValue || keyTag == RecordCodec.Tag.string.rawValue
                    || keyTag == RecordCodec.Tag.uuid.rawValue
            else { return false }
            return skip(base, &p, end)
        case RecordCodec.Tag.list.rawValue, RecordCodec.Tag.object.rawValue:
            p += 1
            guard let length = varint(base, &p, end), length <= UInt64(end - p) else { return false }
            let contentEnd = p + Int(length)
            guard deep else {
                p = contentEnd
                return true
            }
            guard let count = varint(base, &p, contentEnd), count <= UInt64(contentEnd - p) else { return false }
            var previous: UInt64 = 0
            for index in 0 ..< Int(count) {
                if tag == RecordCodec.Tag.object.rawValue {
                    guard let id = varint(base, &p, contentEnd), id <= UInt64(UInt32.max), index == 0 || id > previous
                    else { return false }
                    previous = id
                }
                guard p < contentEnd else { return false }
                let inner = base.load(fromByteOffset: p, as: UInt8.self)
                if inner >= RecordCodec.Tag.link.rawValue {
                    guard skipComposite(base, &p, contentEnd, deep: true, depth: depth + 1) else { return false }
                } else if !skip(base, &p, contentEnd) {
                    return false
                }
            }
            guard p == contentEnd else { return false }
            return true
        default:
            return false
        }
    }

    /// Skips the tag and payload at `p` of a validated record: a field's
    /// value, a list element.
    static func skipValue(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Bool {
        skip(base, &p, end)
    }

    /// Where the tag of field `id` is, or nil when the record has no such
    /// field; for readers that decode a field themselves (relationships).
    func fieldOffset(forField id: PropertyID, expectedAt position: Int) -> Int? {
        tagOffset(forField: id, expectedAt: position)
    }

    /// The value stored for field `id`, or nil when the record has no such
    /// field. `position` is where the field would be in a record written
    /// under the current schema: tried first, before walking the fields.
    @inline(__always)
    func value(forField id: PropertyID, expectedAt position: Int) -> Value? {
        guard let base = bytes.baseAddress, var p = tagOffset(forField: id, expectedAt: position) else { return nil }
        let end = bytes.count
        // One-byte integers are the most common value read in scans.
        if p + 1 < end, base.load(fromByteOffset: p, as: UInt8.self) == RecordCodec.Tag.int.rawValue {
            let byte = base.load(fromByteOffset: p + 1, as: UInt8.self)
            if byte < 0x80 { return .int(Int64(byte >> 1) ^ -Int64(byte & 1)) }
        }
        return RecordView.read(base, &p, end)
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
            guard RecordView.skip(base, &p, end) else { return nil }
        }
        return nil
    }

    /// The integer stored for field `id`, or nil when the record has no
    /// such field or stores another type there. A typed read: no ``Value``
    /// is made.
    @inline(__always)
    func int(forField id: PropertyID, expectedAt position: Int) -> Int64? {
        guard let base = bytes.baseAddress, var p = tagOffset(forField: id, expectedAt: position),
            base.load(fromByteOffset: p, as: UInt8.self) == RecordCodec.Tag.int.rawValue
        else { return nil }
        p += 1
        guard let raw = RecordView.varint(base, &p, bytes.count) else { return nil }
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    /// The string stored for field `id`, or nil when the record has no
    /// such field or stores another type there. A typed read: no ``Value``
    /// is made.
    @inline(__always)
    func string(forField id: PropertyID, expectedAt position: Int) -> String? {
        guard let base = bytes.baseAddress, var p = tagOffset(forField: id, expectedAt: position),
            base.load(fromByteOffset: p, as: UInt8.self) == RecordCodec.Tag.string.rawValue
        else { return nil }
        p += 1
        guard let length = RecordView.varint(base, &p, bytes.count), length <= UInt64(bytes.count - p) else {
            return nil
        }
        return String(decoding: UnsafeRawBufferPointer(start: base + p, count: Int(length)), as: UTF8.self)
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
        case RecordCodec.Tag.null.rawValue: return .null
        case RecordCodec.Tag.falseValue.rawValue: return .bool(false)
        case RecordCodec.Tag.trueValue.rawValue: return .bool(true)
        case RecordCodec.Tag.int.rawValue:
            guard let raw = varint(base, &p, end) else { return nil }
            return .int(Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1))
        case RecordCodec.Tag.double.rawValue:
            defer { p += 8 }
            return .double(
                Double(bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: p, as: UInt64.self))))
        case RecordCodec.Tag.date.rawValue:
            defer { p += 8 }
            return .date(
                Date(
                    timeIntervalSinceReferenceDate: Double(
                        bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: p, as: UInt64.self)))))
        case RecordCodec.Tag.string.rawValue, RecordCodec.Tag.data.rawValue:
            guard let length = varint(base, &p, end) else { return nil }
            let payload = UnsafeRawBufferPointer(start: base + p, count: Int(length))
            p += Int(length)
            return tag == RecordCodec.Tag.string.rawValue
                ? .string(String(decoding: payload, as: UTF8.self)) : .data(Data(payload))
        case RecordCodec.Tag.uuid.rawValue:
            defer { p += 16 }
            return .uuid(UUID(uuid: base.loadUnaligned(fromByteOffset: p, as: uuid_t.self)))
        case RecordCodec.Tag.link.rawValue, RecordCodec.Tag.list.rawValue:
            return readComposite(tag, base, &p, end)
        default:
            return nil
        }
    }

    /// Reads the payload of a link or a list whose tag was just read.
    @inline(never)
    private static func readComposite(_ tag: UInt8, _ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Value? {
        if tag == RecordCodec.Tag.link.rawValue { return read(base, &p, end).map { .link($0) } }
        guard let length = varint(base, &p, end), length <= UInt64(end - p) else { return nil }
        let contentEnd = p + Int(length)
        defer { p = contentEnd }
        guard let count = varint(base, &p, contentEnd) else { return nil }
        var elements: [Value] = []
        elements.reserveCapacity(Int(min(count, UInt64(contentEnd - p))))
        for _ in 0 ..< count {
            guard p < contentEnd, let element = read(base, &p, contentEnd) else { return nil }
            elements.append(element)
        }
        return .list(elements)
    }

    /// Reads a varint at `p` of a validated record (relationship decoding).
    static func readVarint(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> UInt64? {
        varint(base, &p, end)
    }
}
