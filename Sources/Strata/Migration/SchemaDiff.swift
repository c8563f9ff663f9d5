/// One difference between a file's schema and the configured one.
public struct SchemaChange: Hashable, Sendable, CustomStringConvertible {
    /// What changed.
    public enum Kind: String, Hashable, Sendable, Codable {
        /// An object type is in the new schema only.
        case typeAdded
        /// An object type is in the file's schema only.
        case typeRemoved
        /// The primary key of a type names another property, or none.
        case primaryKeyChanged
        /// A property is in the new schema only.
        case propertyAdded
        /// A property is in the file's schema only.
        case propertyRemoved
        /// A property's value type changed, e.g. from `string` to `int`.
        case propertyTypeChanged
        /// An optional property became required.
        case madeRequired
        /// A required property became optional.
        case madeOptional
        /// A property gained an index.
        case indexAdded
        /// A property lost its index.
        case indexRemoved
        /// A property's default value changed.
        case defaultChanged
        /// A link property's delete rule changed.
        case deleteRuleChanged
        /// A top-level object type became embedded, or an embedded one
        /// top-level.
        case embeddingChanged
        /// A property was renamed by a rename its model declares
        /// (`@Renamed(from:)`); ``SchemaChange/propertyName`` is the new name.
        /// Only a migration plan shows it: comparing two schemas sees a
        /// removal and an addition.
        case propertyRenamed
    }

    /// What changed.
    public var kind: Kind
    /// The object type concerned.
    public var typeName: String
    /// The property concerned, for property changes.
    public var propertyName: String?
    /// The sentence shown to users, e.g.
    /// `Property 'Person.age' has been changed from 'string' to 'int'.`
    public var description: String
}

/// The complete list of differences between two schemas, in a stable order:
/// types by name, then properties in the new schema's order, then removals.
func schemaChanges(from old: Schema, to new: Schema) -> [SchemaChange] {
    var changes: [SchemaChange] = []
    let names = Set(old.objectSchemas.map(\.name)).union(new.objectSchemas.map(\.name)).sorted()
    for name in names {
        switch (old[name], new[name]) {
        case (nil, _?):
            changes.append(
                SchemaChange(kind: .typeAdded, typeName: name, description: "Object type '\(name)' has been added."))
        case (_?, nil):
            changes.append(
                SchemaChange(kind: .typeRemoved, typeName: name, description: "Object type '\(name)' has been removed.")
            )
        case (let before?, let after?):
            if before.isEmbedded != after.isEmbedded {
                changes.append(
                    SchemaChange(
                        kind: .embeddingChanged, typeName: name,
                        description:
                            "Object type '\(name)' has been made \(after.isEmbedded ? "embedded" : "top-level")."))
            }
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
        change(
            .primaryKeyChanged, nil,
            "Primary key of '\(type)' has been changed from \(describe(old.primaryKey)) to \(describe(new.primaryKey))."
        )
    }
    for after in new.properties {
        let name = "\(type).\(after.name)"
        guard let before = old[property: after.name] else {
            change(.propertyAdded, after.name, "Property '\(name)' has been added.")
            continue
        }
        if !before.hasSameShape(as: after) {
            change(
                .propertyTypeChanged, after.name,
                "Property '\(name)' has been changed from '\(before.shapeDescription)' to '\(after.shapeDescription)'.")
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
            change(
                .defaultChanged, after.name,
                "Property '\(name)' has had its default changed from \(describe(before.defaultValue)) to \(describe(after.defaultValue))."
            )
        }
    }
    for after in new.properties where after.isLink {
        guard let before = old[property: after.name], before.isLink, before.deleteRule != after.deleteRule else {
            continue
        }
        change(
            .deleteRuleChanged, after.name,
            "Property '\(type).\(after.name)' has had its delete rule changed from \(before.deleteRule) to \(after.deleteRule)."
        )
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
    case (let a?, let b?): a.isStored(identicallyTo: b)
    default: false
    }
}

extension Schema {
    /// Every difference between `old` and this schema, one ``SchemaChange``
    /// each, in a stable order: types by name, then each type's properties.
    ///
    /// ```swift
    /// for change in newSchema.changes(from: oldSchema) { print(change) }
    /// // Property 'Person.age' has been changed from 'string' to 'int'.
    /// ```
    public func changes(from old: Schema) -> [SchemaChange] {
        schemaChanges(from: old, to: self)
    }
}
