import Foundation

/// Reads what a sync-enabled file changed after a sequence number, as a
/// ``ChangesetContent``: one entry per object (its current state, not a
/// history), each field with its stamp, named by type name, property name
/// and descriptor.
///
/// It walks the change log from a ``LogPosition`` and stops after `limit`
/// entries, inside a sequence number when one transaction changed more
/// objects than that: the page's end says where (`toSeq`, `toKey`), and
/// the next page starts past it. Fields never written (a kept field's empty value on an
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
    /// Per stored field's path (ids are the catalog's, unique across
    /// types): its index in the changeset's fields. Worked out once per
    /// field: the descriptor text and the wire field's hash cost a quarter
    /// of a changeset's making when done per value.
    private var indexByPath: [ClockPath: Int] = [:]
    /// Per stored field id: the property it is stored for, or nil for one
    /// not sent.
    private var propertyByID: [PropertyID: Property?] = [:]
    /// The properties of the catalog's embedded types, declared and kept,
    /// by id (ids are unique across the catalog): a field inside an
    /// embedded object is named without a search per object.
    private let embeddedProperties: [PropertyID: Property]
    private var originIndexes: [UInt32: Int] = [:]

    init(log: SyncLog, catalog: Catalog, tables: [TypeID: ObjectTable], writerVersion: UInt64) {
        self.log = log
        self.catalog = catalog
        self.tables = tables
        self.writerVersion = writerVersion
        embeddedProperties = Dictionary(
            catalog.types.filter(\.isEmbedded).flatMap {
                ($0.properties + $0.keptProperties).map { ($0.id, $0.property) }
            },
            uniquingKeysWith: { first, _ in first })
        content = ChangesetContent(
            dataset: log.handles.identity.dataset, sender: log.handles.identity.site,
            writerSchemaVersion: writerVersion, senderTime: .zero, fromSeq: 0, toSeq: 0, hasMore: false, types: [],
            fields: [], origins: [], entries: [])
    }

    /// The objects whose last change is past the position `after`, at
    /// most `limit`, each with the fields changed after `since` (at most
    /// `after.seq`).
    mutating func build(since: UInt64, after: LogPosition, limit: Int) throws -> ChangesetContent {
        precondition(limit > 0, "A page holds at least one object; limit is \(limit)")
        content.baseline = since
        (content.fromSeq, content.fromKey) = (after.seq, after.key)
        (content.toSeq, content.toKey) = (after.seq, after.key)
        content.senderTime = try log.lastTime()
        content.senderSeq = try log.lastSeq()
        let page = try log.changedObjects(after: after, limit: limit)
        content.hasMore = page.hasMore
        if let last = page.changes.last {
            content.toSeq = last.seq
            // More objects of the last one's sequence number: the page ends
            // inside it, at the last object's key.
            if page.endsInsideSeq {
                content.toKey = Array(FileLayout.counterBytes(UInt64(last.type.rawValue)).suffix(4)) + last.key
            } else {
                content.toKey = []
            }
        }
        if !content.hasMore {
            // The walk reached the end of the log: the page covers every
            // change the sender had.
            (content.toSeq, content.toKey) = (max(content.toSeq, content.senderSeq), [])
        }
        for (_, type, key) in page.changes {
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
                guard !clock.stamp.isNone, let property = storedProperty(id, table) else { return }
                if property.type == .embedded {
                    let layout = table.shape.position(ofField: id).flatMap { table.fields[$0].embedded }
                    let stored = record.fieldOffset(forField: id, expectedAt: Int.max).map {
                        CompositeCodec.Stored(base: record.bytes.baseAddress!, offset: $0, end: record.bytes.count)
                    }
                    try addEmbedded(
                        ClockPath(id), property, layout, stored, parent: nil, type, row, since: since, to: &fields)
                    return
                }
                guard clock.seq > since, let index = wireIndex(of: ClockPath(id), property, type, parent: nil) else {
                    return
                }
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
        content.types.append(WireType(table.type))
        typeIndexes[table.name] = content.types.count - 1
        return content.types.count - 1
    }

    /// The property of the stored field `id` of `table`: one the app
    /// declares, or one the committed catalog keeps (learned fields
    /// included) that is not a list of embedded objects; nil for any other.
    private mutating func storedProperty(_ id: PropertyID, _ table: ObjectTable) -> Property? {
        if let known = propertyByID[id] { return known }
        let stored = catalog[typeID: table.type.id] ?? table.type
        let property =
            (stored.properties + table.type.properties).first { $0.id == id }?.property
            ?? stored.keptProperties.first { $0.id == id && !Self.isEmbeddedList($0.property) }?.property
        propertyByID[id] = .some(property)
        return property
    }

    private static func isEmbeddedList(_ property: Property) -> Bool {
        property.type == .list && property.isEmbedding
    }

    /// Adds the fields of the embedded field at `path` (of `property`,
    /// stored at `stored`; `layout` when the app declares it): its life when
    /// it or a field inside it changed after `since`, and the fields inside
    /// it that did. A field inside it is named by its embedded type's
    /// property; a list of embedded objects the app does not declare is not
    /// sent (its objects' fields cannot be named).
    private mutating func addEmbedded(
        _ path: ClockPath, _ property: Property, _ layout: EmbeddedLayout?, _ stored: CompositeCodec.Stored?,
        parent: Int?, _ type: Int, _ row: ClockRow, since: UInt64, to fields: inout [(Int, LocalStamp, Value)]
    ) throws {
        let clock = row.clock(at: path)
        guard !clock.stamp.isNone, let index = wireIndex(of: path, property, type, parent: parent) else { return }
        let isObject = stored?.tag == RecordCodec.Tag.object.rawValue
        var inside: [(Int, LocalStamp, Value)] = []
        if isObject, let stored {
            for (id, field) in CompositeCodec.fields(of: stored).sorted(by: { $0.key < $1.key }) {
                let innerPath = path.appending(id)
                let innerClock = row.clock(at: innerPath)
                let declared = layout?.shape.position(ofField: id).map { layout!.fields[$0] }
                guard !innerClock.stamp.isNone,
                    let inner = embeddedProperties[id],
                    declared != nil || !Self.isEmbeddedList(inner)
                else { continue }
                if inner.type == .embedded {
                    try addEmbedded(
                        innerPath, inner, declared?.embedded, field.value, parent: index, type, row, since: since,
                        to: &inside)
                    continue
                }
                var p = field.value.offset
                guard innerClock.seq > since,
                    let value = declared.map({ SyncRecorder.value(of: $0, at: field.value) })
                        ?? RecordView.read(stored.base, &p, field.value.end),
                    let innerIndex = wireIndex(of: innerPath, inner, type, parent: index)
                else { continue }
                inside.append((innerIndex, innerClock.stamp, value))
            }
        }
        guard clock.seq > since || !inside.isEmpty else { return }
        fields.append((index, clock.stamp, .int(Int64(row.life(at: path, present: isObject)))))
        fields.append(contentsOf: inside)
    }

    /// The changeset's index of the field at `path`, of `property`, inside
    /// the field of index `parent` (nil: of the object itself). Worked out
    /// once per path.
    private mutating func wireIndex(of path: ClockPath, _ property: Property, _ type: Int, parent: Int?) -> Int? {
        if let known = indexByPath[path] { return known }
        let field = WireField(
            type: type, path: property.name, descriptor: FieldDescriptor.descriptor(of: property), parent: parent)
        let index = fieldIndexes[field] ?? content.fields.count
        if index == content.fields.count {
            content.fields.append(field)
            fieldIndexes[field] = index
        }
        indexByPath[path] = index
        return index
    }

    private mutating func wireStamp(_ stamp: LocalStamp) throws -> WireStamp {
        if let index = originIndexes[stamp.origin] { return WireStamp(time: stamp.time, origin: index) }
        content.origins.append(try log.site(at: stamp.origin))
        originIndexes[stamp.origin] = content.origins.count - 1
        return WireStamp(time: stamp.time, origin: content.origins.count - 1)
    }
}
