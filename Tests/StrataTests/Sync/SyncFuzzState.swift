import Foundation

@_spi(Hub) @testable import Strata

/// What sync must make identical in every file of a dataset, read through
/// the file's own catalog and records rather than an app's schema: for
/// each type, each object's fields by name and descriptor, the fields the
/// app does not declare (kept and learned ones) included, and each
/// object's causal length, tombstones included.
struct SyncFuzzState: Equatable {
    /// A field's identity across files: `name: descriptor`.
    typealias FieldName = String

    /// Type name → primary key → field → value.
    var objects: [String: [Value: [FieldName: Value]]] = [:]
    /// Type name → primary key → causal length (odd: live).
    var causalLengths: [String: [Value: UInt64]] = [:]
    /// Type name → the fields the file stores, declared or kept.
    var fields: [String: [FieldName: Property]] = [:]

    /// The same state over the fields of `union`: a field the file never
    /// learned reads as its empty value, as it would in an app declaring it.
    func over(_ union: [String: [FieldName: Property]]) -> SyncFuzzState {
        var state = self
        for (type, byKey) in objects {
            for (key, values) in byKey {
                var all = values
                for (name, property) in union[type] ?? [:] where all[name] == nil {
                    all[name] = property.valueWhenAbsent
                }
                state.objects[type]?[key] = all
            }
        }
        state.fields = union
        return state
    }

    /// The union of the fields of `states`.
    static func union(_ states: [SyncFuzzState]) -> [String: [FieldName: Property]] {
        var union: [String: [FieldName: Property]] = [:]
        for state in states {
            for (type, fields) in state.fields { union[type, default: [:]].merge(fields) { a, _ in a } }
        }
        return union
    }
}

extension SyncFuzzState {
    /// The canonical state of `db`, a sync-enabled file: every stored field
    /// decoded by the catalog's properties and kept properties (a field
    /// absent from a record reads as its empty value).
    static func canonicalState(of db: Database) throws -> SyncFuzzState {
        guard let handles = db.syncHandles else { throw FuzzFailure("\(db.path) has no sync") }
        // Learned types are opened here, and named databases are opened by
        // one transaction of the process at a time.
        db.environment.setupLock.lock()
        defer { db.environment.setupLock.unlock() }
        return try db.read { tx in
            let lmdb = tx.context.lmdb
            guard let catalog = try db.store.catalog(lmdb) else { throw FuzzFailure("\(db.path) has no catalog") }
            let log = SyncLog(
                lmdb: lmdb, meta: db.store.meta, handles: handles, writerVersion: db.configuration.schemaVersion,
                path: db.path)
            var state = SyncFuzzState()
            for type in catalog.types where !type.isEmbedded {
                var table = db.tables[type.name]
                if table == nil, type.isKept, try lmdb.openDatabase(type.recordsDatabase, create: false) != nil {
                    table = try ObjectTable.open(
                        type, lmdb, create: false, withIndexes: false, related: catalog.types, path: db.path,
                        preservesUnknownFields: true)
                    try log.openClocks(of: type.id)
                }
                guard let table, let keyField = table.primaryKey else { continue }
                func key(_ bytes: UnsafeRawBufferPointer) throws -> Value {
                    do throws(DecodingFailure) {
                        return try KeyCodec.decodeKey(bytes, type: keyField.type)
                    } catch {
                        throw FuzzFailure("a key of \(type.name) in \(db.path) does not decode: \(error)")
                    }
                }
                let stored = (type.properties + type.keptProperties).filter { $0.property.name != type.primaryKey }
                var fields: [FieldName: Property] = [:]
                for entry in stored {
                    let descriptor = FieldDescriptor.descriptor(of: entry.property)
                    fields["\(entry.property.name): \(descriptor)"] = FieldDescriptor.property(
                        named: entry.property.name, descriptor: descriptor)
                }
                state.fields[type.name] = fields
                var objects: [Value: [FieldName: Value]] = [:]
                // The fields inside embedded objects, as records hold them.
                var inside: [FieldName: Property] = [:]
                try lmdb.withCursor(table.records) { cursor in
                    var entry = try cursor.first()
                    while let (keyBytes, recordBytes) = entry {
                        let record = try RecordView(trusting: recordBytes)
                        var values: [FieldName: Value] = [:]
                        for property in stored {
                            let name = "\(property.property.name): \(FieldDescriptor.descriptor(of: property.property))"
                            if property.property.type == .embedded {
                                // Per path: its life, and each field inside it.
                                let row = try log.row(type.id, keyBytes)
                                embedded(
                                    property, name: property.property.name, in: record, row: row, catalog: catalog,
                                    into: &values, fields: &inside)
                            } else if let field = table.fields.first(where: { $0.id == property.id }) {
                                values[name] = table.value(at: field.position, in: record)
                            } else if property.property.isEmbedding {
                                // A kept embedded field: compared by its bytes.
                                let bytes = record.encodedField(property.id, expectedAt: Int.max).map { Data($0.bytes) }
                                values[name] = bytes.map(Value.data) ?? .null
                            } else {
                                values[name] =
                                    record.value(forField: property.id, expectedAt: Int.max)
                                    ?? fields[name]!.valueWhenAbsent
                            }
                        }
                        objects[try key(keyBytes)] = values
                        state.fields[type.name, default: [:]].merge(inside) { a, _ in a }
                        entry = try cursor.next()
                    }
                }
                state.objects[type.name] = objects
                guard let clocks = log.clocks(of: type.id) else { continue }
                var lengths: [Value: UInt64] = [:]
                try lmdb.withCursor(clocks) { cursor in
                    var entry = try cursor.first()
                    while let (keyBytes, rowBytes) = entry {
                        guard let row = ClockRow.decode(rowBytes) else {
                            throw FuzzFailure("a clock row of \(type.name) in \(db.path) does not decode")
                        }
                        lengths[try key(keyBytes)] = row.causalLength
                        entry = try cursor.next()
                    }
                }
                state.causalLengths[type.name] = lengths
            }
            return state
        }
    }

    /// The causal length of object `key` of `type` and the stamp of each
    /// of its fields `names` (`home.street` for a field inside an embedded
    /// object), as the file's clock row holds them, the life of each
    /// embedded field named, and the stamp of the file's last write (a
    /// field it holds was written then); nil when the object has no row.
    static func stamps(in db: Database, _ type: String, key: Int64, fields names: [String]) throws -> (
        causalLength: UInt64, stamps: [String: Stamp], lives: [String: UInt64], last: Stamp
    )? {
        guard let handles = db.syncHandles, let table = db.tables[type], let keyField = table.primaryKey else {
            throw FuzzFailure("\(type) is not a type of \(db.path)")
        }
        let paths = try names.map { name in
            let parts = name.split(separator: ".").map(String.init)
            guard let field = table.fields.first(where: { $0.name == parts[0] }) else {
                throw FuzzFailure("\(type).\(name) is not a field of \(db.path)")
            }
            var path = ClockPath(field.id)
            if parts.count == 2 {
                guard let inner = field.embedded?.field(parts[1]) else {
                    throw FuzzFailure("\(type).\(name) is not a field of \(db.path)")
                }
                path = path.appending(inner.id)
            }
            return (name, path, field)
        }
        return try db.read { tx in
            let log = SyncLog(
                lmdb: tx.context.lmdb, meta: db.store.meta, handles: handles,
                writerVersion: db.configuration.schemaVersion, path: db.path)
            let writer = ByteWriter(capacity: 16)
            _ = KeyCodec.appendPrimaryKey(.int(key), type: keyField.type, to: writer)
            guard let row = try writer.withUnsafeBytes({ try log.row(table.type.id, $0) }) else { return nil }
            let object = try tx.object(type, key: .int(key))
            var stamps: [String: Stamp] = [:]
            var lives: [String: UInt64] = [:]
            for (name, path, field) in paths {
                stamps[name] = try log.stamp(row.clock(at: path).stamp)
                if path.tail.isEmpty, field.type == .embedded {
                    let present = if case .object? = object?[field.name] { true } else { false }
                    lives[name] = row.life(at: path, present: present)
                }
            }
            return (row.causalLength, stamps, lives, Stamp(time: try log.lastTime(), origin: handles.identity.site))
        }
    }
}

extension SyncFuzzState {
    /// The embedded field `property` of `record`, per path: `name` gives
    /// its life (from `row`), and each field inside it, when it holds an
    /// object, its value (a field the object lacks, its empty value).
    static func embedded(
        _ property: CatalogProperty, name: String, in record: RecordView, row: ClockRow?, catalog: Catalog,
        into values: inout [FieldName: Value], fields: inout [FieldName: Property], path: ClockPath? = nil,
        stored: CompositeCodec.Stored? = nil
    ) {
        let path = path ?? ClockPath(property.id)
        let at =
            stored
            ?? record.fieldOffset(forField: property.id, expectedAt: Int.max).map {
                CompositeCodec.Stored(base: record.bytes.baseAddress!, offset: $0, end: record.bytes.count)
            }
        let isObject = at?.tag == RecordCodec.Tag.object.rawValue
        values["\(name): \(FieldDescriptor.descriptor(of: property.property))"] = .int(
            Int64(row?.life(at: path, present: isObject) ?? 0))
        guard isObject, let at, let type = catalog.types.first(where: { $0.name == property.property.target })
        else { return }
        let stored = CompositeCodec.fields(of: at)
        for inner in type.properties + type.keptProperties {
            let innerName = "\(name).\(inner.property.name)"
            let descriptor = FieldDescriptor.descriptor(of: inner.property)
            fields["\(innerName): \(descriptor)"] = FieldDescriptor.property(named: innerName, descriptor: descriptor)
            if inner.property.type == .embedded {
                embedded(
                    inner, name: innerName, in: record, row: row, catalog: catalog, into: &values, fields: &fields,
                    path: path.appending(inner.id), stored: stored[inner.id]?.value)
                continue
            }
            var p = stored[inner.id]?.value.offset ?? 0
            values["\(innerName): \(descriptor)"] =
                stored[inner.id].flatMap { RecordView.read($0.value.base, &p, $0.value.end) }
                ?? fields["\(innerName): \(descriptor)"]!.valueWhenAbsent
        }
    }
}

/// A failure of the fuzz's own bookkeeping, with what went wrong.
struct FuzzFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
