/// How a migration that makes a top-level object type embedded treats the
/// objects that do not fit inside exactly one parent: those no object links
/// to (orphans), and those several objects link to (shared objects).
///
/// ```swift
/// config.migration = { migration, _ in
///     try migration.setEmbeddingPolicy(.init(orphans: .delete, sharedObjects: .copyPerParent), forType: "Address")
/// }
/// ```
///
/// Without one, both fail the migration, listing the objects concerned.
public struct EmbeddingPolicy: Sendable, Hashable {
    /// What happens to an object no other object links to.
    public enum Orphans: String, Sendable, Hashable {
        /// The migration fails, listing them; nothing is written.
        case fail
        /// They are deleted.
        case delete
    }

    /// What happens to an object that several objects link to.
    public enum SharedObjects: String, Sendable, Hashable {
        /// The migration fails, listing them; nothing is written.
        case fail
        /// Each parent gets a copy of its own.
        case copyPerParent
    }

    /// For objects no other object links to. Default: ``Orphans/fail``.
    public var orphans: Orphans
    /// For objects several objects link to. Default: ``SharedObjects/fail``.
    public var sharedObjects: SharedObjects

    /// A policy; the defaults fail the migration on either kind of object.
    public init(orphans: Orphans = .fail, sharedObjects: SharedObjects = .fail) {
        self.orphans = orphans
        self.sharedObjects = sharedObjects
    }
}

/// A property whose values move between links and embedded objects in a
/// migration, because the type it holds became embedded or top-level.
struct EmbeddingConversion {
    /// The property's name, in the old schema and the new.
    let name: String
    /// Its field position in the new table.
    let position: Int
    /// The converted type, as the migration leaves it.
    let target: CatalogType
    /// Its name before the migration.
    let oldTargetName: String
    /// True when links become embedded objects; false the other way.
    let toEmbedded: Bool
    /// The value the new property takes when the old one holds nothing.
    let absent: Value
}

extension RecordRewriter {
    /// The properties of `type` whose values change between links and
    /// embedded objects in this migration: each takes the values of the
    /// file's property of its name, unless a version in between removed
    /// that name (``FieldPairing/keepsName(_:_:)``).
    func embeddingConversions(of type: CatalogType, table: ObjectTable) -> [EmbeddingConversion] {
        guard let before = old[typeID: type.id] else { return [] }
        var pairing: FieldPairing?
        return table.fields.compactMap { field in
            guard field.isLink || field.type == .embedded || field.elementType == .embedded,
                let targetName = field.target, let target = catalog.working[type: targetName],
                let oldTarget = old[typeID: target.id], oldTarget.isEmbedded != target.isEmbedded,
                let previous = before[property: field.name]?.property, previous.target == oldTarget.name,
                (previous.type == .list) == (field.type == .list)
            else { return nil }
            let names = pairing ?? catalog.pairing()
            pairing = names
            guard names.keepsName(type.name, field.name) else { return nil }
            let toEmbedded = target.isEmbedded
            guard toEmbedded ? previous.isLink : previous.isEmbedding else { return nil }
            return EmbeddingConversion(
                name: field.name, position: field.position, target: target, oldTargetName: oldTarget.name,
                toEmbedded: toEmbedded, absent: field.valueWhenAbsent)
        }
    }

    /// Sets the converted properties of `object` from its old side: each
    /// link becomes a copy of the object it linked to, or each embedded
    /// object an object of its own, linked to.
    func convert(_ object: MutableObject, old: DynamicObject, _ target: Target) throws {
        for conversion in target.conversions {
            let value = old[conversion.name]
            let converted: Value
            switch value {
            case .list(let elements):
                converted = .list(try elements.compactMap { try convert($0, conversion) })
            default:
                converted = try convert(value, conversion) ?? conversion.absent
            }
            object.assign(converted, at: conversion.position)
        }
    }

    private func convert(_ value: Value, _ conversion: EmbeddingConversion) throws -> Value? {
        if conversion.toEmbedded {
            guard let key = value.linkKey else { return nil }
            let (_, context) = try scope.snapshotContext()
            guard let linked = try context.object(conversion.oldTargetName, key: key) else { return nil }
            let names = Set(conversion.target.properties.map(\.property.name))
            return .object(linked.values.filter { names.contains($0.key) })
        }
        guard case .object(let fields) = value else { return nil }
        let table = try table(for: conversion.target)
        try created(in: conversion.target.id)
        do {
            return .link(try engine.insert(table, fields))
        } catch let error as StrataError where error.code == .duplicatePrimaryKey {
            throw scope.refusal(
                .duplicatePrimaryKey, "Making the embedded type '\(conversion.target.name)' top-level",
                "two of its objects have one primary key (\(error.key ?? "?")). Give the type no primary key, so that its objects get automatic ids, or set distinct keys in the migration closure.",
                cause: error)
        }
    }

    /// Checks the objects of every type that becomes embedded against its
    /// policy: each must have exactly one parent, unless the policy deletes
    /// orphans or copies shared objects. Then forgets their table.
    func finishEmbedding(policies: [String: EmbeddingPolicy]) throws {
        for type in catalog.working.types where type.isEmbedded && scope.hadTable(type.id) {
            guard let oldType = old[typeID: type.id], let oldTable = scope.oldTables[type.id] else { continue }
            let policy = policies[type.name] ?? policies[oldType.name] ?? EmbeddingPolicy()
            // The old link properties whose values became embedded objects.
            var parents: [(table: ObjectTable, field: ObjectTable.Field)] = []
            for source in old.types where !source.isKept {
                guard let sourceTable = scope.oldTables[source.id], let now = catalog.working[typeID: source.id],
                    !now.isKept
                else { continue }
                for field in sourceTable.linkFields where field.target == oldType.name {
                    guard let property = now[property: field.name]?.property, property.target == type.name,
                        property.isEmbedding
                    else { continue }
                    parents.append((sourceTable, field))
                }
            }
            let (reader, _) = try scope.snapshotContext()
            var orphans: [String] = []
            var shared: [String] = []
            try reader.withCursor(oldTable.records) { cursor in
                var entry = try cursor.first()
                while let (key, _) = entry {
                    var count = 0
                    for parent in parents {
                        guard let backlinks = parent.field.backlinks else { continue }
                        try reader.withCursor(backlinks) { links in
                            var found = try links.seek(exactly: key)
                            while found != nil, count < 2 {
                                count += 1
                                found = try links.nextDuplicate()
                            }
                        }
                    }
                    if count == 0 { orphans.append(oldTable.describeKey(key)) }
                    if count > 1 { shared.append(oldTable.describeKey(key)) }
                    entry = try cursor.next()
                }
            }
            func list(_ keys: [String]) -> String {
                keys.prefix(20).joined(separator: ", ") + (keys.count > 20 ? " and \(keys.count - 20) more" : "")
            }
            if policy.orphans == .fail && !orphans.isEmpty {
                throw scope.refusal(
                    .migrationFailed, "Making '\(oldType.name)' embedded",
                    "no object linked to the '\(oldType.name)' \(list(orphans)) before the migration, so \(orphans.count == 1 ? "it has" : "they have") no parent to live in. Call migration.setEmbeddingPolicy(.init(orphans: .delete), forType: \"\(type.name)\") to delete such objects, or link them from a parent in an earlier version."
                )
            }
            if policy.sharedObjects == .fail && !shared.isEmpty {
                throw scope.refusal(
                    .migrationFailed, "Making '\(oldType.name)' embedded",
                    "several objects linked to the '\(oldType.name)' \(list(shared)) before the migration, and an embedded object has one parent. Call migration.setEmbeddingPolicy(.init(sharedObjects: .copyPerParent), forType: \"\(type.name)\") to give each parent a copy of its own."
                )
            }
            // The objects now live in their parents' records.
            try indexes.retire(type.recordsDatabase, catalog: catalog, scope: scope)
            try engine.deleteSequence(of: type.id)
        }
    }
}
