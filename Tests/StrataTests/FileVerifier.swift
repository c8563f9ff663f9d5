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
    var schemaVersion: UInt64? { catalog?.schemaVersion }

    /// At most this many problems are listed, then a count of the rest.
    private static let problemLimit = 20
    private var unlisted = 0

    private mutating func report(_ problem: String) {
        if problems.count < Self.problemLimit { problems.append(problem) } else { unlisted += 1 }
    }

    /// Verifies the file at `path`. No `Database` of another durability may
    /// have it open in this process (the environment is shared).
    static func verify(_ path: String) throws -> FileVerifier {
        try FileOpeningTests.withRawEnvironment(path) { environment in
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
        guard let meta = try txn.openDatabase(Database.metaDatabaseName, create: false) else {
            return report("no \(Database.metaDatabaseName) database; named databases: \(names)")
        }
        guard let catalogBytes = try txn.get(meta, Database.catalogKey) else { return report("no catalog") }
        let catalog: Catalog
        do {
            catalog = try Catalog.decode(catalogBytes, path: path)
        } catch let error as StrataError {
            return report("the catalog does not decode: \(error.message)")
        }
        self.catalog = catalog
        let tables: [UInt32: ObjectTable]
        do {
            tables = try Database.openTables(txn, catalog, create: false, path: path)
        } catch let error as StrataError {
            return report("a named database is missing: \(error.message)")
        }
        try checkNames(names, catalog: catalog, txn)
        try checkMeta(txn, meta, catalog: catalog)
        for table in tables.values.sorted(by: { $0.type.id < $1.type.id }) {
            let expected = try checkRecords(txn, table, catalog: catalog, meta: meta)
            objectCounts[table.name] = expected.objects
            for field in table.indexedFields { try checkIndex(txn, table, field, expected: expected.entries[field.position]) }
        }
    }

    /// Every named database is the meta database, a type's records, one of
    /// its indexes, or an emptied one listed as orphaned; every one gets a
    /// digest.
    private mutating func checkNames(_ names: [String], catalog: Catalog, _ txn: LMDBTransaction) throws {
        var expected: Set<String> = [Database.metaDatabaseName]
        var duplicateKeys: Set<String> = []
        for type in catalog.types {
            expected.insert(type.recordsDatabaseName)
            for property in type.properties where property.hasIndex(in: type) {
                duplicateKeys.insert(type.indexDatabaseName(property))
            }
        }
        expected.formUnion(duplicateKeys)
        for name in catalog.orphanedDatabases where expected.contains(name) {
            report("'\(name)' is in use and also listed as orphaned, so the next open would delete it")
        }
        let orphaned = Set(catalog.orphanedDatabases)
        for name in names {
            guard expected.contains(name) || orphaned.contains(name) else {
                report("named database '\(name)' is not accounted for by the catalog")
                continue
            }
            let isIndex = duplicateKeys.contains(name) || (orphaned.contains(name) && name.contains(".i"))
            guard let dbi = try txn.openDatabase(name, duplicateKeys: isIndex, create: false) else { continue }
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
            if key == "generation" {
                if value.count != 8 { report("the generation is \(value.count) bytes, not 8") }
            } else if key.hasPrefix("schema.v"), let version = UInt64(key.dropFirst("schema.v".count)) {
                snapshots.insert(version)
                if let snapshot = try? SchemaSnapshot(jsonData: Data(value)) {
                    if snapshot.schemaVersion != version { report("the schema snapshot '\(key)' is of version \(snapshot.schemaVersion)") }
                } else {
                    report("the schema snapshot '\(key)' does not decode")
                }
            } else if key.hasPrefix("seq.t"), let id = UInt32(key.dropFirst("seq.t".count)) {
                if value.count != 8 { report("the counter '\(key)' is \(value.count) bytes, not 8") }
                if catalog[typeID: id].map({ $0.primaryKey != nil }) ?? true {
                    report("the counter '\(key)' belongs to no type with automatic ids")
                }
            } else {
                report("unexpected meta key '\(key)'")
            }
        }
        if !snapshots.contains(catalog.schemaVersion) {
            report("no schema snapshot for the file's version \(catalog.schemaVersion)")
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
    private mutating func checkRecords(_ txn: LMDBTransaction, _ table: ObjectTable, catalog: Catalog,
                                       meta: DatabaseHandle) throws -> (objects: Int, entries: [Int: ExpectedEntries]) {
        var count = 0
        var lastAutomaticID: UInt64 = 0
        var problems: [String] = []
        var entries: [Int: ExpectedEntries] = [:]
        var indexKey = ByteWriter(capacity: 64)
        try walk(txn, table.records) { key, record in
            count += 1
            do throws(DecodingFailure) {
                try KeyCodec.validateKey(key, type: table.primaryKey?.type)
                let view = try RecordView(validating: record)
                if catalog.mode == .local && view.schemaVersion > catalog.schemaVersion {
                    problems.append("a '\(table.name)' record says schema version \(view.schemaVersion), above the file's \(catalog.schemaVersion)")
                }
                if let primaryKey = table.primaryKey {
                    indexKey.removeAll()
                    _ = KeyCodec.appendPrimaryKey(table.value(at: primaryKey.position, in: view), type: primaryKey.type, to: &indexKey)
                    if !indexKey.withUnsafeBytes({ Self.same($0, key) }) {
                        problems.append("the '\(table.name)' record under key \(Array(key.prefix(16))) holds another primary key, \(table.value(at: primaryKey.position, in: view))")
                    }
                } else {
                    lastAutomaticID = UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
                }
                for field in table.indexedFields {
                    indexKey.removeAll()
                    KeyCodec.appendIndexKey(table.value(at: field.position, in: view), to: &indexKey)
                    indexKey.withUnsafeBytes { entries[field.position, default: ExpectedEntries()].add($0, key) }
                }
            } catch {
                problems.append(table.corruptRecord(error, key: key).message)
            }
        }
        problems.forEach { report($0) }
        if table.primaryKey == nil && lastAutomaticID > 0 {
            let counter = try txn.get(meta, table.sequenceKey).flatMap { $0.count == 8 ? UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)) : nil }
            if (counter ?? 0) < lastAutomaticID {
                report("the automatic-id counter of '\(table.name)' is at \(counter.map(String.init) ?? "nothing"), behind id \(lastAutomaticID)")
            }
        }
        return (count, entries)
    }

    /// The index holds exactly the entries its objects call for: every
    /// entry names an object whose value has that index key, and every
    /// object has its entry. Compared as sums of hashes first; when they
    /// differ, the entries are walked again to say which are wrong.
    private mutating func checkIndex(_ txn: LMDBTransaction, _ table: ObjectTable, _ field: ObjectTable.Field,
                                     expected: ExpectedEntries?) throws {
        guard let index = field.index else { return }
        let expected = expected ?? ExpectedEntries()
        var found = ExpectedEntries()
        try walk(txn, index) { found.add($0, $1) }
        guard found.count != expected.count || found.sum != expected.sum else { return }
        let label = "the index on '\(table.name).\(field.name)'"
        report("\(label) has \(found.count) entries for \(expected.count) objects, and they differ from what the objects call for")
        var problems: [String] = []
        var wanted = ByteWriter(capacity: 64)
        try walk(txn, index) { indexKey, objectKey in
            guard let record = try txn.get(table.records, objectKey) else {
                return problems.append("\(label) names an object that does not exist: \(Array(objectKey.prefix(16)))")
            }
            guard let view = try? RecordView(validating: record) else { return }
            wanted.removeAll()
            KeyCodec.appendIndexKey(table.value(at: field.position, in: view), to: &wanted)
            if !wanted.withUnsafeBytes({ Self.same($0, indexKey) }) {
                let key = (try? KeyCodec.decodeKey(objectKey, type: table.primaryKey?.type)).map { "\($0)" } ?? "\(Array(objectKey))"
                problems.append("\(label) files object \(key) under \(Array(indexKey.prefix(16))), but its value is \(table.value(at: field.position, in: view))")
            }
        }
        problems.forEach { report($0) }
    }

    private static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }

    private func walk(_ txn: LMDBTransaction, _ dbi: DatabaseHandle,
                      _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) throws {
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
func expectFileVerified(_ path: String, _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation) throws -> FileVerifier {
    let verifier = try FileVerifier.verify(path)
    #expect(verifier.problems.isEmpty, "\(comment)\(comment.isEmpty ? "" : ": ")\(verifier.problems.joined(separator: "\n"))", sourceLocation: sourceLocation)
    return verifier
}

/// The verifier finds each kind of damage it claims to, so that a clean
/// report from it means something.
@Suite struct FileVerifierTests {
    static let schema = Schema([Fixtures.person, ObjectSchema("Note") { Property("text", .string) }])

    /// A damage done to a sound file through the storage layer, and a
    /// fragment of the problem the verifier must report.
    struct Damage: Sendable, CustomTestStringConvertible {
        let name: String
        let fragment: String
        let apply: @Sendable (LMDBTransaction) throws -> Void
        var testDescription: String { name }

        static func records(_ txn: LMDBTransaction, _ name: String = "__strata.t1") throws -> DatabaseHandle {
            try #require(try txn.openDatabase(name, create: false))
        }

        static func ageIndex(_ txn: LMDBTransaction) throws -> DatabaseHandle {
            try #require(try txn.openDatabase("__strata.t1.i4", duplicateKeys: true, create: false))
        }

        static func meta(_ txn: LMDBTransaction) throws -> DatabaseHandle {
            try #require(try txn.openDatabase(Database.metaDatabaseName, create: false))
        }

        static func ageKey(_ age: Int64) -> [UInt8] {
            var writer = ByteWriter()
            KeyCodec.appendIndexKey(.int(age), to: &writer)
            return writer.bytes
        }

        static func rewriteCatalog(_ txn: LMDBTransaction, _ change: (inout Catalog) -> Void) throws {
            let meta = try meta(txn)
            var catalog = try Catalog.decode(try #require(try txn.get(meta, Database.catalogKey)), path: "")
            change(&catalog)
            try txn.put(meta, Database.catalogKey, catalog.encoded())
        }

        static let all: [Damage] = [
            Damage(name: "an index entry removed", fragment: "has 2 entries for 3 objects") { txn in
                try FileOpeningTests.key(1).withUnsafeBytes { object in
                    try ageKey(36).withUnsafeBytes { _ = try txn.delete(ageIndex(txn), $0, value: object) }
                }
            },
            Damage(name: "an index entry moved to another value", fragment: "files object 1 under") { txn in
                try FileOpeningTests.key(1).withUnsafeBytes { object in
                    try ageKey(36).withUnsafeBytes { _ = try txn.delete(ageIndex(txn), $0, value: object) }
                    try ageKey(99).withUnsafeBytes { _ = try txn.put(ageIndex(txn), $0, object) }
                }
            },
            Damage(name: "an object deleted without its index entry", fragment: "names an object that does not exist") { txn in
                try txn.delete(records(txn), FileOpeningTests.key(2))
            },
            Damage(name: "a damaged record", fragment: "is damaged") { txn in
                try txn.put(records(txn), FileOpeningTests.key(3), [0x01, 0x01, 0x05, 0xFF])
            },
            Damage(name: "a record under another object's key", fragment: "holds another primary key") { txn in
                let charles = try #require(try txn.get(records(txn), FileOpeningTests.key(2)).map { Array($0) })
                try txn.put(records(txn), FileOpeningTests.key(7), charles)
            },
            Damage(name: "a record from a newer schema version", fragment: "above the file's 1") { txn in
                var record = try #require(try txn.get(records(txn), FileOpeningTests.key(1)).map { Array($0) })
                record[1] = 5
                try txn.put(records(txn), FileOpeningTests.key(1), record)
            },
            Damage(name: "a stray named database", fragment: "'__strata.t99' is not accounted for") { txn in
                _ = try txn.openDatabase("__strata.t99", create: true)
            },
            Damage(name: "a catalog that does not decode", fragment: "the catalog does not decode") { txn in
                try txn.put(meta(txn), Database.catalogKey, Array("{}".utf8))
            },
            Damage(name: "a generation of the wrong length", fragment: "the generation is 3 bytes") { txn in
                try txn.put(meta(txn), Database.generationKey, [0, 0, 1])
            },
            Damage(name: "no schema snapshot for the file's version", fragment: "no schema snapshot for the file's version 1") { txn in
                try txn.delete(meta(txn), Database.schemaKey(1))
            },
            Damage(name: "an unexpected meta key", fragment: "unexpected meta key 'stray'") { txn in
                try txn.put(meta(txn), Array("stray".utf8), [1])
            },
            Damage(name: "an automatic-id counter behind its objects", fragment: "is at 1, behind id 2") { txn in
                try txn.put(meta(txn), Array("seq.t2".utf8), [0, 0, 0, 0, 0, 0, 0, 1])
            },
            Damage(name: "an index in use listed as orphaned", fragment: "in use and also listed as orphaned") { txn in
                try rewriteCatalog(txn) { $0.orphanedDatabases = ["__strata.t1.i4"] }
            },
            Damage(name: "an orphaned database that still holds entries", fragment: "still holds 1 entries") { txn in
                let orphan = try #require(try txn.openDatabase("__strata.t1.i77", duplicateKeys: true, create: true))
                try txn.put(orphan, [1], [2])
                try rewriteCatalog(txn) { $0.orphanedDatabases = ["__strata.t1.i77"] }
            },
        ]
    }

    static func seed(_ path: String) throws {
        let db = try Database(configuration: Fixtures.configuration(path, schema: schema))
        try db.write { tx in
            for person in [FileOpeningTests.ada, FileOpeningTests.charles, FileOpeningTests.annabella] { try tx.insert("Person", person) }
            try tx.insert("Note", ["text": "one"])
            try tx.insert("Note", ["text": "two"])
        }
    }

    @Test func aSoundFileHasNoProblemsAndItsContentsAreSummedUp() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path)
        let verifier = try FileVerifier.verify(path)
        #expect(verifier.problems.isEmpty, "\(verifier.problems)")
        #expect(verifier.objectCounts == ["Person": 3, "Note": 2])
        #expect(Set(verifier.digests.keys) == ["__strata.meta", "__strata.t1", "__strata.t1.i4", "__strata.t2"])
        #expect(verifier.digests["__strata.t1.i4"]?.entries == 3)
        #expect(try FileVerifier.verify(path).digests == verifier.digests)
        // One changed value changes the digest of its table and index.
        try Database(configuration: Fixtures.configuration(path, schema: Self.schema)).write { tx in try tx.update("Person", key: 2, ["age": 80]) }
        let changed = try FileVerifier.verify(path).digests
        #expect(Set(changed.keys.filter { changed[$0] != verifier.digests[$0] }) == ["__strata.t1", "__strata.t1.i4"])
    }

    @Test(arguments: Damage.all)
    func eachDamageIsReported(_ damage: Damage) throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path)
        try FileOpeningTests.withRawWrite(path) { try damage.apply($0) }
        let problems = try FileVerifier.verify(path).problems
        #expect(problems.contains { $0.contains(damage.fragment) }, "\(problems)")
    }
}
