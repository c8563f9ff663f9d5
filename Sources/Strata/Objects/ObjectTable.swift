import Foundation

/// Everything needed to read and write one object type's records: its
/// catalog entry, its fields sorted by id, and its open named databases.
/// Immutable, built when a database is opened.
final class ObjectTable: Sendable {
    /// One current property, as the record codec and the writers need it.
    struct Field: Sendable {
        let id: UInt32
        let name: String
        let type: PropertyType
        let isOptional: Bool
        let defaultValue: Value?
        let valueWhenAbsent: Value
        let isPrimaryKey: Bool
        /// The property's index database, when it is indexed.
        let index: DatabaseHandle?
    }

    let type: CatalogType
    var name: String { type.name }
    let records: DatabaseHandle
    /// Current properties sorted by id: the order fields are written in.
    let fields: [Field]
    let fieldsByName: [String: Field]
    let primaryKey: Field?
    let indexedFields: [Field]
    /// The meta key under which the last automatic id is kept.
    let sequenceKey: [UInt8]

    init(type: CatalogType, records: DatabaseHandle, indexes: [UInt32: DatabaseHandle]) {
        self.type = type
        self.records = records
        let fields = type.properties.sorted { $0.id < $1.id }.map { entry in
            Field(id: entry.id, name: entry.property.name, type: entry.property.type,
                  isOptional: entry.property.isOptional, defaultValue: entry.property.defaultValue,
                  valueWhenAbsent: entry.property.valueWhenAbsent,
                  isPrimaryKey: entry.property.name == type.primaryKey, index: indexes[entry.id])
        }
        self.fields = fields
        self.fieldsByName = Dictionary(uniqueKeysWithValues: fields.map { ($0.name, $0) })
        self.primaryKey = fields.first { $0.isPrimaryKey }
        self.indexedFields = fields.filter { $0.index != nil }
        self.sequenceKey = Array("seq.t\(type.id)".utf8)
    }

    /// The field named `name`, or an error listing the type's properties.
    func field(named name: String, path: String) throws -> Field {
        guard let field = fieldsByName[name] else { throw unknownProperty(name, path: path) }
        return field
    }

    func unknownProperty(_ name: String, path: String) -> StrataError {
        let known = type.properties.map(\.property.name).joined(separator: ", ")
        return StrataError(.unknownProperty, "Object type '\(self.name)' has no property '\(name)' (in \(path)). Its properties are: \(known).", path: path)
    }

    /// The error for bytes of this type's records that do not decode.
    func corruptRecord(_ failure: DecodingFailure, key: UnsafeRawBufferPointer, path: String) -> StrataError {
        let keyText = (try? KeyCodec.decodeKey(key, type: primaryKey?.type)).map { "\($0)" } ?? "\(Array(key.prefix(16)))"
        return StrataError(.corruptFile, "The record of '\(name)' with key \(keyText) in \(path) is damaged: \(failure.reason) at byte \(failure.offset). Restore the file from a backup.", path: path)
    }
}
