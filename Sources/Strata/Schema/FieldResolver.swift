/// Which stored field a name means at a schema version: (schema version,
/// stored name) → field id, across the renames the versions declare.
///
/// The catalog knows its own version only: the current names and their
/// stable ids. The declared versions of an app (its `VersionedSchema`s,
/// the `@Renamed(from:)` of their models and embedded structs) know the
/// names of every version and how each came from the one before. The
/// resolver joins them, once per migration or plan:
///
/// - Each field is followed from version to version as a **lineage**: a
///   property continues the property of the type's previous version that
///   it names as its original name, else the one of its own name, when
///   that one stores the same type. A type continues the one it names as
///   its previous name, else the one of its own name at the last version
///   that listed it (a file keeps the data of a type a version leaves
///   out). A property the type's previous version lacks starts a lineage,
///   so a name reused after a removal is another field, as the catalog
///   retires a removed property's id and never hands it out again.
/// - A lineage present at the catalog's version has the catalog's id (a
///   kept type's, at the last version that listed it; a kept property's
///   too); any other (a property a later version adds) gets an id of its
///   own, counted down from `UInt32.max`, that pairs fields in memory and
///   is never written. The catalog's version has the declared names when
///   a version declares them, else the catalog's own (``Catalog/names``).
/// - A name is followed the same way, but a changed value type does not
///   end it (``keepsName(of:_:at:since:olderType:)``): what tells a type
///   change from a removal and an addition.
///
/// Its answers become ``RecordShape``s: the shape of a model at a version,
/// whose fields pair with another shape's by id; and the catalog that an
/// open writes pairs its fields through it (``FieldPairing``).
struct FieldResolver: Sendable {
    /// The names of one schema version.
    struct Version: Sendable {
        let version: UInt64
        let types: [TypeNames]
    }

    /// One type's names at a version.
    struct TypeNames: Sendable {
        let name: String
        /// The type's name at the previous version, when this one renames it.
        let previousName: String?
        let properties: [Property]
        /// Per property, its name at the previous version, when this
        /// version renames it.
        let originalNames: [String?]

        init(_ schema: ObjectSchema, previousName: String? = nil, originalNames: [String?]? = nil) {
            self.name = schema.name
            self.previousName = previousName
            self.properties = schema.properties
            self.originalNames = originalNames ?? Array(repeating: nil, count: schema.properties.count)
        }
    }

    /// The versions, ascending.
    let versions: [UInt64]
    /// By version, type name and property name: the field id.
    private let ids: [UInt64: [String: [String: PropertyID]]]
    /// By version, type name and property name: the name's lineage, which
    /// a change of value type does not break (a removal does).
    private let names: [UInt64: [String: [String: Int]]]

    /// A resolver of the names only: ids are its own, none of a catalog's.
    /// `file` is the file's version, used when `versions` does not declare
    /// it.
    init(versions: [Version], file: Version) {
        self.init(versions: versions, file: file, catalog: nil)
    }

    /// A resolver whose fields at the catalog's version have the catalog's
    /// ids (the catalog's schema stands in for its version when `versions`
    /// does not declare it).
    ///
    /// - Parameter renamedTypes: Per type name, the name it had at the
    ///   catalog's version, for types a migration renamed
    ///   (`renameType`) that no version declares as renamed.
    ///
    /// - Parameter standing: The version whose names the catalog's ids
    ///   belong to, when not the catalog's own: an app older than the file
    ///   (synced mode) knows no names of the versions after its own, so its
    ///   version stands for the file's.
    init(versions: [Version], catalog: Catalog, standing: UInt64? = nil, renamedTypes: [String: String] = [:]) {
        var file = catalog.names
        if let standing { file = Version(version: standing, types: file.types) }
        self.init(versions: versions, file: file, catalog: catalog, renamedTypes: renamedTypes)
    }

    private init(versions declared: [Version], file: Version, catalog: Catalog?, renamedTypes: [String: String] = [:]) {
        var all = declared
        if !all.contains(where: { $0.version == file.version }) { all.append(file) }
        all.sort { $0.version < $1.version }
        versions = all.map(\.version)
        let lineages = FieldResolver.lineages(all, renamedTypes: renamedTypes, matchingTypes: true)
        let nameLineages = FieldResolver.lineages(all, renamedTypes: renamedTypes, matchingTypes: false)
        names = Dictionary(uniqueKeysWithValues: zip(versions, nameLineages))
        var lineageIDs: [Int: PropertyID] = [:]
        if let catalog, let fileIndex = all.firstIndex(where: { $0.version == file.version }) {
            lineageIDs = FieldResolver.catalogIDs(catalog, names: all[...fileIndex], lineages: lineages)
        }
        var next = UInt32.max
        var ids: [UInt64: [String: [String: PropertyID]]] = [:]
        for (index, version) in all.enumerated() {
            for type in version.types {
                for property in type.properties {
                    guard let lineage = lineages[index][type.name]?[property.name] else { continue }
                    let id: PropertyID
                    if let known = lineageIDs[lineage] {
                        id = known
                    } else {
                        id = PropertyID(next)
                        next -= 1
                        lineageIDs[lineage] = id
                    }
                    ids[version.version, default: [:]][type.name, default: [:]][property.name] = id
                }
            }
        }
        self.ids = ids
    }

    /// The catalog's ids of the lineages at the last of `names`, the
    /// catalog's version; a type that version leaves out (kept in the file)
    /// at the last version before it that lists the type.
    ///
    /// Ids only grow, so a type's fields of one name, in id order, are the
    /// fields of that name in the order the versions added them (a name
    /// removed and added again has several, kept ones in synced mode): a
    /// lineage takes the one after as many as the versions before it added
    /// under its name, or the last one the file has.
    private static func catalogIDs(
        _ catalog: Catalog, names: ArraySlice<Version>, lineages: [[String: [String: Int]]]
    ) -> [Int: PropertyID] {
        var ids: [Int: PropertyID] = [:]
        for entry in catalog.types {
            guard let index = names.lastIndex(where: { $0.types.contains { $0.name == entry.name } }),
                let type = names[index].types.first(where: { $0.name == entry.name })
            else { continue }
            for property in type.properties {
                guard let lineage = lineages[index][type.name]?[property.name], ids[lineage] == nil else { continue }
                let stored = (entry.properties + entry.keptProperties).filter { $0.property.name == property.name }
                    .sorted { $0.id < $1.id }
                let earlier = Set(lineages[..<index].compactMap { $0[type.name]?[property.name] }).subtracting([lineage]
                )
                guard !stored.isEmpty else { continue }
                let field = stored[min(earlier.count, stored.count - 1)]
                if field.property.type == property.type { ids[lineage] = field.id }
            }
        }
        return ids
    }

    /// Per version (by index), type name and property name: the number of
    /// the field's lineage.
    private static func lineages(
        _ versions: [Version], renamedTypes: [String: String], matchingTypes: Bool
    ) -> [[String: [String: Int]]] {
        var result: [[String: [String: Int]]] = []
        var next = 0
        // Per type name, the last version (by index) that listed the type.
        var last: [String: (index: Int, type: TypeNames)] = [:]
        for (index, version) in versions.enumerated() {
            var here: [String: [String: Int]] = [:]
            var seen: [String: (index: Int, type: TypeNames)] = [:]
            let listed = Set(version.types.map(\.name))
            for type in version.types {
                // A migration's type rename continues the old type only
                // where the version does not list the old name itself.
                let renamed = renamedTypes[type.name].flatMap { listed.contains($0) ? nil : last[$0] }
                let previous = last[type.previousName ?? type.name] ?? renamed
                let before = previous.flatMap { result[$0.index][$0.type.name] } ?? [:]
                let renamedAway = Set(type.originalNames.compactMap { $0 })
                var used: Set<Int> = []
                var fields: [String: Int] = [:]
                for (position, property) in type.properties.enumerated() {
                    let original = type.originalNames[position]
                    let source = original ?? property.name
                    let lineage: Int
                    if original != nil || !renamedAway.contains(property.name),
                        let stored = previous?.type.properties.first(where: { $0.name == source }),
                        !matchingTypes || stored.type == property.type,
                        let continued = before[source], !used.contains(continued)
                    {
                        lineage = continued
                    } else {
                        lineage = next
                        next += 1
                    }
                    used.insert(lineage)
                    fields[property.name] = lineage
                }
                here[type.name] = fields
                if let previousName = type.previousName ?? (renamed == nil ? nil : renamedTypes[type.name]) {
                    last[previousName] = nil
                }
                seen[type.name] = (index, type)
            }
            result.append(here)
            last.merge(seen) { _, new in new }
        }
        return result
    }

    /// The id of the field that `type`'s property `name` is at `version`;
    /// nil when that version's type has no such property.
    func fieldID(of type: String, named name: String, at version: UInt64) -> PropertyID? {
        ids[version]?[type]?[name]
    }

    /// Whether `type`'s property `name` at `newer` has had that name since
    /// `older` without a version in between removing or renaming it, its
    /// value type changed or not.
    /// `olderType` is the type's name at `older`, when a rename changed it.
    func keepsName(
        of type: String, _ name: String, at newer: UInt64, since older: UInt64, olderType: String? = nil
    ) -> Bool {
        guard let lineage = names[newer]?[type]?[name] else { return false }
        return names[older]?[olderType ?? type]?[name] == lineage
    }

    /// The shape of `properties` of `type` at `version`, in their order,
    /// each with the id of the field its name means then
    /// (``RecordShape/unresolved`` for a name the version lacks).
    func shape(of type: String, _ properties: [Property], at version: UInt64) -> RecordShape {
        RecordShape(
            typeName: type,
            fields: properties.map {
                RecordShape.Field(
                    id: fieldID(of: type, named: $0.name, at: version) ?? RecordShape.unresolved, property: $0)
            })
    }

    /// The names that `type`'s property `name` at `newer` had from `older`
    /// on, oldest first, one per rename; empty when the field was not
    /// there at `older` (or has no such name at `newer`).
    func names(of type: String, _ name: String, at newer: UInt64, since older: UInt64) -> [String] {
        guard versions.contains(older), let id = fieldID(of: type, named: name, at: newer) else { return [] }
        var names: [String] = []
        for version in versions where version >= older && version <= newer {
            let named = ids[version]?.values.lazy.compactMap { fields in fields.first { $0.value == id }?.key }.first
            guard let named else {
                if version == older { return [] }
                continue
            }
            if names.last != named { names.append(named) }
        }
        return names
    }
}

extension Catalog {
    /// The names of the file's own version as the catalog records them:
    /// every type, kept ones too, each with its current properties and then
    /// the kept ones whose names no current property has (synced mode keeps
    /// them for the app versions that still read them, and a schema that
    /// names one again takes it back).
    var names: FieldResolver.Version {
        FieldResolver.Version(
            version: fileSchemaVersion,
            types: types.map { type in
                let current = Set(type.properties.map(\.property.name))
                let kept = type.keptProperties.filter { !current.contains($0.property.name) }
                return FieldResolver.TypeNames(
                    ObjectSchema(
                        type.name, primaryKey: type.primaryKey, embedded: type.isEmbedded,
                        properties: (type.properties + kept).map(\.property)))
            })
    }
}
