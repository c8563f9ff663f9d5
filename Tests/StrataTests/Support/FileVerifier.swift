import Foundation
import Testing

@testable import Strata

/// Checks a Strata file from the storage layer up, the way a future
/// `strata verify` will: the catalog decodes and is consistent, every named
/// database is one the catalog accounts for, every record decodes under its
/// type, every index entry matches the object it names, and every object
/// has its entry in each index. Also sums up each named database's
/// contents, so that tests can tell "exactly as it was" from anything else.
///
/// Reads only: one read transaction, nothing written, so it can look at a
/// file that a killed process left behind without repairing it first.
struct FileVerifier {
    /// One named database's contents: its entry count and a hash of every
    /// key and value, in order. Equal digests mean equal contents, whatever
    /// the pages look like. Comparable only within one process (the hash
    /// is seeded per process).
    struct Digest: Hashable, CustomStringConvertible {
        var entries = 0
        var hash = 0
        var description: String { "\(entries) entries, hash \(String(UInt(bitPattern: hash), radix: 16))" }
    }

    /// What is wrong with the file; empty when nothing is.
    private(set) var problems: [String] = []
    /// The catalog, when it decodes.
    private(set) var catalog: Catalog?
    /// Every named database's digest, by name.
    private(set) var digests: [String: Digest] = [:]
    /// The number of objects of each type, by type name.
    private(set) var objectCounts: [String: Int] = [:]

    /// The schema version the file is at, when the catalog decodes.
    var schemaVersion: UInt64? { catalog?.fileSchemaVersion }

    /// At most this many problems are listed, then a count of the rest.
    private static let problemLimit = 20
    private var unlisted = 0

    private mutating func report(_ problem: String) {
        if problems.count < Self.problemLimit { problems.append(problem) } else { unlisted += 1 }
    }

    /// Verifies the file at `path`. No `Database` of another durability may
    /// have it open in this process (the environment is shared).
    static func verify(_ path: String) throws -> FileVerifier {
        try RawFile.withEnvironment(path) { environment in
            let txn = try environment.begin(readOnly: true)
            defer { txn.finish() }
            var verifier = FileVerifier()
            try verifier.run(txn, path: path)
            if verifier.unlisted > 0 { verifier.problems.append("... and \(verifier.unlisted) more problems") }
            // Committed, so that named databases opened here stay open for a
            // Database sharing the environment.
            try txn.commit()
            return verifier
        }
    }

    private mutating func run(_ txn: LMDBTransaction, path: String) throws {
        let main = try txn.openMainDatabase()
        var names: [String] = []
        try walk(txn, main) { key, _ in names.append(String(decoding: key, as: UTF8.self)) }
        guard let meta = try txn.openDatabase(FileLayout.meta, create: false) else {
            return report("no \(FileLayout.meta.name) database; named databases: \(names)")
        }
        guard let catalogBytes = try txn.get(meta, FileLayout.MetaKey.catalog) else { return report("no catalog") }
        let catalog: Catalog
        do {
            catalog = try Catalog.decode(catalogBytes, path: path)
        } catch let error as StrataError {
            return report("the catalog does not decode: \(error.message)")
        }
        self.catalog = catalog
        let tables: [TypeID: ObjectTable]
        do {
            tables = try ObjectTable.openAll(txn, catalog, create: false, path: path)
        } catch let error as StrataError {
            return report("a named database is missing: \(error.message)")
        }
        try checkNames(names, catalog: catalog, txn)
        try checkMeta(txn, meta, catalog: catalog)
        for table in tables.values.sorted(by: { $0.type.id < $1.type.id }) {
            let expected = try checkRecords(txn, table, catalog: catalog, meta: meta)
            objectCounts[table.name] = expected.objects
            for field in table.indexedFields {
                try checkIndex(txn, table, field, expected: expected.entries[field.position])
            }
        }
    }

    /// Every named database is the meta database, a type's records, one of
    /// its indexes, or an emptied one listed as orphaned; every one gets a
    /// digest.
    private mutating func checkNames(_ names: [String], catalog: Catalog, _ txn: LMDBTransaction) throws {
        var expected: Set<String> = [FileLayout.meta.name]
        for type in catalog.types {
            expected.formUnion(type.databases.map(\.name))
        }
        expected.formUnion(catalog.syncDatabases.map(\.name))
        for name in catalog.orphanedDatabases where expected.contains(name) {
            report("'\(name)' is in use and also listed as orphaned, so the next open would delete it")
        }
        let orphaned = Set(catalog.orphanedDatabases)
        for name in names {
            guard expected.contains(name) || orphaned.contains(name) else {
                report("named database '\(name)' is not accounted for by the catalog")
                continue
            }
            guard let database = FileLayout.database(named: name) else {
                report("named database '\(name)' is not one the file layout declares")
                continue
            }
            guard let dbi = try txn.openDatabase(database, create: false) else { continue }
            var digest = Digest()
            var hasher = Hasher()
            try walk(txn, dbi) { key, value in
                digest.entries += 1
                hasher.combine(key.count)
                hasher.combine(bytes: key)
                hasher.combine(value.count)
                hasher.combine(bytes: value)
            }
            digest.hash = hasher.finalize()
            digests[name] = digest
            if orphaned.contains(name) && !expected.contains(name) && digest.entries > 0 {
                report("orphaned database '\(name)' still holds \(digest.entries) entries")
            }
        }
    }

    /// The meta database holds only the catalog, its generation, schema
    /// snapshots and automatic-id counters, each well formed.
    private mutating func checkMeta(_ txn: LMDBTransaction, _ meta: DatabaseHandle, catalog: Catalog) throws {
        var snapshots: Set<UInt64> = []
        var entries: [(String, [UInt8])] = []
        try walk(txn, meta) { key, value in entries.append((String(decoding: key, as: UTF8.self), Array(value))) }
        for (key, value) in entries {
            if key == "catalog" { continue }
            if catalog.sync != nil, key == "sync.hlc" || key == "sync.seq" {
                if value.count != 8 { report("the sync counter '\(key)' is \(value.count) bytes, not 8") }
            } else if key == "generation" {
                if value.count != 8 { report("the generation is \(value.count) bytes, not 8") }
            } else if key.hasPrefix("schema.v"), let version = UInt64(key.dropFirst("schema.v".count)) {
                snapshots.insert(version)
                if let snapshot = try? SchemaSnapshot(jsonData: Data(value)) {
                    if snapshot.schemaVersion != version {
                        report("the schema snapshot '\(key)' is of version \(snapshot.schemaVersion)")
                    }
                } else {
                    report("the schema snapshot '\(key)' does not decode")
                }
            } else if key.hasPrefix("seq.t"), let id = UInt32(key.dropFirst("seq.t".count)) {
                if value.count != 8 { report("the counter '\(key)' is \(value.count) bytes, not 8") }
                if catalog[typeID: TypeID(id)].map({ $0.primaryKey != nil }) ?? true {
                    report("the counter '\(key)' belongs to no type with automatic ids")
                }
            } else {
                report("unexpected meta key '\(key)'")
            }
        }
        if !snapshots.contains(catalog.fileSchemaVersion) {
            report("no schema snapshot for the file's version \(catalog.fileSchemaVersion)")
        }
    }

    /// The index entries a table's objects call for: how many, and the sum
    /// of a hash of each (index key, object key) pair, which does not depend
    /// on the order the pairs are summed in.
    struct ExpectedEntries {
        var count = 0
        var sum = 0

        mutating func add(_ indexKey: UnsafeRawBufferPointer, _ objectKey: UnsafeRawBufferPointer) {
            var hasher = Hasher()
            hasher.combine(indexKey.count)
            hasher.combine(bytes: indexKey)
            hasher.combine(bytes: objectKey)
            count += 1
            sum &+= hasher.finalize()
        }
    }

    /// Every record's key and bytes validate. Returns the number of
    /// objects, and for each indexed field (by position) the entries its
    /// index must hold.
    private mutating func checkRecords(
        _ txn: LMDBTransaction, _ table: ObjectTable, catalog: Catalog,
        meta: DatabaseHandle
    ) throws -> (objects: Int, entries: [Int: ExpectedEntries]) {
        var count = 0
        var lastAutomaticID: UInt64 = 0
        var problems: [String] = []
        var entries: [Int: ExpectedEntries] = [:]
        let indexKey = ByteWriter(capacity: 64)
        try walk(txn, table.records) { key, record in
            count += 1
            do throws(DecodingFailure) {
                try KeyCodec.validateKey(key, type: table.primaryKey?.type)
                let view = try RecordView(validating: record)
                if catalog.mode == .local && view.effectiveSchemaVersion > catalog.fileSchemaVersion {
                    problems.append(
                        "a '\(table.name)' record says schema version \(view.effectiveSchemaVersion), above the file's \(catalog.fileSchemaVersion)"
                    )
                }
                if let primaryKey = table.primaryKey {
                    indexKey.removeAll()
                    _ = KeyCodec.appendPrimaryKey(
                        table.value(at: primaryKey.position, in: view), type: primaryKey.type, to: indexKey)
                    if !indexKey.withUnsafeBytes({ Self.same($0, key) }) {
                        problems.append(
                            "the '\(table.name)' record under key \(Array(key.prefix(16))) holds another primary key, \(table.value(at: primaryKey.position, in: view))"
                        )
                    }
                } else {
                    lastAutomaticID = UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
                }
                for field in table.indexedFields {
                    indexKey.removeAll()
                    KeyCodec.appendIndexKey(table.value(at: field.position, in: view), to: indexKey)
                    indexKey.withUnsafeBytes { entries[field.position, default: ExpectedEntries()].add($0, key) }
                }
            } catch {
                problems.append(table.corruptRecord(error, key: key).message)
            }
        }
        problems.forEach { report($0) }
        if table.primaryKey == nil && lastAutomaticID > 0 {
            let counter = try txn.get(meta, table.sequenceKey).flatMap {
                $0.count == 8 ? UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)) : nil
            }
            if (counter ?? 0) < lastAutomaticID {
                report(
                    "the automatic-id counter of '\(table.name)' is at \(counter.map(String.init) ?? "nothing"), behind id \(lastAutomaticID)"
                )
            }
        }
        return (count, entries)
    }

    /// The index holds exactly the entries its objects call for: every
    /// entry names an object whose value has that index key, and every
    /// object has its entry. Compared as sums of hashes first; when they
    /// differ, the entries are walked again to say which are wrong.
    private mutating func checkIndex(
        _ txn: LMDBTransaction, _ table: ObjectTable, _ field: ObjectTable.Field,
        expected: ExpectedEntries?
    ) throws {
        guard let index = field.index else { return }
        let expected = expected ?? ExpectedEntries()
        var found = ExpectedEntries()
        try walk(txn, index) { found.add($0, $1) }
        guard found.count != expected.count || found.sum != expected.sum else { return }
        let label = "the index on '\(table.name).\(field.name)'"
        report(
            "\(label) has \(found.count) entries for \(expected.count) objects, and they differ from what the objects call for"
        )
        var problems: [String] = []
        let wanted = ByteWriter(capacity: 64)
        try walk(txn, index) { indexKey, objectKey in
            guard let record = try txn.get(table.records, objectKey) else {
                return problems.append("\(label) names an object that does not exist: \(Array(objectKey.prefix(16)))")
            }
            guard let view = try? RecordView(validating: record) else { return }
            wanted.removeAll()
            KeyCodec.appendIndexKey(table.value(at: field.position, in: view), to: wanted)
            if !wanted.withUnsafeBytes({ Self.same($0, indexKey) }) {
                let key =
                    (try? KeyCodec.decodeKey(objectKey, type: table.primaryKey?.type)).map { "\($0)" }
                    ?? "\(Array(objectKey))"
                problems.append(
                    "\(label) files object \(key) under \(Array(indexKey.prefix(16))), but its value is \(table.value(at: field.position, in: view))"
                )
            }
        }
        problems.forEach { report($0) }
    }

    private static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }

    private func walk(
        _ txn: LMDBTransaction, _ dbi: DatabaseHandle,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try txn.withCursor(dbi) { cursor in
            var entry = try cursor.first()
            while let (key, value) = entry {
                try body(key, value)
                entry = try cursor.next()
            }
        }
    }
}

/// Verifies the file at `path` and records every problem found as an
/// issue; returns the verifier for further checks.
@discardableResult
func expectFileVerified(_ path: String, _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation)
    throws -> FileVerifier
{
    let verifier = try FileVerifier.verify(path)
    #expect(
        verifier.problems.isEmpty,
        "\(comment)\(comment.isEmpty ? "" : ": ")\(verifier.problems.joined(separator: "\n"))",
        sourceLocation: sourceLocation)
    return verifier
}
