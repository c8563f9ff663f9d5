/// Reads and writes what the meta database holds about the schema: the
/// catalog, the catalog generation and the schema snapshots. The one place
/// above `FileLayout` that knows these entries; opening, migrating and
/// inspecting a file all go through it.
struct CatalogStore {
    /// The meta database, open in the transactions this store is used with.
    let meta: DatabaseHandle
    /// The database file, for messages.
    let path: String

    /// Opens the meta database; nil when it does not exist and `create`
    /// is false (a new or empty file).
    static func openMeta(_ txn: LMDBTransaction, create: Bool) throws -> DatabaseHandle? {
        try txn.openDatabase(FileLayout.meta, create: create)
    }

    /// The catalog as committed, or nil when the file has none.
    func catalog(_ txn: LMDBTransaction) throws -> Catalog? {
        guard let bytes = try txn.get(meta, FileLayout.MetaKey.catalog) else { return nil }
        return try Catalog.decode(bytes, path: path)
    }

    /// Whether the file holds a catalog at all.
    func hasCatalog(_ txn: LMDBTransaction) throws -> Bool {
        try txn.get(meta, FileLayout.MetaKey.catalog) != nil
    }

    /// Writes `catalog`, a change of the file's catalog, and raises the
    /// generation by one in the same transaction: the one way a catalog is
    /// written (a new file's first catalog gets generation 1). Returns the
    /// new generation.
    @discardableResult
    func write(_ catalog: Catalog, _ txn: LMDBTransaction) throws -> UInt64 {
        try txn.put(meta, FileLayout.MetaKey.catalog, catalog.encoded())
        let raised = try generation(txn) &+ 1
        try txn.put(meta, FileLayout.MetaKey.generation, FileLayout.counterBytes(raised))
        return raised
    }

    /// The catalog's generation: raised by every change of the catalog, so
    /// that a `Database` notices that another one changed it (and, when the
    /// change only learned kept types and fields from a peer, goes on).
    func generation(_ txn: LMDBTransaction) throws -> UInt64 {
        guard let bytes = try txn.get(meta, FileLayout.MetaKey.generation) else { return 0 }
        guard let generation = FileLayout.counter(bytes) else {
            throw StrataError.corruptFile(
                path: path, "The catalog generation of \(path) is damaged (\(bytes.count) bytes instead of 8).")
        }
        return generation
    }

    /// Stores the snapshot of `schema` at `version`. Unless `replacing`,
    /// an existing snapshot of that version stays (in synced mode, the app
    /// that introduced a version wrote it).
    func writeSnapshot(_ schema: Schema, version: UInt64, replacing: Bool, _ txn: LMDBTransaction) throws {
        let key = FileLayout.MetaKey.schemaSnapshot(version)
        if !replacing, try txn.get(meta, key) != nil { return }
        try txn.put(meta, key, Array(SchemaSnapshot(schemaVersion: version, schema: schema).jsonData()))
    }
}
