import Logging

extension Database {
    /// Everything needed to open a database: where the file is, and the
    /// schema and schema version the app expects.
    ///
    /// ```swift
    /// let config = Database.Configuration(path: "people.strata", schemaVersion: 1, schema: schema)
    /// let db = try Database(configuration: config)
    /// ```
    public struct Configuration: Sendable {
        /// The database file. Strata keeps a second file beside it, the
        /// same path followed by `-lock`.
        public var path: String
        /// The version of ``schema``. Raise it whenever the schema changes.
        /// Default: 1.
        public var schemaVersion: UInt64
        /// The object types the app uses.
        public var schema: Schema
        /// Called when the file's schema version is lower than
        /// ``schemaVersion``, once for the whole jump, with the file's
        /// version as its second argument. Additive changes are applied
        /// before it runs; removed properties are gone after it. Must be
        /// nil in ``DatabaseMode/synced`` mode. Default: nil.
        ///
        /// ```swift
        /// config.migration = { migration, oldVersion in
        ///     if oldVersion < 2 {
        ///         try migration.enumerateObjects(ofType: "Person") { old, new in
        ///             new?["fullName"] = .string("\(old!["firstName"].string!) \(old!["lastName"].string!)")
        ///         }
        ///     }
        /// }
        /// ```
        public var migration: MigrationBlock?
        /// Whether older app versions still share this file's data; recorded
        /// in the file when it is created, and checked at every open.
        /// Default: ``DatabaseMode/local``.
        public var mode: Mode
        /// Deletes the file and starts an empty one instead of migrating it,
        /// when opening it would need a migration (a higher schema version,
        /// or a change that needs one). Never in synced mode, and never for a
        /// lower schema version. For caches and development. Default: `false`.
        public var deleteIfMigrationNeeded: Bool
        /// Called as a migration goes, at least every 1% or 10,000 objects
        /// of each type and when each type is done, on the thread that runs
        /// the migration. Default: nil.
        public var progress: ProgressHandler?
        /// Where opening and migrating the file are logged: what opening does,
        /// each step of a migration with its duration, at `info` (summaries)
        /// and `debug` (each walk and index) levels. Nil, the default, logs
        /// nothing.
        ///
        /// ```swift
        /// config.logger = Logger(label: "com.example.app.database")
        /// ```
        public var logger: Logger?
        /// Opens the file without ever writing to it. The file must exist,
        /// and ``schema`` must need no change to the file; it may leave out
        /// types and indexes (and, in synced mode, properties a newer app
        /// version added). In local mode the file must be at exactly
        /// ``schemaVersion``; in synced mode the version gates nothing, as in
        /// a writable synced open. Default: `false`.
        public var readOnly: Bool
        /// How much a commit waits for the disk. Default: ``Durability/full``.
        public var durability: Durability
        /// The memory map's size at open, in bytes. The map doubles by itself
        /// whenever a transaction fills it, so this only saves a few early
        /// doublings. Default: 1 GiB on 64-bit systems, 8 MiB elsewhere; the
        /// file itself grows only as data is written. LMDB never maps less than the data the
        /// file already holds. A second `Database` for a path that is already
        /// open in this process shares the first one's map and ignores this
        /// and ``durability``.
        public var initialMapSize: Int
        /// Checks the structure of an existing file before LMDB maps it, and
        /// throws ``StrataError`` (code ``StrataError/Code/corruptFile``,
        /// naming the damaged page) instead of opening a damaged file, which
        /// LMDB could crash on: LMDB's pages carry no checksums. The check
        /// reads every page that the file's trees use, once, without LMDB:
        /// about 0.09 s for a file of a million objects (74 MB, in the page
        /// cache), where an open otherwise takes about 1 ms. It runs when this
        /// process opens the file, not for a second `Database` of a file
        /// already open. Run it only while no other process writes the file,
        /// whose commits could make pages change under the check.
        /// ``Database/verify(path:)`` runs the same check on demand.
        /// Default: `false`.
        public var verifiesFileOnOpen: Bool
        /// The typed migration steps, oldest first: run for a file at an
        /// older declared version, after ``migration``. Must be empty in
        /// ``DatabaseMode/synced`` mode. Default: none.
        ///
        /// ```swift
        /// config.migrations = [
        ///     .step(from: AppV1.self, to: AppV2.self) {
        ///         $0.map(PersonV1.self, to: Person.self) { old in Person(id: old.id, fullName: old.name) }
        ///     },
        /// ]
        /// ```
        public var migrations: [MigrationStep] = []
        /// Properties whose value type changed and whose stored values this
        /// app chooses to discard, by type name: each object then reads the
        /// property's new default. Without code that says what happens to
        /// the old values (a ``migration`` closure, a typed step that maps
        /// the type) or an entry here, a migration that changes a property's
        /// type is refused before anything is written, so that no value is
        /// reset silently. Set it with ``discardValues(of:onType:)``.
        /// Default: none.
        public private(set) var discardedValues: [String: Set<String>] = [:]
        /// Enables sync on the file, a synced-mode file only: every write
        /// transaction then records what it changed, for
        /// ``Database/sync`` to exchange with other copies of the dataset.
        /// Once enabled, a file records changes whatever later
        /// configurations say. Default: nil. See docs/Sync.md.
        public var sync: SyncConfiguration?
        /// Makers of the ``ChangeSubscriber``s that every write transaction
        /// of the database gets, migrations and `compact` included (a sync
        /// change log, a test's recorder).
        var changeSubscribers: [@Sendable () -> any ChangeSubscriber] = []
        /// How often a running observation looks for commits made by other
        /// processes, which LMDB does not announce; nil: only when
        /// ``Database/checkForExternalChanges()`` asks. Commits made through
        /// any `Database` of this process are delivered at once, whatever
        /// this says.
        ///
        /// Each look begins and ends one read transaction (about a
        /// microsecond) on a background queue, and only while at least one
        /// observation of the database runs. A commit it finds re-runs every
        /// observation of the database in full, since what another process
        /// changed is not known. Default: 0.5 seconds.
        public var externalChangeCheckInterval: Duration? = .milliseconds(500)
        /// The models the schema was built from, when it was
        /// (``init(path:schemaVersion:models:objectSchemas:)``).
        var models: [ModelDeclaration] = []
        /// The older schema versions the configuration declares
        /// (``init(path:schema:versions:migrations:)``).
        var olderVersions: [VersionDeclaration] = []
        /// The name of the current version's ``VersionedSchema``, when the
        /// configuration was built from one.
        var versionName: String?

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - path: The database file.
        ///   - schemaVersion: The version of `schema`.
        ///   - schema: The object types the app uses.
        public init(path: String, schemaVersion: UInt64 = 1, schema: Schema) {
            self.path = path
            self.schemaVersion = schemaVersion
            self.schema = schema
            self.migration = nil
            self.mode = .local
            self.deleteIfMigrationNeeded = false
            self.progress = nil
            self.logger = nil
            self.readOnly = false
            self.durability = .full
            self.initialMapSize = EnvironmentOptions.defaultInitialMapSize
            self.verifiesFileOnOpen = false
        }

        /// Declares that the stored values of `property` of `type`, whose
        /// value type this schema version changes, are to be discarded: the
        /// migration gives every object the property's new default instead
        /// of refusing to open the file.
        ///
        /// ```swift
        /// // Version 1 stored `priority` as "P1"…"P3"; version 2 stores an Int.
        /// config.discardValues(of: "priority", onType: "Task")
        /// ```
        ///
        /// A migration closure or a typed step that maps the type needs no
        /// such declaration: it sets the new values itself.
        public mutating func discardValues(of property: String, onType type: String) {
            discardedValues[type, default: []].insert(property)
        }

        /// Every problem of the schema and of the models it was built from,
        /// one sentence each: checked before a file is opened or planned.
        var validationProblems: [String] {
            var problems = schema.validationProblems()
            for model in models {
                if model.storedTypeName != model.objectSchema.name {
                    problems.append(
                        "Model \(model.swiftName) is stored as '\(model.objectSchema.name)' (its schema's name), but its storedTypeName is '\(model.storedTypeName)', which links to it use. Make them the same."
                    )
                }
                let keys = model.primaryKeyNames
                if keys.count > 1 {
                    problems.append(
                        "Model \(model.swiftName) declares more than one primary key (\(keys.joined(separator: ", "))); declare one."
                    )
                }
            }
            if let typed = typedMigrations { problems += typed.validationProblems }
            for (type, properties) in discardedValues.sorted(by: { $0.key < $1.key }) {
                guard let objectSchema = schema[type] else {
                    problems.append(
                        "discardValues names the type '\(type)', which the schema does not have. Its types are: \(schema.typeNames.joined(separator: ", "))."
                    )
                    continue
                }
                for property in properties.sorted() where objectSchema[property: property] == nil {
                    problems.append(
                        "discardValues names '\(type).\(property)', which the schema does not have. Its properties are: \(objectSchema.properties.map(\.name).joined(separator: ", "))."
                    )
                }
            }
            return problems
        }

        /// The declared versions and typed steps, when there are models or
        /// steps to compose.
        var typedMigrations: TypedMigrations? {
            guard !models.isEmpty || !olderVersions.isEmpty || !migrations.isEmpty else { return nil }
            let current = VersionDeclaration(
                version: schemaVersion, name: versionName ?? "the configured schema", models: models)
            return TypedMigrations(current: current, older: olderVersions, steps: migrations)
        }

        /// The part of the configuration that plans and runs migrations.
        var migrationSettings: MigrationSettings {
            MigrationSettings(
                path: path, schema: schema, appSchemaVersion: schemaVersion, mode: mode, migration: migration,
                progress: progress, logger: logger, readOnly: readOnly,
                deleteIfMigrationNeeded: deleteIfMigrationNeeded, typed: typedMigrations,
                discardedValues: discardedValues, changeSubscribers: changeSubscribers)
        }

        /// How the file's LMDB environment is opened.
        var environmentOptions: EnvironmentOptions {
            var options = EnvironmentOptions()
            options.readOnly = readOnly
            options.initialMapSize = initialMapSize
            options.noMetaSync = durability == .noMetaSync
            options.noSync = durability == .noSync
            options.checksFileStructure = verifiesFileOnOpen
            return options
        }
    }

    /// A migration closure: the ``Migration`` to work with, and the schema
    /// version the file had before it (``Strata/MigrationBlock``).
    public typealias MigrationBlock = Strata.MigrationBlock

    /// A progress callback for long migrations (``MigrationProgressHandler``).
    public typealias ProgressHandler = MigrationProgressHandler

    /// Whether a file is used by one app version at a time, or shared with
    /// older app versions that must keep reading it: ``DatabaseMode``.
    public typealias Mode = DatabaseMode

    /// How much a commit waits for the disk.
    public enum Durability: Sendable, Hashable {
        /// Every commit is flushed to disk before `write` returns: a power
        /// loss keeps every committed transaction.
        case full
        /// Data is flushed at commit but the file's root page is not: a power
        /// loss may lose the last transaction, never the file's consistency.
        /// The corresponding LMDB flag is `MDB_NOMETASYNC`.
        case noMetaSync
        /// Nothing is flushed at commit; the system writes pages back when it
        /// chooses. An app crash loses nothing; a power loss or system crash
        /// may lose recent transactions and, unless the file system keeps
        /// writes in order, damage the file (LMDB's documented risk). The
        /// corresponding LMDB flag is `MDB_NOSYNC`.
        case noSync
    }
}
