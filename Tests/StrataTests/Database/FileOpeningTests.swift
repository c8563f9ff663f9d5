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
        SchemaChangeCase(
            name: "added property",
            schema: Schema([
                person {
                    Fixtures.person.properties
                    Property("nickname", .string, optional: true)
                }
            ]), lines: ["Property 'Person.nickname' has been added."]),
        SchemaChangeCase(
            name: "removed property",
            schema: Schema([
                person {
                    Fixtures.person.properties.filter { $0.name != "email" }
                }
            ]), lines: ["Property 'Person.email' has been removed."]),
        SchemaChangeCase(
            name: "changed type",
            schema: Schema([
                person {
                    Fixtures.person.properties.map {
                        $0.name == "age" ? Property("age", .string, default: "0", indexed: true) : $0
                    }
                }
            ]),
            lines: [
                "Property 'Person.age' has been changed from 'int' to 'string'.",
                "Property 'Person.age' has had its default changed from 0 to \"0\".",
            ]),
        SchemaChangeCase(
            name: "several changes",
            schema: Schema([
                person {
                    Fixtures.person.properties.filter { $0.name != "email" }
                    Property("nickname", .string, optional: true)
                }, note,
            ]),
            lines: [
                "Object type 'Note' has been added.",
                "Property 'Person.nickname' has been added.",
                "Property 'Person.email' has been removed.",
            ]),
    ]
}

@Suite(.temporaryFolder) struct FileOpeningTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    // MARK: Files that are not Strata databases

    @Test(arguments: Fixtures.modes) func emptyFileIsNotAStrataFileAndStaysEmpty(_ mode: Database.Mode) throws {
        let path = folder.path()
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let error = expectStrataError(.notAStrataFile) {
            _ = try Database(configuration: Fixtures.configuration(path, mode: mode))
        }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try RawFile.size(path) == 0)
        #expect(!RawFile.exists(path + "-lock"))
    }

    @Test(arguments: Fixtures.modes) func randomBytesAreNotAStrataFileAndStayUntouched(_ mode: Database.Mode) throws {
        let path = folder.path()
        var generator = SplitMix64(seed: 0x5354_5241_5441)
        let bytes = Data((0 ..< 64 * 1024).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
        try bytes.write(to: URL(fileURLWithPath: path))
        let error = expectStrataError(.notAStrataFile) {
            _ = try Database(configuration: Fixtures.configuration(path, mode: mode))
        }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try RawFile.contents(path) == bytes)
        #expect(!RawFile.exists(path + "-lock"))
    }

    @Test(arguments: Fixtures.modes) func lmdbFileWithDataButNoCatalogIsNotAStrataFileAndStaysUntouched(
        _ mode: Database.Mode
    ) throws {
        let path = folder.path()
        try RawFile.withWrite(path) { txn in
            let other = try #require(
                try txn.openDatabase(NamedDatabase(name: "other", duplicateKeys: false), create: true))
            try txn.put(other, Array("key".utf8), Array("value".utf8))
        }
        let before = try RawFile.contents(path)
        let error = expectStrataError(.notAStrataFile) {
            _ = try Database(configuration: Fixtures.configuration(path, mode: mode))
        }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try RawFile.contents(path) == before)
        // The foreign entry is still there.
        let value = try RawFile.withWrite(path) { txn in
            try txn.openDatabase(NamedDatabase(name: "other", duplicateKeys: false), create: false).flatMap {
                try txn.get($0, Array("key".utf8)).map { Array($0) }
            }
        }
        #expect(value == Array("value".utf8))
    }

    @Test(arguments: Fixtures.modes) func emptyLMDBEnvironmentIsInitializedAsANewDatabase(_ mode: Database.Mode) throws
    {
        let path = folder.path()
        do {
            var options = EnvironmentOptions()
            options.noSync = true
            try Environment.open(path: path, options: options).release()
        }
        #expect(RawFile.exists(path))
        do {
            let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
            #expect(db.fileSchemaVersion == 1)
            #expect(db.schema == Fixtures.schema)
            try db.write { tx in try tx.insert("Person", Fixtures.ada) }
        }
        #expect(try Fixtures.people(opening: Fixtures.configuration(path, mode: mode)) == [Fixtures.ada])
    }

    // MARK: Damaged files

    @Test(arguments: Fixtures.modes) func truncatedFileIsRefusedWithoutCrashing(_ mode: Database.Mode) throws {
        let path = folder.path()
        let config = Fixtures.configuration(path, mode: mode)
        do {
            let db = try Database(configuration: config)
            let filler = String(repeating: "x", count: 1000)
            try db.write { tx in
                for id in 1 ... 5000 as ClosedRange<Int64> {
                    try tx.insert("Person", Fixtures.person(id, filler + "\(id)", "Last", age: id % 90))
                }
            }
        }
        let original = try RawFile.contents(path)
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
                #expect(
                    error.code == .corruptFile || error.code == .notAStrataFile,
                    "size \(size): \(error.code): \(error.message)")
                #expect(error.message.contains(path), "size \(size): \(error.message)")
                if error.code == .corruptFile {
                    #expect(
                        error.message.contains("is truncated: it is \(size) bytes long"),
                        "size \(size): \(error.message)")
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

    @Test(arguments: Fixtures.modes) func catalogOfANewerFormatIsRefused(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        try RawFile.rewriteCatalog(path) { $0["formatVersion"] = 99 }
        let before = try RawFile.contents(path)
        let error = expectStrataError(.unsupportedFormatVersion) {
            _ = try Database(configuration: Fixtures.configuration(path, mode: mode))
        }
        #expect(error?.message.contains("99") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try RawFile.contents(path) == before)
    }

    @Test(arguments: Fixtures.modes) func catalogThatIsNotJSONIsCorrupt(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        try RawFile.withWrite(path) { txn in
            let meta = try #require(try txn.openDatabase(FileLayout.meta, create: false))
            try txn.put(
                meta, FileLayout.MetaKey.catalog,
                Array("{\"magic\": \"strata\", \"formatVersion\": 1, \"types\": [".utf8))
        }
        let error = expectStrataError(.corruptFile) {
            _ = try Database(configuration: Fixtures.configuration(path, mode: mode))
        }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
    }

    @Test(arguments: Fixtures.modes) func catalogWithDuplicatePropertyIDsIsCorrupt(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        try RawFile.rewriteCatalog(path) { json in
            var types = try #require(json["types"] as? [[String: Any]])
            var properties = try #require(types[0]["properties"] as? [[String: Any]])
            properties[2]["id"] = properties[1]["id"]
            types[0]["properties"] = properties
            json["types"] = types
        }
        let error = expectStrataError(.corruptFile) {
            _ = try Database(configuration: Fixtures.configuration(path, mode: mode))
        }
        #expect(error?.message.contains("inconsistent") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
    }

    @Test(arguments: Fixtures.modes) func metaDatabaseWithoutCatalogIsCorrupt(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        let deleted = try RawFile.withWrite(path) { txn in
            let meta = try #require(try txn.openDatabase(FileLayout.meta, create: false))
            return try txn.delete(meta, FileLayout.MetaKey.catalog)
        }
        #expect(deleted)
        let error = expectStrataError(.corruptFile) {
            _ = try Database(configuration: Fixtures.configuration(path, mode: mode))
        }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
    }

    // MARK: Schema and version checks

    @Test(arguments: Fixtures.modes) func reopeningWithTheSameVersionAndSchemaKeepsEveryObject(_ mode: Database.Mode)
        throws
    {
        let path = folder.path()
        try Fixtures.seed(path, version: 2, mode: mode)
        let db = try Database(configuration: Fixtures.configuration(path, version: 2, mode: mode))
        #expect(db.fileSchemaVersion == 2)
        #expect(try Fixtures.people(db) == [Fixtures.ada, Fixtures.charles, Fixtures.annabella])
    }

    @Test func lowerSchemaVersionIsRefusedAndSaysWhichVersionToUse() throws {
        let path = folder.path()
        try Fixtures.seed(path, version: 3)
        let before = try RawFile.contents(path)
        let error = expectStrataError(.schemaVersionTooLow) {
            _ = try Database(configuration: Fixtures.configuration(path, version: 1))
        }
        let message = error?.message ?? ""
        #expect(message.contains("Schema version 1 is lower than the file's version 3"), "\(message)")
        #expect(message.contains(path), "\(message)")
        #expect(message.contains("Open it with version 3 or later."), "\(message)")
        #expect(try RawFile.contents(path) == before)
        #expect(
            try Fixtures.people(opening: Fixtures.configuration(path, version: 3)) == [
                Fixtures.ada, Fixtures.charles, Fixtures.annabella,
            ])
    }

    @Test func higherSchemaVersionWithTheSameSchemaMigratesWithoutRewriting() throws {
        let path = folder.path()
        try Fixtures.seed(path)
        let db = try Database(configuration: Fixtures.configuration(path, version: 2))
        #expect(db.fileSchemaVersion == 2)
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 0)
        #expect(try db.read { tx in try tx.objects("Person").map(\.schemaVersion) } == [1, 1, 1])
        db.close()
        #expect(
            try Fixtures.people(opening: Fixtures.configuration(path, version: 2)) == [
                Fixtures.ada, Fixtures.charles, Fixtures.annabella,
            ])
        expectStrataError(.schemaVersionTooLow) { _ = try Database(configuration: Fixtures.configuration(path)) }
    }

    @Test(arguments: SchemaChangeCase.all)
    func changedSchemaAtTheSameVersionNeedsAMigrationListingEachChange(_ change: SchemaChangeCase) throws {
        let path = folder.path()
        try Fixtures.seed(path)
        let before = try RawFile.contents(path)
        let error = expectStrataError(.migrationRequired) {
            _ = try Database(configuration: Fixtures.configuration(path, schema: change.schema))
        }
        let message = error?.message ?? ""
        #expect(error?.items == change.lines, "\(message)")
        #expect(change.lines.allSatisfy { message.contains("\n- \($0)") }, "\(message)")
        #expect(error?.fromVersion == 1 && error?.toVersion == 1)
        #expect(message.contains(path), "\(message)")
        #expect(message.contains("at the same schema version 1"), "\(message)")
        #expect(message.contains("Raise the schema version to 2 to migrate the file."), "\(message)")
        #expect(try RawFile.contents(path) == before)
        #expect(
            try Fixtures.people(opening: Fixtures.configuration(path)) == [
                Fixtures.ada, Fixtures.charles, Fixtures.annabella,
            ])
    }

    // MARK: Read-only

    @Test(arguments: Fixtures.modes) func readOnlyOpenOfAMissingFileCreatesNothing(_ mode: Database.Mode) throws {
        let path = folder.path()
        var config = Fixtures.configuration(path, mode: mode)
        config.readOnly = true
        let error = expectStrataError(.fileSystem) { _ = try Database(configuration: config) }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(!RawFile.exists(path))
        #expect(!RawFile.exists(path + "-lock"))
    }

    @Test(arguments: Fixtures.modes) func readOnlyDatabaseReadsButRefusesWrites(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        let before = try RawFile.contents(path)
        var config = Fixtures.configuration(path, mode: mode)
        config.readOnly = true
        do {
            let db = try Database(configuration: config)
            #expect(try Fixtures.people(db) == [Fixtures.ada, Fixtures.charles, Fixtures.annabella])
            #expect(try db.read { try $0.objects("Person").where("age", equals: 79).map { $0["id"] } } == [2])
            let error = expectStrataError(.readOnly) {
                try db.write { tx in _ = try tx.insert("Person", Fixtures.person(4, "Impostor", "Nobody")) }
            }
            #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
            #expect(try Fixtures.people(db).count == 3)
        }
        #expect(try RawFile.contents(path) == before)
    }

    @Test func readOnlyOpenWithAnotherVersionIsRefused() throws {
        let path = folder.path()
        try Fixtures.seed(path, version: 2)
        var higher = Fixtures.configuration(path, version: 3)
        higher.readOnly = true
        expectStrataError(.migrationRequired) { _ = try Database(configuration: higher) }
        var lower = Fixtures.configuration(path, version: 1)
        lower.readOnly = true
        expectStrataError(.schemaVersionTooLow) { _ = try Database(configuration: lower) }
        #expect(try Fixtures.people(opening: Fixtures.configuration(path, version: 2)).count == 3)
    }

    // MARK: File system

    @Test(arguments: Fixtures.modes) func pathInAMissingFolderIsAFileSystemError(_ mode: Database.Mode) throws {
        let path = folder.path("no-such-folder/test.strata")
        let error = expectStrataError(.fileSystem) {
            _ = try Database(configuration: Fixtures.configuration(path, mode: mode))
        }
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

    @Test(arguments: RecordDamage.allCases, Fixtures.modes)
    func damagedRecordIsCorruptAndOtherObjectsStillRead(_ damage: RecordDamage, _ mode: Database.Mode) throws {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        try RawFile.withWrite(path) { txn in
            let records = try #require(try txn.openDatabase(FileLayout.records(TypeID(1)), create: false))
            let original = try #require(try txn.get(records, RawFile.key(2)).map { Array($0) })
            let damaged: [UInt8] =
                switch damage {
                case .garbage: [0x01, 0x01, 0x05, 0xFF]
                case .truncatedCopy: Array(original.prefix(original.count / 2))
                }
            try txn.put(records, RawFile.key(2), damaged)
        }
        let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
        let byKey = expectStrataError(.corruptFile) {
            _ = try db.read { tx in try tx.object("Person", key: 2)?.values }
        }
        #expect(byKey?.message.contains("'Person'") == true, "\(byKey?.message ?? "")")
        #expect(byKey?.message.contains("key 2") == true, "\(byKey?.message ?? "")")
        #expect(byKey?.message.contains(path) == true, "\(byKey?.message ?? "")")
        let scan = expectStrataError(.corruptFile) { _ = try Fixtures.people(db) }
        #expect(scan?.message.contains("'Person'") == true, "\(scan?.message ?? "")")
        #expect(scan?.message.contains("key 2") == true, "\(scan?.message ?? "")")
        let inWrite = expectStrataError(.corruptFile) { try db.write { tx in _ = try tx.object("Person", key: 2) } }
        #expect(inWrite?.message.contains("key 2") == true, "\(inWrite?.message ?? "")")
        let others = try db.read { tx in
            [try tx.object("Person", key: 1)?.values, try tx.object("Person", key: 3)?.values]
        }
        #expect(others == [Fixtures.ada, Fixtures.annabella])
        #expect(try db.read { try $0.objects("Person").where("age", equals: 36).map(\.values) } == [Fixtures.ada])
    }

    @Test(arguments: Fixtures.modes) func recordWithAKeyOfTheWrongLengthIsCorrupt(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        try RawFile.withWrite(path) { txn in
            let records = try #require(try txn.openDatabase(FileLayout.records(TypeID(1)), create: false))
            let record = try #require(try txn.get(records, RawFile.key(1)).map { Array($0) })
            try txn.put(records, [0x80, 0, 0, 0, 0], record)
        }
        let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
        let error = expectStrataError(.corruptFile) { _ = try Fixtures.people(db) }
        #expect(error?.message.contains("'Person'") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try db.read { tx in try tx.object("Person", key: 3)?.values } == Fixtures.annabella)
    }

    @Test(arguments: Fixtures.modes) func damagedAutomaticIDCounterIsCorrupt(_ mode: Database.Mode) throws {
        let path = folder.path()
        let schema = Schema([Fixtures.person, ObjectSchema("Note") { Property("text", .string) }])
        let config = Fixtures.configuration(path, schema: schema, mode: mode)
        let noteID = try { () throws -> TypeID in
            let db = try Database(configuration: config)
            try db.write { tx in _ = try tx.insert("Note", ["text": "first"]) }
            return try #require(db.catalog[type: "Note"]).id
        }()
        try RawFile.withWrite(path) { txn in
            let meta = try #require(try txn.openDatabase(FileLayout.meta, create: false))
            #expect(try txn.get(meta, FileLayout.MetaKey.sequence(noteID))?.count == 8)
            try txn.put(meta, FileLayout.MetaKey.sequence(noteID), [0, 0, 1])
        }
        let db = try Database(configuration: config)
        let error = expectStrataError(.corruptFile) {
            try db.write { tx in _ = try tx.insert("Note", ["text": "second"]) }
        }
        #expect(error?.message.contains("'Note'") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(try db.read { try $0.objects("Note").map { $0["text"] } } == ["first"])
    }

    // MARK: Sharing and map growth

    @Test(arguments: Fixtures.modes) func twoDatabasesOnOnePathShareTheirData(_ mode: Database.Mode) throws {
        let config = Fixtures.configuration(folder.path(), mode: mode)
        let first = try Database(configuration: config)
        let second = try Database(configuration: config)
        #expect(first.environment === second.environment)
        try first.write { tx in try tx.insert("Person", Fixtures.ada) }
        #expect(try second.read { tx in try tx.object("Person", key: 1)?.values } == Fixtures.ada)
        try second.write { tx in try tx.insert("Person", Fixtures.charles) }
        #expect(try Fixtures.people(first) == [Fixtures.ada, Fixtures.charles])
    }

    @Test(arguments: Fixtures.modes) func mapFullErrorsSwallowedByTheClosureStillCommitEveryObject(
        _ mode: Database.Mode
    ) throws {
        let schema = Schema([
            ObjectSchema("Blob", primaryKey: "id") {
                Property("id", .int)
                Property("payload", .data)
            }
        ])
        var config = Fixtures.configuration(folder.path(), schema: schema, mode: mode)
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
        let stored = try db.read { tx in
            try tx.objects("Blob").map { ($0["id"].int ?? -1, $0["payload"].data ?? Data()) }
        }
        #expect(stored.map(\.0) == Array(0 ..< 12))
        #expect(stored.map(\.1) == payloads)
    }
}
