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
                error = StrataError.fileMissing(path: path, readOnly: true)
            } else if let problem = MigrationPlan.configurationProblem(settings) {
                action = .refuse
                error = problem
            } else {
                action = .createFile
                error = nil
            }
            return
        }
        // Which stored field each property of the schema is, asked once.
        let pairing = catalog.pairing(
            with: settings.schema, at: settings.appSchemaVersion, declared: settings.typed?.versions.map(\.names) ?? [])
        var planned = MigrationPlan.steps(from: catalog, settings: settings, pairing: pairing)
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
                to: settings.schema, schemaVersion: settings.appSchemaVersion, mode: settings.mode, pairing: pairing)
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

    /// Options that cannot be combined, checked before the file is touched.
    static func configurationProblem(_ settings: MigrationSettings) -> StrataError? {
        let path = settings.path
        if settings.deleteIfMigrationNeeded && settings.mode == .synced {
            return .invalidConfiguration(
                path: path,
                "deleteIfMigrationNeeded cannot be used in synced mode (\(path)): deleting the file would lose data that older app versions share.",
                remedy: "Turn it off.")
        }
        if settings.deleteIfMigrationNeeded && settings.readOnly {
            return .invalidConfiguration(
                path: path,
                "deleteIfMigrationNeeded cannot be combined with readOnly (\(path)): a read-only open never deletes the file.",
                remedy: "Turn one of them off.")
        }
        if settings.mode == .synced && settings.hasTypedSteps {
            let names = settings.typed?.steps.map(\.name).joined(separator: ", ") ?? ""
            return .migrationForbidden(
                path: path,
                "\(path) is opened in synced mode, where older app versions share the data, so typed migration steps (\(names)) cannot run.",
                remedy:
                    "Remove them from Configuration.migrations: synced mode allows only additive changes, which need no step."
            )
        }
        if settings.mode == .synced && settings.migration != nil {
            return .migrationForbidden(
                path: path,
                "\(path) is opened in synced mode, where older app versions share the data, so a migration closure cannot run.",
                remedy:
                    "Remove Configuration.migration: synced mode allows only additive changes, which need no closure.")
        }
        return nil
    }

    /// The records and indexes a migration from `old` to `evolved`
    /// rewrites and builds by itself; `mapped` are the types typed steps map.
    static func work(from old: Catalog, to evolved: Catalog, mapped: Set<String>) -> (
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
}
