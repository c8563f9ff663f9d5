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
///         | length:varint exponent:i8 sign:u8 mantissa
///                                       decimal (mantissa little-endian,
///                                       high zero bytes dropped)
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
    /// Which kind each primitive tag stores is ``StoredKind``'s.
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
        case decimal = 12

        /// Whether `tag` starts a link, a list or an embedded object, whose
        /// payload holds other tagged values: what the record walks treat
        /// apart. Named, not a range, so that a new primitive tag is never
        /// taken for one.
        @inline(__always)
        static func isComposite(_ tag: UInt8) -> Bool {
            tag == Tag.link.rawValue || tag == Tag.list.rawValue || tag == Tag.object.rawValue
        }
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
        case Tag.link.rawValue: type == .link
        case Tag.list.rawValue: type == .list
        case Tag.object.rawValue: type == .embedded
        default: StoredKind(tag: tag).map { $0.propertyType == type } ?? false
        }
    }

    static func beginRecord(_ writer: ByteWriter, schemaVersion: UInt64, fieldCount: Int) {
        writer.append(layoutVersion)
        writer.appendVarint(schemaVersion)
        writer.appendVarint(UInt64(fieldCount))
    }

    /// The size of the header ``beginRecord(_:schemaVersion:fieldCount:)``
    /// writes: where a record's first field starts.
    @inline(__always)
    static func headerSize(schemaVersion: UInt64, fieldCount: Int) -> Int {
        func varintSize(_ value: UInt64) -> Int { max(1, (64 - value.leadingZeroBitCount + 6) / 7) }
        return 1 + varintSize(schemaVersion) + varintSize(UInt64(fieldCount))
    }

    /// Appends one field. Fields must be appended in increasing id order.
    /// An embedded object (``Value/object(_:)``) is written by its type's
    /// layout, never through here.
    @inline(__always)
    static func appendField(_ writer: ByteWriter, id: PropertyID, value: Value) {
        writer.appendVarint(UInt64(id.rawValue))
        appendTagged(writer, value)
    }

    /// Appends a value's tag and payload: a field without its id, a list
    /// element, or a link's key.
    @inline(__always)
    static func appendTagged(_ writer: ByteWriter, _ value: Value) {
        if StoredKind.appendTagged(value, to: writer) { return }
        switch value {
        case .link(let key):
            writer.append(Tag.link.rawValue)
            appendTagged(writer, key)
        case .list(let elements):
            appendList(writer, count: elements.count) { writer in
                for element in elements { appendTagged(writer, element) }
            }
        case .object:
            preconditionFailure("An embedded object is encoded through its type's layout")
        default:
            writer.append(Tag.null.rawValue)
        }
    }

    /// Appends a list: its tag, its length, its element count, then what
    /// `elements` writes (each element's tag and payload).
    static func appendList(_ writer: ByteWriter, count: Int, _ elements: (ByteWriter) throws -> Void)
        rethrows
    {
        try appendSized(writer, tag: .list) { body in
            body.appendVarint(UInt64(count))
            try elements(body)
        }
    }

    /// Appends an embedded object: its tag, its length, its field count,
    /// then what `fields` writes (each field's id, tag and payload, in
    /// increasing id order).
    static func appendObject(_ writer: ByteWriter, fieldCount: Int, _ fields: (ByteWriter) throws -> Void)
        rethrows
    {
        try appendSized(writer, tag: .object) { body in
            body.appendVarint(UInt64(fieldCount))
            try fields(body)
        }
    }

    private static func appendSized(_ writer: ByteWriter, tag: Tag, _ body: (ByteWriter) throws -> Void)
        rethrows
    {
        let content = ByteWriter(capacity: 64)
        try body(content)
        writer.append(tag.rawValue)
        writer.appendVarint(UInt64(content.count))
        content.withUnsafeBytes { writer.append(contentsOf: $0) }
    }
}
