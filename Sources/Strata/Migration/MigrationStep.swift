/// A typed migration step: how the objects of one shipped schema version
/// become the objects of the next, written as functions from the old
/// model values to the new ones.
///
/// List the steps in `Database.Configuration(path:schema:versions:migrations:)`,
/// oldest first, one per pair of consecutive versions that needs one:
///
/// ```swift
/// let config = Database.Configuration(
///     path: "people.strata", schema: AppV3.self, versions: [AppV1.self, AppV2.self],
///     migrations: [
///         .step(from: AppV1.self, to: AppV2.self) {
///             $0.map(PersonV1.self, to: PersonV2.self) { old in
///                 PersonV2(id: old.id, fullName: old.name, age: Int(old.age) ?? 0)
///             }
///         },
///         .step(from: AppV2.self, to: AppV3.self) {
///             $0.map(PersonV2.self, to: Person.self) { old, context in
///                 try context.insert(Address(personID: old.id, city: "Unknown"))
///                 let parts = old.fullName.split(separator: " ", maxSplits: 1).map(String.init)
///                 return Person(id: old.id, firstName: parts.first ?? "", lastName: parts.dropFirst().first ?? "", age: old.age)
///             }
///         },
///     ])
/// ```
///
/// A file several versions behind runs every step it needs per object, in
/// memory, in one walk of each type's records and with one write per
/// object: the same objects as opening it once per version. Types a step
/// does not map follow the automatic rules (properties matched by stored
/// name, renames declared with `originalName` applied, new properties at
/// their defaults). Steps run inside the one write transaction of the
/// migration: a step that throws leaves the file as it was.
public struct MigrationStep: Sendable {
    /// The schema version the step starts from.
    public let fromVersion: UInt64
    /// The schema version the step leads to.
    public let toVersion: UInt64
    /// The names of the two ``VersionedSchema`` types, for messages.
    let fromName: String
    let toName: String
    let mappings: [any TypedMapping]
    let blocks: [@Sendable (Migration) throws -> Void]

    /// A step from the version `from` describes to the version `to`
    /// describes; `build` lists what it does.
    ///
    /// ```swift
    /// .step(from: AppV1.self, to: AppV2.self) {
    ///     $0.map(PersonV1.self, to: Person.self) { old in Person(id: old.id, fullName: "\(old.firstName) \(old.lastName)") }
    ///     $0.migrate { migration in try migration.deleteData(forType: "Session") }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - from: The older version; it must be listed in the configuration's
    ///     `versions`.
    ///   - to: The next version the configuration declares (the current
    ///     schema, or one of `versions`).
    ///   - build: Called once, right away, with a ``Builder`` to add
    ///     mappings and dynamic blocks to.
    public static func step<From: VersionedSchema, To: VersionedSchema>(
        from: From.Type, to: To.Type, _ build: (Builder) -> Void
    ) -> MigrationStep {
        let builder = Builder()
        build(builder)
        return MigrationStep(
            fromVersion: From.version, toVersion: To.version, fromName: String(describing: From.self),
            toName: String(describing: To.self), mappings: builder.mappings, blocks: builder.blocks)
    }

    /// `AppV1 → AppV2`.
    var name: String { "\(fromName) → \(toName)" }

    /// What the step does, for ``MigrationPlan/typedSteps``: e.g.
    /// `AppV1 → AppV2 (1 → 2): maps PersonV1 to Person`.
    var summary: String {
        var parts = mappings.map { "maps \($0.oldModel.swiftName) to \($0.newModel.swiftName)" }
        if !blocks.isEmpty { parts.append("runs \(blocks.count) dynamic block\(blocks.count == 1 ? "" : "s")") }
        if parts.isEmpty { parts = ["nothing"] }
        return "\(name) (\(fromVersion) → \(toVersion)): \(parts.joined(separator: ", "))"
    }

    /// Collects what one ``MigrationStep`` does: typed mappings, one per
    /// object type, and dynamic blocks for what a mapping cannot say.
    ///
    /// Valid only inside the `build` closure of
    /// ``MigrationStep/step(from:to:_:)``.
    public final class Builder {
        fileprivate var mappings: [any TypedMapping] = []
        fileprivate var blocks: [@Sendable (Migration) throws -> Void] = []

        fileprivate init() {}

        /// Maps each stored object of `Old`'s type to a value of `New`:
        /// return nil to delete the object.
        ///
        /// `Old` is the type's model in the step's `from` version and `New`
        /// its model in the `to` version; both have the same stored type
        /// name (to rename a type, call `renameType` in ``migrate(_:)``).
        /// The object keeps its primary key: a mapping that changes it fails
        /// the migration.
        ///
        /// ```swift
        /// $0.map(PersonV1.self, to: Person.self) { old in
        ///     old.age < 0 ? nil : Person(id: old.id, fullName: "\(old.firstName) \(old.lastName)", age: old.age)
        /// }
        /// ```
        @inlinable
        public func map<Old: Model, New: Model>(
            _ old: Old.Type, to new: New.Type, _ transform: @escaping @Sendable (Old) throws -> New?
        ) {
            addMapping(Old.self, to: New.self) { decoder, _, encoder in
                guard let new = try transform(Old(from: &decoder)) else { return false }
                new.encode(to: &encoder)
                return true
            }
        }

        /// Maps each stored object of `Old`'s type to a value of `New`, with
        /// a ``MigrationStepContext`` to create objects of other types:
        /// return nil to delete the object.
        ///
        /// ```swift
        /// $0.map(PersonV2.self, to: Person.self) { old, context in
        ///     try context.insert(Address(personID: old.id, city: old.city))
        ///     return Person(id: old.id, name: old.name)
        /// }
        /// ```
        ///
        /// Objects inserted here go through the later steps of their type,
        /// as if they had been stored at the step's `to` version.
        @inlinable
        public func map<Old: Model, New: Model>(
            _ old: Old.Type, to new: New.Type,
            _ transform: @escaping @Sendable (Old, MigrationStepContext) throws -> New?
        ) {
            addMapping(Old.self, to: New.self) { decoder, context, encoder in
                guard let new = try transform(Old(from: &decoder), context) else { return false }
                new.encode(to: &encoder)
                return true
            }
        }

        /// Adds the mapping of `Old` to `New` that `run` performs: decode the
        /// old model, transform it, encode the new one (false: delete the
        /// object). The `map` methods are inlinable and build `run` in the
        /// app's module, where `Old`, `New` and `New?` are concrete types:
        /// run here, generic over the app's models, each object paid a
        /// runtime lookup of `Optional<New>`'s metadata (325 instructions)
        /// and unspecialized calls of `init(from:)` and `encode(to:)`.
        @usableFromInline
        func addMapping<Old: Model, New: Model>(
            _ old: Old.Type, to new: New.Type,
            _ run: @escaping @Sendable (inout ModelDecoder, MigrationStepContext, inout ModelEncoder) throws -> Bool
        ) {
            mappings.append(Mapping<Old, New>(run: run))
        }

        /// Adds a block that works with the dynamic ``Migration`` API, for
        /// what a mapping cannot say: `renameType`, `deleteData`, objects of
        /// types without a model.
        ///
        /// Blocks run before any mapping walks objects, in the order of the
        /// steps, and only for the steps the file needs.
        ///
        /// ```swift
        /// $0.migrate { migration in
        ///     try migration.renameType(from: "Dog", to: "Hound")
        /// }
        /// ```
        public func migrate(_ block: @escaping @Sendable (Migration) throws -> Void) {
            blocks.append(block)
        }
    }
}

/// What a typed mapping can do besides returning the new value: create
/// objects of other types.
///
/// Valid only during the call of the mapping it was passed to.
public final class MigrationStepContext {
    weak var run: TypedMigrationRun?
    /// The step the mapping belongs to, by position in the run.
    let stepIndex: Int

    init(run: TypedMigrationRun, stepIndex: Int) {
        self.run = run
        self.stepIndex = stepIndex
    }

    /// Creates an object, as a value of its type's model at the step's
    /// `to` version; later steps of its type then apply to it.
    ///
    /// ```swift
    /// try context.insert(Address(personID: old.id, city: "Unknown"))
    /// ```
    ///
    /// - Throws: ``StrataError``: a type the configured schema lacks, or a
    ///   primary key that another object already has. The migration then
    ///   fails and nothing is written.
    public func insert<M: Model>(_ object: M) throws {
        guard let run else {
            preconditionFailure("A MigrationStepContext was used after the mapping it was passed to returned.")
        }
        try run.insert(object, createdAt: stepIndex)
    }
}

@available(*, unavailable, message: "A MigrationStepContext is valid only inside the mapping it was passed to.")
extension MigrationStepContext: Sendable {}
