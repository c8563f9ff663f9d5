/// How a plan classifies each schema change, and says what it does to
/// the data, for the mode, the version jump and the code that runs.
extension MigrationPlan {
    /// Every change, classified for the mode and version jump.
    /// `pairing` pairs the schema's properties with the file's fields.
    static func steps(from catalog: Catalog, settings: MigrationSettings, pairing: FieldPairing) -> [Step] {
        let raised = settings.appSchemaVersion > catalog.fileSchemaVersion
        // A type the schema names again after leaving it out still has its
        // objects in the file: its changes count against what they store.
        // In synced mode, kept types and properties are part of the file for
        // older app versions, so naming one again must agree with it too.
        let returning = catalog.types.filter { $0.isKept && settings.schema[$0.name] != nil }
        // A stored property whose name the schema gives to another field
        // (a declared version in between removed it) is removed, and the
        // schema's property of that name added.
        var replaced: [SchemaChange] = []
        let stored = Schema(
            catalog.types.filter { !$0.isKept || settings.schema[$0.name] != nil }.map { type in
                var properties = settings.mode == .synced ? type.properties + type.keptProperties : type.properties
                properties.removeAll { property in
                    let name = property.property.name
                    guard let now = settings.schema[type.name]?[property: name] else { return false }
                    // Synced mode: a field of the name with another type is
                    // another field. A kept one stays kept, and the schema's
                    // property is new (or continues a kept field of its
                    // type, an older app's); a current one becomes kept.
                    if settings.mode == .synced, !property.property.hasSameShape(as: now),
                        type.keptProperties.contains(where: { $0.id == property.id })
                            || (type.properties + type.keptProperties).contains(where: {
                                $0.id != property.id && $0.property.name == name && $0.property.hasSameShape(as: now)
                            })
                    {
                        return true
                    }
                    // A kept field of the name that the property does not continue.
                    let other = pairing.field(type.name, name).map { $0 != property.id } ?? false
                    guard !pairing.keepsName(type.name, name) || (other && now.type == property.property.type)
                    else { return false }
                    if !type.keptProperties.contains(where: { $0.id == property.id }) {
                        replaced.append(
                            SchemaChange(
                                kind: .propertyRemoved, typeName: type.name, propertyName: name,
                                description: "Property '\(type.name).\(name)' has been removed."))
                    }
                    return true
                }
                return ObjectSchema(
                    type.name, primaryKey: type.primaryKey, embedded: type.isEmbedded,
                    properties: properties.map(\.property))
            })
        // The links to each type, as "Dog.owner", from the other types the
        // file stores: a removed type others link to keeps them whole only
        // if its objects stay.
        var linkers: [String: [String]] = [:]
        for type in stored.objectSchemas {
            for property in type.properties where property.isLink {
                guard let target = property.target, target != type.name else { continue }
                linkers[target, default: []].append("\(type.name).\(property.name)")
            }
        }
        var changes = schemaChanges(from: stored, to: settings.schema).filter { change in
            // What synced mode already keeps is not removed again.
            guard settings.mode == .synced, change.kind == .propertyRemoved, let name = change.propertyName else {
                return true
            }
            return catalog[type: change.typeName]?.keptProperties.contains { $0.property.name == name } != true
        }
        for change in replaced {
            let position = changes.lastIndex { $0.typeName <= change.typeName }.map { $0 + 1 } ?? changes.startIndex
            changes.insert(change, at: position)
        }
        for type in returning {
            let position = changes.firstIndex { $0.typeName >= type.name } ?? changes.endIndex
            changes.insert(
                SchemaChange(
                    kind: .typeAdded, typeName: type.name, description: "Object type '\(type.name)' has been added."),
                at: position)
        }
        return changes.map { change in
            let property = change.propertyName.flatMap { settings.schema[change.typeName]?[property: $0] }
            if change.kind == .typeAdded, returning.contains(where: { $0.name == change.typeName }) {
                let kept = settings.mode == .synced ? "for older app versions" : "since the type was removed"
                return Step(
                    change: change, handling: .automatic, effect: "Its objects, kept in the file \(kept), come back.")
            }
            let before = change.propertyName.flatMap { stored[change.typeName]?[property: $0] }
            switch settings.mode {
            case .local:
                var step = localStep(
                    change, raised: raised, property: property, before: before,
                    madeEmbedded: settings.schema[change.typeName]?.isEmbedded == true)
                let dropsValues =
                    change.kind == .propertyTypeChanged
                    && !isEmbeddingConversion(before, property)
                if dropsValues, let name = change.propertyName {
                    convert(
                        &step,
                        by: settings.valueConversion(
                            type: change.typeName, property: name, fileVersion: catalog.fileSchemaVersion),
                        owners: settings.valueOwners(of: change.typeName), raised: raised)
                }
                return step
            case .synced: return syncedStep(change, property: property, linkers: linkers[change.typeName] ?? [])
            }
        }
    }

    /// Says, in the effect of a change of a property's value type, what
    /// gives the property its new values; without anything, the migration
    /// is refused.
    static func convert(_ step: inout Step, by conversion: ValueConversion?, owners: [String], raised: Bool) {
        let change = step.change
        let name = change.propertyName ?? "?"
        let defaultText = step.defaultText
        let discard = "config.discardValues(of: \"\(name)\", onType: \"\(change.typeName)\")"
        step.mapper = mapperText(change.typeName, owners: owners)
        guard raised else {
            // Refused anyway; the effect says what the migration will need.
            if conversion == nil {
                step.lacksConversion = true
                step.effect =
                    "This needs a migration: raise the schema version, and set its values from the old ones in a migration closure or in a typed step that maps \(step.mapper), or discard them with \(discard); else every stored value would be reset to the default, \(defaultText)."
            }
            return
        }
        switch conversion {
        case .closure?:
            return
        case .typedStep(let stepName)?:
            step.effect =
                "The typed step \(stepName) sets its values from the old objects; the type's records are rewritten."
        case .stepBlock(let stepName)?:
            step.effect =
                "Its values start at the default, \(defaultText), unless the migrate block of the step \(stepName) sets them from the old ones; the type's records are rewritten."
        case .discarded?:
            step.effect =
                "Its stored values are discarded (Configuration.discardValues): every object reads the default, \(defaultText); the type's records are rewritten."
        case nil:
            step.lacksConversion = true
            step.handling = .forbidden
            step.effect =
                "Refused: every stored value would be reset to the default, \(defaultText), and no code converts them. Set them from the old values in a migration closure or in a typed step that maps \(step.mapper), or discard them with \(discard)."
        }
    }

    /// `'Person'`, or for an embedded type `'Person' or 'Shop' (which embed 'Address')`.
    static func mapperText(_ type: String, owners: [String]) -> String {
        let others = owners.filter { $0 != type }
        guard !others.isEmpty else { return "'\(type)'" }
        return
            "\(others.map { "'\($0)'" }.joined(separator: " or ")) (which \(others.count == 1 ? "embeds" : "embed") '\(type)')"
    }

    /// Whether a property's type change is a link turned into an embedded
    /// object of the same type or back: a conversion Strata makes itself,
    /// which drops no value.
    static func isEmbeddingConversion(_ before: Property?, _ after: Property?) -> Bool {
        guard let before, let after else { return false }
        return before.isLink != after.isLink && before.target == after.target
    }

    /// The changes that are automatic in every mode and at every version.
    static func automaticEffect(_ change: SchemaChange) -> String? {
        switch change.kind {
        case .typeAdded: "Its table is created."
        case .indexAdded: "The index is built."
        case .indexRemoved: "The index is dropped."
        case .defaultChanged: "Objects without a stored value read the new default."
        case .deleteRuleChanged: "Deletes follow the new rule from now on; no record is rewritten."
        default: nil
        }
    }

    static func localStep(
        _ change: SchemaChange, raised: Bool, property: Property?, before: Property?, madeEmbedded: Bool
    ) -> Step {
        if let effect = automaticEffect(change) { return Step(change: change, handling: .automatic, effect: effect) }
        let defaultText = property.map { "\($0.valueWhenAbsent)" } ?? "its default"
        let (handling, effect): (Handling, String)
        switch change.kind {
        case .typeRemoved:
            (handling, effect) = (
                .automatic,
                "Its objects stay in the file, ignored; migration.deleteData(forType: \"\(change.typeName)\") deletes them."
            )
        case _ where !raised:
            (handling, effect) = (.forbidden, "This needs a migration: raise the schema version.")
        case .propertyAdded:
            (handling, effect) = (
                .automatic, "Existing objects read its default, \(defaultText); no record is rewritten."
            )
        case .propertyRemoved:
            (handling, effect) = (
                .automatic,
                "Its values are readable as `old` in the migration closure and gone afterwards; no record is rewritten."
            )
        case .propertyTypeChanged
        where isEmbeddingConversion(before, property):
            (handling, effect) = (
                .automatic,
                property?.isLink == true
                    ? "Each embedded object becomes an object of its own, linked from here; the type's records are rewritten."
                    : "Each link becomes a copy of the object it linked to; the type's records are rewritten."
            )
        case .propertyTypeChanged:
            (handling, effect) = (
                .migrationClosure,
                "Its values start at the default, \(defaultText), unless the migration closure sets them from the old ones; the type's records are rewritten."
            )
        case .madeRequired:
            (handling, effect) = (
                .automatic,
                "Null values become the default, \(defaultText), unless the migration closure sets them; the type's records are rewritten."
            )
        case .madeOptional:
            (handling, effect) = (.automatic, "Stored values stay as they are; no record is rewritten.")
        case .primaryKeyChanged:
            (handling, effect) = (
                .automatic,
                "Objects get new keys after the migration closure, which may fix their values; two objects with one key fail the migration. The type's records are rewritten, and every link to them follows them to their new keys."
            )
        case .embeddingChanged:
            (handling, effect) = (
                .automatic,
                madeEmbedded
                    ? "Its objects move into the records of the objects that link to them; an object with no parent, or with several, fails the migration unless migration.setEmbeddingPolicy says otherwise."
                    : "Its objects become objects of their own, each linked from the object that held it."
            )
        case .typeAdded, .indexAdded, .indexRemoved, .defaultChanged, .deleteRuleChanged, .propertyRenamed:
            preconditionFailure("handled by automaticEffect, or made by the plan itself")
        }
        var step = Step(change: change, handling: handling, effect: effect)
        step.defaultText = defaultText
        return step
    }

    static func syncedStep(_ change: SchemaChange, property: Property?, linkers: [String]) -> Step {
        if let effect = automaticEffect(change) { return Step(change: change, handling: .automatic, effect: effect) }
        let older = "older app versions sharing the data could not read it"
        let (handling, effect): (Handling, String)
        switch change.kind {
        case .typeRemoved where !linkers.isEmpty:
            (handling, effect) = (
                .forbidden,
                "Forbidden in synced mode: \(linkers.joined(separator: ", ")) \(linkers.count == 1 ? "links" : "link") to it, and \(older) whole. Keep the type."
            )
        case .typeRemoved:
            (handling, effect) = (
                .automatic, "Its objects stay in the file for older app versions, ignored by this one."
            )
        case .propertyAdded:
            let defaultText = property.map { "\($0.valueWhenAbsent)" } ?? "its default"
            (handling, effect) = (
                .automatic, "Existing objects read its default, \(defaultText); no record is rewritten."
            )
        case .propertyRemoved:
            (handling, effect) = (
                .automatic, "Its values stay in the file for older app versions; new objects store its empty value."
            )
        case .propertyTypeChanged:
            (handling, effect) = (
                .forbidden, "Forbidden in synced mode: \(older). Add a property with a new name instead."
            )
        case .madeRequired, .madeOptional:
            (handling, effect) = (.forbidden, "Forbidden in synced mode: \(older). Keep the optionality it has.")
        case .primaryKeyChanged:
            (handling, effect) = (
                .forbidden, "Forbidden in synced mode: objects would change identity for older app versions."
            )
        case .embeddingChanged:
            (handling, effect) = (
                .forbidden,
                "Forbidden in synced mode: \(older), whose links and embedded objects would change shape. Add a new type instead."
            )
        case .typeAdded, .indexAdded, .indexRemoved, .defaultChanged, .deleteRuleChanged, .propertyRenamed:
            preconditionFailure("handled by automaticEffect, or made by the plan itself")
        }
        return Step(change: change, handling: handling, effect: effect)
    }

    /// A property renamed by a model's `@Renamed(from:)` shows as one
    /// change instead of a removal and an addition. A chain of renames
    /// across versions shows as one rename, from the stored name to the
    /// current one.
    static func merging(renames: [(type: String, from: String, to: String)], into steps: [Step]) -> [Step] {
        var steps = steps
        for (type, from, last) in chains(renames) {
            let rename = (type: type, from: from)
            guard
                let removed = steps.firstIndex(where: {
                    $0.change.kind == .propertyRemoved && $0.change.typeName == rename.type
                        && $0.change.propertyName == rename.from
                })
            else { continue }
            steps.remove(at: removed)
            steps.removeAll {
                $0.change.kind == .propertyAdded && $0.change.typeName == rename.type && $0.change.propertyName == last
            }
            let change = SchemaChange(
                kind: .propertyRenamed, typeName: rename.type, propertyName: last,
                description: "Property '\(rename.type).\(rename.from)' has been renamed to '\(last)'.")
            steps.insert(
                Step(
                    change: change, handling: .automatic,
                    effect: "Declared on the model (@Renamed): its values are kept; no record is rewritten."),
                at: min(removed, steps.endIndex))
        }
        return steps
    }

    /// Renames that follow one another across versions (`name` to `x`, then
    /// `x` to `fullName`) as one, from the stored name to the current one.
    static func chains(_ renames: [(type: String, from: String, to: String)]) -> [(
        type: String, from: String, to: String
    )] {
        renames.filter { rename in !renames.contains { $0.type == rename.type && $0.to == rename.from } }.map {
            rename in
            var last = rename.to
            while let next = renames.first(where: { $0.type == rename.type && $0.from == last }) { last = next.to }
            return (rename.type, rename.from, last)
        }
    }

    /// The effect of a step of a migration, as what runs makes it: a typed
    /// step that maps the type rewrites every record and sets every
    /// property; without any code, removed values are not readable.
    static func describe(_ step: Step, mappedBy stepName: String?, runsCode: Bool) -> Step {
        var step = step
        if let stepName {
            // The changes whose effect would otherwise say that no record is
            // rewritten: the step rewrites every record of the type.
            let rewrites = "the typed step \(stepName) rewrites every '\(step.change.typeName)' record."
            switch step.change.kind {
            case .propertyAdded:
                step.effect =
                    "The typed step \(stepName) sets it from each old object; every '\(step.change.typeName)' record is rewritten."
            case .propertyRemoved:
                step.effect =
                    "Its values are readable on the old model in the typed step \(stepName), and gone afterwards; every '\(step.change.typeName)' record is rewritten."
            case .madeOptional:
                step.effect = "Stored values stay as they are; \(rewrites)"
            case .deleteRuleChanged:
                step.effect = "Deletes follow the new rule from now on; \(rewrites)"
            case .propertyRenamed:
                step.effect = "Declared on the model (@Renamed): its values are kept; \(rewrites)"
            default:
                break
            }
        } else if !runsCode, step.change.kind == .propertyRemoved {
            step.effect =
                "Its values stay in the records, unread, until each is next written or the file is compacted; no record is rewritten."
        }
        return step
    }
}
