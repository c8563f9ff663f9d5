extension Catalog {
    /// The catalog after opening the file with `schema`: what every open
    /// that changes the schema writes, migration or not.
    ///
    /// Types and properties are matched by name and keep their ids, so that
    /// existing records read through the new schema without being
    /// rewritten. A property whose value type changed gets a new id (its old
    /// values are retired, and the new property starts at its default). A
    /// property missing from `schema` is retired in local mode and kept in
    /// synced mode; a type missing from `schema` is kept in both.
    func evolved(to schema: Schema, schemaVersion: UInt64, mode: DatabaseMode) -> Catalog {
        var next = self
        next.fileSchemaVersion = mode == .local ? schemaVersion : Swift.max(self.fileSchemaVersion, schemaVersion)
        var types: [CatalogType] = []
        for objectSchema in schema.objectSchemas {
            if var type = self[type: objectSchema.name] {
                next.rebind(&type, to: objectSchema, mode: mode)
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
    /// under another name after a rename) to those of `objectSchema`.
    mutating func rebind(_ type: inout CatalogType, to objectSchema: ObjectSchema, mode: DatabaseMode) {
        var available = type.properties + type.keptProperties
        var properties: [CatalogProperty] = []
        for property in objectSchema.properties {
            let normalized = property.normalized(isPrimaryKey: property.name == objectSchema.primaryKey)
            if let match = available.firstIndex(where: { $0.property.name == property.name }) {
                let existing = available.remove(at: match)
                if existing.property.hasSameShape(as: property) {
                    properties.append(CatalogProperty(id: existing.id, property: normalized))
                    continue
                }
                type.retiredProperties.append(existing)
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
