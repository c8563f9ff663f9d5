import Foundation

/// What a database file holds: its versions, its types, how many objects
/// sit at each effective schema version, and its size.
public struct DatabaseStatistics: Sendable, Hashable {
    /// One object type.
    public struct TypeStatistics: Sendable, Hashable {
        /// The type's name.
        public var name: String
        /// Whether the schema the file was last opened with leaves the type
        /// out (its objects are kept, ignored).
        public var isKept: Bool
        /// The number of objects.
        public var objectCount: Int
        /// How many objects were last written at each schema version.
        public var objectsBySchemaVersion: [UInt64: Int]
        /// For each link property (a link or a list of links), by name: how
        /// many links its objects hold, counting a list that links to one
        /// object several times once (the entries of its backlinks table).
        /// Empty for a type without link properties, and for a kept type.
        public var linkCounts: [String: Int] = [:]
    }

    /// The file's path.
    public var path: String
    /// The file format version.
    public var formatVersion: UInt32
    /// The schema version recorded in the file.
    public var schemaVersion: UInt64
    /// The file's mode.
    public var mode: Database.Mode
    /// Every top-level type, kept ones included, by name (embedded types
    /// have no objects of their own).
    public var types: [TypeStatistics]
    /// The size of the data file, in bytes.
    public var fileSize: Int
    /// The bytes its pages use.
    public var usedSize: Int
}

extension Database {
    /// Opens an existing file with the schema, schema version and mode it
    /// records, whatever they are: for tools that inspect files, such as
    /// the `strata` command. The types the file keeps without its schema
    /// naming them (removed types, whose objects stay in the file) are
    /// readable too, through their last known properties.
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - readOnly: Whether to open it without writing. Default: `true`.
    /// - Throws: ``StrataError`` when the file does not exist, is not a
    ///   Strata database or is damaged.
    public convenience init(inspecting path: String, readOnly: Bool = true) throws {
        try self.init(inspecting: path, readOnly: readOnly, durability: nil)
    }

    /// Opens an existing file as ``init(inspecting:readOnly:)`` does, with
    /// `durability`; nil: the durability of another `Database` of this
    /// process that has the file open, which every `Database` of one file
    /// shares, or ``Durability/full``.
    convenience init(inspecting path: String, readOnly: Bool, durability: Durability?) throws {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StrataError.fileMissing(path: path)
        }
        let open = Environment.optionsOfOpenEnvironment(atPath: path)
        var options = EnvironmentOptions()
        options.readOnly = true
        if let durability {
            options.noSync = durability == .noSync
            options.noMetaSync = durability == .noMetaSync
        } else {
            options.noSync = open?.noSync ?? false
            options.noMetaSync = open?.noMetaSync ?? false
        }
        let environment = try Environment.open(path: path, options: options)
        let existing: Existing?
        do {
            environment.setupLock.lock()
            defer { environment.setupLock.unlock() }
            existing = try Database.readExisting(environment, path: path)
        } catch {
            environment.release()
            throw error
        }
        environment.release()
        guard let catalog = existing?.catalog else {
            throw StrataError.notAStrataFile(path: path, because: "it is an empty LMDB file with no Strata catalog")
        }
        var configuration = Configuration(path: path, schemaVersion: catalog.fileSchemaVersion, schema: catalog.schema)
        configuration.mode = catalog.mode
        configuration.readOnly = readOnly
        configuration.durability = options.noSync ? .noSync : options.noMetaSync ? .noMetaSync : .full
        // Types the file keeps without the schema naming them (synced mode
        // keeps them for other app versions) are readable too.
        try self.init(configuration: configuration, includingKeptTypes: true)
    }

    /// Counts the objects of every type, how many were last written at
    /// each schema version, and the links of each link property. Reads
    /// every record's header: O(objects); links are counted from the size
    /// of their backlinks tables, without reading them.
    ///
    /// - Throws: ``StrataError`` for a damaged record, or from storage.
    public func statistics() throws -> DatabaseStatistics {
        try checkOpen()
        let usage = try environment.fileUsage()
        // Opening named databases needs the setup lock, taken before the
        // transaction (a map resize under it waits for transactions to end).
        environment.setupLock.lock()
        defer { environment.setupLock.unlock() }
        let types = try environment.withReadTransaction { txn in
            let tables = try ObjectTable.openAll(txn, catalog, create: false, path: path)
            // Embedded types have no table: their objects are inside their owners'.
            return try catalog.types.filter { !$0.isEmbedded }.map { type in
                var versions: [UInt64: Int] = [:]
                var count = 0
                let table = tables[type.id]!
                try txn.withCursor(table.records) { cursor in
                    var entry = try cursor.first()
                    while let (key, record) = entry {
                        let view = try table.validatedView(key: key, record: record)
                        versions[view.effectiveSchemaVersion, default: 0] += 1
                        count += 1
                        entry = try cursor.next()
                    }
                }
                var links: [String: Int] = [:]
                if !type.isKept {
                    for field in table.linkFields {
                        guard let backlinks = field.backlinks else { continue }
                        links[field.name] = try txn.entryCount(backlinks)
                    }
                }
                return DatabaseStatistics.TypeStatistics(
                    name: type.name, isKept: type.isKept, objectCount: count, objectsBySchemaVersion: versions,
                    linkCounts: links)
            }
        }
        return DatabaseStatistics(
            path: path, formatVersion: catalog.formatVersion, schemaVersion: catalog.fileSchemaVersion,
            mode: catalog.mode,
            types: types.sorted { $0.name < $1.name }, fileSize: usage.fileSize, usedSize: usage.usedSize)
    }

    /// Checks the structure of a database file's LMDB pages, read with
    /// plain file reads, without LMDB: the first of the checks of
    /// ``verify(path:)``, and what ``Configuration/verifiesFileOnOpen`` runs.
    ///
    /// It reads both meta pages and every page of every tree, and checks
    /// every page header, node, key and value size, overflow run and page
    /// number against the page and the file, so that a file that passes
    /// cannot make LMDB read outside its pages. It does not look inside
    /// keys and values: ``verify()`` does. It reads each used page once:
    /// about 0.09 s for a file of a million objects (74 MB, in the page
    /// cache).
    ///
    /// - Parameter path: The database file.
    /// - Throws: ``StrataError`` with code ``StrataError/Code/corruptFile``
    ///   naming the file, the first damaged page and what is wrong;
    ///   ``StrataError/Code/notAStrataFile`` for an empty file or one with no
    ///   LMDB meta page; ``StrataError/Code/fileSystem`` when it cannot be
    ///   read.
    public static func verifyStructure(path: String) throws {
        try LMDBFileCheck.run(path: path)
    }

    /// Checks a database file without trusting it: first the structure of
    /// its LMDB pages, read with plain file reads before LMDB maps the
    /// file, then, when the structure is sound, everything ``verify()``
    /// checks.
    ///
    /// LMDB's pages carry no checksums, and LMDB trusts every page number,
    /// offset and size it reads, so a file with damaged pages can crash a
    /// process that opens it. This check reads the meta pages and every
    /// page of every tree (the free-page list, the named databases, the
    /// duplicate-key subtrees of indexes, overflow pages) and reports the
    /// first page whose header, nodes, sizes or page numbers do not fit,
    /// without ever handing the file to LMDB. Only a file that passes is
    /// opened, read-only, for the record and index checks.
    ///
    /// ```swift
    /// let problems = try Database.verify(path: "people.strata")
    /// for problem in problems { print(problem) }
    /// ```
    ///
    /// Run it while no other process writes the file: a commit could change
    /// pages under the structural check.
    ///
    /// - Parameter path: The database file.
    /// - Returns: Every problem found, one sentence each; empty when the
    ///   file is sound. Damage to the structure is the only problem reported
    ///   then (it names the file, the page and what is wrong), since the
    ///   other checks need a sound structure; a damaged catalog is also
    ///   reported as a problem.
    /// - Throws: ``StrataError`` when the file cannot be checked at all: it
    ///   does not exist or cannot be read (``StrataError/Code/fileSystem``),
    ///   or it is not a Strata database (``StrataError/Code/notAStrataFile``).
    public static func verify(path: String) throws -> [String] {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StrataError.fileMissing(path: path)
        }
        do {
            try verifyStructure(path: path)
            let db = try Database(inspecting: path)
            defer { db.close() }
            return try db.verify()
        } catch let error as StrataError where error.code == .corruptFile {
            return [error.message]
        }
    }

    /// Checks the whole file: the catalog is consistent, every record and
    /// key decodes, every object has its index entries and every index
    /// entry names an object with that value; every link names an object
    /// that exists, the backlinks tables hold exactly the links the records
    /// hold, and every embedded object (alone or in a list) decodes by its
    /// embedded type's properties. On a sync-enabled file, every object's
    /// last change is in the change log, once.
    ///
    /// - Returns: Every problem found, one sentence each; empty when the
    ///   file is sound.
    /// - Throws: ``StrataError`` only when the file cannot be read at all.
    public func verify() throws -> [String] {
        try checkOpen()
        // Opening named databases needs the setup lock (see statistics()).
        environment.setupLock.lock()
        defer { environment.setupLock.unlock() }
        return try environment.withReadTransaction { txn in
            let catalog: Catalog
            do {
                guard let stored = try store.catalog(txn) else { return ["The catalog is missing."] }
                catalog = stored
            } catch let error as StrataError {
                return [error.message]
            }
            let tables: [TypeID: ObjectTable]
            do {
                tables = try ObjectTable.openAll(txn, catalog, create: false, path: path)
            } catch let error as StrataError {
                return [error.message]
            }
            let engine = TableEngine(
                lmdb: txn, meta: store.meta, path: path, writingSchemaVersion: configuration.schemaVersion,
                fieldCapacity: 0)
            engine.links = LinkGraph(
                tables: Dictionary(tables.values.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first }))
            var problems: [String] = []
            for type in catalog.types {
                guard let table = tables[type.id] else { continue }
                problems += try engine.verify(table, kept: type.isKept)
            }
            if let handles = try SyncHandles.open(txn, catalog, create: false, path: path) {
                let log = SyncLog(lmdb: txn, meta: store.meta, handles: handles, writerVersion: 0, path: path)
                problems += try log.checkChanges(catalog)
            }
            return problems
        }
    }

    /// Rewrites a file compactly: every record without the fields of
    /// removed properties (each object keeps its effective schema version),
    /// packed into full pages in key order, indexes rebuilt, then a copy of
    /// the file without free pages (LMDB's copy with compaction) that
    /// replaces the original.
    ///
    /// No other `Database` of this process, and no other process, may have
    /// the file open meanwhile.
    ///
    /// The copy holds the newest commit in the file, even one whose writer
    /// was killed before other processes could see it (see
    /// docs/Reliability.md, "Latent commits").
    ///
    /// With ``Durability/full`` or
    /// ``Durability/noMetaSync``, the copy is flushed to disk
    /// before it is renamed over the file, and the folder after: a power
    /// loss leaves the file as it was or compacted, whole, and once
    /// `compact` returns, compacted. With ``Durability/noSync``
    /// nothing is flushed: a crash of the process loses nothing, but a
    /// power loss can leave a file that does not open (see
    /// docs/Reliability.md, "Compact").
    ///
    /// ```swift
    /// let sizes = try Database.compact(path: "people.strata")
    /// print("\(sizes.before) bytes before, \(sizes.after) after")
    /// ```
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - durability: How much the rewrite, the copy and the rename wait
    ///     for the disk. Default: ``Durability/full``.
    /// - Returns: The file's size before and after, in bytes.
    /// - Throws: ``StrataError`` when the file cannot be opened, or the copy
    ///   written, flushed or renamed; the original is then left as it was
    ///   and the copy removed. When only the flush of the folder fails, the
    ///   error says that the file is compacted but its new name may not
    ///   survive a power loss.
    @discardableResult
    public static func compact(path: String, durability: Durability = .full) throws -> (
        before: Int, after: Int
    ) {
        let before = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let syncing = durability != .noSync
        // Checked before opening: an environment open in this process has
        // a durability of its own, which the open below would conflict with.
        if Environment.optionsOfOpenEnvironment(atPath: path) != nil {
            throw compactRefusedWhileOpen(path)
        }
        let copy: String
        do {
            try adoptNewestCommit(path)
            let db = try Database(inspecting: path, readOnly: false, durability: durability)
            defer { db.close() }
            guard db.environment.isExclusive else { throw compactRefusedWhileOpen(path) }
            try db.repack()
            // Beside the real file, not a symbolic link to it: a rename
            // stays within one file system and replaces the file itself.
            copy = db.environment.resolvedPath + ".compacting"
            try? FileManager.default.removeItem(atPath: copy)
            try db.environment.copyCompacted(to: copy, syncing: syncing)
        }
        // Once every environment of the old file is closed: nothing writes
        // into it after the rename.
        try Environment.replaceFile(atPath: path, with: copy, syncing: syncing)
        let after = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        return (before, after)
    }

    private static func compactRefusedWhileOpen(_ path: String) -> StrataError {
        StrataError.fileInUse(
            .fileSystem, path: path, "is open elsewhere in this process",
            remedy: "Close every Database for it before compacting.")
    }

    /// Publishes a commit whose writer died before publishing it, so that
    /// the catalog, the records and the copy are read from the newest
    /// commit rather than the one before: read transactions take the last
    /// published commit, and a write transaction publishes the newest.
    /// Leaves a file that this process has open alone; `compact` refuses it.
    private static func adoptNewestCommit(_ path: String) throws {
        guard FileManager.default.fileExists(atPath: path),
            Environment.optionsOfOpenEnvironment(atPath: path) == nil
        else { return }
        let environment = try Environment.open(path: path, options: EnvironmentOptions())
        defer { environment.release() }
        try environment.adoptNewestCommit()
    }

    /// Writes every type's records again in key order into emptied tables
    /// (LMDB does not merge pages whose records shrank), dropping the fields
    /// of removed properties, and rebuilds the indexes.
    private func repack() throws {
        environment.setupLock.lock()
        defer { environment.setupLock.unlock() }
        let tables = try environment.withReadTransaction { txn in
            try ObjectTable.openAll(txn, catalog, create: false, path: path)
        }
        try environment.withWriteTransaction { txn in
            // Begun inside the write transaction: the state before it.
            let reader = try environment.begin(readOnly: true)
            defer { reader.finish() }
            // Its commit is published as unknown: every object was written.
            let engine = TableEngine(
                lmdb: txn, meta: store.meta, path: path, writingSchemaVersion: configuration.schemaVersion,
                fieldCapacity: tables.values.map(\.fields.count).max() ?? 0,
                subscribers: configuration.changeSubscribers.map { $0() }, recordsForFeed: false)
            engine.links = LinkGraph(
                tables: Dictionary(tables.values.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first }))
            for table in tables.values.sorted(by: { $0.type.id < $1.type.id }) {
                try engine.repack(table, from: reader)
            }
        }
    }
}
