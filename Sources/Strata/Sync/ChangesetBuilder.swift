import Foundation

/// Reads what a sync-enabled file changed after a sequence number, as a
/// ``ChangesetContent``: one entry per object (its current state, not a
/// history), each field with its stamp, named by type name, property name
/// and descriptor.
///
/// It walks the change log from `since + 1` and stops after `limit`
/// entries at the end of a transaction's changes (a page never splits a
/// transaction). Fields never written (a kept field's empty value on an
/// object this app made) are not sent.
///
/// Objects a peer sent are sent back to it once, as they are: it applies
/// them as no-ops. Leaving out the objects whose every stamp is the
/// peer's own would save that, but a file copied from the peer carries
/// the peer's site on the writes made before its identity was reset, and
/// those would never reach the peer.
struct ChangesetBuilder {
    let log: SyncLog
    let catalog: Catalog
    /// The file's tables, by type id.
    let tables: [TypeID: ObjectTable]
    let writerVersion: UInt64

    private var content: ChangesetContent
    private var typeIndexes: [String: Int] = [:]
    private var fieldIndexes: [WireField: Int] = [:]
    /// Per stored field id (ids are the catalog's, unique across types):
    /// its index in the changeset's fields, or nil for a field not sent.
    /// Worked out once per field: the descriptor text and the wire field's
    /// hash cost a quarter of a changeset's making when done per value.
    private var indexByID: [PropertyID: Int?] = [:]
    private var originIndexes: [UInt32: Int] = [:]

    init(log: SyncLog, catalog: Catalog, tables: [TypeID: ObjectTable], writerVersion: UInt64) {
        self.log = log
        self.catalog = catalog
        self.tables = tables
        self.writerVersion = writerVersion
        content = ChangesetContent(
            dataset: log.handles.identity.dataset, sender: log.handles.identity.site,
            writerSchemaVersion: writerVersion, senderTime: .zero, fromSeq: 0, toSeq: 0, hasMore: false, types: [],
            fields: [], origins: [], entries: [])
    }

    /// The objects whose last change is after `after`, at most about
    /// `limit`, each with the fields changed after `since` (≤ `after`).
    mutating func build(since: UInt64, after: UInt64, limit: Int) throws -> ChangesetContent {
        content.baseline = since
        content.fromSeq = after
        content.toSeq = after
        content.senderTime = try log.lastTime()
        let (pending, hasMore) = try log.changedObjects(after: after, limit: limit)
        content.hasMore = hasMore
        for (seq, type, key) in pending {
            content.toSeq = seq
            try key.withUnsafeBytes { try add(type, key: $0, since: since) }
        }
        return content
    }

    /// Adds the entry of one object: the fields that changed in this file
    /// after `since` (the peer has the others).
    private mutating func add(_ typeID: TypeID, key: UnsafeRawBufferPointer, since: UInt64) throws {
        // A type this app's schema no longer names keeps its clocks, but
        // its objects are not sent by it.
        guard let table = tables[typeID], let keyField = table.primaryKey,
            let row = try log.row(typeID, key)
        else { return }
        let keyValue: Value
        do throws(DecodingFailure) {
            keyValue = try KeyCodec.decodeKey(key, type: keyField.type)
        } catch {
            throw StrataError.corruptFile(
                path: log.path, "A key of '\(table.name)' in the sync change log of \(log.path) is damaged.")
        }
        var fields: [(Int, LocalStamp, Value)] = []
        if row.isLive, let bytes = try log.lmdb.get(table.records, key) {
            let record: RecordView
            do throws(DecodingFailure) {
                record = try RecordView(trusting: bytes)
            } catch {
                throw StrataError.corruptFile(path: log.path, "A record of '\(table.name)' in \(log.path) is damaged.")
            }
            let type = try typeIndex(table)
            try record.forEachEncodedField { id, _ in
                let clock = row.clock(of: id)
                guard !clock.stamp.isNone, clock.seq > since, let index = wireIndex(of: id, type, table) else { return }
                if let position = table.shape.position(ofField: id) {
                    let field = table.fields[position]
                    // A link whose target is absent here: the record holds
                    // less than the register, which is what peers merge.
                    let register =
                        field.isLink ? try log.shadowRegister(SyncLog.registerKey(typeID, id, key)) : nil
                    fields.append((index, clock.stamp, register ?? table.value(at: position, in: record)))
                } else if let value = record.value(forField: id, expectedAt: Int.max) {
                    fields.append((index, clock.stamp, value))
                }
            }
        }
        let entryStamp = row.isLive ? row.lastStamp : row.base.stamp
        content.entries.append(
            ChangeEntry(
                type: try typeIndex(table), key: keyValue, causalLength: row.causalLength,
                writerVersion: row.maxWriterVersion, stamp: try wireStamp(entryStamp),
                fields: try fields.map { FieldChange(field: $0.0, stamp: try wireStamp($0.1), value: $0.2) }))
    }

    private mutating func typeIndex(_ table: ObjectTable) throws -> Int {
        if let index = typeIndexes[table.name] { return index }
        let keyProperty = table.type.properties.first { $0.property.name == table.type.primaryKey }!.property
        content.types.append(
            WireType(
                name: table.name, keyName: keyProperty.name, keyDescriptor: FieldDescriptor.descriptor(of: keyProperty))
        )
        typeIndexes[table.name] = content.types.count - 1
        return content.types.count - 1
    }

    /// The changeset's index of the stored field `id` of `table`: a
    /// property the app declares, or one the committed catalog keeps
    /// (learned fields included) that is not embedded; nil for any other.
    private mutating func wireIndex(of id: PropertyID, _ type: Int, _ table: ObjectTable) -> Int? {
        if let known = indexByID[id] { return known }
        let stored = catalog[typeID: table.type.id] ?? table.type
        let property =
            (stored.properties + table.type.properties).first { $0.id == id }?.property
            ?? stored.keptProperties.first { $0.id == id && !$0.property.isEmbedding }?.property
        let index = property.map { fieldIndex(type, $0) }
        indexByID[id] = .some(index)
        return index
    }

    private mutating func fieldIndex(_ type: Int, _ property: Property) -> Int {
        let field = WireField(type: type, path: property.name, descriptor: FieldDescriptor.descriptor(of: property))
        if let index = fieldIndexes[field] { return index }
        content.fields.append(field)
        fieldIndexes[field] = content.fields.count - 1
        return content.fields.count - 1
    }

    private mutating func wireStamp(_ stamp: LocalStamp) throws -> WireStamp {
        if let index = originIndexes[stamp.origin] { return WireStamp(time: stamp.time, origin: index) }
        content.origins.append(try log.site(at: stamp.origin))
        originIndexes[stamp.origin] = content.origins.count - 1
        return WireStamp(time: stamp.time, origin: content.origins.count - 1)
    }
}
