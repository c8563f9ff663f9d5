import Foundation
import Testing
@testable import Strata

/// A configured schema that differs from the file's, and the lines the
/// error must list for it.
struct SchemaChangeCase: Sendable, CustomTestStringConvertible {
    let name: String
    let schema: Schema
    let lines: [String]

    var testDescription: String { name }

    static func person(@PropertyBuilder _ properties: () -> [Property]) -> ObjectSchema {
        ObjectSchema("Person", primaryKey: "id", properties: properties())
    }

    static let note = ObjectSchema("Note") { Property("text", .string) }

    static let all: [SchemaChangeCase] = [
        SchemaChangeCase(name: "added property", schema: Schema([person {
            Fixtures.person.properties
            Property("nickname", .string, optional: true)
        }]), lines: ["Property 'Person.nickname' has been added."]),
        SchemaChangeCase(name: "removed property", schema: Schema([person {
            Fixtures.person.properties.filter { $0.name != "email" }
        }]), lines: ["Property 'Person.email' has been removed."]),
        SchemaChangeCase(name: "changed type", schema: Schema([person {
            Fixtures.person.properties.map { $0.name == "age" ? Property("age", .string, default: "0", indexed: true) : $0 }
        }]), lines: [
            "Property 'Person.age' has been changed from 'int' to 'string'.",
            "Property 'Person.age' has had its default changed from 0 to \"0\".",
        ]),
        SchemaChangeCase(name: "several changes", schema: Schema([person {
            Fixtures.person.properties.filter { $0.name != "email" }
            Property("nickname", .string, optional: true)
        }, note]), lines: [
            "Object type 'Note' has been added.",
            "Property 'Person.nickname' has been added.",
            "Property 'Person.email' has been removed.",
        ]),
    ]
}

@Suite struct FileOpeningTests {
    // MARK: Helpers

    static func contents(_ path: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path))
    }

    static func exists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: path)
    }

    static func size(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).intValue
    }

    static let ada = Fixtures.person(1, "Ada", "Lovelace", age: 36, email: "ada@example.org")
    static let charles = Fixtures.person(2, "Charles", "Babbage", age: 79)
    static let annabella = Fixtures.person(3, "Annabella", "Lovelace", age: 40)

    /// Creates a file at `version` holding Ada (1), Charles (2) and
    /// Annabella (3), and closes it.
    static func seed(_ path: String, version: UInt64 = 1) throws {
        let db = try Database(configuration: Fixtures.configuration(path, version: version))
        try db.write { tx in
            for person in [ada, charles, annabella] { try tx.insert("Person", person) }
        }
    }

    /// Every Person's values, in primary-key order.
    static func people(_ db: Database) throws -> [[String: Value]] {
        try db.read { tx in try tx.objects("Person").map(\.values) }
    }

    /// Every Person's values, read through a Database that is closed again
    /// before this returns.
    static func people(opening configuration: Database.Configuration) throws -> [[String: Value]] {
        try people(Database(configuration: configuration))
    }

    /// Runs `body` with the storage layer's environment of `path` alone,
    /// past every check of Strata's, holding the lock that opening named
    /// databases needs. A Database open on `path` in this process shares
    /// the environment only if it is `.noSync` too.
    static func withRawEnvironment<T>(_ path: String, _ body: (Environment) throws -> T) throws -> T {
        var options = EnvironmentOptions()
        options.noSync = true
        let environment = try Environment.open(path: path, options: options)
        defer { environment.release() }
        environment.setupLock.lock()
        defer { environment.setupLock.unlock() }
        return try body(environment)
    }

    /// Runs `body` in a write transaction of the storage layer alone, past
    /// every check of Strata's. No Database may be open on `path`: the
    /// environment is released before this returns.
    static func withRawWrite<T>(_ path: String, _ body: (LMDBTransaction) throws -> T) throws -> T {
        try withRawEnvironment(path) { try $0.withWriteTransaction(body) }
    }

    /// Rewrites the catalog's JSON through the storage layer.
    static func rewriteCatalog(_ path: String, _ change: (inout [String: Any]) throws -> Void) throws {
        try withRawWrite(path) { txn in
            let meta = try #require(try txn.openDatabase(Database.metaDatabaseName, create: false))
            let bytes = try #require(try txn.get(meta, Database.catalogKey))
            var json = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
            try change(&json)
            try txn.put(meta, Database.catalogKey, Array(try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])))
        }
    }

    static func key(_ id: Int64) -> [UInt8] {
        var writer = ByteWriter()
        _ = KeyCodec.appendPrimaryKey(.int(id), type: .int, to: &writer)
        return writer.bytes
    }

    // MARK: Files that are not Strata databases

    @Test func emptyFileIsNotAStrataFileAndStaysEmpty() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let error = expectStrataError(.notAStrataFile) { _ = try Database(configuration: Fixtures.configuration(path)) }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try Self.size(path) == 0)
        #expect(!Self.exists(path + "-lock"))
    }

    @Test func randomBytesAreNotAStrataFileAndStayUntouched() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        var generator = SplitMix64(seed: 0x5354_5241_5441)
        let bytes = Data((0 ..< 64 * 1024).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
        try bytes.write(to: URL(fileURLWithPath: path))
        let error = expectStrataError(.notAStrataFile) { _ = try Database(configuration: Fixtures.configuration(path)) }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try Self.contents(path) == bytes)
        #expect(!Self.exists(path + "-lock"))
    }

    @Test func lmdbFileWithDataButNoCatalogIsNotAStrataFileAndStaysUntouched() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.withRawWrite(path) { txn in
            let other = try #require(try txn.openDatabase("other", create: true))
            try txn.put(other, Array("key".utf8), Array("value".utf8))
        }
        let before = try Self.contents(path)
        let error = expectStrataError(.notAStrataFile) { _ = try Database(configuration: Fixtures.configuration(path)) }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try Self.contents(path) == before)
        // The foreign entry is still there.
        let value = try Self.withRawWrite(path) { txn in
            try txn.openDatabase("other", create: false).flatMap { try txn.get($0, Array("key".utf8)).map { Array($0) } }
        }
        #expect(value == Array("value".utf8))
    }

    @Test func emptyLMDBEnvironmentIsInitializedAsANewDatabase() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        do {
            var options = EnvironmentOptions()
            options.noSync = true
            try Environment.open(path: path, options: options).release()
        }
        #expect(Self.exists(path))
        do {
            let db = try Database(configuration: Fixtures.configuration(path))
            #expect(db.schemaVersion == 1)
            #expect(db.schema == Fixtures.schema)
            try db.write { tx in try tx.insert("Person", Self.ada) }
        }
        #expect(try Self.people(opening: Fixtures.configuration(path)) == [Self.ada])
    }

    // MARK: Damaged files

    @Test func truncatedFileIsRefusedWithoutCrashing() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let config = Fixtures.configuration(path)
        do {
            let db = try Database(configuration: config)
            let filler = String(repeating: "x", count: 1000)
            try db.write { tx in
                for id in 1 ... 5000 as ClosedRange<Int64> {
                    try tx.insert("Person", Fixtures.person(id, filler + "\(id)", "Last", age: id % 90))
                }
            }
        }
        let original = try Self.contents(path)
        let page = Int(getpagesize())
        #expect(original.count > 200 * page, "the file must span many pages for truncation to cut real ones")
        // Every page boundary of the first pages (LMDB's two meta pages
        // among them), the last bytes, and 64 seeded cuts anywhere.
        var generator = SplitMix64(seed: 7)
        var sizes = [1, 100, 4095, 4097, original.count / 2, original.count - page, original.count - 1]
        sizes += (1 ... 16).flatMap { [$0 * page - 1, $0 * page] }
        sizes += (0 ..< 64).map { _ in Int.random(in: 1 ..< original.count, using: &generator) }
        var refusals: [StrataError.Code: Int] = [:]
        for size in sizes {
            try original.prefix(size).write(to: URL(fileURLWithPath: path))
            do {
                _ = try Database(configuration: config)
                Issue.record("A file truncated to \(size) of \(original.count) bytes opened")
            } catch let error as StrataError {
                refusals[error.code, default: 0] += 1
                #expect(error.code == .corruptFile || error.code == .notAStrataFile, "size \(size): \(error.code): \(error.message)")
                #expect(error.message.contains(path), "size \(size): \(error.message)")
                if error.code == .corruptFile {
                    #expect(error.message.contains("is truncated: it is \(size) bytes long"), "size \(size): \(error.message)")
                }
            }
        }
        // Past LMDB's meta pages, a cut is told apart from a foreign file.
        #expect(refusals[.corruptFile, default: 0] > 64, "\(refusals)")
        // The same file, whole again, opens: the errors came from the cuts.
        try original.write(to: URL(fileURLWithPath: path))
        let db = try Database(configuration: config)
        #expect(try db.read { try $0.objects("Person").count } == 5000)
    }

    @Test func catalogOfANewerFormatIsRefused() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path)
        try Self.rewriteCatalog(path) { $0["formatVersion"] = 99 }
        let before = try Self.contents(path)
        let error = expectStrataError(.unsupportedFormatVersion) { _ = try Database(configuration: Fixtures.configuration(path)) }
        #expect(error?.message.contains("99") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try Self.contents(path) == before)
    }

    @Test func catalogThatIsNotJSONIsCorrupt() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path)
        try Self.withRawWrite(path) { txn in
            let meta = try #require(try txn.openDatabase(Database.metaDatabaseName, create: false))
            try txn.put(meta, Database.catalogKey, Array("{\"magic\": \"strata\", \"formatVersion\": 1, \"types\": [".utf8))
        }
        let error = expectStrataError(.corruptFile) { _ = try Database(configuration: Fixtures.configuration(path)) }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
    }

    @Test func catalogWithDuplicatePropertyIDsIsCorrupt() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path)
        try Self.rewriteCatalog(path) { json in
            var types = try #require(json["types"] as? [[String: Any]])
            var properties = try #require(types[0]["properties"] as? [[String: Any]])
            properties[2]["id"] = properties[1]["id"]
            types[0]["properties"] = properties
            json["types"] = types
        }
        let error = expectStrataError(.corruptFile) { _ = try Database(configuration: Fixtures.configuration(path)) }
        #expect(error?.message.contains("inconsistent") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
    }

    @Test func metaDatabaseWithoutCatalogIsCorrupt() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path)
        let deleted = try Self.withRawWrite(path) { txn in
            let meta = try #require(try txn.openDatabase(Database.metaDatabaseName, create: false))
            return try txn.delete(meta, Database.catalogKey)
        }
        #expect(deleted)
        let error = expectStrataError(.corruptFile) { _ = try Database(configuration: Fixtures.configuration(path)) }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
    }

    // MARK: Schema and version checks

    @Test func reopeningWithTheSameVersionAndSchemaKeepsEveryObject() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path, version: 2)
        let db = try Database(configuration: Fixtures.configuration(path, version: 2))
        #expect(db.schemaVersion == 2)
        #expect(try Self.people(db) == [Self.ada, Self.charles, Self.annabella])
    }

    @Test func lowerSchemaVersionIsRefusedAndSaysWhichVersionToUse() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path, version: 3)
        let before = try Self.contents(path)
        let error = expectStrataError(.schemaVersionTooLow) { _ = try Database(configuration: Fixtures.configuration(path, version: 1)) }
        let message = error?.message ?? ""
        #expect(message.contains("Schema version 1 is lower than the file's version 3"), "\(message)")
        #expect(message.contains(path), "\(message)")
        #expect(message.contains("Open it with version 3 or later."), "\(message)")
        #expect(try Self.contents(path) == before)
        #expect(try Self.people(opening: Fixtures.configuration(path, version: 3)) == [Self.ada, Self.charles, Self.annabella])
    }

    @Test func higherSchemaVersionWithTheSameSchemaMigratesWithoutRewriting() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path)
        let db = try Database(configuration: Fixtures.configuration(path, version: 2))
        #expect(db.schemaVersion == 2)
        #expect(db.migrationRecordWrites == 0)
        #expect(try db.read { tx in try tx.objects("Person").map(\.schemaVersion) } == [1, 1, 1])
        db.close()
        #expect(try Self.people(opening: Fixtures.configuration(path, version: 2)) == [Self.ada, Self.charles, Self.annabella])
        expectStrataError(.schemaVersionTooLow) { _ = try Database(configuration: Fixtures.configuration(path)) }
    }

    @Test(arguments: SchemaChangeCase.all)
    func changedSchemaAtTheSameVersionNeedsAMigrationListingEachChange(_ change: SchemaChangeCase) throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path)
        let before = try Self.contents(path)
        let error = expectStrataError(.migrationRequired) {
            _ = try Database(configuration: Fixtures.configuration(path, schema: change.schema))
        }
        let message = error?.message ?? ""
        let listed = message.split(separator: "\n").filter { $0.hasPrefix("- ") }.map { String($0.dropFirst(2)) }
        #expect(listed == change.lines, "\(message)")
        #expect(message.contains(path), "\(message)")
        #expect(message.contains("at the same schema version 1"), "\(message)")
        #expect(message.contains("Raise the schema version to 2 to migrate the file."), "\(message)")
        #expect(try Self.contents(path) == before)
        #expect(try Self.people(opening: Fixtures.configuration(path)) == [Self.ada, Self.charles, Self.annabella])
    }

    // MARK: Read-only

    @Test func readOnlyOpenOfAMissingFileCreatesNothing() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        var config = Fixtures.configuration(path)
        config.readOnly = true
        let error = expectStrataError(.fileSystem) { _ = try Database(configuration: config) }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(!Self.exists(path))
        #expect(!Self.exists(path + "-lock"))
    }

    @Test func readOnlyDatabaseReadsButRefusesWrites() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path)
        let before = try Self.contents(path)
        var config = Fixtures.configuration(path)
        config.readOnly = true
        do {
            let db = try Database(configuration: config)
            #expect(try Self.people(db) == [Self.ada, Self.charles, Self.annabella])
            #expect(try db.read { try $0.objects("Person").where("age", equals: 79).map { $0["id"] } } == [2])
            let error = expectStrataError(.readOnly) {
                try db.write { tx in _ = try tx.insert("Person", Fixtures.person(4, "Impostor", "Nobody")) }
            }
            #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
            #expect(try Self.people(db).count == 3)
        }
        #expect(try Self.contents(path) == before)
    }

    @Test func readOnlyOpenWithAnotherVersionIsRefused() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path, version: 2)
        var higher = Fixtures.configuration(path, version: 3)
        higher.readOnly = true
        expectStrataError(.migrationRequired) { _ = try Database(configuration: higher) }
        var lower = Fixtures.configuration(path, version: 1)
        lower.readOnly = true
        expectStrataError(.schemaVersionTooLow) { _ = try Database(configuration: lower) }
        #expect(try Self.people(opening: Fixtures.configuration(path, version: 2)).count == 3)
    }

    // MARK: File system

    @Test func pathInAMissingFolderIsAFileSystemError() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("no-such-folder/test.strata")
        let error = expectStrataError(.fileSystem) { _ = try Database(configuration: Fixtures.configuration(path)) }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).isEmpty)
    }

    // MARK: Damaged records

    enum RecordDamage: String, CaseIterable, Sendable {
        /// Layout 1, version 1, then a field count of 5 with one byte left.
        case garbage
        /// The first half of the real record.
        case truncatedCopy
    }

    @Test(arguments: RecordDamage.allCases)
    func damagedRecordIsCorruptAndOtherObjectsStillRead(_ damage: RecordDamage) throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path)
        try Self.withRawWrite(path) { txn in
            let records = try #require(try txn.openDatabase("__strata.t1", create: false))
            let original = try #require(try txn.get(records, Self.key(2)).map { Array($0) })
            let damaged: [UInt8] = switch damage {
            case .garbage: [0x01, 0x01, 0x05, 0xFF]
            case .truncatedCopy: Array(original.prefix(original.count / 2))
            }
            try txn.put(records, Self.key(2), damaged)
        }
        let db = try Database(configuration: Fixtures.configuration(path))
        let byKey = expectStrataError(.corruptFile) { _ = try db.read { tx in try tx.object("Person", key: 2)?.values } }
        #expect(byKey?.message.contains("'Person'") == true, "\(byKey?.message ?? "")")
        #expect(byKey?.message.contains("key 2") == true, "\(byKey?.message ?? "")")
        #expect(byKey?.message.contains(path) == true, "\(byKey?.message ?? "")")
        let scan = expectStrataError(.corruptFile) { _ = try Self.people(db) }
        #expect(scan?.message.contains("'Person'") == true, "\(scan?.message ?? "")")
        #expect(scan?.message.contains("key 2") == true, "\(scan?.message ?? "")")
        let inWrite = expectStrataError(.corruptFile) { try db.write { tx in _ = try tx.object("Person", key: 2) } }
        #expect(inWrite?.message.contains("key 2") == true, "\(inWrite?.message ?? "")")
        let others = try db.read { tx in [try tx.object("Person", key: 1)?.values, try tx.object("Person", key: 3)?.values] }
        #expect(others == [Self.ada, Self.annabella])
        #expect(try db.read { try $0.objects("Person").where("age", equals: 36).map(\.values) } == [Self.ada])
    }

    @Test func recordWithAKeyOfTheWrongLengthIsCorrupt() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Self.seed(path)
        try Self.withRawWrite(path) { txn in
            let records = try #require(try txn.openDatabase("__strata.t1", create: false))
            let record = try #require(try txn.get(records, Self.key(1)).map { Array($0) })
            try txn.put(records, [0x80, 0, 0, 0, 0], record)
        }
        let db = try Database(configuration: Fixtures.configuration(path))
        let error = expectStrataError(.corruptFile) { _ = try Self.people(db) }
        #expect(error?.message.contains("'Person'") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try db.read { tx in try tx.object("Person", key: 3)?.values } == Self.annabella)
    }

    @Test func damagedAutomaticIDCounterIsCorrupt() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let schema = Schema([Fixtures.person, ObjectSchema("Note") { Property("text", .string) }])
        let config = Fixtures.configuration(path, schema: schema)
        let noteID = try { () throws -> UInt32 in
            let db = try Database(configuration: config)
            try db.write { tx in _ = try tx.insert("Note", ["text": "first"]) }
            return try #require(db.catalog[type: "Note"]).id
        }()
        try Self.withRawWrite(path) { txn in
            let meta = try #require(try txn.openDatabase(Database.metaDatabaseName, create: false))
            #expect(try txn.get(meta, Array("seq.t\(noteID)".utf8))?.count == 8)
            try txn.put(meta, Array("seq.t\(noteID)".utf8), [0, 0, 1])
        }
        let db = try Database(configuration: config)
        let error = expectStrataError(.corruptFile) { try db.write { tx in _ = try tx.insert("Note", ["text": "second"]) } }
        #expect(error?.message.contains("'Note'") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try db.read { try $0.objects("Note").map { $0["text"] } } == ["first"])
    }

    // MARK: Sharing and map growth

    @Test func twoDatabasesOnOnePathShareTheirData() throws {
        let folder = try TemporaryFolder()
        let config = Fixtures.configuration(folder.path())
        let first = try Database(configuration: config)
        let second = try Database(configuration: config)
        #expect(first.environment === second.environment)
        try first.write { tx in try tx.insert("Person", Self.ada) }
        #expect(try second.read { tx in try tx.object("Person", key: 1)?.values } == Self.ada)
        try second.write { tx in try tx.insert("Person", Self.charles) }
        #expect(try Self.people(first) == [Self.ada, Self.charles])
    }

    @Test func mapFullErrorsSwallowedByTheClosureStillCommitEveryObject() throws {
        let folder = try TemporaryFolder()
        let schema = Schema([ObjectSchema("Blob", primaryKey: "id") {
            Property("id", .int)
            Property("payload", .data)
        }])
        var config = Fixtures.configuration(folder.path(), schema: schema)
        config.initialMapSize = 64 << 10
        let db = try Database(configuration: config)
        let payloads = (0 ..< 12).map { i in Data((0 ..< 100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }) }
        var runs = 0
        try db.write { tx in
            runs += 1
            for (i, payload) in payloads.enumerated() {
                _ = try? tx.insert("Blob", ["id": .int(Int64(i)), "payload": .data(payload)])
            }
        }
        #expect(runs > 1, "the closure should have been run again after the map grew")
        #expect(db.environment.mapSize > 64 << 10)
        let stored = try db.read { tx in try tx.objects("Blob").map { ($0["id"].int ?? -1, $0["payload"].data ?? Data()) } }
        #expect(stored.map(\.0) == Array(0 ..< 12))
        #expect(stored.map(\.1) == payloads)
    }
}
