import Foundation

extension Database {
    /// What a sync-enabled file exchanges changes with: its dataset, and
    /// how far ahead of this machine's clock a peer's changes may be.
    ///
    /// Set ``Configuration/sync`` to enable sync on a synced-mode file;
    /// the first open that has it stamps every object the file holds, once.
    /// Files enabled with one dataset exchange changes; files of two
    /// datasets refuse each other's. See docs/Sync.md.
    public struct SyncConfiguration: Sendable, Hashable {
        /// The dataset the file belongs to: the same on every device that
        /// shares the data (an app's constant, or one per account).
        public var dataset: UUID
        /// How far ahead of this machine's clock a changeset's clock may
        /// be: one further ahead is refused (a peer whose clock is wrong
        /// would otherwise win every conflict). Default: 5 minutes.
        public var maxClockDrift: Duration

        /// Sync within `dataset`, refusing changesets stamped more than
        /// `maxClockDrift` ahead of this machine's clock.
        public init(dataset: UUID, maxClockDrift: Duration = .seconds(300)) {
            self.dataset = dataset
            self.maxClockDrift = maxClockDrift
        }
    }

    /// Enables sync when the configuration asks and the file has not got
    /// it, checks what a sync-enabled file requires, and opens its sync
    /// databases. Called with the environment's setup lock held.
    static func prepareSync(_ environment: Environment, _ configuration: Configuration, _ prepared: Prepared) throws
        -> Prepared
    {
        var prepared = prepared
        let path = configuration.path
        if let wanted = configuration.sync {
            let dataset = SiteID(uuid: wanted.dataset)
            if let identity = prepared.catalog.sync {
                guard identity.dataset == dataset else {
                    throw StrataError.invalidConfiguration(
                        path: path,
                        "\(path) syncs dataset \(identity.dataset), but the configuration names dataset \(dataset).",
                        remedy:
                            "Open it with the dataset it was enabled with; files of two datasets never exchange changes."
                    )
                }
            } else {
                guard configuration.mode == .synced else {
                    throw StrataError.invalidConfiguration(
                        path: path, "Sync needs a synced-mode file, and \(path) is opened in local mode.",
                        remedy: "Set mode to .synced (older app versions then keep reading the file).")
                }
                guard !configuration.readOnly else {
                    throw StrataError.invalidConfiguration(
                        path: path, "Enabling sync writes to \(path), which is opened read-only.",
                        remedy: "Open it once without readOnly to enable sync.")
                }
                try checkPrimaryKeys(prepared.catalog, path: path)
                prepared = try enableSync(environment, prepared, dataset: dataset, version: configuration.schemaVersion)
            }
        }
        guard prepared.catalog.sync != nil else { return prepared }
        try checkPrimaryKeys(prepared.catalog, path: path)
        if !configuration.readOnly {
            // A type added since sync was enabled gets its clocks.
            let complete = try environment.withReadTransaction { txn in
                try SyncHandles.open(txn, prepared.catalog, create: false, path: path)?.hasAllClocks(prepared.catalog)
            }
            if complete == false {
                try environment.withWriteTransaction { txn in
                    _ = try SyncHandles.open(txn, prepared.catalog, create: true, path: path)
                }
            }
        }
        let txn = try environment.begin(readOnly: true)
        defer { txn.finish() }
        prepared.sync = try SyncHandles.open(txn, prepared.catalog, create: false, path: path)
        if prepared.tables.values.contains(where: { !$0.preservesUnknownFields }) {
            // Opened before sync was enabled: again, carrying over the
            // fields the file will learn from peers.
            let all = try ObjectTable.openAll(txn, prepared.catalog, create: false, path: path)
            prepared.tables = Dictionary(
                all.values.filter { prepared.tables[$0.name] != nil }.map { ($0.name, $0) },
                uniquingKeysWith: { a, _ in a })
        }
        try txn.commit()
        return prepared
    }

    /// Sync identifies an object by its type and primary key on every
    /// device: a type with automatic ids would give two devices' objects
    /// one identity.
    private static func checkPrimaryKeys(_ catalog: Catalog, path: String) throws {
        let keyless = catalog.types.filter { !$0.isEmbedded && !$0.isKept && $0.primaryKey == nil }.map(\.name)
        guard keyless.isEmpty else {
            throw StrataError.invalidConfiguration(
                path: path,
                "Sync needs a primary key on every object type, and \(keyless.joined(separator: ", ")) \(keyless.count == 1 ? "has" : "have") automatic ids, which two devices would give out twice.",
                remedy: "Give each type a primary key (a UUID is the usual choice), as a new type if it has objects.")
        }
    }

    /// Enables sync in one write transaction: records the dataset and a
    /// new site in the catalog (the file becomes format 2), makes the sync
    /// databases, and stamps every object the file holds with one clock
    /// time, so that its current state is what the first exchange sends.
    private static func enableSync(_ environment: Environment, _ prepared: Prepared, dataset: SiteID, version: UInt64)
        throws -> Prepared
    {
        var prepared = prepared
        try environment.withWriteTransaction { txn in
            guard try prepared.store.generation(txn) == prepared.generation else {
                throw StrataError.schemaChanged(
                    path: prepared.store.path, openedAt: prepared.catalog.fileSchemaVersion, now: nil)
            }
            var catalog = prepared.catalog
            let enabledAt = HybridTime.zero.tick()
            catalog.sync = CatalogSync(dataset: dataset, site: .random(), enabledAt: enabledAt)
            catalog.formatVersion = FileLayout.syncFormatVersion
            try prepared.store.write(catalog, txn)
            guard let handles = try SyncHandles.open(txn, catalog, create: true, path: prepared.store.path) else {
                preconditionFailure("A catalog with sync has no sync databases")
            }
            let log = SyncLog(
                lmdb: txn, meta: prepared.store.meta, handles: handles, writerVersion: version,
                path: prepared.store.path)
            try log.receive(enabledAt)
            let (stamp, seq) = try log.change()
            for type in catalog.types where !type.isEmbedded {
                guard let table = prepared.tables[type.name] else { continue }
                try stampAll(table, log: log, stamp: stamp, seq: seq)
            }
            prepared.catalog = catalog
            prepared.generation &+= 1
        }
        return prepared
    }

    /// Gives every object of `table` a clock row: live, every field it
    /// declares at `stamp`, the fields it keeps unstamped, all under the
    /// one sequence number of the transaction (a peer's first pull comes in
    /// pages all the same: a page may end inside a sequence number).
    private static func stampAll(_ table: ObjectTable, log: SyncLog, stamp: LocalStamp, seq: UInt64) throws {
        var rows: [([UInt8], ClockRow)] = []
        try log.lmdb.withCursor(table.records) { cursor in
            var entry = try cursor.first()
            while let (key, record) = entry {
                let writer = (try? RecordView(trusting: record))?.effectiveSchemaVersion ?? log.writerVersion
                rows.append((Array(key), ClockRow.written(table, stamp: stamp, seq: seq, writerVersion: writer)))
                entry = try cursor.next()
            }
        }
        for (key, row) in rows {
            try key.withUnsafeBytes { try log.store(row, previousSeq: nil, table.type.id, $0) }
        }
    }
}

extension Database {
    /// Gives a copied sync-enabled file a site of its own.
    ///
    /// A file copied to another device (a backup restored, a file sent by
    /// hand) keeps the original's site, and two files stamping their
    /// changes with one site would give two different writes one stamp.
    /// The copy is detected when it meets the original (each refuses the
    /// other's changes as its own). Reset the copy's identity: its past
    /// changes stay the original site's, and what it writes from now on is
    /// its own. Every object keeps its data; nothing is sent again.
    ///
    /// Call it while no `Database` of the file is open in any process; a
    /// `Database` opened before throws ``StrataError/Code/schemaChanged``
    /// at its next transaction.
    ///
    /// - Returns: The file's new site.
    /// - Throws: ``StrataError`` when the file does not exist, is not a
    ///   Strata file, or has no sync enabled.
    @discardableResult
    public static func resetSyncIdentity(at path: String) throws -> SiteID {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StrataError.invalidConfiguration(
                path: path, "There is no file at \(path).", remedy: "Give the path of a sync-enabled Strata file.")
        }
        let environment = try Environment.open(path: path, options: EnvironmentOptions())
        defer { environment.release() }
        environment.setupLock.lock()
        defer { environment.setupLock.unlock() }
        return try environment.withWriteTransaction { txn in
            guard let meta = try CatalogStore.openMeta(txn, create: false) else {
                throw StrataError.notAStrataFile(path: path, because: "it has no Strata catalog")
            }
            let store = CatalogStore(meta: meta, path: path)
            guard var catalog = try store.catalog(txn) else {
                throw StrataError.corruptFile(path: path, "\(path) has Strata's metadata but no catalog.")
            }
            guard let identity = catalog.sync,
                let handles = try SyncHandles.open(txn, catalog, create: false, path: path)
            else {
                throw StrataError.invalidConfiguration(
                    path: path, "Sync is not enabled on \(path); it has no identity to reset.",
                    remedy: "Enable sync by opening it in synced mode with configuration.sync set.")
            }
            let log = SyncLog(lmdb: txn, meta: meta, handles: handles, writerVersion: 0, path: path)
            // The old site becomes an ordinary origin, and every stamp of
            // the file's own (origin 0) names it from now on.
            let old = try log.addOrigin(identity.site)
            for clocks in handles.clocks.values {
                var rows: [([UInt8], ClockRow)] = []
                try txn.withCursor(clocks) { cursor in
                    var entry = try cursor.first()
                    while let (key, value) = entry {
                        guard let row = ClockRow.decode(value) else {
                            throw StrataError.corruptFile(path: path, "A clock row in \(path) is damaged.")
                        }
                        rows.append((Array(key), row.replacingOrigin(SyncLog.localOrigin, with: old)))
                        entry = try cursor.next()
                    }
                }
                for (key, row) in rows {
                    let writer = ByteWriter(capacity: 64)
                    row.encode(into: writer)
                    try writer.withUnsafeBytes { bytes in try key.withUnsafeBytes { _ = try txn.put(clocks, $0, bytes) }
                    }
                }
            }
            let site = SiteID.random()
            catalog.sync?.site = site
            try store.write(catalog, txn)
            return site
        }
    }
}
