/// One difference between a file's schema and the configured one.
struct SchemaChange: Hashable, Sendable, CustomStringConvertible {
    enum Kind: Hashable, Sendable {
        case typeAdded, typeRemoved, primaryKeyChanged
        case propertyAdded, propertyRemoved, propertyTypeChanged
        case madeRequired, madeOptional, indexAdded, indexRemoved, defaultChanged
    }

    var kind: Kind
    var typeName: String
    var propertyName: String?
    /// The sentence shown to users, e.g.
    /// `Property 'Person.age' has been changed from 'string' to 'int'.`
    var description: String
}

/// The complete list of differences between two schemas, in a stable order:
/// types by name, then properties in the new schema's order, then removals.
func schemaChanges(from old: Schema, to new: Schema) -> [SchemaChange] {
    var changes: [SchemaChange] = []
    let names = Set(old.objectSchemas.map(\.name)).union(new.objectSchemas.map(\.name)).sorted()
    for name in names {
        switch (old[name], new[name]) {
        case (nil, _?):
            changes.append(SchemaChange(kind: .typeAdded, typeName: name, description: "Object type '\(name)' has been added."))
        case (_?, nil):
            changes.append(SchemaChange(kind: .typeRemoved, typeName: name, description: "Object type '\(name)' has been removed."))
        case let (before?, after?):
            changes += propertyChanges(from: before, to: after)
        case (nil, nil):
            break
        }
    }
    return changes
}

private func propertyChanges(from old: ObjectSchema, to new: ObjectSchema) -> [SchemaChange] {
    var changes: [SchemaChange] = []
    let type = new.name
    func change(_ kind: SchemaChange.Kind, _ property: String?, _ text: String) {
        changes.append(SchemaChange(kind: kind, typeName: type, propertyName: property, description: text))
    }
    if old.primaryKey != new.primaryKey {
        let describe = { (key: String?) in key.map { "'\($0)'" } ?? "none" }
        change(.primaryKeyChanged, nil, "Primary key of '\(type)' has been changed from \(describe(old.primaryKey)) to \(describe(new.primaryKey)).")
    }
    for after in new.properties {
        let name = "\(type).\(after.name)"
        guard let before = old[property: after.name] else {
            change(.propertyAdded, after.name, "Property '\(name)' has been added.")
            continue
        }
        if before.type != after.type {
            change(.propertyTypeChanged, after.name, "Property '\(name)' has been changed from '\(before.type)' to '\(after.type)'.")
        }
        if before.isOptional && !after.isOptional {
            change(.madeRequired, after.name, "Property '\(name)' has been made required.")
        } else if !before.isOptional && after.isOptional {
            change(.madeOptional, after.name, "Property '\(name)' has been made optional.")
        }
        let oldIndexed = before.isIndexed && before.name != old.primaryKey
        let newIndexed = after.isIndexed && after.name != new.primaryKey
        if !oldIndexed && newIndexed {
            change(.indexAdded, after.name, "Property '\(name)' has been made indexed.")
        } else if oldIndexed && !newIndexed {
            change(.indexRemoved, after.name, "Property '\(name)' has been made unindexed.")
        }
        if !sameDefault(before.defaultValue?.coerced(to: before.type), after.defaultValue?.coerced(to: after.type)) {
            let describe = { (value: Value?) in value.map { "\($0)" } ?? "none" }
            change(.defaultChanged, after.name, "Property '\(name)' has had its default changed from \(describe(before.defaultValue)) to \(describe(after.defaultValue)).")
        }
    }
    for before in old.properties where new[property: before.name] == nil {
        change(.propertyRemoved, before.name, "Property '\(type).\(before.name)' has been removed.")
    }
    return changes
}

/// Defaults compare as stored bytes: a NaN default equals itself.
private func sameDefault(_ a: Value?, _ b: Value?) -> Bool {
    switch (a, b) {
    case (nil, nil): true
    case let (a?, b?): a.isStored(identicallyTo: b)
    default: false
    }
}
