/// What opening a file with a configuration would do, worked out without
/// writing anything: the schema changes, how each is handled, and whether
/// the migration closure runs.
///
/// ```swift
/// let plan = try Database.migrationPlan(for: config)
/// print(plan)
/// // Opening people.strata (local mode) at schema version 2, from version 1: migrate, running the migration closure.
/// // - Property 'Person.fullName' has been added. Existing objects read its default, ""; no record is rewritten. (automatic)
/// ```
///
/// Opening a database computes the same plan and then carries it out, so
/// the plan and the open cannot disagree.
public struct MigrationPlan: Sendable, CustomStringConvertible {
    /// What opening does as a whole.
    public enum Action: String, Sendable, Hashable {
        /// The file does not exist (or is empty): it is created with the
        /// configured schema.
        case createFile
        /// The file matches the configuration: it is opened as it is.
        case open
        /// Only automatic changes at the same schema version (or, in synced
        /// mode, at any version): the catalog is updated, new types and
        /// indexes are created, and no record is rewritten.
        case updateCatalog
        /// The schema version is raised: the file is migrated in one write
        /// transaction, with the migration closure if there is one.
        case migrate
        /// `deleteIfMigrationNeeded` is set and a migration would be needed:
        /// the file is deleted and created again, empty.
        case deleteAndRecreate
        /// Opening fails with ``MigrationPlan/error``; nothing is written.
        case refuse
    }

    /// How one change is handled.
    public enum Handling: String, Sendable, Hashable {
        /// Strata applies it by itself.
        case automatic
        /// Strata applies a default; only the migration closure can carry the
        /// old data over (a property's value type changed).
        case migrationClosure
        /// Not allowed in this mode, or not at this schema version.
        case forbidden
    }

    /// One schema change and what opening does about it.
    public struct Step: Sendable, Hashable, CustomStringConvertible {
        /// The change.
        public var change: SchemaChange
        /// How it is handled.
        public var handling: Handling
        /// What happens to the data, in a sentence, e.g. `Existing objects
        /// read its default, 0.`
        public var effect: String

        /// Whether the change drops stored values (a property's value type
        /// changed) and nothing converts or discards them: a migration
        /// refuses it.
        var lacksConversion = false
        /// The property's value when absent, as the effects spell it.
        var defaultText = "its default"
        /// The types a typed step may map to convert the property's
        /// values, as the effects spell them: `'Person'`.
        var mapper = ""

        /// The change, its effect and its handling on one line.
        public var description: String { "\(change.description) \(effect) (\(handling.rawValue))" }
    }

    /// The database file.
    public let path: String
    /// The configured mode.
    public let mode: DatabaseMode
    /// The file's schema version, or nil when the file does not exist yet.
    public let fileSchemaVersion: UInt64?
    /// The configured schema version.
    public let schemaVersion: UInt64
    /// Every change between the file's schema and the configured one.
    public let steps: [Step]
    /// What opening does.
    public let action: Action
    /// Whether opening runs the configuration's migration closure, or its
    /// typed steps (``typedSteps``).
    public let runsMigrationClosure: Bool
    /// The typed migration steps opening runs, in order, one line each:
    /// e.g. `AppV1 → AppV2 (1 → 2): maps PersonV1 to Person`. Empty when no
    /// migration runs.
    public let typedSteps: [String]
    /// The property renames that models declare with `@Renamed(from:)` and
    /// that opening applies, one line each: e.g. `'Person.name' to
    /// 'fullName'`. A rename is a catalog change: no record is rewritten.
    public let renames: [String]
    /// The types whose every record the migration rewrites (or, for a
    /// typed mapping that returns nil, deletes), in catalog order: new
    /// keys, a property whose value type changed or that became required,
    /// a link turned into an embedded object or back, and every type a
    /// typed step maps. A migration closure may rewrite more: the objects
    /// whose values it sets.
    public let rewrittenTypes: [String]
    /// The indexes the migration builds, as `Type.property`: new indexes,
    /// indexes of properties whose value type or default changed, and every
    /// index of a type in ``rewrittenTypes`` that no typed step maps. A
    /// closure or typed step also rebuilds the index of each property
    /// whose values it changes.
    public let rebuiltIndexes: [String]
    /// The error opening throws, when ``action`` is ``Action/refuse``.
    public let error: StrataError?

    /// The file's catalog, and the one opening would write.
    let catalog: Catalog?
    let evolved: Catalog?
    /// Whether the configuration's own closure runs beside typed steps.
    let runsOwnClosure: Bool

    private var settingsHasClosureText: String { runsOwnClosure ? " after the migration closure" : "" }

    /// The changes alone.
    public var changes: [SchemaChange] { steps.map(\.change) }

    /// A summary line, then one line per step.
    public var description: String {
        var text = "Opening \(path) (\(mode.rawValue) mode) at schema version \(schemaVersion)"
        if let fileSchemaVersion { text += ", from version \(fileSchemaVersion)" }
        switch action {
        case .createFile: text += ": create the file."
        case .open: text += ": open it as it is."
        case .updateCatalog: text += ": apply automatic changes; no record is rewritten."
        case .migrate:
            text +=
                !typedSteps.isEmpty
                ? ": migrate, running \(typedSteps.count) typed step\(typedSteps.count == 1 ? "" : "s")\(settingsHasClosureText)."
                : runsMigrationClosure
                    ? ": migrate, running the migration closure." : ": migrate, without a migration closure."
        case .deleteAndRecreate: text += ": delete the file and create it again, empty (deleteIfMigrationNeeded)."
        case .refuse: text += ": refused."
        }
        for step in typedSteps { text += "\n- runs \(step)" }
        for rename in renames { text += "\n- renames \(rename) (declared on the model)" }
        for step in steps { text += "\n- \(step)" }
        if !rewrittenTypes.isEmpty {
            text += "\n- rewrites every record of \(rewrittenTypes.map { "'\($0)'" }.joined(separator: ", "))"
        }
        if !rebuiltIndexes.isEmpty {
            text +=
                "\n- builds the \(rebuiltIndexes.count == 1 ? "index" : "indexes") on \(rebuiltIndexes.map { "'\($0)'" }.joined(separator: ", "))"
        }
        if let error { text += "\n" + error.message }
        return text
    }
}

extension MigrationPlan {
    /// Works out the plan for opening a file whose catalog is `catalog`
    /// (nil for a new file) with `settings`. Shared by
    /// ``Database/migrationPlan(for:)`` and every open.
    init(catalog: Catalog?, settings: MigrationSettings) {
        path = settings.path
        mode = settings.mode
        schemaVersion = settings.appSchemaVersion
        fileSchemaVersion = catalog?.fileSchemaVersion
        self.catalog = catalog
        guard let catalog else {
            steps = []
            runsMigrationClosure = false
            typedSteps = []
            renames = []
            rewrittenTypes = []
            rebuiltIndexes = []
            runsOwnClosure = false
            evolved = nil
            if settings.readOnly {
                action = .refuse
                error = StrataError(
                    .fileSystem, "\(path) does not exist; a database opened read-only must already exist.", path: path)
            } else if let problem = MigrationPlan.configurationProblem(settings) {
                action = .refuse
                error = problem
            } else {
                action = .createFile
                error = nil
            }
            return
        }
        var planned = MigrationPlan.steps(from: catalog, settings: settings)
        let decision = MigrationPlan.decide(catalog: catalog, steps: planned, settings: settings)
        var error = decision.error
        var action = decision.action
        if action == .migrate,
            let mismatch = settings.typed?.mismatch(
                fileVersion: catalog.fileSchemaVersion, fileSchema: catalog.schema, path: settings.path)
        {
            action = .refuse
            error = mismatch
        }
        self.error = error
        var evolved: Catalog?
        if (action == .open && !settings.readOnly) || action == .migrate {
            let next = catalog.evolved(
                to: settings.schema, schemaVersion: settings.appSchemaVersion, mode: settings.mode)
            if action == .open && !next.isEquivalent(to: catalog) { action = .updateCatalog }
            evolved = next
        }
        self.action = action
        self.evolved = evolved
        let migrates = action == .migrate
        runsMigrationClosure =
            migrates && settings.runsClosure(fileVersion: catalog.fileSchemaVersion, oldSchema: catalog.schema)
        runsOwnClosure = migrates && settings.migration != nil
        let fileVersion = catalog.fileSchemaVersion
        let stepsRun = migrates ? settings.typed?.steps(from: fileVersion) ?? [] : []
        typedSteps = stepsRun.map(\.summary)
        let declared =
            migrates ? settings.typed?.renames(fileVersion: fileVersion, oldSchema: catalog.schema) ?? [] : []
        renames = MigrationPlan.chains(declared).map { "'\($0.type).\($0.from)' to '\($0.to)'" }
        // Which step maps each type (the first), for the effects and the rewrites.
        var mappedBy: [String: String] = [:]
        for step in stepsRun {
            for mapping in step.mappings where mappedBy[mapping.newModel.objectSchema.name] == nil {
                mappedBy[mapping.newModel.objectSchema.name] = step.name
            }
        }
        if migrates {
            let runsCode = runsMigrationClosure
            planned = MigrationPlan.merging(renames: declared, into: planned).map {
                MigrationPlan.describe($0, mappedBy: mappedBy[$0.change.typeName], runsCode: runsCode)
            }
        }
        steps = planned
        if migrates, let evolved {
            let work = MigrationPlan.work(from: catalog, to: evolved, mapped: Set(mappedBy.keys))
            rewrittenTypes = work.rewritten
            rebuiltIndexes = work.indexes
        } else {
            rewrittenTypes = []
            rebuiltIndexes = []
        }
    }

    /// A property renamed by a model's `@Renamed(from:)` shows as one
    /// change instead of a removal and an addition. A chain of renames
    /// across versions shows as one rename, from the stored name to the
    /// current one.
    private static func merging(renames: [(type: String, from: String, to: String)], into steps: [Step]) -> [Step] {
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
    private static func chains(_ renames: [(type: String, from: String, to: String)]) -> [(
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
    private static func describe(_ step: Step, mappedBy stepName: String?, runsCode: Bool) -> Step {
        var step = step
        if let stepName {
            switch step.change.kind {
            case .propertyAdded:
                step.effect =
                    "The typed step \(stepName) sets it from each old object; every '\(step.change.typeName)' record is rewritten."
            case .propertyRemoved:
                step.effect =
                    "Its values are readable on the old model in the typed step \(stepName), and gone afterwards; every '\(step.change.typeName)' record is rewritten."
            case .propertyTypeChanged where step.handling == .migrationClosure:
                break
            default:
                step.effect = step.effect.replacingOccurrences(
                    of: "no record is rewritten",
                    with: "the typed step \(stepName) rewrites every '\(step.change.typeName)' record")
            }
        } else if !runsCode, step.change.kind == .propertyRemoved {
            step.effect =
                "Its values stay in the records, unread, until each is next written or the file is compacted; no record is rewritten."
        }
        return step
    }

    /// The records and indexes a migration from `old` to `evolved`
    /// rewrites and builds by itself; `mapped` are the types typed steps map.
    private static func work(from old: Catalog, to evolved: Catalog, mapped: Set<String>) -> (
        rewritten: [String], indexes: [String]
    ) {
        var rewritten: [String] = []
        var indexes: [String] = []
        var oldIndexes: [NamedDatabase: Property] = [:]
        for type in old.types {
            for property in type.properties where property.hasIndex(in: type) {
                oldIndexes[type.indexDatabase(property)] = property.property
            }
        }
        for type in evolved.types where !type.isKept && !type.isEmbedded {
            let before = old[typeID: type.id]
            let rewritesAll = before.map { type.needsRewrite(comparedTo: $0) } ?? false
            if before != nil && (rewritesAll || mapped.contains(type.name)) { rewritten.append(type.name) }
            for property in type.properties where property.hasIndex(in: type) {
                let previous = oldIndexes[type.indexDatabase(property)]
                let sameDefault =
                    previous.map { $0.valueWhenAbsent.isStored(identicallyTo: property.property.valueWhenAbsent) }
                    ?? false
                if previous == nil || !sameDefault || rewritesAll {
                    indexes.append("\(type.name).\(property.property.name)")
                }
            }
        }
        return (rewritten, indexes)
    }

    /// Options that cannot be combined, checked before the file is touched.
    static func configurationProblem(_ settings: MigrationSettings) -> StrataError? {
        let path = settings.path
        if settings.deleteIfMigrationNeeded && settings.mode == .synced {
            return StrataError(
                .invalidConfiguration,
                "deleteIfMigrationNeeded cannot be used in synced mode (\(path)): deleting the file would lose data that older app versions share. Turn it off.",
                path: path)
        }
        if settings.deleteIfMigrationNeeded && settings.readOnly {
            return StrataError(
                .invalidConfiguration,
                "deleteIfMigrationNeeded cannot be combined with readOnly (\(path)): a read-only open never deletes the file. Turn one of them off.",
                path: path)
        }
        if settings.mode == .synced && settings.hasTypedSteps {
            let names = settings.typed?.steps.map(\.name).joined(separator: ", ") ?? ""
            return StrataError(
                .migrationForbidden,
                "\(path) is opened in synced mode, where older app versions share the data, so typed migration steps (\(names)) cannot run. Remove them from Configuration.migrations: synced mode allows only additive changes, which need no step.",
                path: path)
        }
        if settings.mode == .synced && settings.migration != nil {
            return StrataError(
                .migrationForbidden,
                "\(path) is opened in synced mode, where older app versions share the data, so a migration closure cannot run. Remove Configuration.migration: synced mode allows only additive changes, which need no closure.",
                path: path)
        }
        return nil
    }

    /// Every change, classified for the mode and version jump.
    private static func steps(from catalog: Catalog, settings: MigrationSettings) -> [Step] {
        let raised = settings.appSchemaVersion > catalog.fileSchemaVersion
        // A type the schema names again after leaving it out still has its
        // objects in the file: its changes count against what they store.
        // In synced mode, kept types and properties are part of the file for
        // older app versions, so naming one again must agree with it too.
        let returning = catalog.types.filter { $0.isKept && settings.schema[$0.name] != nil }
        let stored = Schema(
            catalog.types.filter { !$0.isKept || settings.schema[$0.name] != nil }.map { type in
                let properties = settings.mode == .synced ? type.properties + type.keptProperties : type.properties
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
                    step.defaultText = property.map { "\($0.valueWhenAbsent)" } ?? "its default"
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
    private static func convert(_ step: inout Step, by conversion: ValueConversion?, owners: [String], raised: Bool) {
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
    private static func mapperText(_ type: String, owners: [String]) -> String {
        let others = owners.filter { $0 != type }
        guard !others.isEmpty else { return "'\(type)'" }
        return
            "\(others.map { "'\($0)'" }.joined(separator: " or ")) (which \(others.count == 1 ? "embeds" : "embed") '\(type)')"
    }

    /// Whether a property's type change is a link turned into an embedded
    /// object of the same type or back: a conversion Strata makes itself,
    /// which drops no value.
    private static func isEmbeddingConversion(_ before: Property?, _ after: Property?) -> Bool {
        guard let before, let after else { return false }
        return before.isLink != after.isLink && before.target == after.target
    }

    /// The changes that are automatic in every mode and at every version.
    private static func automaticEffect(_ change: SchemaChange) -> String? {
        switch change.kind {
        case .typeAdded: "Its table is created."
        case .indexAdded: "The index is built."
        case .indexRemoved: "The index is dropped."
        case .defaultChanged: "Objects without a stored value read the new default."
        case .deleteRuleChanged: "Deletes follow the new rule from now on; no record is rewritten."
        default: nil
        }
    }

    private static func localStep(
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
        return Step(change: change, handling: handling, effect: effect)
    }

    private static func syncedStep(_ change: SchemaChange, property: Property?, linkers: [String]) -> Step {
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

    /// The error of a migration that would reset stored values with no
    /// code that says so: each property, its old and new type, and the two
    /// ways to proceed.
    private static func unconvertedValues(_ steps: [Step], others: [Step], path: String) -> StrataError {
        let lines = steps.map { step in
            let name = step.change.propertyName ?? "?"
            let type = step.change.typeName
            return
                "- \(step.change.description) Every stored value would be reset to the default, \(step.defaultText). Set the new values from the old ones in a migration closure (Configuration.migration) or in a typed step that maps \(step.mapper), or discard them with config.discardValues(of: \"\(name)\", onType: \"\(type)\")."
        }
        return StrataError(
            .migrationRequired,
            "Migrating \(path) would discard stored values that no code converts:\n\(lines.joined(separator: "\n"))\n\(others.isEmpty ? "" : "These changes cannot be migrated either:\n\(others.map { "- \($0)" }.joined(separator: "\n"))\n")Nothing was written.",
            path: path)
    }

    /// What a migration of `steps` at a raised version will also need:
    /// code for each property whose value type changes.
    private static func conversionAdvice(_ steps: [Step]) -> String {
        let unconverted = steps.filter(\.lacksConversion)
        guard !unconverted.isEmpty else { return "" }
        let names = unconverted.map { "'\($0.change.typeName).\($0.change.propertyName ?? "?")'" }
        return
            " The migration must also say what becomes of the stored values of \(names.joined(separator: ", ")), whose type changes: set them in a migration closure or in a typed step, or discard them with Configuration.discardValues(of:onType:)."
    }

    /// Which changes a read-only open can live with: none of them needs the
    /// file to change for reads to be right.
    /// In synced mode a property the app does not declare is one a newer
    /// app version added: a writable open keeps it, a read-only one ignores it.
    private static func readableWithoutWriting(_ step: Step, mode: DatabaseMode) -> Bool {
        [.typeRemoved, .indexAdded, .indexRemoved, .deleteRuleChanged].contains(step.change.kind)
            || (mode == .synced && step.change.kind == .propertyRemoved)
    }

    private static func decide(catalog: Catalog, steps: [Step], settings: MigrationSettings) -> (
        action: Action, error: StrataError?
    ) {
        let path = settings.path
        let version = settings.appSchemaVersion
        let fileVersion = catalog.fileSchemaVersion
        let list = { (steps: [Step]) in steps.map { "- \($0.change.description)" }.joined(separator: "\n") }
        if let problem = configurationProblem(settings) {
            return (.refuse, problem)
        }
        if catalog.mode != settings.mode {
            return (
                .refuse,
                StrataError(
                    .modeMismatch,
                    "\(path) is a \(catalog.mode.rawValue)-mode file, but the configuration opens it in \(settings.mode.rawValue) mode. Set Configuration.mode to .\(catalog.mode.rawValue): a file's mode is chosen when it is created and never changes.",
                    path: path)
            )
        }
        if settings.mode == .local && version < fileVersion {
            return (
                .refuse,
                StrataError(
                    .schemaVersionTooLow,
                    "Schema version \(version) is lower than the file's version \(fileVersion) (\(path)). Open it with version \(fileVersion) or later.",
                    path: path)
            )
        }
        if settings.readOnly {
            // In synced mode the version gates nothing, as in a writable open.
            if version != fileVersion && settings.mode == .local {
                return (
                    .refuse,
                    StrataError(
                        .migrationRequired,
                        "\(path) is at schema version \(fileVersion), but the read-only open asks for version \(version). A read-only open needs the file's exact version, since it cannot migrate; open it once without readOnly.",
                        path: path)
                )
            }
            let needsWrite = steps.filter { !readableWithoutWriting($0, mode: settings.mode) }
            if !needsWrite.isEmpty {
                return (
                    .refuse,
                    StrataError(
                        .migrationRequired,
                        "Opening \(path) read-only needs a schema that the file can serve without changes, but:\n\(list(needsWrite))\nOpen it once without readOnly to apply them.",
                        path: path)
                )
            }
            return (.open, nil)
        }
        let forbidden = steps.filter { $0.handling == .forbidden }
        switch settings.mode {
        case .synced:
            if !forbidden.isEmpty {
                return (
                    .refuse,
                    StrataError(
                        .migrationForbidden,
                        "These changes to the schema of \(path) are not allowed in synced mode, where older app versions still read the data:\n\(forbidden.map { "- \($0.change.description)\($0.change.kind == .typeRemoved ? " \($0.effect)" : "")" }.joined(separator: "\n"))\nKeep existing properties and types as they are, and add new ones instead.",
                        path: path)
                )
            }
        case .local:
            if version > fileVersion {
                if settings.deleteIfMigrationNeeded { return (.deleteAndRecreate, nil) }
                let unconverted = forbidden.filter(\.lacksConversion)
                if !unconverted.isEmpty {
                    return (
                        .refuse,
                        unconvertedValues(unconverted, others: forbidden.filter { !$0.lacksConversion }, path: path)
                    )
                }
                if !forbidden.isEmpty {
                    return (
                        .refuse,
                        StrataError(
                            .migrationForbidden,
                            "These changes to the schema of \(path) cannot be migrated:\n\(forbidden.map { "- \($0)" }.joined(separator: "\n"))\nNothing was written.",
                            path: path)
                    )
                }
                return (.migrate, nil)
            }
            if !forbidden.isEmpty {
                if settings.deleteIfMigrationNeeded { return (.deleteAndRecreate, nil) }
                return (
                    .refuse,
                    StrataError(
                        .migrationRequired,
                        "The schema of \(path) differs from the configured one at the same schema version \(version):\n\(list(steps))\nRaise the schema version to \(version + 1) to migrate the file.\(conversionAdvice(steps))",
                        path: path)
                )
            }
        }
        return (.open, nil)
    }
}
