import Logging

/// A migration closure: the ``Migration`` to work with, and the schema
/// version the file had before it. `Database.MigrationBlock` names the same
/// type.
public typealias MigrationBlock = @Sendable (_ migration: Migration, _ oldSchemaVersion: UInt64) throws -> Void

/// A progress callback for long migrations. `Database.ProgressHandler`
/// names the same type.
public typealias MigrationProgressHandler = @Sendable (MigrationProgress) -> Void

/// What planning and running a migration need to know of a configuration:
/// the file, the app's schema and version, the mode and the migration
/// options. `Database.Configuration` composes it (``Database/Configuration/migrationSettings``);
/// the migration layer knows nothing else of the database above it.
struct MigrationSettings: Sendable {
    /// The database file.
    var path: String
    /// The app's schema.
    var schema: Schema
    /// The app's schema version: the version a local-mode file migrates to,
    /// and the one stamped on the objects this app writes.
    var appSchemaVersion: UInt64
    var mode: DatabaseMode
    var migration: MigrationBlock?
    var progress: MigrationProgressHandler?
    var logger: Logger?
    var readOnly: Bool
    var deleteIfMigrationNeeded: Bool
    /// The declared schema versions and typed steps, for a configuration
    /// built from ``VersionedSchema`` types or models.
    var typed: TypedMigrations? = nil
    /// Properties whose values the app discards when their type changes,
    /// by type name.
    var discardedValues: [String: Set<String>] = [:]
    /// Makers of the subscribers the migration's writes are handed to
    /// (``ChangeSubscriber``), besides observation's.
    var changeSubscribers: [@Sendable () -> any ChangeSubscriber] = []

    /// Whether the configuration has typed steps (which, like a closure,
    /// synced mode refuses).
    var hasTypedSteps: Bool { !(typed?.steps.isEmpty ?? true) }

    /// Whether a migration of a file at `fileVersion` whose schema is
    /// `oldSchema` runs a closure: the configuration's, or the typed work.
    func runsClosure(fileVersion: UInt64, oldSchema: Schema) -> Bool {
        migration != nil || typed?.hasWork(fileVersion: fileVersion, oldSchema: oldSchema) == true
    }

    /// What says how the stored values of `property` of `type`, whose value
    /// type changed, become new ones in a migration of a file at
    /// `fileVersion`; nil when nothing does.
    ///
    /// With typed steps, every step across which the declared versions give
    /// the property another type (or drop it) must handle it: by mapping
    /// the type, or a type that embeds it, or with a `migrate` block when no
    /// step maps the type (blocks run first, and a mapping starts from the
    /// stored objects). A step that maps the type while its value type
    /// stays the same converts nothing: the next step would hand the old
    /// values to the new type.
    func valueConversion(type: String, property: String, fileVersion: UInt64) -> ValueConversion? {
        if migration != nil { return .closure }
        let discard: ValueConversion? = discardedValues[type]?.contains(property) == true ? .discarded : nil
        guard let typed else { return discard }
        let owners = Set(valueOwners(of: type))
        let steps = typed.steps(from: fileVersion)
        // Blocks run before the mappings, which start from the stored
        // objects: where any step maps the type, a block's values are lost.
        let mapped = steps.contains { $0.mappings.contains { owners.contains($0.newModel.objectSchema.name) } }
        var conversion: ValueConversion?
        for step in steps {
            let before = typed.declaration(at: step.fromVersion)?.schema[type]?[property: property]
            let after = typed.declaration(at: step.toVersion)?.schema[type]?[property: property]
            if let before, let after, before.hasSameShape(as: after) { continue }
            if step.mappings.contains(where: { owners.contains($0.newModel.objectSchema.name) }) {
                conversion = conversion ?? .typedStep(step.name)
            } else if !step.blocks.isEmpty && !mapped {
                conversion = conversion ?? .stepBlock(step.name)
            } else {
                return discard
            }
        }
        return conversion ?? discard
    }

    /// The types whose mapping can set the values of `type`'s properties:
    /// the type itself and, for an embedded type, every type of the schema
    /// that embeds it, at any depth.
    func valueOwners(of type: String) -> [String] {
        var owners = [type]
        var index = 0
        while index < owners.count {
            let embedded = owners[index]
            index += 1
            guard schema[embedded]?.isEmbedded == true else { continue }
            for objectSchema in schema.objectSchemas where !owners.contains(objectSchema.name) {
                if objectSchema.properties.contains(where: { $0.isEmbedding && $0.target == embedded }) {
                    owners.append(objectSchema.name)
                }
            }
        }
        return owners
    }

    /// The closure a migration runs: the configuration's, then the typed
    /// steps and declared renames.
    var effectiveMigration: MigrationBlock? {
        guard let typed else { return migration }
        let block = typed.block
        guard let migration else { return block }
        return { m, version in
            try migration(m, version)
            try block(m, version)
        }
    }
}

/// What converts the stored values of a property whose value type changed.
enum ValueConversion: Equatable {
    /// The configuration's migration closure.
    case closure
    /// A typed step that maps the property's type (named).
    case typedStep(String)
    /// A typed step's dynamic `migrate` block (the step named).
    case stepBlock(String)
    /// ``Database/Configuration/discardValues(of:onType:)``.
    case discarded
}
