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
    /// A typed step counts when it maps the type from a model that reads
    /// the stored values: one whose property of that name has the stored
    /// value type `stored`.
    func valueConversion(type: String, property: String, stored: PropertyType?, fileVersion: UInt64)
        -> ValueConversion?
    {
        if migration != nil { return .closure }
        for step in typed?.steps(from: fileVersion) ?? [] {
            if step.mappings.contains(where: {
                $0.newModel.objectSchema.name == type && $0.oldModel.objectSchema[property: property]?.type == stored
            }) {
                return .typedStep(step.name)
            }
            if !step.blocks.isEmpty { return .stepBlock(step.name) }
        }
        if discardedValues[type]?.contains(property) == true { return .discarded }
        return nil
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
