extension Catalog {
    /// The catalog after opening the file with `schema`: what every open
    /// that changes the schema writes, migration or not.
    ///
    /// Types are matched by name and keep their ids. A property keeps the
    /// id of the field the ``FieldResolver`` says its name continues (see
    /// ``pairing(with:at:declared:renamedTypes:)``), so that existing
    /// records read through the new schema without being rewritten. Any
    /// other property gets a new id: one whose value type changed (its old
    /// values are retired, and the new property starts at its default), and
    /// one whose name a declared version in between removed (the old values
    /// are another field's). A property missing from `schema` is retired in
    /// local mode and kept in synced mode; a type missing from `schema` is
    /// kept in both. Renames are not followed here: the migration applies
    /// them (`renameProperty`), declared ones included.
    ///
    /// - Parameter pairing: This catalog's pairing with `schema`, made
    ///   with the app's declared versions (``VersionedSchema``s), whose
    ///   names tell which fields continue; without them a property
    ///   continues the file's field of its name.
    func evolved(to schema: Schema, schemaVersion: UInt64, mode: DatabaseMode, pairing: FieldPairing) -> Catalog {
        var next = self
        next.fileSchemaVersion = mode == .local ? schemaVersion : Swift.max(self.fileSchemaVersion, schemaVersion)
        var types: [CatalogType] = []
        for objectSchema in schema.objectSchemas {
            if var type = self[type: objectSchema.name] {
                next.rebind(&type, to: objectSchema, mode: mode) { pairing.field(objectSchema.name, $0) }
                types.append(type)
            } else {
                types.append(next.newType(objectSchema))
            }
        }
        for var type in self.types where schema[type.name] == nil {
            type.isKept = true
            types.append(type)
        }
        next.types = types
        return next
    }

    /// How the properties of `schema` at `schemaVersion` pair with this
    /// catalog's fields: one ``FieldResolver`` of the declared versions, the
    /// catalog and the app's schema, made once per open or rename.
    ///
    /// An app older than the file (synced mode) has no names for the
    /// versions after its own: its version stands for the file's.
    ///
    /// - Parameter renamedTypes: Per type name in `schema`, its name in
    ///   this catalog, for types a migration renames.
    func pairing(
        with schema: Schema, at schemaVersion: UInt64, declared: [FieldResolver.Version],
        renamedTypes: [String: String] = [:]
    ) -> FieldPairing {
        let own = schema.objectSchemas.map { FieldResolver.TypeNames($0) }
        var versions = declared.filter { $0.version <= schemaVersion }
        if let index = versions.firstIndex(where: { $0.version == schemaVersion }) {
            // Types the app reads with the dynamic API beside its models.
            let listed = Set(versions[index].types.map(\.name))
            versions[index] = FieldResolver.Version(
                version: schemaVersion, types: versions[index].types + own.filter { !listed.contains($0.name) })
        } else {
            versions.append(FieldResolver.Version(version: schemaVersion, types: own))
        }
        let standing = schemaVersion < fileSchemaVersion ? schemaVersion : nil
        return FieldPairing(
            resolver: FieldResolver(
                versions: versions, catalog: self, standing: standing, renamedTypes: renamedTypes),
            version: schemaVersion, fileVersion: standing ?? fileSchemaVersion, renamedTypes: renamedTypes,
            nextPropertyID: nextPropertyID)
    }

    /// A type new to the file, with new ids for it and its properties.
    mutating func newType(_ objectSchema: ObjectSchema) -> CatalogType {
        var type = CatalogType(
            id: nextTypeID, name: objectSchema.name, primaryKey: objectSchema.primaryKey, properties: [],
            isEmbedded: objectSchema.isEmbedded)
        nextTypeID = nextTypeID.successor
        for property in objectSchema.properties {
            type.properties.append(
                CatalogProperty(
                    id: nextPropertyID,
                    property: property.normalized(isPrimaryKey: property.name == objectSchema.primaryKey)))
            nextPropertyID = nextPropertyID.successor
        }
        return type
    }

    /// Matches the properties of `type` (an entry of this catalog, possibly
    /// under another name after a rename) to those of `objectSchema`: a
    /// property keeps the id `continued` gives for its name when the entry
    /// has a field of that id and name with the same shape (current, or
    /// kept in synced mode), and gets a new id otherwise.
    mutating func rebind(
        _ type: inout CatalogType, to objectSchema: ObjectSchema, mode: DatabaseMode,
        continued: (String) -> PropertyID?
    ) {
        var available = type.properties + type.keptProperties
        var properties: [CatalogProperty] = []
        for property in objectSchema.properties {
            let normalized = property.normalized(isPrimaryKey: property.name == objectSchema.primaryKey)
            if let id = continued(property.name),
                let match = available.firstIndex(where: { $0.id == id && $0.property.name == property.name })
            {
                if available[match].property.hasSameShape(as: property) {
                    properties.append(CatalogProperty(id: available.remove(at: match).id, property: normalized))
                    continue
                }
                // Synced mode keeps it for the app versions that read it.
                if mode == .local { type.retiredProperties.append(available.remove(at: match)) }
            }
            properties.append(CatalogProperty(id: nextPropertyID, property: normalized))
            nextPropertyID = nextPropertyID.successor
        }
        switch mode {
        case .local:
            type.retiredProperties += available
            type.keptProperties = []
        case .synced:
            // Kept properties get no index: nothing keeps one up to date
            // while the app that wrote it is away, so it is rebuilt when a
            // schema names the property again.
            type.keptProperties = available.map { kept in
                var kept = kept
                kept.property.isIndexed = false
                return kept
            }
        }
        type.name = objectSchema.name
        type.properties = properties
        type.primaryKey = objectSchema.primaryKey
        type.isEmbedded = objectSchema.isEmbedded
        type.isKept = false
    }
}

/// How an app's properties pair with a file's fields, as one
/// ``FieldResolver`` answers (``Catalog/pairing(with:at:declared:renamedTypes:)``).
struct FieldPairing: Sendable {
    let resolver: FieldResolver
    /// The app's schema version.
    let version: UInt64
    /// The version whose names the catalog's ids belong to.
    let fileVersion: UInt64
    /// Per type name at ``version``, its name at ``fileVersion`` when a
    /// migration renamed it.
    let renamedTypes: [String: String]
    /// The catalog's next property id: every id of its fields is lower.
    let nextPropertyID: PropertyID

    /// The id of the file's field that `type`'s property `name` continues;
    /// nil for a property that starts a field of its own.
    func field(_ type: String, _ name: String) -> PropertyID? {
        resolver.fieldID(of: type, named: name, at: version).flatMap { $0 < nextPropertyID ? $0 : nil }
    }

    /// Whether `type`'s property `name` is the file's property of that
    /// name, its value type changed or not: no version in between removed
    /// the name.
    func keepsName(_ type: String, _ name: String) -> Bool {
        resolver.keepsName(of: type, name, at: version, since: fileVersion, olderType: renamedTypes[type])
    }
}

extension CatalogType {
    /// The property that identifies objects, as the catalog records it.
    var primaryKeyProperty: CatalogProperty? { primaryKey.flatMap { self[property: $0] } }

    /// Whether objects of this type, stored under `old`, must get new keys:
    /// the primary key names another property, none, or a property whose
    /// value type changed.
    func needsNewKeys(comparedTo old: CatalogType) -> Bool {
        primaryKeyProperty?.id != old.primaryKeyProperty?.id
    }

    /// Whether every record stored under `old` must be rewritten: new keys,
    /// a property whose value type changed, or one that became required
    /// (stored nulls become the default).
    func needsRewrite(comparedTo old: CatalogType) -> Bool {
        if needsNewKeys(comparedTo: old) { return true }
        for property in properties {
            if let before = old.properties.first(where: { $0.id == property.id }),
                before.property.isOptional && !property.property.isOptional
            {
                return true
            }
            if let before = old[property: property.property.name], before.id != property.id { return true }
        }
        return false
    }
}
