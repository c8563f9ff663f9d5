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
}
