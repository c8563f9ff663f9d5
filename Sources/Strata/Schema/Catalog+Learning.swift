/// What a sync-enabled file learns from its peers: object types and
/// fields that this app does not declare, added to the catalog as kept
/// ones (never read by this app, stored, sent on, and read by the app
/// version that declares them). With ``newType(_:)`` and
/// ``rebind(_:to:mode:continued:)``, the only code that hands out ids.
///
/// Learning changes nothing a `Database` of this app reads: a changed
/// catalog is written with its generation raised all the same
/// (``CatalogStore/write(_:_:)``), and an open `Database` that finds
/// only learned entries added (``learnsOnly(since:)``) goes on.
extension Catalog {
    /// Learns the top-level type `name` that the file lacks, keyed by
    /// `key`: a kept type whose only property is its key, each with a new
    /// id.
    mutating func learnType(name: String, key: Property) -> CatalogType {
        let type = CatalogType(
            id: nextTypeID, name: name, primaryKey: key.name,
            properties: [CatalogProperty(id: nextPropertyID, property: key.normalized(isPrimaryKey: true))],
            isKept: true)
        nextTypeID = nextTypeID.successor
        nextPropertyID = nextPropertyID.successor
        types.append(type)
        return type
    }

    /// Learns the embedded type `name` as a kept type with no properties
    /// of its own (its fields are learned as kept ones); returns whether
    /// it was learned, false when the file has a type of that name.
    mutating func learnEmbeddedType(named name: String) -> Bool {
        guard self[type: name] == nil else { return false }
        types.append(
            CatalogType(id: nextTypeID, name: name, primaryKey: nil, properties: [], isKept: true, isEmbedded: true))
        nextTypeID = nextTypeID.successor
        return true
    }

    /// Learns `property` as a kept property of the type with id `typeID`,
    /// under a new id, which it returns. The type must be in the catalog.
    mutating func learnProperty(_ property: Property, in typeID: TypeID) -> PropertyID {
        guard let index = types.firstIndex(where: { $0.id == typeID }) else {
            preconditionFailure("A property learned for type id \(typeID), which the catalog does not have")
        }
        let id = nextPropertyID
        nextPropertyID = nextPropertyID.successor
        types[index].keptProperties.append(CatalogProperty(id: id, property: property))
        return id
    }

    /// Whether this catalog is `older` with nothing but learned entries
    /// added: kept types and kept properties under new ids. Every type and
    /// property `older` has is here unchanged (ids, names, types, kept or
    /// not), and so are the versions, mode and sync identity; which
    /// databases wait to be deleted does not count. A `Database` opened at
    /// `older` reads such a file as before.
    func learnsOnly(since older: Catalog) -> Bool {
        var known = self
        known.types = types.compactMap { type in
            guard let before = older[typeID: type.id] else { return type.isKept ? nil : type }
            var type = type
            type.keptProperties.removeAll { kept in
                kept.id >= older.nextPropertyID && !before.keptProperties.contains { $0.id == kept.id }
            }
            return type
        }
        known.nextTypeID = older.nextTypeID
        known.nextPropertyID = older.nextPropertyID
        known.orphanedDatabases = older.orphanedDatabases
        guard types.allSatisfy({ older[typeID: $0.id] != nil || $0.id >= older.nextTypeID }) else { return false }
        return known.isEquivalent(to: older)
    }
}

extension CatalogType {
    /// The property stored under `name` that is the same field as
    /// `property` (``Property/isSameField(as:)``): a current one first,
    /// else a kept one; nil when the type stores no such field. How a
    /// field a peer names is found in the file.
    func storedProperty(named name: String, sameFieldAs property: Property) -> CatalogProperty? {
        func matches(_ stored: CatalogProperty) -> Bool {
            stored.property.name == name && stored.property.isSameField(as: property)
        }
        return properties.first(where: matches) ?? keptProperties.first(where: matches)
    }
}
