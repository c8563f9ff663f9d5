import Foundation

/// The binary changeset format `SCS1`: writes a ``ChangesetContent`` as
/// bytes and reads it back, refusing bytes that are truncated, corrupt or
/// not what it writes.
///
/// ```
/// changeset = "SCS1" version:u8(=1) flags:u8(bit0 hasMore) dataset:16 sender:16
///             writerSchemaVersion:varint senderTime:u64 senderSeq:varint baseline:varint
///             fromSeq:varint fromKey:bytes toSeq:varint toKey:bytes
///             types:   count (utf8 name, utf8 keyName, utf8 keyDescriptor)*
///             fields:  count (typeIdx:varint utf8 name, utf8 descriptor, parent:varint)*
///             origins: count (16 bytes)*
///             entries: count entry*
///             crc32c:u32            (over every byte before it)
/// entry     = typeIdx:varint key:tagged-value cl:varint writerVersion:varint
///             stampTime:u64 stampOrigin:varint
///             fieldCount:varint (fieldIdx:varint timeDelta:zigzag-varint originIdx:varint value)*
/// ```
///
/// Fixed-width numbers are little-endian, site ids their 16 bytes
/// (``SiteID/bytes``), `utf8` a varint length and UTF-8 bytes, `bytes` a
/// varint length and that many bytes (a ``LogPosition``'s key). A value is
/// a record tag and payload (``appendValue(_:to:)``). `docs/FileFormat.md`
/// ("Changesets (sync)") documents every part.
@_spi(Hub) public enum ChangesetCodec {
    /// The first four bytes of every changeset.
    static let magic: [UInt8] = Array("SCS1".utf8)
    /// The format version this code writes and reads.
    static let version: UInt8 = 1
    /// The flag bit of ``ChangesetContent/hasMore``.
    static let hasMoreFlag: UInt8 = 1
    /// The bytes of the shortest changeset: the header with one-byte
    /// varints and empty keys, four empty tables and the checksum.
    static let minimumLength = 4 + 1 + 1 + 16 + 16 + 1 + 8 + 1 + 1 + 1 + 1 + 1 + 1 + 4 + 4

    /// The bytes of `content`. The content must be well formed, as
    /// ``decode(_:)`` checks it (indexes in range, one entry per object,
    /// keys of primitive kinds): bytes written from any other are refused
    /// by every reader.
    @_spi(Hub) public static func encode(_ content: ChangesetContent) -> Data {
        let writer = ByteWriter(capacity: 256 + 24 * content.entries.count)
        writer.append(contentsOf: magic)
        writer.append(version)
        writer.append(content.hasMore ? hasMoreFlag : 0)
        appendSite(content.dataset, to: writer)
        appendSite(content.sender, to: writer)
        writer.appendVarint(content.writerSchemaVersion)
        writer.appendLittleEndian(content.senderTime.rawValue)
        writer.appendVarint(content.senderSeq)
        writer.appendVarint(content.baseline)
        writer.appendVarint(content.fromSeq)
        writer.appendVarint(UInt64(content.fromKey.count))
        writer.append(contentsOf: content.fromKey)
        writer.appendVarint(content.toSeq)
        writer.appendVarint(UInt64(content.toKey.count))
        writer.append(contentsOf: content.toKey)
        writer.appendVarint(UInt64(content.types.count))
        for type in content.types {
            appendText(type.name, to: writer)
            appendText(type.keyName, to: writer)
            appendText(type.keyDescriptor, to: writer)
        }
        writer.appendVarint(UInt64(content.fields.count))
        for field in content.fields {
            writer.appendVarint(UInt64(field.type))
            appendText(field.path, to: writer)
            appendText(field.descriptor, to: writer)
            writer.appendVarint(field.parent.map { UInt64($0) + 1 } ?? 0)
        }
        writer.appendVarint(UInt64(content.origins.count))
        for origin in content.origins { appendSite(origin, to: writer) }
        writer.appendVarint(UInt64(content.entries.count))
        for entry in content.entries { appendEntry(entry, to: writer) }
        let checksum = writer.withUnsafeBytes { CRC32C.checksum($0) }
        for shift in stride(from: 0, to: 32, by: 8) { writer.append(UInt8(truncatingIfNeeded: checksum >> shift)) }
        return writer.withUnsafeBytes { Data($0) }
    }

    private static func appendEntry(_ entry: ChangeEntry, to writer: ByteWriter) {
        writer.appendVarint(UInt64(entry.type))
        appendValue(entry.key, to: writer)
        writer.appendVarint(entry.causalLength)
        writer.appendVarint(entry.writerVersion)
        writer.appendLittleEndian(entry.stamp.time.rawValue)
        writer.appendVarint(UInt64(entry.stamp.origin))
        writer.appendVarint(UInt64(entry.fields.count))
        for field in entry.fields {
            writer.appendVarint(UInt64(field.field))
            // The difference modulo 2^64, as a signed number: small both
            // for a field written before its object's last change and after.
            let delta = Int64(bitPattern: field.stamp.time.rawValue &- entry.stamp.time.rawValue)
            writer.appendVarint(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)))
            writer.appendVarint(UInt64(field.stamp.origin))
            appendValue(field.value, to: writer)
        }
    }

    private static func appendSite(_ site: SiteID, to writer: ByteWriter) {
        writer.appendBigEndian(site.high)
        writer.appendBigEndian(site.low)
    }

    private static func appendText(_ text: String, to writer: ByteWriter) {
        StoredKind.appendStringPayload(text, to: writer.sink)
    }

    /// Reads a changeset, checking all of it before returning anything.
    ///
    /// - Throws: ``StrataError/Code/invalidChangeset`` naming the part that
    ///   is wrong and, in ``StrataError/offset``, the byte it starts at:
    ///   another magic, an unknown version or flag, a checksum that does
    ///   not match, bytes that end inside a part, header positions that
    ///   run backwards, start inside the baseline sequence number, end a last page inside
    ///   a sequence number or hold a key no log has, an index out of range, a
    ///   value that is not well formed or does not fit its field, nesting
    ///   deeper than ``RecordCodec/maxNesting``, bytes after the entries,
    ///   a type, field, origin or object twice, a field twice in one entry,
    ///   a tombstone with fields, or a field of another type than its
    ///   entry's.
    @_spi(Hub) public static func decode(_ data: Data) throws -> ChangesetContent {
        try data.withUnsafeBytes { raw throws(StrataError) in
            var reader = try checkedReader(raw)
            var (content, tables) = try readHead(&reader)
            let count = try reader.count(of: "entries", least: 15)
            content.entries.reserveCapacity(count)
            var objects = Set<ObjectIdentity>(minimumCapacity: count)
            var seenFields = Set<Int>()
            for _ in 0 ..< count {
                let start = reader.p
                let entry = try reader.entry(of: content, tables, seenFields: &seenFields)
                guard objects.insert(ObjectIdentity(type: entry.type, key: entry.key)).inserted else {
                    throw reader.malformed(
                        "a second entry for the '\(content.types[entry.type].name)' object \(ChangesetReader.brief(entry.key))",
                        at: start)
                }
                content.entries.append(entry)
            }
            guard reader.p == reader.end else {
                throw reader.malformed("\(reader.end - reader.p) bytes follow the last entry", at: reader.p)
            }
            return content
        }
    }

    /// The facts of a changeset's header and the number of its entries,
    /// without reading the entries: the checksum, the header and the tables
    /// are checked as ``decode(_:)`` checks them.
    static func summary(_ data: Data) throws -> Changeset.Summary {
        try data.withUnsafeBytes { raw throws(StrataError) in
            var reader = try checkedReader(raw)
            let (head, _) = try readHead(&reader)
            return Changeset.Summary(
                dataset: head.dataset, sender: head.sender, writerSchemaVersion: head.writerSchemaVersion,
                senderTime: head.senderTime, fromSeq: head.fromSeq, fromKey: Data(head.fromKey), toSeq: head.toSeq,
                toKey: Data(head.toKey), hasMore: head.hasMore, entryCount: try reader.count(of: "entries", least: 15))
        }
    }

    /// A reader of the bytes between the header's version and the
    /// checksum, once the magic, the version and the checksum are right.
    private static func checkedReader(_ raw: UnsafeRawBufferPointer) throws(StrataError) -> ChangesetReader {
        let count = raw.count
        guard let base = raw.baseAddress, count > 0 else {
            throw .invalidChangeset("it is empty", offset: 0)
        }
        let prefix = min(count, magic.count)
        guard raw.prefix(prefix).elementsEqual(magic.prefix(prefix)) else {
            throw .invalidChangeset("it does not start with 'SCS1'; it is not a changeset", offset: 0)
        }
        if count > magic.count, raw[magic.count] != version {
            throw .invalidChangeset(
                "its format version is \(raw[magic.count]), and this Strata reads version \(version)",
                offset: magic.count, remedy: "Update the app to a Strata that reads it; nothing of it is applied.")
        }
        guard count >= minimumLength else {
            throw .invalidChangeset(
                "it ends after \(count) bytes, shorter than any changeset (\(minimumLength))", offset: count)
        }
        let body = count - 4
        let stored = (0 ..< 4).reduce(UInt32(0)) { $0 | UInt32(raw[body + $1]) << (8 * UInt32($1)) }
        let computed = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[..<body]))
        guard stored == computed else {
            throw .invalidChangeset(
                "its checksum \(hex(stored)) does not match its bytes (\(hex(computed))): it is truncated or corrupt",
                offset: body)
        }
        return ChangesetReader(base, from: magic.count + 1, to: body)
    }

    private static func hex(_ value: UInt32) -> String {
        "0x" + String(value, radix: 16, uppercase: true)
    }

    /// Reads the header and the types, fields and origins tables.
    private static func readHead(_ reader: inout ChangesetReader) throws(StrataError) -> (
        ChangesetContent, ChangesetReader.Tables
    ) {
        let flagsAt = reader.p
        let flags = try reader.byte("the flags")
        guard flags & ~hasMoreFlag == 0 else {
            throw reader.malformed("unknown flags \(flags) (only bit 0, more to come, is known)", at: flagsAt)
        }
        let dataset = try reader.siteID("the dataset")
        let sender = try reader.siteID("the sender")
        let writerSchemaVersion = try reader.varint("the writer's schema version")
        let senderTime = HybridTime(rawValue: try reader.littleEndian64("the sender's time"))
        let senderSeq = try reader.varint("the sender's sequence number")
        let baseline = try reader.varint("the baseline sequence number")
        let fromAt = reader.p
        let fromSeq = try reader.varint("the first sequence number")
        let fromKey = try reader.positionKey("the first position's key")
        // A baseline after the first position is a catch-up's page
        // (docs/Hub.md, "Compaction"): objects from before the baseline,
        // with the fields changed after it.
        guard baseline != fromSeq || fromKey.isEmpty else {
            throw reader.malformed(
                "it starts inside sequence number \(fromSeq), its baseline, which the receiver has whole", at: fromAt)
        }
        let toAt = reader.p
        let toSeq = try reader.varint("the last sequence number")
        let toKey = try reader.positionKey("the last position's key")
        let hasMore = flags & hasMoreFlag != 0
        var content = ChangesetContent(
            dataset: dataset, sender: sender, writerSchemaVersion: writerSchemaVersion, senderTime: senderTime,
            senderSeq: senderSeq, baseline: baseline, fromSeq: fromSeq, fromKey: fromKey, toSeq: toSeq, toKey: toKey,
            hasMore: hasMore, types: [], fields: [], origins: [], entries: [])
        guard content.from <= content.to else {
            throw reader.malformed("the sequence range \(fromSeq) to \(toSeq) runs backwards", at: toAt)
        }
        guard hasMore || toKey.isEmpty else {
            throw reader.malformed("a last page ends inside sequence number \(toSeq)", at: toAt)
        }
        let tables = try reader.readTables(into: &content)
        return (content, tables)
    }
}

/// An object's identity within a changeset: its type's index and its key
/// as stored (strings by their UTF-8 bytes, as keys compare).
private struct ObjectIdentity: Hashable {
    var type: Int
    var key: Key

    enum Key: Hashable {
        case int(Int64)
        case string([UInt8])
        case uuid(UUID)
        case other(Value)
    }

    init(type: Int, key: Value) {
        self.type = type
        switch key {
        case .int(let v): self.key = .int(v)
        case .string(let v): self.key = .string(Array(v.utf8))
        case .uuid(let v): self.key = .uuid(v)
        default: self.key = .other(key)
        }
    }
}
