import Foundation

/// What a file records about itself: its format and schema version, its
/// mode, and every object type and property with the stable numeric id
/// that records and index names refer to.
///
/// Ids are handed out from counters that only grow, so an id is never
/// reused: a record field whose property was removed can never be mistaken
/// for a later property. Stored as JSON under the key `catalog` of the
/// `__strata.meta` database (see docs/FileFormat.md).
struct Catalog: Codable, Equatable, Sendable {
    /// The newest file format this version of Strata reads and writes.
    static let currentFormatVersion = FileLayout.formatVersion
    /// The marker that tells a Strata catalog from any other JSON.
    static let magic = "strata"

    var magic: String
    var formatVersion: UInt32
    /// The schema version the file is at: the version of the app that last
    /// migrated it (local mode), or the highest that opened it (synced mode).
    var fileSchemaVersion: UInt64
    var mode: DatabaseMode
    var nextTypeID: TypeID
    var nextPropertyID: PropertyID
    var types: [CatalogType]
    /// Named databases a migration emptied and no longer uses, deleted by
    /// the next open that has the file to itself.
    var orphanedDatabases: [String]
    /// Set once sync is enabled: the dataset and this copy's site.
    var sync: CatalogSync?

    /// A catalog for a new file, with ids given in declaration order.
    init(schema: Schema, schemaVersion: UInt64, mode: DatabaseMode = .local) {
        magic = Catalog.magic
        formatVersion = FileLayout.plainFormatVersion
        self.fileSchemaVersion = schemaVersion
        self.mode = mode
        nextTypeID = TypeID(1)
        nextPropertyID = PropertyID(1)
        types = []
        orphanedDatabases = []
        for objectSchema in schema.objectSchemas { addType(objectSchema) }
    }

    /// Adds an object type, giving it and its properties new ids.
    mutating func addType(_ objectSchema: ObjectSchema) {
        types.append(newType(objectSchema))
    }

    /// The schema the file was last opened with: every type but the kept ones.
    var schema: Schema {
        Schema(types.filter { !$0.isKept }.map(\.objectSchema))
    }

    private enum CodingKeys: String, CodingKey {
        case magic, formatVersion, mode, nextTypeID, nextPropertyID, types, orphanedDatabases, sync
        case fileSchemaVersion = "schemaVersion"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        magic = try container.decode(String.self, forKey: .magic)
        formatVersion = try container.decode(UInt32.self, forKey: .formatVersion)
        fileSchemaVersion = try container.decode(UInt64.self, forKey: .fileSchemaVersion)
        mode = try container.decode(DatabaseMode.self, forKey: .mode)
        // Ids are read and written as plain numbers: a nested decoder per id
        // would cost allocations at every open.
        nextTypeID = TypeID(try container.decode(UInt32.self, forKey: .nextTypeID))
        nextPropertyID = PropertyID(try container.decode(UInt32.self, forKey: .nextPropertyID))
        types = try container.decode([CatalogType].self, forKey: .types)
        orphanedDatabases = try container.decodeIfPresent([String].self, forKey: .orphanedDatabases) ?? []
        sync = try container.decodeIfPresent(CatalogSync.self, forKey: .sync)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(magic, forKey: .magic)
        try container.encode(formatVersion, forKey: .formatVersion)
        try container.encode(fileSchemaVersion, forKey: .fileSchemaVersion)
        try container.encode(mode, forKey: .mode)
        try container.encode(nextTypeID.rawValue, forKey: .nextTypeID)
        try container.encode(nextPropertyID.rawValue, forKey: .nextPropertyID)
        try container.encode(types, forKey: .types)
        try container.encode(orphanedDatabases, forKey: .orphanedDatabases)
        // Only when set: a file without sync is written as before it.
        try container.encodeIfPresent(sync, forKey: .sync)
    }

    /// Whether two catalogs describe the same file, whatever the order of
    /// their types and properties (a schema listed in another order is not
    /// a change).
    func isEquivalent(to other: Catalog) -> Bool {
        func sorted(_ catalog: Catalog) -> Catalog {
            var copy = catalog
            copy.types = catalog.types.sorted { $0.id < $1.id }.map { type in
                var type = type
                type.properties.sort { $0.id < $1.id }
                return type
            }
            return copy
        }
        return sorted(self) == sorted(other)
    }

    /// The named databases sync keeps in a sync-enabled file (none in
    /// another): the change log, origins, peers, link registers, and each
    /// type's clock rows.
    var syncDatabases: [NamedDatabase] {
        guard sync != nil else { return [] }
        return FileLayout.syncFileDatabases + types.filter { !$0.isEmbedded }.map { FileLayout.clocks($0.id) }
    }

    /// The type named `name`, kept or not.
    subscript(type name: String) -> CatalogType? { types.first { $0.name == name } }

    /// The type with the stable id `id`.
    subscript(typeID id: TypeID) -> CatalogType? { types.first { $0.id == id } }

    func encoded() -> [UInt8] { Catalog.json(self) }

    /// The JSON Strata stores: keys sorted, so equal values give equal bytes.
    static func json(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding plain structs of strings and numbers cannot fail.
        return Array(try! encoder.encode(value))
    }

    /// Decodes a catalog, telling a newer format from damage.
    static func decode(_ bytes: UnsafeRawBufferPointer, path: String) throws -> Catalog {
        let data = Data(bytes)
        struct Probe: Decodable {
            var magic: String?
            var formatVersion: UInt32?
        }
        guard let probe = try? JSONDecoder().decode(Probe.self, from: data), probe.magic == magic,
            let format = probe.formatVersion
        else {
            throw StrataError.corruptFile(path: path, "The catalog of \(path) is damaged and cannot be read.")
        }
        guard format <= currentFormatVersion else {
            throw StrataError.unsupportedFormat(path: path, format: format, supported: currentFormatVersion)
        }
        let catalog: Catalog
        do {
            catalog = try JSONDecoder().decode(Catalog.self, from: data)
        } catch {
            throw StrataError.corruptFile(path: path, "The catalog of \(path) is damaged (\(error)).")
        }
        if let problem = catalog.consistencyProblem() {
            throw StrataError.corruptFile(path: path, "The catalog of \(path) is inconsistent: \(problem).")
        }
        return catalog
    }

    /// Checks what a damaged catalog could get wrong and that decoding would
    /// otherwise trust: unique ids below the counters, a valid schema.
    func consistencyProblem() -> String? {
        var typeIDs: Set<TypeID> = []
        var propertyIDs: Set<PropertyID> = []
        for type in types {
            guard type.id < nextTypeID, typeIDs.insert(type.id).inserted else {
                return "type id \(type.id) of '\(type.name)' is repeated or out of range"
            }
            for property in type.properties + type.retiredProperties + type.keptProperties {
                guard property.id < nextPropertyID, propertyIDs.insert(property.id).inserted else {
                    return
                        "property id \(property.id) of '\(type.name).\(property.property.name)' is repeated or out of range"
                }
            }
        }
        // An embedded type learned from a peer (sync) may have no property
        // of its own yet: its fields are kept ones.
        let checked = types.filter { !($0.isKept && $0.isEmbedded && $0.properties.isEmpty) }
        if let problem = Schema(checked.map(\.objectSchema)).validationProblems().first { return problem }
        return nil
    }
}

/// What the catalog of a sync-enabled file records about sync.
struct CatalogSync: Codable, Equatable, Sendable {
    /// The dataset: files of one dataset exchange changes.
    var dataset: SiteID
    /// This copy of the file: stamps its changes. A copied file is given a
    /// new one.
    var site: SiteID
    /// The clock time at which sync was enabled.
    var enabledAt: HybridTime

    private enum CodingKeys: String, CodingKey { case dataset, site, enabledAt }

    init(dataset: SiteID, site: SiteID, enabledAt: HybridTime) {
        self.dataset = dataset
        self.site = site
        self.enabledAt = enabledAt
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func site(_ key: CodingKeys) throws -> SiteID {
            let hex = try container.decode(String.self, forKey: key)
            guard let site = SiteID(hex: hex) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container, debugDescription: "'\(hex)' is not 32 hexadecimal digits")
            }
            return site
        }
        dataset = try site(.dataset)
        self.site = try site(.site)
        enabledAt = HybridTime(rawValue: try container.decode(UInt64.self, forKey: .enabledAt))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(dataset.description, forKey: .dataset)
        try container.encode(site.description, forKey: .site)
        try container.encode(enabledAt.rawValue, forKey: .enabledAt)
    }
}

/// An object type as the catalog records it.
struct CatalogType: Codable, Equatable, Sendable {
    var id: TypeID
    var name: String
    var primaryKey: String?
    /// The properties of the schema the file was last opened with.
    var properties: [CatalogProperty]
    /// Properties removed from the schema whose ids may still appear in
    /// records; kept so that their ids are never given out again.
    var retiredProperties: [CatalogProperty]
    /// Synced mode: properties that an app version removed but that older
    /// app versions still read. Records written without them store their
    /// empty value (null when optional).
    var keptProperties: [CatalogProperty]
    /// Whether the type is missing from the schema the file was last opened
    /// with. Its objects stay in the file, ignored, until a migration calls
    /// `deleteData(forType:)` or a schema names the type again.
    var isKept: Bool
    /// Whether the type is embedded: its objects live inside their owners'
    /// records, and it has no database of its own.
    var isEmbedded: Bool

    init(
        id: TypeID, name: String, primaryKey: String?, properties: [CatalogProperty],
        retiredProperties: [CatalogProperty] = [], keptProperties: [CatalogProperty] = [], isKept: Bool = false,
        isEmbedded: Bool = false
    ) {
        self.isEmbedded = isEmbedded
        self.id = id
        self.name = name
        self.primaryKey = primaryKey
        self.properties = properties
        self.retiredProperties = retiredProperties
        self.keptProperties = keptProperties
        self.isKept = isKept
    }

    private enum CodingKeys: String, CodingKey {
        case id, name, primaryKey, properties, retiredProperties, keptProperties, isKept, isEmbedded
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = TypeID(try container.decode(UInt32.self, forKey: .id))
        name = try container.decode(String.self, forKey: .name)
        primaryKey = try container.decodeIfPresent(String.self, forKey: .primaryKey)
        properties = try container.decode([CatalogProperty].self, forKey: .properties)
        retiredProperties = try container.decodeIfPresent([CatalogProperty].self, forKey: .retiredProperties) ?? []
        keptProperties = try container.decodeIfPresent([CatalogProperty].self, forKey: .keptProperties) ?? []
        isKept = try container.decodeIfPresent(Bool.self, forKey: .isKept) ?? false
        isEmbedded = try container.decodeIfPresent(Bool.self, forKey: .isEmbedded) ?? false
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.rawValue, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encodeIfPresent(primaryKey, forKey: .primaryKey)
        try container.encode(properties, forKey: .properties)
        try container.encode(retiredProperties, forKey: .retiredProperties)
        try container.encode(keptProperties, forKey: .keptProperties)
        try container.encode(isKept, forKey: .isKept)
        // Only when set, so that a catalog without embedded types is
        // written byte for byte as before them.
        if isEmbedded { try container.encode(true, forKey: .isEmbedded) }
    }

    /// The named database holding the type's records.
    var recordsDatabase: NamedDatabase { FileLayout.records(id) }

    /// The named database holding the index on one of the type's properties.
    func indexDatabase(_ property: CatalogProperty) -> NamedDatabase { FileLayout.index(id, property.id) }

    /// The named database holding the backlinks of one of the type's link
    /// properties.
    func backlinksDatabase(_ property: CatalogProperty) -> NamedDatabase { FileLayout.backlinks(id, property.id) }

    /// Every named database the type uses: its records, its indexes and its
    /// backlinks (those of kept link properties too, for the older app
    /// versions that still read them); none for an embedded type.
    var databases: [NamedDatabase] {
        guard !isEmbedded else { return [] }
        return [recordsDatabase] + properties.filter { $0.hasIndex(in: self) }.map(indexDatabase)
            + (properties + keptProperties).filter(\.property.isLink).map(backlinksDatabase)
    }

    /// The type's object schema, as the catalog records it.
    var objectSchema: ObjectSchema {
        ObjectSchema(name, primaryKey: primaryKey, embedded: isEmbedded, properties: properties.map(\.property))
    }

    /// The property named `name` among the current ones.
    subscript(property name: String) -> CatalogProperty? { properties.first { $0.property.name == name } }
}

/// A property as the catalog records it.
struct CatalogProperty: Codable, Equatable, Sendable {
    var id: PropertyID
    var property: Property

    init(id: PropertyID, property: Property) {
        self.id = id
        self.property = property
    }

    private enum CodingKeys: String, CodingKey {
        case id, property
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = PropertyID(try container.decode(UInt32.self, forKey: .id))
        property = try container.decode(Property.self, forKey: .property)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.rawValue, forKey: .id)
        try container.encode(property, forKey: .property)
    }

    /// Whether the property has an index database (a primary key never
    /// needs one: the records are keyed by it).
    func hasIndex(in type: CatalogType) -> Bool {
        property.isIndexed && property.name != type.primaryKey
    }
}

extension Property {
    /// The property as the catalog stores it: a default given as an integer
    /// for a double property becomes a double, and a primary key is not
    /// separately indexed.
    func normalized(isPrimaryKey: Bool) -> Property {
        var copy = self
        copy.defaultValue = defaultValue?.coerced(to: type)
        if isPrimaryKey { copy.isIndexed = false }
        return copy
    }
}
