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
/// ```
///
/// Fields are sorted by id, which is the property's stable catalog id. The
/// tag makes every field skippable without the catalog, so a reader passes
/// over retired or unknown ids, and a property that has no field reads as
/// its default.
enum RecordCodec {
    static let layoutVersion: UInt8 = 1

    enum Tag: UInt8 {
        case null = 0, falseValue = 1, trueValue = 2, int = 3, double = 4
        case string = 5, data = 6, date = 7, uuid = 8
    }

    static func beginRecord(_ writer: inout ByteWriter, schemaVersion: UInt64, fieldCount: Int) {
        writer.append(layoutVersion)
        writer.appendVarint(schemaVersion)
        writer.appendVarint(UInt64(fieldCount))
    }

    /// Appends one field. Fields must be appended in increasing id order.
    @inline(__always)
    static func appendField(_ writer: inout ByteWriter, id: UInt32, value: Value) {
        writer.appendVarint(UInt64(id))
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
        }
    }
}

/// A read-only view of a record's bytes, validated once and then read
/// without copying. The view is valid as long as the bytes are.
struct RecordView {
    let bytes: UnsafeRawBufferPointer
    /// The schema version the object was last written under.
    let schemaVersion: UInt64
    let fieldCount: Int
    private let fieldsOffset: Int

    /// Checks the whole record's structure: every length within bounds,
    /// every tag known, ids strictly increasing, no trailing bytes. After
    /// this, reading a field cannot run past the record.
    init(validating bytes: UnsafeRawBufferPointer) throws(DecodingFailure) {
        var reader = ByteReader(bytes)
        let layout = try reader.readByte()
        guard layout == RecordCodec.layoutVersion else {
            throw DecodingFailure(reason: "unknown record layout \(layout)", offset: 0)
        }
        schemaVersion = try reader.readVarint()
        let count = try reader.readVarint()
        // Every field takes at least two bytes, so a larger count is damage.
        guard count <= UInt64(reader.remaining / 2) else {
            throw DecodingFailure(reason: "field count \(count) exceeds what \(reader.remaining) bytes can hold", offset: reader.offset)
        }
        fieldCount = Int(count)
        fieldsOffset = reader.offset
        self.bytes = bytes
        var previous: UInt64? = nil
        for _ in 0 ..< fieldCount {
            let idOffset = reader.offset
            let id = try reader.readVarint()
            guard id <= UInt64(UInt32.max), previous.map({ id > $0 }) ?? true else {
                throw DecodingFailure(reason: "field id \(id) out of order or out of range", offset: idOffset)
            }
            previous = id
            try RecordView.skipPayload(&reader)
        }
        guard reader.isAtEnd else {
            throw DecodingFailure(reason: "\(reader.remaining) unexpected bytes after the last field", offset: reader.offset)
        }
    }

    private init(bytes: UnsafeRawBufferPointer, schemaVersion: UInt64, fieldCount: Int, fieldsOffset: Int) {
        self.bytes = bytes
        self.schemaVersion = schemaVersion
        self.fieldCount = fieldCount
        self.fieldsOffset = fieldsOffset
    }

    /// The same view over an identical copy of the bytes.
    func rebased(onto copy: UnsafeRawBufferPointer) -> RecordView {
        precondition(copy.count == bytes.count)
        return RecordView(bytes: copy, schemaVersion: schemaVersion, fieldCount: fieldCount, fieldsOffset: fieldsOffset)
    }

    @inline(__always)
    private static func skipPayload(_ reader: inout ByteReader) throws(DecodingFailure) {
        let tagOffset = reader.offset
        guard let tag = RecordCodec.Tag(rawValue: try reader.readByte()) else {
            throw DecodingFailure(reason: "unknown value tag", offset: tagOffset)
        }
        switch tag {
        case .null, .falseValue, .trueValue: break
        case .int: _ = try reader.readVarint()
        case .double, .date: _ = try reader.read(count: 8)
        case .string, .data: _ = try reader.readLengthPrefixed()
        case .uuid: _ = try reader.read(count: 16)
        }
    }

    /// The value stored for field `id`, or nil when the record has no such
    /// field.
    @inline(__always)
    func value(forField id: UInt32) -> Value? {
        var reader = ByteReader(bytes, offset: fieldsOffset)
        let wanted = UInt64(id)
        do {
            for _ in 0 ..< fieldCount {
                let fieldID = try reader.readVarint()
                if fieldID == wanted { return try RecordView.readPayload(&reader) }
                if fieldID > wanted { return nil }
                try RecordView.skipPayload(&reader)
            }
        } catch {
            return nil  // unreachable for a validated record
        }
        return nil
    }

    /// Calls `body` with every field's id and value, in id order.
    func forEachField(_ body: (UInt32, Value) throws -> Void) rethrows {
        var reader = ByteReader(bytes, offset: fieldsOffset)
        for _ in 0 ..< fieldCount {
            guard let id = try? reader.readVarint(), let value = try? RecordView.readPayload(&reader) else { return }
            try body(UInt32(truncatingIfNeeded: id), value)
        }
    }

    @inline(__always)
    private static func readPayload(_ reader: inout ByteReader) throws(DecodingFailure) -> Value {
        let tagOffset = reader.offset
        guard let tag = RecordCodec.Tag(rawValue: try reader.readByte()) else {
            throw DecodingFailure(reason: "unknown value tag", offset: tagOffset)
        }
        switch tag {
        case .null: return .null
        case .falseValue: return .bool(false)
        case .trueValue: return .bool(true)
        case .int:
            let raw = try reader.readVarint()
            return .int(Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1))
        case .double:
            return .double(Double(bitPattern: try reader.readLittleEndianUInt64()))
        case .date:
            return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.readLittleEndianUInt64())))
        case .string:
            return .string(String(decoding: try reader.readLengthPrefixed(), as: UTF8.self))
        case .data:
            return .data(Data(try reader.readLengthPrefixed()))
        case .uuid:
            let raw = try reader.read(count: 16)
            return .uuid(UUID(uuid: raw.loadUnaligned(as: uuid_t.self)))
        }
    }
}
