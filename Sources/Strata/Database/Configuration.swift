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
        /// Opens the file without ever writing to it; the file must exist and
        /// match ``schema`` and ``schemaVersion`` exactly. Default: `false`.
        public var readOnly: Bool
        /// How much a commit waits for the disk. Default: ``Durability/full``.
        public var durability: Durability
        /// The memory map's size at open, in bytes. The map doubles by itself
        /// whenever a transaction fills it, so this only saves a few early
        /// doublings. Default: 8 MiB. LMDB never maps less than the data the
        /// file already holds. A second `Database` for a path that is already
        /// open in this process shares the first one's map and ignores this
        /// and ``durability``.
        public var initialMapSize: Int

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
            self.readOnly = false
            self.durability = .full
            self.initialMapSize = EnvironmentOptions.defaultInitialMapSize
        }
    }

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
        /// may lose recent transactions. The corresponding LMDB flag is
        /// `MDB_NOSYNC`.
        case noSync
    }
}
