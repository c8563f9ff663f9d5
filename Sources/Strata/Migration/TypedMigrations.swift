/// One declared schema version, without its Swift types: what planning
/// and composing typed steps need to know of a ``VersionedSchema``.
struct VersionDeclaration: Sendable {
    let version: UInt64
    /// The ``VersionedSchema`` type's name, for messages.
    let name: String
    let models: [ModelDeclaration]

    var schema: Schema { Schema(ModelDeclaration.objectSchemas(of: models)) }

    func model(named typeName: String) -> ModelDeclaration? {
        models.first { $0.objectSchema.name == typeName }
    }

    /// This version's names, with the renames its models and embedded
    /// types declare, as a ``FieldResolver`` reads them.
    var names: FieldResolver.Version {
        var types = models.map { FieldResolver.TypeNames($0.objectSchema, originalNames: $0.originalNames) }
        for model in models {
            for embedded in model.embeddedSchemas where !types.contains(where: { $0.name == embedded.name }) {
                types.append(
                    FieldResolver.TypeNames(embedded, originalNames: model.embeddedOriginalNames[embedded.name]))
            }
        }
        return FieldResolver.Version(version: version, types: types)
    }
}

/// The typed side of a configuration: its declared schema versions (the
/// app's own last) and its typed steps, checked and composed here.
struct TypedMigrations: Sendable {
    /// Ascending by version; the app's current version is the last one.
    let versions: [VersionDeclaration]
    let steps: [MigrationStep]
    let appVersion: UInt64

    init(current: VersionDeclaration, older: [VersionDeclaration], steps: [MigrationStep]) {
        self.versions = (older + [current]).sorted { $0.version < $1.version }
        self.steps = steps
        self.appVersion = current.version
    }

    func declaration(at version: UInt64) -> VersionDeclaration? {
        versions.first { $0.version == version }
    }

    /// The steps a file at `fileVersion` needs, in order.
    func steps(from fileVersion: UInt64) -> [MigrationStep] {
        steps.filter { $0.fromVersion >= fileVersion && $0.toVersion <= appVersion }
    }

    // MARK: Checks before anything is written

    /// Every problem of the declared versions and steps, one sentence each.
    var validationProblems: [String] {
        var problems: [String] = []
        var seen: [UInt64: String] = [:]
        for declaration in versions {
            if let other = seen[declaration.version] {
                problems.append(
                    "\(other) and \(declaration.name) both declare schema version \(declaration.version); give each shipped version its own number."
                )
            }
            seen[declaration.version] = declaration.name
            if declaration.version > appVersion {
                problems.append(
                    "\(declaration.name) declares schema version \(declaration.version), newer than the configured version \(appVersion); `versions` lists the older versions the app can migrate from."
                )
            }
            var byName: [String: [String]] = [:]
            for model in declaration.models { byName[model.objectSchema.name, default: []].append(model.swiftName) }
            for (name, models) in byName.sorted(by: { $0.key < $1.key }) where models.count > 1 {
                problems.append(
                    "\(declaration.name) (schema version \(declaration.version)) lists \(models.count) models with the stored name '\(name)': \(models.joined(separator: ", ")). List one model per stored type in each version."
                )
            }
        }
        var previous: MigrationStep?
        for step in steps {
            let undeclared = [(step.fromVersion, step.fromName), (step.toVersion, step.toName)].filter {
                declaration(at: $0.0) == nil
            }
            for (version, name) in undeclared {
                problems.append(
                    "The step \(step.name) names \(name) (schema version \(version)), which the configuration does not declare: add it to `versions` (or make it the configuration's schema)."
                )
            }
            if step.fromVersion >= step.toVersion {
                problems.append(
                    "The step \(step.name) goes from schema version \(step.fromVersion) to \(step.toVersion); a step goes from an older version to a newer one. Swap its from: and to:."
                )
            } else if let skipped = versions.first(where: {
                $0.version > step.fromVersion && $0.version < step.toVersion
            }) {
                problems.append(
                    "The step \(step.name) skips \(skipped.name) (schema version \(skipped.version)), so a file at that version would have no step to run. Split it into \(step.fromName) → \(skipped.name) and \(skipped.name) → \(step.toName)."
                )
            }
            if let previous, step.fromVersion < previous.toVersion {
                problems.append(
                    "The step \(step.name) comes after \(previous.name) but starts before it ends; list the steps oldest first, one per pair of consecutive versions."
                )
            }
            previous = step
            var mapped: Set<String> = []
            for mapping in step.mappings {
                let old = mapping.oldModel
                let new = mapping.newModel
                if old.objectSchema.name != new.objectSchema.name {
                    problems.append(
                        "The step \(step.name) maps \(old.swiftName) ('\(old.objectSchema.name)') to \(new.swiftName) ('\(new.objectSchema.name)'); a mapping keeps the stored type. Rename the type with migration.renameType in the step's migrate block."
                    )
                }
                if !mapped.insert(old.objectSchema.name).inserted {
                    problems.append(
                        "The step \(step.name) maps '\(old.objectSchema.name)' twice; give each type one mapping per step."
                    )
                }
                if let from = declaration(at: step.fromVersion), from.model(named: old.objectSchema.name) == nil {
                    problems.append(
                        "The step \(step.name) maps \(old.swiftName), but \(step.fromName) has no model of '\(old.objectSchema.name)'. Add \(old.swiftName) to \(step.fromName).models, or map a model that \(step.fromName) lists."
                    )
                }
                if let to = declaration(at: step.toVersion), to.model(named: new.objectSchema.name) == nil {
                    problems.append(
                        "The step \(step.name) maps to \(new.swiftName), but \(step.toName) has no model of '\(new.objectSchema.name)'. Add \(new.swiftName) to \(step.toName).models, or map to a model that \(step.toName) lists."
                    )
                }
            }
        }
        return problems
    }

    /// The error for a file at a declared version whose stored schema is
    /// not the one that version's models describe; nil when they agree.
    func mismatch(fileVersion: UInt64, fileSchema: Schema, path: String) -> StrataError? {
        guard fileVersion < appVersion, let declared = declaration(at: fileVersion) else { return nil }
        let changes = schemaChanges(from: declared.schema, to: fileSchema)
        guard !changes.isEmpty else { return nil }
        return .releaseMismatch(
            release: declared.name, version: fileVersion, changes: changes.map(\.description), path: path)
    }

    // MARK: Composition

    /// The resolver of the declared versions' names for a file whose
    /// catalog is `catalog`: its fields at the file's version have the
    /// catalog's ids. `renamedTypes` maps a type's name now to its name in
    /// `catalog`, for the types a migration renamed.
    func resolver(catalog: Catalog, renamedTypes: [String: String]) -> FieldResolver {
        FieldResolver(versions: versions.map(\.names), catalog: catalog, renamedTypes: renamedTypes)
    }

    /// The version stamped on an object of `type` last written by a step
    /// to `version`: a later version whose model changes a value type, an
    /// optionality or the primary key rewrites every record in an open of
    /// its own, so composing must stamp that version too.
    func stamp(_ type: String, after version: UInt64) -> UInt64 {
        var stamp = version
        var previous = declaration(at: version)?.model(named: type)?.objectSchema
        for declaration in versions where declaration.version > version && declaration.version <= appVersion {
            let current = declaration.model(named: type)?.objectSchema
            if let previous, let current,
                schemaChanges(from: Schema([previous]), to: Schema([current])).contains(where: {
                    [.propertyTypeChanged, .madeRequired, .primaryKeyChanged].contains($0.kind)
                })
            {
                stamp = declaration.version
            }
            previous = current
        }
        return stamp
    }

    /// The property renames that models and embedded types declare for a
    /// file at `fileVersion`, as the catalog applies them, in order: only
    /// chains that end on a property of the app's schema with the type and
    /// optionality the file stores (a chain that ends elsewhere is carried
    /// by typed steps, in memory). The chains are the resolver's.
    func renames(fileVersion: UInt64, oldSchema: Schema) -> [(type: String, from: String, to: String)] {
        guard fileVersion < appVersion, let current = versions.last else { return [] }
        let file = FieldResolver.Version(version: fileVersion, types: oldSchema.objectSchemas.map { .init($0) })
        let resolver = FieldResolver(versions: versions.map(\.names), file: file)
        var renames: [(type: String, from: String, to: String)] = []
        for type in current.names.types {
            guard let before = oldSchema[type.name] else { continue }
            for property in type.properties {
                let names = resolver.names(of: type.name, property.name, at: appVersion, since: fileVersion)
                guard names.count > 1, !type.properties.contains(where: { $0.name == names[0] }),
                    before[property: property.name] == nil,
                    let source = before[property: names[0]],
                    source.type == property.type && source.isOptional == property.isOptional
                else { continue }
                for (from, to) in zip(names, names.dropFirst()) { renames.append((type.name, from, to)) }
            }
        }
        return renames
    }

    /// Whether a file at `fileVersion` has typed work to do: steps or
    /// declared renames.
    func hasWork(fileVersion: UInt64, oldSchema: Schema) -> Bool {
        !steps(from: fileVersion).isEmpty || !renames(fileVersion: fileVersion, oldSchema: oldSchema).isEmpty
    }

    /// The migration block that runs the typed work for a file, inside
    /// the migration's write transaction.
    var block: MigrationBlock {
        let typed = self
        return { migration, fileVersion in
            try TypedMigrationRun(typed: typed, migration: migration, fileVersion: fileVersion).run()
        }
    }
}

/// Where a stage of a typed migration reads the old model from: a stored
/// record (the first stage, when its old model is the file's own), or the
/// values the previous conversion left by position.
enum StageInput {
    case record(RecordView)
    case values(UnsafePointer<Value>)
}

/// A typed mapping with its model types erased, so that a step can hold
/// mappings of different models; the work per object stays generic over
/// the concrete types.
protocol TypedMapping: Sendable {
    var oldModel: ModelDeclaration { get }
    var newModel: ModelDeclaration { get }
    /// A binding of the old model that decodes from values by position.
    func valueBinding(table: ObjectTable) throws -> ModelBinding
    /// A binding of the old model that decodes straight from the records
    /// of `table`, the file's table of the model's type.
    func recordBinding(table: ObjectTable) throws -> ModelBinding
    /// A binding of the new model that writes records of `table`, the
    /// app's table of the model's type; nil when the model's properties
    /// are not that table's fields.
    func newRecordBinding(table: ObjectTable) -> ModelBinding?
    /// Runs the mapping on the old model read from `input`; writes the new
    /// model's `count` values into `output`, and its record into `record`
    /// when given and it can; returns false for a deleted object.
    func apply(
        _ input: StageInput, binding: ModelBinding, key: UnsafeRawBufferPointer,
        context: MigrationStepContext, output: UnsafeMutablePointer<Value>, count: Int, record: RecordTarget?
    ) throws -> Bool
    /// ``apply(_:binding:key:context:output:count:record:)`` with everything
    /// but the input and the key bound, as one closure of the concrete types.
    func application(
        binding: ModelBinding, context: MigrationStepContext, output: UnsafeMutablePointer<Value>, count: Int,
        record: RecordTarget?
    ) -> (StageInput, UnsafeRawBufferPointer) throws -> Bool
}

/// Where the last stage of a walk writes each new model's record when it
/// can: straight into the migration rewriter's encoder, field bytes as the
/// model hands its properties over, with no `Value` in between.
final class RecordTarget {
    /// The new model against the app's table.
    let binding: ModelBinding
    /// The rewriter's encoder (``RecordRewriter/recordEncoder``).
    let encoder: ObjectEncoder
    /// The version stamped on the records.
    let schemaVersion: UInt64
    /// Whether the last object's record was written; when not (a value
    /// that does not fit its field as it is, or an encoding error), the
    /// stage's values are written the general way, which converts or
    /// explains.
    var wrote = false

    init(binding: ModelBinding, encoder: ObjectEncoder, schemaVersion: UInt64) {
        self.binding = binding
        self.encoder = encoder
        self.schemaVersion = schemaVersion
    }
}

struct Mapping<Old: Model, New: Model>: TypedMapping {
    /// Decodes the old model, runs the step's function and encodes the new
    /// model; false when the function returned nil (delete the object).
    let run: @Sendable (inout ModelDecoder, MigrationStepContext, inout ModelEncoder) throws -> Bool

    var oldModel: ModelDeclaration { Old.declaration }
    var newModel: ModelDeclaration { New.declaration }

    func valueBinding(table: ObjectTable) throws -> ModelBinding {
        try ModelBinding(Old.self, table: table, bindsFields: false)
    }

    func recordBinding(table: ObjectTable) throws -> ModelBinding {
        try ModelBinding(Old.self, table: table)
    }

    func newRecordBinding(table: ObjectTable) -> ModelBinding? {
        guard let binding = try? ModelBinding(New.self, table: table), binding.writesRecords else { return nil }
        return binding
    }

    func application(
        binding: ModelBinding, context: MigrationStepContext, output: UnsafeMutablePointer<Value>, count: Int,
        record: RecordTarget?
    ) -> (StageInput, UnsafeRawBufferPointer) throws -> Bool {
        { input, key in
            try apply(input, binding: binding, key: key, context: context, output: output, count: count, record: record)
        }
    }

    @inline(__always)
    func apply(
        _ input: StageInput, binding: ModelBinding, key: UnsafeRawBufferPointer,
        context: MigrationStepContext, output: UnsafeMutablePointer<Value>, count: Int, record: RecordTarget?
    ) throws -> Bool {
        var decoder =
            switch input {
            case .record(let record): ModelDecoder(binding: binding, record: record, key: key)
            case .values(let values): ModelDecoder(binding: binding, values: values, key: key)
            }
        // A table with kept fields (synced mode) is written by the
        // general encoder, which carries them over.
        if let record, record.binding.table.keptFields.isEmpty,
            var encoder = record.binding.recordEncoder(
                into: record.encoder, schemaVersion: record.schemaVersion, keepingValuesIn: output)
        {
            record.wrote = false
            guard try run(&decoder, context, &encoder) else { return false }
            record.wrote =
                (try? record.binding.finishRecord(encoder, into: record.encoder, schemaVersion: record.schemaVersion))
                ?? false
            return true
        }
        var encoder = ModelEncoder(slots: output, capacity: count)
        guard try run(&decoder, context, &encoder) else { return false }
        precondition(
            encoder.count == count,
            "The model \(New.self) encoded \(encoder.count) properties; its schema declares \(count).")
        return true
    }
}
