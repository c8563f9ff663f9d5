import Foundation

// @unchecked: immutable after init; its raw buffers are written in init, only read afterwards, and freed in deinit.
/// Everything needed to read and write one object type's records: its
/// catalog entry, its fields sorted by id, and its open named databases.
/// Immutable, built when a database is opened.
final class ObjectTable: @unchecked Sendable {
    /// One current property, as the record codec and the writers need it.
    /// A class, so that walking the fields in the write path passes one
    /// reference around instead of copying strings and values.
    final class Field: Sendable {
        let id: PropertyID
        /// The field's place in ``ObjectTable/fields`` (and in records
        /// written under the current schema).
        let position: Int
        let name: String
        let type: PropertyType
        /// How a primitive field's values are stored; nil for a composite
        /// one.
        let storedKind: StoredKind?
        let isOptional: Bool
        let defaultValue: Value?
        let valueWhenAbsent: Value
        let isPrimaryKey: Bool
        /// The property's index database, when it is indexed.
        let index: DatabaseHandle?
        /// A link's target type, or an embedded property's type (for a
        /// list, its elements').
        let target: String?
        /// The type of a list's elements.
        let elementType: PropertyType?
        /// Whether the field links to objects: a link or a list of links.
        let isLink: Bool
        /// What deleting a target does to the object holding the link.
        let deleteRule: DeleteRule
        /// The type of the target's primary key; nil for a target with
        /// automatic ids (or a field that is not a link).
        let linkKeyType: PropertyType?
        /// The backlinks database of a link field, when the table opened it.
        let backlinks: DatabaseHandle?
        /// The layout of the embedded objects the field holds.
        let embedded: EmbeddedLayout?

        init(
            id: PropertyID, position: Int, property: Property, isPrimaryKey: Bool, index: DatabaseHandle?,
            linkKeyType: PropertyType? = nil, backlinks: DatabaseHandle? = nil, embedded: EmbeddedLayout? = nil
        ) {
            self.id = id
            self.position = position
            self.name = property.name
            self.type = property.type
            self.storedKind = StoredKind(property.type)
            self.isOptional = property.isOptional
            self.defaultValue = property.defaultValue
            if property.type == .embedded && !property.isOptional, let embedded {
                // A required embedded object that a record lacks reads as
                // one whose every property has its default.
                self.valueWhenAbsent = .object(
                    Dictionary(embedded.fields.map { ($0.name, $0.valueWhenAbsent) }, uniquingKeysWith: { a, _ in a }))
            } else {
                self.valueWhenAbsent = property.valueWhenAbsent
            }
            self.isPrimaryKey = isPrimaryKey
            self.index = index
            self.target = property.target
            self.elementType = property.elementType
            self.isLink = property.isLink
            self.deleteRule = property.deleteRule
            self.linkKeyType = linkKeyType
            self.backlinks = backlinks
            self.embedded = embedded
        }
    }

    /// A property that this app version's schema removed but older app
    /// versions still read (synced mode): written as its empty value in new
    /// records, carried over when a record is replaced, never read.
    struct KeptField: Sendable {
        let id: PropertyID
        let emptyValue: Value

        init(_ property: CatalogProperty) {
            self.id = property.id
            self.emptyValue = property.property.isOptional ? .null : property.property.type.emptyValue
        }
    }

    let type: CatalogType
    let name: String
    let records: DatabaseHandle
    /// The type's compiled shape at the file's schema version: the fields'
    /// ids, names and types by position, and the lookup by name.
    let shape: RecordShape
    /// Current properties sorted by id: the order fields are written in;
    /// position for position, the fields of ``shape``.
    let fields: [Field]
    /// ``shape``'s lookup, kept here so that a dynamic read by name touches
    /// neither the shape nor its reference count.
    private let lookup: FieldLookup
    let primaryKey: Field?
    /// Whether the primary key is an `int` property: its keys are eight
    /// bytes (``StoredKind/intPrimaryKey(_:)``), which a typed lookup
    /// encodes on the stack.
    let hasIntPrimaryKey: Bool
    let indexedFields: [Field]
    /// The fields that link to objects (links and lists of links).
    let linkFields: [Field]
    /// Whether any field holds links, lists or embedded objects: records
    /// then take the slower, checking path of ``CompositeCodec``.
    let hasCompositeFields: Bool
    /// One bit per position of a field the catalog indexes (all bits from
    /// 63 on share the last), whether or not this table opened the index:
    /// a migration writes without index handles and rebuilds what changed.
    let indexedPositions: UInt64
    /// Kept properties sorted by id; empty outside synced mode.
    let keptFields: [KeptField]
    /// Whether a rewrite carries over every stored field of an id the
    /// table does not know: in a sync-enabled file, whose catalog learns
    /// fields from peers while this table is open.
    let preservesUnknownFields: Bool
    /// The ids of kept and retired properties, sorted.
    private let hiddenIDs: [PropertyID]
    /// Whether the embedded objects of some field have kept properties
    /// (synced mode): replacing a record must then read the stored one.
    let keepsEmbeddedFields: Bool
    /// Per position, what reading a field needs, in an array of plain
    /// values so that a read touches no reference count.
    let readInfo: UnsafeMutableBufferPointer<ReadInfo>

    struct ReadInfo: Sendable {
        let id: PropertyID
        let type: PropertyType
        let isOptional: Bool
        let isPrimaryKey: Bool
        /// Whether the field holds embedded objects (alone or in a list).
        let isEmbedded: Bool
    }
    /// The meta key under which the last automatic id is kept.
    var sequenceKey: [UInt8] { FileLayout.MetaKey.sequence(type.id) }

    /// The database file, for error messages.
    let path: String

    /// - Parameters:
    ///   - related: The catalog's types, for the key types of link targets
    ///     and the layouts of embedded types; only needed when the type has
    ///     such properties.
    init(
        type: CatalogType, records: DatabaseHandle, indexes: [PropertyID: DatabaseHandle],
        backlinks: [PropertyID: DatabaseHandle] = [:], related: [CatalogType] = [], path: String,
        preservesUnknownFields: Bool = false
    ) {
        self.type = type
        self.preservesUnknownFields = preservesUnknownFields
        self.hiddenIDs = (type.keptProperties + type.retiredProperties).map(\.id).sorted()
        self.path = path
        self.name = type.name
        self.records = records
        let layouts =
            type.properties.contains { $0.property.isEmbedding }
            ? EmbeddedLayout.layouts(related, preservesUnknownFields: preservesUnknownFields) : [:]
        let shape = RecordShape(type)
        let fields = shape.fields.enumerated().map { position, entry in
            let property = entry.property
            let targetType = property.isLink ? related.first { $0.name == property.target } : nil
            return Field(
                id: entry.id, position: position, property: property,
                isPrimaryKey: property.name == type.primaryKey, index: indexes[entry.id],
                linkKeyType: targetType?.primaryKeyProperty?.property.type, backlinks: backlinks[entry.id],
                embedded: property.isEmbedding ? property.target.flatMap { layouts[$0] } : nil)
        }
        self.shape = shape
        self.fields = fields
        self.lookup = shape.lookup
        let primaryKey = fields.first { $0.isPrimaryKey }
        self.primaryKey = primaryKey
        self.hasIntPrimaryKey = primaryKey?.type == .int
        self.indexedFields = fields.filter { $0.index != nil }
        self.linkFields = fields.filter(\.isLink)
        self.hasCompositeFields = fields.contains { $0.type.isComposite }
        var indexedPositions: UInt64 = 0
        for field in fields where type[property: field.name]?.hasIndex(in: type) == true {
            indexedPositions |= 1 << UInt64(min(field.position, 63))
        }
        self.indexedPositions = indexedPositions
        self.keptFields = type.keptProperties.sorted { $0.id < $1.id }.map(KeptField.init)
        self.keepsEmbeddedFields = fields.contains { $0.embedded?.keepsStoredFields == true }
        self.readInfo = .allocate(capacity: fields.count)
        _ = self.readInfo.initialize(
            from: fields.map {
                ReadInfo(
                    id: $0.id, type: $0.type, isOptional: $0.isOptional, isPrimaryKey: $0.isPrimaryKey,
                    isEmbedded: $0.embedded != nil)
            })
    }

    deinit {
        readInfo.deallocate()
    }

    /// The position in ``fields`` of the field named `name`: ``shape``'s
    /// answer.
    @inline(__always)
    func position(of name: String) -> Int? { lookup.position(of: name) }

    /// The value of the field at `position` in a record of this type: the
    /// stored one, or the default when the record has none (or a null the
    /// field no longer accepts).
    @inline(__always)
    func value(at position: Int, in record: RecordView) -> Value {
        let info = readInfo[position]
        if info.type.isComposite { return compositeValue(at: position, in: record) }
        if let stored = record.value(forField: info.id, expectedAt: position),
            stored.fits(info.type, optional: info.isOptional)
        {
            return stored
        }
        return fields[position].valueWhenAbsent
    }

    /// The value of the field at `position` in a record not validated
    /// whole, read checking the bytes it walks: nil when the answer needs
    /// the whole record validated first (the field absent, holding a value
    /// the field does not accept, a link, list or embedded object, or
    /// damaged bytes on the way).
    @inline(__always)
    func touchedValue(at position: Int, in record: RecordView) -> Value? {
        let info = readInfo[position]
        guard !info.type.isComposite, let stored = record.checkedValue(forField: info.id, expectedAt: position),
            stored.fits(info.type, optional: info.isOptional)
        else { return nil }
        return stored
    }

    /// The value of a link, list or embedded field, decoded through its
    /// layout. A record not validated whole is validated first; a damaged
    /// one reads as the default (the readers of such records report it
    /// themselves, before they get here).
    @inline(never)
    func compositeValue(at position: Int, in record: RecordView) -> Value {
        let field = fields[position]
        guard let record = try? record.validated() else { return field.valueWhenAbsent }
        guard let base = record.bytes.baseAddress, var p = record.fieldOffset(forField: field.id, expectedAt: position),
            let value = CompositeCodec.read(field, base, &p, record.bytes.count)
        else { return field.valueWhenAbsent }
        return value
    }

    /// The keys of the objects a link field of `record` links to (none for
    /// a null link or an empty list), in the record's order.
    func linkedKeys(_ field: Field, in record: RecordView) -> [Value] {
        switch value(at: field.position, in: record) {
        case .link(let key): [key]
        case .list(let elements): elements.compactMap(\.linkKey)
        default: []
        }
    }

    /// Every current property's value in a record of this type, by name.
    func values(in record: RecordView) -> [String: Value] {
        var result: [String: Value] = [:]
        result.reserveCapacity(fields.count)
        for field in fields { result[field.name] = value(at: field.position, in: record) }
        return result
    }

    /// The field named `name`, or an error listing the type's properties.
    func field(named name: String) throws -> Field {
        guard let position = position(of: name) else { throw unknownProperty(name) }
        return fields[position]
    }

    func unknownProperty(_ name: String) -> StrataError {
        let known = type.properties.map(\.property.name).joined(separator: ", ")
        return .unknownProperty(typeName: self.name, property: name, known: known, path: path)
    }

    /// The positions, one bit each (all bits from 63 on), of the fields of
    /// `record`, a whole record written for an object stored as `base`,
    /// that count as changed: every field, but an indexed one whose bytes
    /// are the stored ones (so that its index is not rebuilt for nothing).
    func changedPositions(of record: RecordView, from base: RecordView?) -> UInt64 {
        let count = fields.count
        var changed: UInt64 = count >= 64 ? ~0 : (1 << UInt64(count)) - 1
        guard indexedPositions != 0, let base else { return changed }
        for field in fields where field.position < 63 && indexedPositions & (1 << UInt64(field.position)) != 0 {
            if let new = record.encodedField(field.id, expectedAt: field.position),
                let old = base.encodedField(field.id, expectedAt: field.position),
                new.bytes.elementsEqual(old.bytes)
            {
                changed &= ~(1 << UInt64(field.position))
            }
        }
        return changed
    }

    /// Checks a key and its record, and returns a view of the record: the
    /// one validation every reader and writer of this type's records uses.
    @inline(__always)
    func validatedView(key: UnsafeRawBufferPointer, record: UnsafeRawBufferPointer) throws -> RecordView {
        do throws(DecodingFailure) {
            try KeyCodec.validateKey(key, type: primaryKey?.type)
            return try RecordView(validating: record)
        } catch {
            throw corruptRecord(error, key: key)
        }
    }

    /// Checks a key and its record's header only, and returns a view of the
    /// record whose fields are checked as they are read
    /// (``RecordView/init(checkingHeader:)``): for the readers that report
    /// a damaged field where they meet it, a model's decode and a dynamic
    /// scan.
    @inline(__always)
    func headerCheckedView(key: UnsafeRawBufferPointer, record: UnsafeRawBufferPointer) throws -> RecordView {
        do throws(DecodingFailure) {
            try KeyCodec.validateKey(key, type: primaryKey?.type)
            return try RecordView(checkingHeader: record)
        } catch {
            throw corruptRecord(error, key: key)
        }
    }

    /// The error for bytes of this type's records that do not decode.
    func corruptRecord(_ failure: DecodingFailure, key: UnsafeRawBufferPointer) -> StrataError {
        let keyText = describeKey(key)
        return .corruptRecord(
            typeName: name, key: keyText, problem: failure.reason, offset: failure.offset, path: path)
    }

    /// The error for an index entry of this type that names no object.
    func missingIndexedObject(indexed property: String) -> StrataError {
        .danglingEntry(.index, typeName: name, property: property, path: path)
    }

    /// The error for a backlink of this type that names no object.
    func missingLinkingObject(_ property: String) -> StrataError {
        .danglingEntry(.backlinks, typeName: name, property: property, path: path)
    }

    /// A record key of this type as a person reads it: the primary key or
    /// automatic id, or its first bytes when it does not decode.
    func describeKey(_ key: UnsafeRawBufferPointer) -> String {
        (try? KeyCodec.decodeKey(key, type: primaryKey?.type)).map { "\($0)" } ?? "\(Array(key.prefix(16)))"
    }

    /// Opens the tables of every type of `catalog`, kept types included,
    /// by type id: their records and index databases, as the file layout
    /// declares them.
    static func openAll(_ txn: LMDBTransaction, _ catalog: Catalog, create: Bool, path: String) throws -> [TypeID:
        ObjectTable]
    {
        var tables: [TypeID: ObjectTable] = [:]
        for type in catalog.types where !type.isEmbedded {
            tables[type.id] = try open(
                type, txn, create: create, withIndexes: true, related: catalog.types, path: path,
                preservesUnknownFields: catalog.sync != nil)
        }
        return tables
    }

    /// Opens the table of one type: its records and, `withIndexes`, its
    /// index databases (a migration writes without them and rebuilds the
    /// indexes it made stale at the end).
    static func open(
        _ type: CatalogType, _ txn: LMDBTransaction, create: Bool, withIndexes: Bool, related: [CatalogType],
        path: String, preservesUnknownFields: Bool = false
    ) throws -> ObjectTable {
        guard let records = try txn.openDatabase(type.recordsDatabase, create: create) else {
            throw StrataError.missingDatabase(.records, typeName: type.name, path: path)
        }
        var indexes: [PropertyID: DatabaseHandle] = [:]
        for property in type.properties where withIndexes && property.hasIndex(in: type) {
            guard let index = try txn.openDatabase(type.indexDatabase(property), create: create) else {
                throw StrataError.missingDatabase(
                    .index, typeName: type.name, property: property.property.name, path: path)
            }
            indexes[property.id] = index
        }
        var backlinks: [PropertyID: DatabaseHandle] = [:]
        for property in type.properties where withIndexes && property.property.isLink {
            guard let database = try txn.openDatabase(type.backlinksDatabase(property), create: create) else {
                throw StrataError.missingDatabase(
                    .backlinks, typeName: type.name, property: property.property.name, path: path)
            }
            backlinks[property.id] = database
        }
        return ObjectTable(
            type: type, records: records, indexes: indexes, backlinks: backlinks, related: related, path: path,
            preservesUnknownFields: preservesUnknownFields)
    }

    /// Whether `id` is one of the type's kept or retired properties.
    func knowsHidden(_ id: PropertyID) -> Bool {
        var low = 0
        var high = hiddenIDs.count
        while low < high {
            let middle = (low + high) / 2
            if hiddenIDs[middle] == id { return true }
            if hiddenIDs[middle] < id { low = middle + 1 } else { high = middle }
        }
        return false
    }
}
