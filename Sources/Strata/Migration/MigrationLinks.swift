/// Keeps every link whole through a migration, once the closure is done:
/// links follow their targets to new primary keys, links to objects the
/// migration deleted follow their property's delete rule, links the
/// closure wrote must name existing objects, and every backlinks table
/// the migration made stale is rebuilt. Only the types whose links may
/// have changed are read (those whose objects the migration wrote, and
/// those that link to a type whose objects it deleted or re-keyed), so an
/// additive migration still reads and rewrites nothing.
///
/// The migration writes records without backlinks (as it writes them
/// without indexes); this is where they are brought up to date, as
/// ``MigrationIndexes`` does for indexes.
struct MigrationLinks {
    /// Types whose records' links may have changed: objects created,
    /// deleted or given new keys, or a link property set by the closure.
    private var changedSources: Set<TypeID> = []
    /// Types some of whose objects were deleted or given new keys: the
    /// links to them must be checked.
    private var changedTargets: Set<TypeID> = []
    /// Per type whose objects got new keys, old record key to new one, for
    /// the types that links may point to (kept only for those: the map
    /// grows with the objects).
    private var newKeys: [TypeID: [[UInt8]: [UInt8]]] = [:]
    /// Objects that `deleteData(forType:)` doomed through a cascade rule,
    /// by type: their keys before the migration.
    private var doomed: [TypeID: [[UInt8]]] = [:]
    /// The types whose new keys must be remembered.
    private let remembersKeys: Set<TypeID>

    /// - Parameter old: The file's catalog before the migration: a type
    ///   that any link property of it or of `evolved` points to, or that
    ///   holds such a property (a cascade may delete its objects), has its
    ///   new keys remembered.
    init(old: Catalog, evolved: Catalog) {
        var types: Set<TypeID> = []
        for catalog in [old, evolved] {
            for type in catalog.types {
                for property in type.properties where property.property.isLink {
                    types.insert(type.id)
                    if let target = property.property.target, let id = catalog[type: target]?.id { types.insert(id) }
                }
            }
        }
        remembersKeys = types
    }

    mutating func sourceChanged(_ type: TypeID) { changedSources.insert(type) }

    /// An object of `type` was deleted by the migration.
    mutating func deleted(in type: TypeID) {
        changedSources.insert(type)
        changedTargets.insert(type)
    }

    /// An object of `type` moved from record key `old` to `new`.
    mutating func rekeyed(_ type: TypeID, from old: UnsafeRawBufferPointer, to new: UnsafeRawBufferPointer) {
        changedSources.insert(type)
        changedTargets.insert(type)
        guard remembersKeys.contains(type) else { return }
        newKeys[type, default: [:]][Array(old)] = Array(new)
    }

    mutating func doom(_ keys: [[UInt8]], of type: TypeID) {
        doomed[type, default: []] += keys
    }

    // MARK: Finishing

    /// Settles every link of the working catalog and brings the backlinks
    /// tables up to date; notes in `indexes` the types whose objects a
    /// cascade deleted.
    mutating func finish(
        _ catalog: MigrationCatalog, tables: [TypeID: ObjectTable], getsNewKeys: (CatalogType) -> Bool,
        indexes: inout MigrationIndexes, scope: MigrationScope
    ) throws {
        let working = catalog.working
        var byName: [String: ObjectTable] = [:]
        for type in working.types where !type.isKept && !type.isEmbedded {
            byName[type.name] =
                try tables[type.id]
                ?? ObjectTable.open(
                    type, scope.txn, create: !scope.hadTable(type.id), withIndexes: false,
                    related: working.types, path: scope.path)
        }
        let engine = scope.engine
        engine.links = LinkGraph(tables: byName)
        let sources = byName.values.filter { !$0.linkFields.isEmpty }.sorted { $0.type.id < $1.type.id }
        let rekeyedTargets = Set(working.types.filter { scope.old[typeID: $0.id] != nil && getsNewKeys($0) }.map(\.id))

        for (typeID, keys) in doomed.sorted(by: { $0.key < $1.key }) {
            guard let type = working[typeID: typeID], let table = byName[type.name] else { continue }
            let map = newKeys[typeID]
            for key in keys {
                let current = map?[key] ?? key
                if try current.withUnsafeBytes({ try engine.deleteRecord(table, key: $0) }) {
                    deleted(in: typeID)
                    // Their index entries go when the type's indexes are rebuilt.
                    indexes.markStale(typeID)
                }
            }
        }

        // Synced mode: link properties (or whole types) an older app
        // version names again after a newer one kept them without keeping
        // their links whole.
        var returning: Set<PropertyID> = []
        for source in sources {
            guard let before = scope.old[typeID: source.type.id] else { continue }
            for field in source.linkFields
            where before.isKept || before.keptProperties.contains(where: { $0.id == field.id }) {
                returning.insert(field.id)
            }
        }
        var settled: Set<TypeID> = []
        var remapped: Set<TypeID> = []
        var pending = sources.filter { source in
            changedSources.contains(source.type.id) || source.linkFields.contains { returning.contains($0.id) }
                || source.linkFields.contains { field in
                    byName[field.target ?? ""].map { changedTargets.contains($0.type.id) } ?? false
                }
        }
        while let source = pending.popLast() {
            let remap = !remapped.contains(source.type.id)
            remapped.insert(source.type.id)
            let cascaded = try settle(
                source, byName: byName, remap: remap ? rekeyedTargets : [], returning: returning, scope: scope)
            settled.insert(source.type.id)
            guard cascaded else { continue }
            deleted(in: source.type.id)
            indexes.markStale(source.type.id)
            for other in sources where !pending.contains(where: { $0 === other }) {
                let linksHere = other.linkFields.contains { $0.target == source.name }
                if linksHere || other === source { pending.append(other) }
            }
        }
        try rebuildBacklinks(working, byName: byName, settled: settled, catalog: catalog, scope: scope)
    }

    /// Walks the records of `source` and settles each link: mapped to its
    /// target's new key, kept, or, for a target the migration deleted,
    /// nulled, dropped or cascaded by the property's rule. Returns whether
    /// a cascade deleted objects of `source`.
    private func settle(
        _ source: ObjectTable, byName: [String: ObjectTable], remap: Set<TypeID>, returning: Set<PropertyID>,
        scope: MigrationScope
    ) throws -> Bool {
        let engine = scope.engine
        let txn = scope.txn
        let (reader, _) = try scope.snapshotContext()
        // Per object, every field it changes: the record is written once,
        // with all its links settled, since writing checks each of them.
        var rewrites: [(key: [UInt8], values: [Int: Value])] = []
        var cascades: [[UInt8]] = []
        var denied: [String] = []
        try txn.withCursor(source.records) { cursor in
            var entry = try cursor.first()
            while let (key, record) = entry {
                let view = try source.validatedView(key: key, record: record)
                var values: [Int: Value] = [:]
                defer { if !values.isEmpty { rewrites.append((Array(key), values)) } }
                for field in source.linkFields {
                    guard let target = byName[field.target ?? ""] else { continue }
                    let oldTarget = scope.oldTables[target.type.id]
                    let map = remap.contains(target.type.id) ? newKeys[target.type.id] ?? [:] : nil
                    let current = source.value(at: field.position, in: view)
                    var changed = false
                    var missing = false
                    func settled(_ element: Value) throws -> Value? {
                        guard let linked = element.linkKey else { return element }
                        if let map, let oldTarget, let oldKey = engine.recordKey(linked, of: oldTarget),
                            let newKey = map[oldKey]
                        {
                            let mapped = try newKey.withUnsafeBytes {
                                try KeyCodec.decodeKey($0, type: target.primaryKey?.type)
                            }
                            if !mapped.isStored(identicallyTo: linked) { changed = true }
                            return .link(mapped)
                        }
                        if let recordKey = engine.recordKey(linked, of: target),
                            try recordKey.withUnsafeBytes({ try txn.get(target.records, $0) }) != nil
                        {
                            return element
                        }
                        // Gone: deleted by this migration if the snapshot had it.
                        let existed =
                            try oldTarget.flatMap { old in
                                try engine.recordKey(linked, of: old).map { oldKey in
                                    try oldKey.withUnsafeBytes { try reader.get(old.records, $0) } != nil
                                }
                            } ?? false
                        // A link kept for older app versions while this
                        // one did not maintain it: its target may be long gone.
                        if returning.contains(field.id) {
                            changed = true
                            return nil
                        }
                        guard existed else {
                            throw StrataError.danglingLink(
                                typeName: source.name, property: field.name, key: source.describeKey(key),
                                target: target.name, targetKey: "\(linked)",
                                remedy: "Link only to objects the new schema's data holds.", nothingWritten: false,
                                path: scope.path)
                        }
                        changed = true
                        missing = true
                        return nil
                    }
                    switch current {
                    case .link:
                        let kept = try settled(current)
                        guard missing else {
                            if changed { values[field.position] = kept ?? .null }
                            continue
                        }
                        switch field.actionOnDeletedTarget {
                        case .unlink: values[field.position] = .null
                        case .delete: cascades.append(Array(key))
                        case .refuse: denied.append(Self.describe(source, key, field))
                        }
                    case .list(let elements):
                        var kept: [Value] = []
                        kept.reserveCapacity(elements.count)
                        for element in elements {
                            if let value = try settled(element) { kept.append(value) }
                        }
                        if missing && field.actionOnDeletedTarget == .refuse {
                            denied.append(Self.describe(source, key, field))
                        } else if changed {
                            values[field.position] = .list(kept)
                        }
                    default:
                        continue
                    }
                }
                entry = try cursor.next()
            }
        }
        if !denied.isEmpty {
            throw scope.problem(
                .deleteDenied,
                "The migration of \(scope.path) \(scope.step) deleted objects that others still link to under a deny rule",
                items: StrataError.listed(denied), remedy: "Delete or relink those objects in the migration too.")
        }
        let doomed = Set(cascades)
        for rewrite in rewrites where !doomed.contains(rewrite.key) {
            try engine.replaceFields(source, key: rewrite.key, with: rewrite.values)
        }
        for key in cascades {
            _ = try key.withUnsafeBytes { try engine.deleteRecord(source, key: $0) }
        }
        return !cascades.isEmpty
    }

    private static func describe(_ source: ObjectTable, _ key: UnsafeRawBufferPointer, _ field: ObjectTable.Field)
        -> String
    {
        "'\(source.name)' \(source.describeKey(key)) (through '\(source.name).\(field.name)', delete rule deny)"
    }

    /// Rebuilds the backlinks of every link property of a settled type,
    /// creates those of link properties new to the file (empty: no record
    /// holds them yet), and retires those the file no longer uses.
    private func rebuildBacklinks(
        _ working: Catalog, byName: [String: ObjectTable], settled: Set<TypeID>, catalog: MigrationCatalog,
        scope: MigrationScope
    ) throws {
        var before: Set<NamedDatabase> = []
        for type in scope.old.types where !type.isEmbedded {
            for property in type.properties where property.property.isLink {
                before.insert(type.backlinksDatabase(property))
            }
        }
        var current: Set<NamedDatabase> = []
        let engine = scope.engine
        for type in working.types where !type.isEmbedded {
            // Kept for older app versions, as they left them.
            for property in type.keptProperties + (type.isKept ? type.properties : [])
            where property.property.isLink {
                current.insert(type.backlinksDatabase(property))
            }
            guard !type.isKept, let table = byName[type.name] else { continue }
            for property in type.properties where property.property.isLink {
                let database = type.backlinksDatabase(property)
                current.insert(database)
                // A database new to the file starts empty, which is right
                // unless the type's records were settled: none holds the
                // property's id yet.
                guard let handle = try scope.txn.openDatabase(database, create: true) else { continue }
                catalog.adopt(database)
                guard settled.contains(type.id) else { continue }
                guard let field = table.fields.first(where: { $0.id == property.id }),
                    let target = byName[field.target ?? ""]
                else { continue }
                try scope.txn.empty(handle, delete: false)
                try scope.txn.withCursor(table.records) { cursor in
                    var entry = try cursor.first()
                    while let (key, record) = entry {
                        let view = try table.validatedView(key: key, record: record)
                        var seen = Set<[UInt8]>()
                        for linked in table.linkedKeys(field, in: view) {
                            guard let targetKey = engine.recordKey(linked, of: target), seen.insert(targetKey).inserted
                            else { continue }
                            try targetKey.withUnsafeBytes { _ = try scope.txn.put(handle, $0, key) }
                        }
                        entry = try cursor.next()
                    }
                }
            }
        }
        for database in before.subtracting(current).sorted(by: { $0.name < $1.name }) {
            guard let handle = try scope.txn.openDatabase(database, create: false) else { continue }
            try scope.txn.empty(handle, delete: false)
            catalog.orphan(database)
        }
    }
}
