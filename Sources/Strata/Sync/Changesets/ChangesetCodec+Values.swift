import Foundation

/// Values on the wire: a record tag and its payload, as
/// ``RecordCodec/appendTagged(_:_:)`` writes them, except an embedded
/// object, whose fields are named, since a record's field ids are its
/// file's own.
extension ChangesetCodec {
    /// Appends `value`'s tag and payload. An embedded object is tag `0b`,
    /// its byte length, its field count, then `(utf8 name, value)*` in the
    /// order of the names' UTF-8 bytes.
    static func appendValue(_ value: Value, to writer: ByteWriter) {
        if StoredKind.appendTagged(value, to: writer) { return }
        switch value {
        case .link(let key):
            writer.append(RecordCodec.Tag.link.rawValue)
            appendValue(key, to: writer)
        case .list(let elements):
            RecordCodec.appendList(writer, count: elements.count) { body in
                for element in elements { appendValue(element, to: body) }
            }
        case .object(let fields):
            let sorted = fields.map { (name: Array($0.key.utf8), value: $0.value) }
                .sorted { $0.name.lexicographicallyPrecedes($1.name) }
            RecordCodec.appendObject(writer, fieldCount: sorted.count) { body in
                for field in sorted {
                    body.appendVarint(UInt64(field.name.count))
                    body.append(contentsOf: field.name)
                    appendValue(field.value, to: body)
                }
            }
        default:
            writer.append(RecordCodec.Tag.null.rawValue)
        }
    }
}

extension ChangesetReader {
    /// Reads a tagged value, checking everything: a known tag, payloads
    /// and lengths within the bytes (and, for a list or object, filled
    /// exactly), strings of valid UTF-8, well-formed decimals, a link's
    /// key an int, string or uuid, an object's names strictly increasing,
    /// nesting no deeper than ``RecordCodec/maxNesting``.
    mutating func value(depth: Int = 0) throws(StrataError) -> Value {
        let start = p
        let tag = try byte("a value")
        switch tag {
        case RecordCodec.Tag.null.rawValue:
            return .null
        case RecordCodec.Tag.link.rawValue:
            guard p < end, StoredKind(tag: base.load(fromByteOffset: p, as: UInt8.self))?.canBePrimaryKey == true
            else { throw malformed("a link whose key is not an int, string or uuid", at: p) }
            return .link(try value(depth: depth))
        case RecordCodec.Tag.list.rawValue, RecordCodec.Tag.object.rawValue:
            guard depth < RecordCodec.maxNesting else {
                throw malformed("a value nested deeper than \(RecordCodec.maxNesting) levels", at: start)
            }
            return try composite(tag: tag, depth: depth + 1, start: start)
        case RecordCodec.Tag.string.rawValue:
            return .string(try utf8("a string value"))
        case RecordCodec.Tag.int.rawValue:
            let raw = try varint("an int value")
            return .int(Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1))
        default:
            guard StoredKind(tag: tag) != nil else { throw malformed("unknown value tag \(tag)", at: start) }
            var q = p - 1
            guard RecordView.skip(base, &q, end) else {
                throw q > end || tag != RecordCodec.Tag.decimal.rawValue
                    ? truncated("a value", at: start) : malformed("a decimal that is not well-formed", at: start)
            }
            guard let value = StoredKind.read(tag: tag, base, &p, end), p == q else {
                throw malformed("a value that is not well-formed", at: start)
            }
            return value
        }
    }

    /// Reads the length, count and contents of a list or an embedded
    /// object whose tag, `tag`, was just read at `start`.
    private mutating func composite(tag: UInt8, depth: Int, start: Int) throws(StrataError) -> Value {
        let length = try varint("the length of a list or embedded object")
        guard length <= UInt64(end - p) else { throw truncated("a list or embedded object", at: start) }
        let outerEnd = end
        let contentEnd = p + Int(length)
        end = contentEnd
        defer { end = outerEnd }
        let count = try varint("the count of a list or embedded object")
        // Every element takes at least one byte, every field two.
        let least = tag == RecordCodec.Tag.list.rawValue ? 1 : 2
        guard count <= UInt64((contentEnd - p) / least) else {
            throw malformed("a count of \(count) that its \(length) bytes cannot hold", at: start)
        }
        let result: Value
        if tag == RecordCodec.Tag.list.rawValue {
            var elements: [Value] = []
            elements.reserveCapacity(Int(count))
            for _ in 0 ..< count { elements.append(try value(depth: depth)) }
            result = .list(elements)
        } else {
            var fields: [String: Value] = [:]
            fields.reserveCapacity(Int(count))
            var previous: [UInt8]?
            for _ in 0 ..< count {
                let nameStart = p
                let name = try utf8("the name of an embedded object's field")
                let bytes = Array(name.utf8)
                if let previous, !previous.lexicographicallyPrecedes(bytes) {
                    throw malformed("an embedded object's field '\(name)' out of order or named twice", at: nameStart)
                }
                previous = bytes
                fields[name] = try value(depth: depth)
            }
            result = .object(fields)
        }
        guard p == contentEnd else {
            throw malformed("\(contentEnd - p) bytes left over in a list or embedded object", at: p)
        }
        return result
    }
}

// One value alone, for the hub (`@_spi(Hub)`), which stores each field's
// value as these bytes and sends them back as they came.
extension ChangesetCodec {
    /// The bytes of `value`: its tag and payload, as a changeset holds it.
    @_spi(Hub) public static func valueBytes(_ value: Value) -> [UInt8] {
        let writer = ByteWriter(capacity: 16)
        appendValue(value, to: writer)
        return writer.bytes
    }

    /// Bytes of `value` whose byte order is the order of a query's `<`
    /// between values of its type (an index key's: numbers and dates by
    /// value, strings and data by their first 510 bytes, UUIDs by their
    /// bytes), for a hub that compares a subscription's range in SQL
    /// (``SyncFilter/range(field:lower:upper:)``); nil for a value of
    /// another type.
    @_spi(Hub) public static func orderedBytes(_ value: Value) -> [UInt8]? {
        guard SyncFilter.isOrdered(value) else { return nil }
        let writer = ByteWriter(capacity: 16)
        KeyCodec.appendIndexKey(value, to: writer)
        return writer.bytes
    }

    /// The value of `bytes` (``valueBytes(_:)``), checked as a changeset's
    /// values are.
    ///
    /// - Throws: ``StrataError/Code/invalidChangeset`` when the bytes are
    ///   not one well-formed value.
    @_spi(Hub) public static func value(from bytes: [UInt8]) throws -> Value {
        try bytes.withUnsafeBytes { raw throws(StrataError) in
            guard let base = raw.baseAddress else {
                throw StrataError.invalidChangeset("a stored value of no bytes", offset: 0)
            }
            var reader = ChangesetReader(base, from: 0, to: raw.count)
            let value = try reader.value()
            guard reader.p == reader.end else {
                throw reader.malformed("\(reader.end - reader.p) bytes after a value", at: reader.p)
            }
            return value
        }
    }
}
