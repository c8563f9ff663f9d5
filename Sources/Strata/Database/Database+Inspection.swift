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
    }

    /// The file's path.
    public var path: String
    /// The file format version.
    public var formatVersion: UInt32
    /// The schema version recorded in the file.
    public var schemaVersion: UInt64
    /// The file's mode.
    public var mode: Database.Mode
    /// Every type, kept ones included, by name.
    public var types: [TypeStatistics]
    /// The size of the data file, in bytes.
    public var fileSize: Int
    /// The bytes its pages use.
    public var usedSize: Int
}

extension Database {
    /// Opens an existing file with the schema, schema version and mode it
    /// records, whatever they are: for tools that inspect files, such as
    /// the `strata` command.
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - readOnly: Whether to open it without writing. Default: `true`.
    /// - Throws: ``StrataError`` when the file does not exist, is not a
    ///   Strata database or is damaged.
    public convenience init(inspecting path: String, readOnly: Bool = true) throws {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StrataError(.fileSystem, "\(path) does not exist.", path: path)
        }
        // Another Database of this process may have the file open: share its
        // durability, which every Database of one file must.
        let open = Environment.optionsOfOpenEnvironment(atPath: path)
        var options = EnvironmentOptions()
        options.readOnly = true
        options.noSync = open?.noSync ?? false
        options.noMetaSync = open?.noMetaSync ?? false
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
            throw StrataError(.notAStrataFile, "\(path) is an empty LMDB file with no Strata catalog.", path: path)
        }
        var configuration = Configuration(path: path, schemaVersion: catalog.schemaVersion, schema: catalog.schema)
        configuration.mode = catalog.mode
        configuration.readOnly = readOnly
        configuration.durability = options.noSync ? .noSync : options.noMetaSync ? .noMetaSync : .full
        try self.init(configuration: configuration)
    }

    /// Counts the objects of every type, and how many were last written at
    /// each schema version. Reads every record's header: O(objects).
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
            let tables = try Database.openTables(txn, catalog, create: false, path: path)
            return try catalog.types.map { type in
                var versions: [UInt64: Int] = [:]
                var count = 0
                let table = tables[type.id]!
                try txn.withCursor(table.records) { cursor in
                    var entry = try cursor.first()
                    while let (key, record) = entry {
                        let view = try ObjectContext.validatedView(table: table, key: key, record: record)
                        versions[view.schemaVersion, default: 0] += 1
                        count += 1
                        entry = try cursor.next()
                    }
                }
                return DatabaseStatistics.TypeStatistics(name: type.name, isKept: type.isKept, objectCount: count, objectsBySchemaVersion: versions)
            }
        }
        return DatabaseStatistics(path: path, formatVersion: catalog.formatVersion, schemaVersion: catalog.schemaVersion, mode: catalog.mode,
                                  types: types.sorted { $0.name < $1.name }, fileSize: usage.fileSize, usedSize: usage.usedSize)
    }

    /// Checks the whole file: the catalog is consistent, every record and
    /// key decodes, every object has its index entries and every index
    /// entry names an object with that value.
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
            var problems: [String] = []
            guard let bytes = try txn.get(meta, Database.catalogKey) else { return ["The catalog is missing."] }
            let catalog: Catalog
            do {
                catalog = try Catalog.decode(bytes, path: path)
            } catch let error as StrataError {
                return [error.message]
            }
            let tables: [UInt32: ObjectTable]
            do {
                tables = try Database.openTables(txn, catalog, create: false, path: path)
            } catch let error as StrataError {
                return [error.message]
            }
            for type in catalog.types {
                guard let table = tables[type.id] else { continue }
                problems += try Database.verify(table, kept: type.isKept, txn)
            }
            return problems
        }
    }

    /// The problems of one type's records and indexes.
    private static func verify(_ table: ObjectTable, kept: Bool, _ txn: LMDBTransaction) throws -> [String] {
        var problems: [String] = []
        func note(_ problem: String) {
            // A badly damaged file could list millions; the first ones tell.
            if problems.count < 100 { problems.append(problem) } else if problems.count == 100 { problems.append("(more problems in '\(table.name)' not listed)") }
        }
        var indexKey = ByteWriter(capacity: 64)
        var objects = 0
        try txn.withCursor(table.records) { records in
            var entry = try records.first()
            while let (key, record) = entry {
                objects += 1
                let view: RecordView
                do {
                    view = try ObjectContext.validatedView(table: table, key: key, record: record)
                } catch let error as StrataError {
                    note(error.message)
                    entry = try records.next()
                    continue
                }
                if !kept {
                    for field in table.indexedFields {
                        indexKey.removeAll()
                        KeyCodec.appendIndexKey(table.value(at: field.position, in: view), to: &indexKey)
                        let found = try indexKey.withUnsafeBytes { indexBytes in
                            try txn.withCursor(field.index!) { try $0.seek(exactly: indexBytes, value: key) != nil }
                        }
                        if !found {
                            let keyText = (try? KeyCodec.decodeKey(key, type: table.primaryKey?.type)).map { "\($0)" } ?? "\(Array(key))"
                            note("The object of '\(table.name)' with key \(keyText) is missing from the index on '\(field.name)'.")
                        }
                    }
                }
                entry = try records.next()
            }
        }
        guard !kept else { return problems }
        for field in table.indexedFields {
            var entries = 0
            try txn.withCursor(field.index!) { index in
                var entry = try index.first()
                while let (storedIndexKey, objectKey) = entry {
                    entries += 1
                    let keyText = (try? KeyCodec.decodeKey(objectKey, type: table.primaryKey?.type)).map { "\($0)" } ?? "\(Array(objectKey))"
                    if let record = try txn.get(table.records, objectKey), let view = try? RecordView(validating: record) {
                        indexKey.removeAll()
                        KeyCodec.appendIndexKey(table.value(at: field.position, in: view), to: &indexKey)
                        if indexKey.withUnsafeBytes({ KeyCodec.compare($0, storedIndexKey) }) != 0 {
                            note("The index on '\(table.name).\(field.name)' files the object with key \(keyText) under another value than it has.")
                        }
                    } else if try txn.get(table.records, objectKey) == nil {
                        note("The index on '\(table.name).\(field.name)' names an object with key \(keyText) that does not exist.")
                    }
                    entry = try index.next()
                }
            }
            if entries != objects && problems.isEmpty {
                note("The index on '\(table.name).\(field.name)' has \(entries) entries for \(objects) objects.")
            }
        }
        return problems
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
    /// - Parameter path: The database file.
    /// - Returns: The file's size before and after, in bytes.
    /// - Throws: ``StrataError`` when the file cannot be opened or written;
    ///   the original is then left as it was.
    @discardableResult
    public static func compact(path: String) throws -> (before: Int, after: Int) {
        let before = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let copy = path + ".compacting"
        do {
            let db = try Database(inspecting: path, readOnly: false)
            defer { db.close() }
            guard db.environment.isExclusive else {
                throw StrataError(.fileSystem, "\(path) is open elsewhere in this process; close every Database for it before compacting.", path: path)
            }
            try db.repack()
            try? FileManager.default.removeItem(atPath: copy)
            try db.environment.copyCompacted(to: copy)
        }
        guard rename(copy, path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: copy)
            throw StrataError(.fileSystem, "Could not replace \(path) with its compacted copy: \(reason). The file is unchanged.", path: path)
        }
        let after = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        return (before, after)
    }

    /// Writes every type's records again in key order into emptied tables
    /// (LMDB does not merge pages whose records shrank), dropping the fields
    /// of removed properties, and rebuilds the indexes.
    private func repack() throws {
        environment.setupLock.lock()
        defer { environment.setupLock.unlock() }
        let tables = try environment.withReadTransaction { txn in try Database.openTables(txn, catalog, create: false, path: path) }
        try environment.withWriteTransaction { txn in
            // Begun inside the write transaction: the state before it.
            let reader = try environment.begin(readOnly: true)
            defer { reader.finish() }
            var encoder = ObjectEncoder(fieldCapacity: tables.values.map(\.fields.count).max() ?? 0)
            var indexKey = ByteWriter(capacity: 64)
            for table in tables.values.sorted(by: { $0.type.id < $1.type.id }) {
                try txn.empty(table.records, delete: false)
                for field in table.indexedFields { try txn.empty(field.index!, delete: false) }
                try reader.withCursor(table.records) { cursor in
                    var entry = try cursor.first()
                    while let (key, record) = entry {
                        let view = try ObjectContext.validatedView(table: table, key: key, record: record)
                        if table.type.isKept {
                            // Read through no schema of this app: kept as stored.
                            _ = try txn.append(table.records, key, record)
                        } else {
                            try encoder.encodeFields(table: table, schemaVersion: view.schemaVersion, automaticKey: .keep, preserving: view) { field in
                                table.value(at: field.position, in: view)
                            }
                            try encoder.record.withUnsafeBytes { _ = try txn.append(table.records, key, $0) }
                            for field in table.indexedFields {
                                indexKey.removeAll()
                                KeyCodec.appendIndexKey(table.value(at: field.position, in: view), to: &indexKey)
                                try indexKey.withUnsafeBytes { _ = try txn.put(field.index!, $0, key) }
                            }
                        }
                        entry = try cursor.next()
                    }
                }
            }
        }
    }
}

