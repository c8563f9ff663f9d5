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
        let id: UInt32
        /// The field's place in ``ObjectTable/fields`` (and in records
        /// written under the current schema).
        let position: Int
        let name: String
        let type: PropertyType
        let isOptional: Bool
        let defaultValue: Value?
        let valueWhenAbsent: Value
        let isPrimaryKey: Bool
        /// The property's index database, when it is indexed.
        let index: DatabaseHandle?

        init(id: UInt32, position: Int, property: Property, isPrimaryKey: Bool, index: DatabaseHandle?) {
            self.id = id
            self.position = position
            self.name = property.name
            self.type = property.type
            self.isOptional = property.isOptional
            self.defaultValue = property.defaultValue
            self.valueWhenAbsent = property.valueWhenAbsent
            self.isPrimaryKey = isPrimaryKey
            self.index = index
        }
    }

    /// A property that this app version's schema removed but older app
    /// versions still read (synced mode): written as its empty value in new
    /// records, carried over when a record is replaced, never read.
    struct KeptField: Sendable {
        let id: UInt32
        let emptyValue: Value
    }

    let type: CatalogType
    let name: String
    let records: DatabaseHandle
    /// Current properties sorted by id: the order fields are written in.
    let fields: [Field]
    private let lookup: FieldLookup
    let primaryKey: Field?
    let indexedFields: [Field]
    /// Kept properties sorted by id; empty outside synced mode.
    let keptFields: [KeptField]
    /// Per position, what reading a field needs, in an array of plain
    /// values so that a read touches no reference count.
    let readInfo: UnsafeMutableBufferPointer<ReadInfo>

    struct ReadInfo: Sendable {
        let id: UInt32
        let type: PropertyType
        let isOptional: Bool
    }
    /// The meta key under which the last automatic id is kept.
    let sequenceKey: [UInt8]

    /// The database file, for error messages.
    let path: String

    init(type: CatalogType, records: DatabaseHandle, indexes: [UInt32: DatabaseHandle], path: String) {
        self.type = type
        self.path = path
        self.name = type.name
        self.records = records
        let fields = type.properties.sorted { $0.id < $1.id }.enumerated().map { position, entry in
            Field(id: entry.id, position: position, property: entry.property,
                  isPrimaryKey: entry.property.name == type.primaryKey, index: indexes[entry.id])
        }
        self.fields = fields
        self.lookup = FieldLookup(names: fields.map(\.name))
        self.primaryKey = fields.first { $0.isPrimaryKey }
        self.indexedFields = fields.filter { $0.index != nil }
        self.keptFields = type.keptProperties.sorted { $0.id < $1.id }.map {
            KeptField(id: $0.id, emptyValue: $0.property.isOptional ? .null : $0.property.type.emptyValue)
        }
        self.readInfo = .allocate(capacity: fields.count)
        _ = self.readInfo.initialize(from: fields.map { ReadInfo(id: $0.id, type: $0.type, isOptional: $0.isOptional) })
        self.sequenceKey = Array("seq.t\(type.id)".utf8)
    }

    deinit {
        lookup.deallocate()
        readInfo.deallocate()
    }

    /// The position in ``fields`` of the field named `name`.
    @inline(__always)
    func position(of name: String) -> Int? { lookup.position(of: name) }

    /// The field named `name`, if the type has one.
    @inline(__always)
    func field(_ name: String) -> Field? { position(of: name).map { fields[$0] } }

    /// The value of the field at `position` in a record of this type: the
    /// stored one, or the default when the record has none (or a null the
    /// field no longer accepts).
    @inline(__always)
    func value(at position: Int, in record: RecordView) -> Value {
        let info = readInfo[position]
        if let stored = record.value(forField: info.id, expectedAt: position), stored.fits(info.type, optional: info.isOptional) {
            return stored
        }
        return fields[position].valueWhenAbsent
    }

    /// The field named `name`, or an error listing the type's properties.
    func field(named name: String) throws -> Field {
        guard let field = field(name) else { throw unknownProperty(name) }
        return field
    }

    func unknownProperty(_ name: String) -> StrataError {
        let known = type.properties.map(\.property.name).joined(separator: ", ")
        return StrataError(.unknownProperty, "Object type '\(self.name)' has no property '\(name)' (in \(path)). Its properties are: \(known).", path: path)
    }

    /// The error for bytes of this type's records that do not decode.
    func corruptRecord(_ failure: DecodingFailure, key: UnsafeRawBufferPointer) -> StrataError {
        let keyText = (try? KeyCodec.decodeKey(key, type: primaryKey?.type)).map { "\($0)" } ?? "\(Array(key.prefix(16)))"
        return StrataError(.corruptFile, "The record of '\(name)' with key \(keyText) in \(path) is damaged: \(failure.reason) at byte \(failure.offset). Restore the file from a backup.", path: path)
    }
}

// @unchecked: the buffers are written once in init and only read afterwards.
/// Finds a field by name faster than a `Dictionary<String, _>`, whose
/// SipHash dominates the cost of reading one property: an open-addressing
/// table keyed by a cheap hash of the name's length and end bytes, checked
/// with `==` (which is one comparison when both sides are the same literal).
///
/// Its storage is raw memory that the owning ``ObjectTable`` frees, so that
/// a lookup touches no reference count.
struct FieldLookup: @unchecked Sendable {
    private let slots: UnsafeMutableBufferPointer<Int32>
    private let names: UnsafeMutableBufferPointer<String>
    /// The UTF-8 length of each name: for a small type, a lookup compares
    /// lengths first and calls `==` only on a name of the right length.
    private let lengths: UnsafeMutableBufferPointer<Int>
    private let mask: Int
    /// Up to this many fields, a linear search by length beats hashing.
    private static let linearLimit = 16

    init(names: [String]) {
        var capacity = 8
        while capacity < names.count * 2 { capacity *= 2 }
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: -1)
        for (position, name) in names.enumerated() {
            var slot = FieldLookup.hash(name) & (capacity - 1)
            while slots[slot] >= 0 { slot = (slot + 1) & (capacity - 1) }
            slots[slot] = Int32(position)
        }
        self.names = .allocate(capacity: names.count)
        _ = self.names.initialize(from: names)
        lengths = .allocate(capacity: names.count)
        _ = lengths.initialize(from: names.map(\.utf8.count))
        mask = capacity - 1
    }

    /// Frees the storage; called once, by the owning table's `deinit`.
    func deallocate() {
        names.deinitialize()
        names.deallocate()
        lengths.deallocate()
        slots.deallocate()
    }

    @inline(__always)
    private static func hash(_ name: String) -> Int {
        let hash = name.utf8.withContiguousStorageIfAvailable { bytes -> Int in
            guard let first = bytes.first, let last = bytes.last else { return 0 }
            return bytes.count &* 31 &+ Int(first) &* 131 &+ Int(last) &* 7
        }
        if let hash { return hash }
        let utf8 = name.utf8
        guard let first = utf8.first else { return 0 }
        return utf8.count &* 31 &+ Int(first) &* 131 &+ Int(utf8[utf8.index(before: utf8.endIndex)]) &* 7
    }

    @inline(__always)
    func position(of name: String) -> Int? {
        if names.count <= FieldLookup.linearLimit {
            let length = name.utf8.count
            for position in 0 ..< names.count where lengths[position] == length && names[position] == name {
                return position
            }
            return nil
        }
        var slot = FieldLookup.hash(name) & mask
        while true {
            let position = Int(slots[slot])
            if position < 0 { return nil }
            if names[position] == name { return position }
            slot = (slot + 1) & mask
        }
    }
}
