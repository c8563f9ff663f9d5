import Foundation

/// Reading a changeset's tables and entries, checking each index against
/// its table and each value against its field.
extension ChangesetReader {
    /// What the tables say that reading the entries needs, parsed once.
    struct Tables {
        /// The descriptor of each field of the fields table.
        var descriptors: [FieldDescriptor]
        /// The primary key's type of each type of the types table.
        var keyTypes: [PropertyType]
    }

    /// Reads the types, fields and origins tables into `content`: names
    /// and descriptors valid, each type, field and origin once.
    mutating func readTables(into content: inout ChangesetContent) throws(StrataError) -> Tables {
        var tables = Tables(descriptors: [], keyTypes: [])
        let typeCount = try count(of: "types", least: 2)
        var typeNames = Set<String>(minimumCapacity: typeCount)
        for index in 0 ..< typeCount {
            let start = p
            let name = try utf8("the name of type \(index)")
            guard !name.isEmpty, typeNames.insert(name).inserted else {
                throw malformed(
                    name.isEmpty ? "type \(index) has no name" : "the type '\(name)' is named twice", at: start)
            }
            let keyName = try utf8("the key name of '\(name)'")
            guard !keyName.isEmpty else { throw malformed("the key of type '\(name)' has no name", at: start) }
            let keyAt = p
            let key = try utf8("the key descriptor of '\(name)'")
            guard let descriptor = FieldDescriptor(parsing: key), descriptor.type.canBePrimaryKey,
                !descriptor.isOptional
            else { throw malformed("the key of '\(name)' is '\(key)', not int, string or uuid", at: keyAt) }
            content.types.append(WireType(name: name, keyName: keyName, keyDescriptor: key))
            tables.keyTypes.append(descriptor.type)
        }
        let fieldCount = try count(of: "fields", least: 4)
        var fields = Set<WireField>(minimumCapacity: fieldCount)
        for index in 0 ..< fieldCount {
            let start = p
            let type = try self.index(of: "field \(index)'s type", below: typeCount)
            let path = try utf8("the path of field \(index)")
            let descriptorAt = p
            let text = try utf8("the descriptor of field \(index)")
            guard !path.isEmpty else { throw malformed("field \(index) has no path", at: start) }
            guard let descriptor = FieldDescriptor(parsing: text) else {
                throw malformed("the descriptor '\(text)' of field '\(path)' is not a field type", at: descriptorAt)
            }
            let parentAt = p
            let parentNumber = try self.index(of: "the parent of field \(index)", below: index + 1)
            let parent = parentNumber == 0 ? nil : parentNumber - 1
            if let parent {
                let outer = content.fields[parent]
                guard outer.type == type, tables.descriptors[parent].type == .embedded else {
                    throw malformed(
                        "field '\(path)' is inside field \(parent), which is not an embedded object of its type",
                        at: parentAt)
                }
            }
            let field = WireField(type: type, path: path, descriptor: text, parent: parent)
            guard fields.insert(field).inserted else {
                throw malformed(
                    "the field '\(content.types[type].name).\(content.name(of: field))' (\(text)) is named twice",
                    at: start)
            }
            content.fields.append(field)
            tables.descriptors.append(descriptor)
        }
        let originCount = try count(of: "origins", least: 16)
        var origins = Set<SiteID>(minimumCapacity: originCount)
        for index in 0 ..< originCount {
            let start = p
            let origin = try siteID("origin \(index)")
            guard origins.insert(origin).inserted else {
                throw malformed("the origin \(origin) is named twice", at: start)
            }
            content.origins.append(origin)
        }
        return tables
    }

    /// Reads one entry of `content` (whose tables are read): its indexes in
    /// range, a key of its type's key type, no field for a tombstone or a
    /// leave (causal length 0: the object left the receiver's view on the
    /// hub, ``ChangeEntry/leavesView``), each field once, of the entry's type, with a
    /// value its descriptor admits. `seenFields` is scratch space, for an
    /// entry of more than ``fewFields`` fields.
    mutating func entry(of content: ChangesetContent, _ tables: Tables, seenFields: inout Set<Int>)
        throws(StrataError) -> ChangeEntry
    {
        let type = try index(of: "an entry's type", below: content.types.count)
        let keyAt = p
        let key = try value()
        guard StoredKind(of: key)?.propertyType == tables.keyTypes[type] else {
            throw malformed(
                "the key \(Self.brief(key)) of a '\(content.types[type].name)' object is not \(content.types[type].keyDescriptor)",
                at: keyAt)
        }
        let causalLength = try varint("a causal length")
        let writerVersion = try varint("a writer's schema version")
        let time = try littleEndian64("an entry's stamp")
        let origin = try index(of: "an entry's origin", below: content.origins.count)
        let countAt = p
        let fieldCount = try count(of: "fields of an entry", least: 4)
        guard causalLength % 2 == 1 || fieldCount == 0 else {
            throw malformed(
                causalLength == 0
                    ? "the object \(Self.brief(key)), which left the receiver's view (causal length 0), has fields"
                    : "the tombstone of the object \(Self.brief(key)) (causal length \(causalLength)) has fields",
                at: countAt)
        }
        var fields: [FieldChange] = []
        fields.reserveCapacity(fieldCount)
        let isShort = fieldCount <= Self.fewFields
        if !isShort { seenFields.removeAll(keepingCapacity: true) }
        for _ in 0 ..< fieldCount {
            let start = p
            let field = try index(of: "an entry's field", below: content.fields.count)
            let wire = content.fields[field]
            guard wire.type == type else {
                throw malformed(
                    "the field '\(content.types[wire.type].name).\(wire.path)' is in an entry of "
                        + "'\(content.types[type].name)'", at: start)
            }
            // A few fields are compared with those read; more are hashed.
            let isNew = isShort ? !fields.contains { $0.field == field } : seenFields.insert(field).inserted
            guard isNew else {
                throw malformed(
                    "the field '\(wire.path)' appears twice in the entry of the object \(Self.brief(key))", at: start)
            }
            let fieldTime = time &+ (try zigzag("a field's stamp"))
            let fieldOrigin = try index(of: "a field's origin", below: content.origins.count)
            let valueAt = p
            let value = try value()
            guard tables.descriptors[field].admits(value) else {
                throw malformed(
                    "the value \(Self.brief(value)) of '\(wire.path)' does not fit its type \(wire.descriptor)",
                    at: valueAt)
            }
            fields.append(
                FieldChange(
                    field: field, stamp: WireStamp(time: HybridTime(rawValue: fieldTime), origin: fieldOrigin),
                    value: value))
        }
        return ChangeEntry(
            type: type, key: key, causalLength: causalLength, writerVersion: writerVersion,
            stamp: WireStamp(time: HybridTime(rawValue: time), origin: origin), fields: fields)
    }

    /// The most fields of an entry that are checked for a repeat by a look
    /// at the fields read, without hashing.
    static let fewFields = 16

    /// A value as a message shows it: cut after 40 characters.
    static func brief(_ value: Value) -> String {
        let text = value.description
        return text.count <= 40 ? text : text.prefix(40) + "…"
    }
}
