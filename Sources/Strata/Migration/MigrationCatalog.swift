/// What a migration's renames and deletions need to know of the records it
/// has written so far.
protocol MigrationRecords: AnyObject {
    /// Whether an enumeration is running (renames are refused inside one).
    var isWalking: Bool { get }
    /// Whether objects of the type were written under the new schema already.
    func hasWritten(_ type: TypeID) -> Bool
    /// Whether the type's objects get new keys in this migration.
    func getsNewKeys(_ type: CatalogType) -> Bool
    /// Whether an enumeration walked the type as removed (`new == nil`).
    func walkedAsRemoved(_ type: TypeID) -> Bool
    /// A property of a type whose objects were already written was renamed:
    /// the records hold the target under `fresh` and lack the source's values.
    func propertyRenamed(in type: CatalogType, fresh: PropertyID, source: PropertyID) throws
    /// A type was renamed into the new schema: what was worked out for it
    /// under its old entry no longer holds.
    func typeRebound(_ type: TypeID)
}

/// The catalog as a migration shapes it: the names types and properties
/// have at each point of the closure, the renames still open, and the
/// types whose data was deleted. The runner writes ``working`` when the
/// migration is done.
final class MigrationCatalog {
    private let scope: MigrationScope
    private unowned let records: any MigrationRecords
    private(set) var working: Catalog
    /// Every name a type has had in this migration (old, intermediate,
    /// new), to its id: renames of types and properties chain in any order.
    private var aliases: [String: TypeID] = [:]
    /// Per type, the old properties not yet bound to a new one, by their
    /// name after the renames so far: the possible sources of a rename.
    private var renameSources: [TypeID: [String: CatalogProperty]] = [:]
    /// Property renames, by property id, until the property is bound to
    /// one of the new schema (a rename chain may pass through names the new
    /// schema lacks); any left when the closure returns is an error.
    private var openPropertyRenames: [PropertyID: (type: String, from: String, to: String)] = [:]
    private var openTypeRenames: [TypeID: (from: String, to: String)] = [:]
    /// Types whose data `deleteData(forType:)` deleted.
    private var deletedTypes: Set<TypeID> = []

    private var path: String { scope.path }
    private var newSchema: Schema { scope.settings.schema }
    private var old: Catalog { scope.old }

    init(scope: MigrationScope, records: any MigrationRecords, evolved: Catalog) {
        self.scope = scope
        self.records = records
        self.working = evolved
        for type in evolved.types { aliases[type.name] = type.id }
    }

    // MARK: Looking up types

    /// The position in the working catalog of the type known as `name`
    /// in this migration (by its old, intermediate or new name).
    func typeIndex(_ name: String) -> Int? {
        guard let id = aliases[name] else { return nil }
        return working.types.firstIndex { $0.id == id }
    }

    /// Whether a working type is one of the new schema's.
    func isNew(_ type: CatalogType) -> Bool {
        !type.isKept && newSchema[type.name] != nil
    }

    /// The new-schema type known as `name` in this migration.
    func newType(named name: String) -> CatalogType? {
        typeIndex(name).map { working.types[$0] }.flatMap { isNew($0) ? $0 : nil }
    }

    /// Whether `deleteData(forType:)` deleted the type known as `name`.
    func wasDeleted(_ name: String) -> Bool {
        aliases[name].map { deletedTypes.contains($0) } ?? false
    }

    // MARK: Deleting data

    /// Forgets a type the new schema does not have; returns it, or nil when
    /// there is no such kept type.
    func deleteType(_ name: String) throws -> CatalogType? {
        if newSchema[name] != nil {
            throw scope.refusal(
                .migrationFailed, "migration.deleteData(forType: \"\(name)\")",
                "the new schema still has '\(name)'. deleteData removes types the schema no longer has; to empty a type it keeps, call migration.delete on its objects in enumerateObjects."
            )
        }
        guard let index = typeIndex(name), working.types[index].isKept else { return nil }
        let type = working.types.remove(at: index)
        deletedTypes.insert(type.id)
        openTypeRenames[type.id] = nil
        for property in type.properties { openPropertyRenames[property.id] = nil }
        return type
    }

    /// Lists a named database the file no longer uses, for deletion by the
    /// next open that has the file to itself.
    func orphan(_ database: NamedDatabase) {
        if !working.orphanedDatabases.contains(database.name) { working.orphanedDatabases.append(database.name) }
    }

    /// A database emptied earlier and listed for deletion is in use again.
    func adopt(_ database: NamedDatabase) {
        working.orphanedDatabases.removeAll { $0 == database.name }
    }

    // MARK: Renames

    private func renameError(_ call: String, _ problem: String) -> StrataError {
        scope.refusal(.migrationFailed, call, problem)
    }

    func renameProperty(onType typeName: String, from oldName: String, to newName: String) throws {
        let call = "migration.renameProperty(onType: \"\(typeName)\", from: \"\(oldName)\", to: \"\(newName)\")"
        guard let typeIndex = typeIndex(typeName) else {
            throw renameError(call, "neither the old nor the new schema has a type '\(typeName)'.")
        }
        let type = working.types[typeIndex]
        guard let schema = isNew(type) ? newSchema[type.name] : nil else {
            // A type that a later renameType brings into the new schema:
            // rename the property in its entry, which is bound by name then.
            guard let position = type.properties.firstIndex(where: { $0.property.name == oldName }) else {
                let known = type.properties.map { "'\($0.property.name)'" }.joined(separator: ", ")
                throw renameError(
                    call,
                    "'\(typeName)' has no property '\(oldName)' at this point of the migration; its properties are \(known)."
                )
            }
            if type.properties.contains(where: { $0.property.name == newName }) {
                throw renameError(call, "'\(typeName)' already has a property '\(newName)'.")
            }
            working.types[typeIndex].properties[position].property.name = newName
            let id = type.properties[position].id
            openPropertyRenames[id] = (typeName, openPropertyRenames[id]?.from ?? oldName, newName)
            return
        }
        guard !records.isWalking else {
            throw renameError(call, "it was called inside enumerateObjects; rename properties between enumerations.")
        }
        if records.hasWritten(type.id) && records.getsNewKeys(type) {
            throw renameError(
                call,
                "objects of '\(type.name)' were already written under new primary keys; rename its properties before enumerating or creating them."
            )
        }
        if schema[property: oldName] != nil {
            throw renameError(
                call,
                "'\(type.name).\(oldName)' is still in the new schema; the source of a rename must be a property the new schema no longer has."
            )
        }
        var sources = renameSources[type.id] ?? initialRenameSources(type)
        guard let source = sources[oldName] else {
            let known = sources.keys.sorted().map { "'\($0)'" }.joined(separator: ", ")
            throw renameError(
                call,
                "'\(type.name)' had no property '\(oldName)' before the migration"
                    + (known.isEmpty ? "." : "; the properties it can rename are \(known)."))
        }
        sources[oldName] = nil
        if let target = schema[property: newName] {
            guard let targetPosition = type.properties.firstIndex(where: { $0.property.name == newName }),
                !(old[typeID: type.id]?.properties.contains { $0.id == type.properties[targetPosition].id } ?? false)
            else {
                throw renameError(
                    call,
                    "'\(type.name).\(newName)' already existed before the migration; the target of a rename must be new."
                )
            }
            let before = source.property
            guard before.type == target.type && before.isOptional == target.isOptional else {
                throw renameError(
                    call,
                    "'\(oldName)' is \(before.typeDescription) but '\(newName)' is \(target.typeDescription); a rename keeps the type and optionality. Rename it to a property of the same type, then convert it in a later version."
                )
            }
            let freshID = type.properties[targetPosition].id
            working.types[typeIndex].properties[targetPosition].id = source.id
            working.types[typeIndex].retiredProperties.removeAll { $0.id == source.id }
            openPropertyRenames[source.id] = nil
            if records.hasWritten(type.id) {
                try records.propertyRenamed(in: working.types[typeIndex], fresh: freshID, source: source.id)
            }
        } else {
            // A step of a chain (a → b in version 2, b → c in version 3):
            // a later rename must move it on.
            var moved = source
            moved.property.name = newName
            sources[newName] = moved
            openPropertyRenames[source.id] = (type.name, openPropertyRenames[source.id]?.from ?? oldName, newName)
        }
        renameSources[type.id] = sources
    }

    /// The properties of a type before the migration that no property of
    /// the new schema took over.
    private func initialRenameSources(_ type: CatalogType) -> [String: CatalogProperty] {
        guard let before = old[typeID: type.id] else { return [:] }
        let bound = Set(type.properties.map(\.id))
        var sources: [String: CatalogProperty] = [:]
        for property in before.properties where !bound.contains(property.id) {
            sources[property.property.name] = property
        }
        return sources
    }

    func renameType(from oldName: String, to newName: String) throws {
        let call = "migration.renameType(from: \"\(oldName)\", to: \"\(newName)\")"
        guard !records.isWalking else {
            throw renameError(call, "it was called inside enumerateObjects; rename types between enumerations.")
        }
        if newSchema[oldName] != nil {
            throw renameError(
                call,
                "'\(oldName)' is still in the new schema; the source of a rename must be a type the new schema no longer has."
            )
        }
        guard let sourceIndex = typeIndex(oldName), working.types[sourceIndex].isKept,
            old[typeID: working.types[sourceIndex].id] != nil
        else {
            throw renameError(call, "there was no type '\(oldName)' before the migration (or its data was deleted).")
        }
        var moved = working.types[sourceIndex]
        if records.walkedAsRemoved(moved.id) {
            throw renameError(
                call,
                "enumerateObjects(ofType: \"\(oldName)\") already ran, and saw '\(oldName)' as a removed type (every `new` nil). Call renameType first; then enumerate \"\(newName)\" (or \"\(oldName)\") to get each object's new side."
            )
        }
        if let schema = newSchema[newName] {
            guard let targetIndex = typeIndex(newName), !working.types[targetIndex].isKept,
                old[typeID: working.types[targetIndex].id] == nil
            else {
                throw renameError(
                    call, "'\(newName)' already existed before the migration; the target of a rename must be new.")
            }
            guard !records.hasWritten(working.types[targetIndex].id) else {
                throw renameError(call, "objects of '\(newName)' were already created; rename the type before that.")
            }
            let originalName = old[typeID: moved.id]?.name ?? oldName
            let pairing = self.pairing(renaming: [newName: originalName])
            // A property renamed in this migration continues by its new name.
            var renamed: [String: PropertyID] = [:]
            let before = old[typeID: moved.id]?.properties ?? []
            for property in moved.properties {
                let name = property.property.name
                if !before.contains(where: { $0.id == property.id && $0.property.name == name }) {
                    renamed[name] = property.id
                }
            }
            working.rebind(&moved, to: schema, mode: .local) { renamed[$0] ?? pairing.field(newName, $0) }
            working.types[targetIndex] = moved
            working.types.remove(at: sourceIndex)
            // Renames of its properties done under an earlier name are bound
            // now if the new schema has their last name.
            let bound = Set(moved.properties.map(\.id))
            for id in openPropertyRenames.keys where bound.contains(id) { openPropertyRenames[id] = nil }
            renameSources[moved.id] = nil
            records.typeRebound(moved.id)
            openTypeRenames[moved.id] = nil
            try keepLinks(renamedFrom: originalName, to: newName, pairing: pairing)
        } else {
            if let taken = typeIndex(newName), working.types[taken].id != moved.id {
                throw renameError(call, "a type named '\(newName)' already exists at this point of the migration.")
            }
            moved.name = newName
            working.types[sourceIndex] = moved
            openTypeRenames[moved.id] = (openTypeRenames[moved.id]?.from ?? oldName, newName)
        }
        aliases[newName] = moved.id
    }

    /// After a type rename: the links and embedded objects of the new
    /// schema that name the type by its new name take back the ids their
    /// properties had when they named it by its old one, so that their
    /// values and backlinks stay as they are and no record is rewritten.
    /// `pairing` pairs a property with the field it continues.
    private func keepLinks(renamedFrom originalName: String, to newName: String, pairing: FieldPairing) throws {
        for index in working.types.indices where isNew(working.types[index]) {
            let typeID = working.types[index].id
            guard let before = old[typeID: typeID] else { continue }
            var rebound = false
            for position in working.types[index].properties.indices {
                let property = working.types[index].properties[position]
                guard property.property.target == newName,
                    let id = pairing.field(working.types[index].name, property.property.name),
                    let previous = before.properties.first(where: { $0.id == id }),
                    previous.id != property.id,
                    previous.property.hasSameShape(as: property.property, renamedTargets: [originalName: newName]),
                    working.types[index].retiredProperties.contains(where: { $0.id == previous.id })
                else { continue }
                working.types[index].properties[position].id = previous.id
                working.types[index].retiredProperties.removeAll { $0.id == previous.id }
                rebound = true
                if records.hasWritten(typeID) {
                    try records.propertyRenamed(in: working.types[index], fresh: property.id, source: previous.id)
                }
            }
            if rebound { records.typeRebound(typeID) }
        }
    }

    /// How the new schema's properties pair with the file's fields, with
    /// the type renames so far and `renaming` (new name to old).
    func pairing(renaming: [String: String] = [:]) -> FieldPairing {
        old.pairing(
            with: newSchema, at: scope.settings.appSchemaVersion,
            declared: scope.settings.typed?.versions.map(\.names) ?? [],
            renamedTypes: renamedTypes.merging(renaming) { _, new in new })
    }

    /// Per type of the new schema that a rename brought in so far, its name
    /// before the migration.
    private var renamedTypes: [String: String] {
        var renamed: [String: String] = [:]
        for type in working.types where isNew(type) {
            if let before = old[typeID: type.id]?.name, before != type.name { renamed[type.name] = before }
        }
        return renamed
    }

    /// Throws for a rename chain that the closure left open.
    func checkOpenRenames() throws {
        if let open = openPropertyRenames.values.min(by: { $0.from < $1.from }) {
            throw renameError(
                "migration.renameProperty(onType: \"\(open.type)\", from: \"\(open.from)\", to: \"\(open.to)\")",
                "the new schema of '\(open.type)' has no property '\(open.to)', and no later rename moves it on.")
        }
        if let open = openTypeRenames.values.min(by: { $0.from < $1.from }) {
            throw renameError(
                "migration.renameType(from: \"\(open.from)\", to: \"\(open.to)\")",
                "the new schema has no type '\(open.to)', and no later rename moves it on.")
        }
    }
}
