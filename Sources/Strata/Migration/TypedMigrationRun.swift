/// Runs the typed steps a file needs, inside a migration: the steps'
/// dynamic blocks, the renames that models declare, then one walk per
/// mapped type that composes every step of that type per object, in
/// memory, and writes each object once.
///
/// An object goes through the steps as model values held by position in
/// one buffer per step, reused from object to object. Between two steps,
/// and from the last one to the app's schema, values move from field to
/// field of the same id, as the migration's ``FieldResolver`` pairs them
/// across the declared renames; a property the next model adds starts at
/// its default. Every type goes through this one
/// walk, a ``Chain``; a single step from the file's version to the app's
/// is a chain of one stage. When the first stage's old model is the
/// file's own, that stage decodes the stored records straight into it,
/// without the buffer.
final class TypedMigrationRun {
    let typed: TypedMigrations
    let migration: Migration
    let runner: MigrationRunner
    let fileVersion: UInt64
    /// The steps this file needs, in order.
    let steps: [MigrationStep]
    /// One context per step, handed to its mappings.
    private var contexts: [MigrationStepContext] = []
    /// Chains for objects created by a step, by model and step.
    private var creationChains: [CreationKey: Chain] = [:]
    /// The declared versions' names against the file's catalog, made once
    /// the steps' blocks and the declared renames have run.
    private var resolver: FieldResolver?

    private struct CreationKey: Hashable {
        let model: ObjectIdentifier
        let step: Int
    }

    init(typed: TypedMigrations, migration: Migration, fileVersion: UInt64) {
        self.typed = typed
        self.migration = migration
        self.runner = migration.activeRunner
        self.fileVersion = fileVersion
        self.steps = typed.steps(from: fileVersion)
    }

    func run() throws {
        contexts = steps.indices.map { MigrationStepContext(run: self, stepIndex: $0) }
        defer { contexts = [] }
        for step in steps {
            for block in step.blocks { try block(migration) }
        }
        for rename in typed.renames(fileVersion: fileVersion, oldSchema: migration.oldSchema) {
            try migration.renameProperty(onType: rename.type, from: rename.from, to: rename.to)
        }
        let mappedTypes = Set(steps.flatMap { $0.mappings.map(\.oldModel.objectSchema.name) }).sorted()
        guard !mappedTypes.isEmpty else { return }
        let old = runner.scope.old
        var renamedTypes: [String: String] = [:]
        for type in runner.catalog.working.types {
            if let before = old[typeID: type.id]?.name, before != type.name { renamedTypes[type.name] = before }
        }
        resolver = typed.resolver(catalog: old, renamedTypes: renamedTypes)
        defer { resolver = nil }
        for typeName in mappedTypes { try walk(typeName) }
    }

    // MARK: Walking stored objects

    /// The resolver, which exists while the mapped types are walked: the
    /// only time a chain is made.
    private func requireResolver() -> FieldResolver {
        guard let resolver else { preconditionFailure("A typed migration made a chain outside its walks.") }
        return resolver
    }

    private func walk(_ typeName: String) throws {
        let catalog = runner.catalog
        guard let index = catalog.typeIndex(typeName),
            let oldTable = runner.scope.oldTables[catalog.working.types[index].id]
        else { return }
        let newTable = try catalog.newType(named: typeName).map { try runner.records.table(for: $0) }
        // The first stage reads the records when its old model is the one
        // the file's version declares.
        let declared = typed.declaration(at: fileVersion)?.model(named: typeName)?.objectSchema
        let first = steps.lazy.compactMap { step in
            step.mappings.first { $0.oldModel.objectSchema.name == typeName }.map { (step, $0) }
        }.first
        let readsRecords = first.map { $0.0.fromVersion == fileVersion && $0.1.oldModel.objectSchema == declared }
        let stages = try stages(
            of: typeName, after: nil, table: newTable ?? oldTable, records: readsRecords == true ? oldTable : nil,
            writing: newTable)
        guard let last = stages.last else { return }
        let stamp = typed.stamp(typeName, after: last.step.toVersion)
        let resolver = requireResolver()
        let chain = Chain(
            stages: stages, resolver: resolver,
            source: resolver.shape(of: oldTable.name, oldTable.shape.fields.map(\.property), at: fileVersion),
            target: newTable, targetVersion: typed.appVersion, stamp: stamp)
        let walked = try runner.records.walkTyped(
            typeName,
            run: { record, key in
                guard try chain.run(record: record, of: oldTable, key: key) else { return .deleted }
                return chain.record?.wrote == true ? .encoded : .values
            },
            writeValues: chain.write(into:))
        guard !walked else { return }
        let migration = self.migration
        try migration.enumerateObjects(ofType: typeName) { old, new in
            guard let old else { return }
            guard try chain.run(record: old.record, of: oldTable, key: old.key) else {
                if let new { migration.delete(new) }
                return
            }
            guard let new else { return }
            if let record = chain.record, record.wrote {
                // The last stage wrote the record itself.
                record.encoder.record.withUnsafeBytes { bytes in
                    guard let view = try? RecordView(trusting: bytes) else {
                        preconditionFailure("A record a typed step encoded for '\(typeName)' does not decode")
                    }
                    new.adoptEncodedRecord(view)
                }
                new.stampedVersion = chain.stamp
            } else {
                chain.write(into: new)
            }
        }
    }

    /// The stages of `typeName`'s mappings in the steps after `step` (all
    /// of them when nil). The first stage decodes the records of
    /// `records`, the file's table, when given. The last one encodes the
    /// records of `writing`, the app's table, itself when its new model is
    /// the app's and that model's properties are the table's fields.
    private func stages(
        of typeName: String, after step: Int?, table: ObjectTable, records: ObjectTable? = nil,
        writing: ObjectTable? = nil
    ) throws -> [Stage] {
        let found = steps.enumerated().filter { $0.offset > (step ?? -1) }.flatMap { index, candidate in
            candidate.mappings.filter { $0.oldModel.objectSchema.name == typeName }.map { (index, candidate, $0) }
        }
        var stages: [Stage] = []
        for (offset, (index, candidate, mapping)) in found.enumerated() {
            let records = stages.isEmpty ? records : nil
            var target: RecordTarget?
            if offset == found.count - 1, let writing, candidate.toVersion == typed.appVersion,
                let binding = mapping.newRecordBinding(table: writing)
            {
                target = RecordTarget(
                    binding: binding, encoder: runner.records.recordEncoder,
                    schemaVersion: typed.stamp(typeName, after: candidate.toVersion))
            }
            stages.append(
                Stage(
                    mapping: mapping, step: candidate, context: contexts[index],
                    binding: try records.map(mapping.recordBinding) ?? mapping.valueBinding(table: table),
                    readsRecords: records != nil, record: target))
        }
        return stages
    }

    // MARK: Objects created by a step

    /// Inserts an object that the mapping of step `stepIndex` created,
    /// after running it through the later steps of its type.
    func insert<M: Model>(_ object: M, createdAt stepIndex: Int) throws {
        let typeName = M.schema.name
        let call = "context.insert(\(M.self)(...))"
        guard let type = runner.catalog.newType(named: typeName) else {
            throw runner.scope.refusal(
                .unknownObjectType, call,
                "the configured schema has no type '\(typeName)'. Its types are: \(runner.scope.settings.schema.typeNames.joined(separator: ", "))."
            )
        }
        let table = try runner.records.table(for: type)
        let key = CreationKey(model: ObjectIdentifier(M.self), step: stepIndex)
        let chain: Chain
        if let known = creationChains[key] {
            chain = known
        } else {
            let createdVersion = steps[stepIndex].toVersion
            let stages = try stages(of: typeName, after: stepIndex, table: table)
            let resolver = requireResolver()
            chain = Chain(
                stages: stages, resolver: resolver,
                source: resolver.shape(of: typeName, M.schema.objectSchema.properties, at: createdVersion),
                target: table, targetVersion: typed.appVersion,
                stamp: typed.stamp(typeName, after: stages.last?.step.toVersion ?? createdVersion))
            chain.source = .allocate(capacity: max(M.schema.objectSchema.properties.count, 1))
            chain.source!.initialize(repeating: .null)
            creationChains[key] = chain
        }
        let source = chain.source!
        var encoder = ModelEncoder(slots: source.baseAddress!, capacity: source.count)
        object.encode(to: &encoder)
        if let first = chain.stages.first {
            chain.entry.convert(into: first.input.baseAddress!) { source[$0] }
            guard try chain.run(.values(first.input.baseAddress!), key: UnsafeRawBufferPointer(start: nil, count: 0))
            else { return }
        }
        let fields = chain.fields
        chain.exit.convert(into: fields.baseAddress!) { chain.stages.last?.output[$0] ?? source[$0] }
        try runner.records.created(in: type.id)
        do {
            try runner.scope.engine.insert(table, schemaVersion: chain.stamp) { fields[$0.position] }
        } catch let error as StrataError where error.code == .duplicatePrimaryKey {
            let key = table.primaryKey.map { "\(fields[$0.position])" } ?? "?"
            throw runner.scope.refusal(
                .duplicatePrimaryKey, call,
                "a '\(typeName)' with primary key \(key) already exists. Give the new object another key, or map the existing one instead.",
                cause: error)
        }
    }
}

/// One mapping of one step, with the buffers its values pass through.
final class Stage {
    let mapping: any TypedMapping
    let step: MigrationStep
    let context: MigrationStepContext
    /// Decodes the old model: from the stored record when
    /// ``readsRecords``, else from ``input``.
    let binding: ModelBinding
    /// Whether the stage reads the old model straight from stored records
    /// (the first stage, when its old model is the file's own).
    let readsRecords: Bool
    /// The old model's values, by position.
    let input: UnsafeMutableBufferPointer<Value>
    /// The new model's values, by position.
    let output: UnsafeMutableBufferPointer<Value>
    /// The number of the new model's stored properties.
    let outputCount: Int
    /// Where the stage writes the new model's record itself, when it can
    /// (the last stage of a walk).
    let record: RecordTarget?
    /// The mapping run on an input, writing into ``output``: made once by
    /// the mapping, so that each object calls the step's generic code
    /// directly instead of opening the mapping's existential.
    let apply: (StageInput, UnsafeRawBufferPointer) throws -> Bool

    init(
        mapping: any TypedMapping, step: MigrationStep, context: MigrationStepContext, binding: ModelBinding,
        readsRecords: Bool, record: RecordTarget? = nil
    ) {
        self.mapping = mapping
        self.record = record
        self.step = step
        self.context = context
        self.binding = binding
        self.readsRecords = readsRecords
        input = .allocate(capacity: max(mapping.oldModel.objectSchema.properties.count, 1))
        input.initialize(repeating: .null)
        outputCount = mapping.newModel.objectSchema.properties.count
        output = .allocate(capacity: max(outputCount, 1))
        output.initialize(repeating: .null)
        apply = mapping.application(
            binding: binding, context: context, output: output.baseAddress!, count: outputCount, record: record)
    }

    deinit {
        input.deinitialize()
        input.deallocate()
        output.deinitialize()
        output.deallocate()
    }
}

/// How values move from one shape to the next: per target position, the
/// source position of the same field (or -1), as ``RecordShape``s from
/// one ``FieldResolver`` pair them, and what the target reads when the
/// source has no value it can hold. Worked out once per walk.
struct Conversion {
    let sources: [Int]
    let absent: [Value]
    let optional: [Bool]

    init(from source: RecordShape, to target: RecordShape) {
        sources = source.sourcePositions(in: target)
        absent = target.fields.map(\.property.valueWhenAbsent)
        optional = target.fields.map(\.property.isOptional)
    }

    @inline(__always)
    func convert(into target: UnsafeMutablePointer<Value>, _ source: (Int) -> Value) {
        convert(source) { target[$0] = $1 }
    }

    /// Calls `put` with each target position and its value.
    @inline(__always)
    func convert(_ source: (Int) -> Value, _ put: (Int, Value) -> Void) {
        for position in sources.indices {
            let from = sources[position]
            var value = from >= 0 ? source(from) : absent[position]
            if !optional[position], case .null = value { value = absent[position] }
            put(position, value)
        }
    }
}

/// The steps of one type that an object goes through, from where it
/// starts (a stored record, or a model value a step created) to the
/// app's schema.
final class Chain {
    let stages: [Stage]
    /// Into the first stage's input (or, with no stage, into ``fields``).
    let entry: Conversion
    /// Between stage `i - 1`'s output and stage `i`'s input.
    let between: [Conversion]
    /// From the last values to the fields of the app's table.
    let exit: Conversion
    /// The version stamped on the objects written.
    let stamp: UInt64
    /// Where the last stage writes records itself, if it does.
    var record: RecordTarget? { stages.last?.record }
    /// The values for the app's table, by field position.
    let fields: UnsafeMutableBufferPointer<Value>
    /// For created objects: the created model's values.
    var source: UnsafeMutableBufferPointer<Value>?

    /// - Parameters:
    ///   - source: The shape objects start in: the file's table at its
    ///     version, or the model a step created at the step's version.
    ///   - target: The app's table of the type, whose fields
    ///     `resolver` resolves at `targetVersion`, the app's version.
    init(
        stages: [Stage], resolver: FieldResolver, source: RecordShape, target: ObjectTable?,
        targetVersion: UInt64, stamp: UInt64
    ) {
        self.stages = stages
        self.stamp = stamp
        func input(_ stage: Stage) -> RecordShape {
            let model = stage.mapping.oldModel.objectSchema
            return resolver.shape(of: model.name, model.properties, at: stage.step.fromVersion)
        }
        func output(_ stage: Stage) -> RecordShape {
            let model = stage.mapping.newModel.objectSchema
            return resolver.shape(of: model.name, model.properties, at: stage.step.toVersion)
        }
        let targetProperties =
            target?.fields.map {
                Property($0.name, $0.type, optional: $0.isOptional, default: $0.valueWhenAbsent)
            } ?? []
        let targetShape = resolver.shape(of: target?.name ?? source.typeName, targetProperties, at: targetVersion)
        entry = Conversion(from: source, to: stages.first.map(input) ?? targetShape)
        between = stages.indices.dropFirst().map { index in
            Conversion(from: output(stages[index - 1]), to: input(stages[index]))
        }
        exit = stages.last.map { Conversion(from: output($0), to: targetShape) } ?? entry
        fields = .allocate(capacity: max(targetProperties.count, 1))
        fields.initialize(repeating: .null)
    }

    /// Runs every stage on a stored object of `table`, the file's table of
    /// the type; false when one of them deleted the object. The first
    /// stage reads the record itself when it can, else the values the
    /// entry conversion takes from it.
    @inline(__always)
    func run(record: RecordView, of table: ObjectTable, key: UnsafeRawBufferPointer) throws -> Bool {
        let first = stages[0]
        if first.readsRecords { return try run(.record(record), key: key) }
        entry.convert(into: first.input.baseAddress!) { table.value(at: $0, in: record) }
        return try run(.values(first.input.baseAddress!), key: key)
    }

    /// Runs every stage, the first on `input`, each next one on the
    /// previous one's output; false when one of them deleted the object.
    @inline(__always)
    func run(_ input: StageInput, key: UnsafeRawBufferPointer) throws -> Bool {
        for index in 0 ..< stages.count {
            let stage = stages[index]
            var source = input
            if index > 0 {
                let previous = stages[index - 1].output
                between[index - 1].convert(into: stage.input.baseAddress!) { previous[$0] }
                source = .values(stage.input.baseAddress!)
            }
            guard try stage.apply(source, key) else { return false }
        }
        return true
    }

    /// Writes the last stage's values into the new side of a walked object:
    /// ``exit``'s conversion, each value assigned where it is read, without
    /// an owned copy of it in between.
    @inline(__always)
    func write(into object: MutableObject) {
        let last = stages[stages.count - 1].output
        exit.sources.withUnsafeBufferPointer { sources in
            exit.optional.withUnsafeBufferPointer { optional in
                for position in 0 ..< sources.count {
                    let from = sources[position]
                    if from >= 0, optional[position] || !last[from].isNull {
                        object.assign(last[from], at: position)
                    } else {
                        object.assign(exit.absent[position], at: position)
                    }
                }
            }
        }
        object.stampedVersion = stamp
    }

    deinit {
        fields.deinitialize()
        fields.deallocate()
        if let source {
            source.deinitialize()
            source.deallocate()
        }
    }
}
