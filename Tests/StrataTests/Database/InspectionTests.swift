import Foundation
import Logging
import Testing

@testable import Strata

/// Snapshots, statistics, verification, compaction and logging: what tools
/// and apps use to look inside a file.
@Suite(.temporaryFolder) struct InspectionTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    // MARK: Snapshots

    @Test func aSnapshotRoundTripsThroughItsDocumentedJSON() throws {
        let schema = Schema([Fixtures.person, Migrations.note])
        let data = schema.snapshot(schemaVersion: 7)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(json["format"] as? String == "strata-schema")
        #expect(json["formatVersion"] as? Int == 1)
        #expect(json["schemaVersion"] as? Int == 7)
        let snapshot = try SchemaSnapshot(jsonData: data)
        #expect(snapshot.schemaVersion == 7)
        #expect(snapshot.schema == schema)
        #expect(try Schema(snapshot: data) == schema)
        #expect(snapshot.jsonData() == data)
    }

    @Test(arguments: [
        ("{}", "\"format\""),
        ("not json", "This is not a Strata schema snapshot"),
        (
            #"{"format": "strata-schema", "formatVersion": 9, "schemaVersion": 1, "schema": {"objectSchemas": []}}"#,
            "newer than the format 1"
        ),
        (
            #"{"format": "strata-schema", "formatVersion": 1, "schema": {"objectSchemas": []}}"#,
            "\"schemaVersion\" is missing"
        ),
        (
            #"{"format": "strata-schema", "formatVersion": 1, "schemaVersion": 2, "schema": {"objectSchemas": [{"name": "A", "properties": []}]}}"#,
            "Object type 'A' has no properties."
        ),
    ])
    func aBadSnapshotIsRefusedWithWhatIsWrong(_ text: String, _ expected: String) {
        let error = expectStrataError(.invalidSchema) { _ = try SchemaSnapshot(jsonData: Data(text.utf8)) }
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
    }

    @Test func aSnapshotFileThatCannotBeReadIsAFileSystemError() {
        let error = expectStrataError(.fileSystem) {
            _ = try SchemaSnapshot(contentsOf: URL(fileURLWithPath: "/nonexistent/v1.json"))
        }
        #expect(error?.message.contains("/nonexistent/v1.json") == true)
    }

    // MARK: Inspecting a file

    @Test(arguments: Fixtures.modes) func inspectingOpensAFileWithTheSchemaItRecords(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 5, mode: mode)
        let db = try Database(inspecting: path)
        #expect(db.fileSchemaVersion == 1)
        #expect(db.schema == Schema([Migrations.personV1]))
        #expect(try db.read { tx in try tx.objects("Person").count } == 5)
        expectStrataError(.readOnly) { try db.write { _ in } }
        expectStrataError(.fileSystem) { _ = try Database(inspecting: folder.path("missing.strata")) }
    }

    @Test(arguments: Fixtures.modes) func statisticsCountObjectsPerTypeAndEffectiveVersion(_ mode: Database.Mode) throws
    {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 6, mode: mode)
        let db = try Database(
            configuration: Migrations.configuration(
                path, version: 2, [Migrations.personV1, Migrations.note], mode: mode))
        try db.write { tx in
            try tx.update("Person", key: 2, ["age": 50])
            try tx.insert("Note", ["text": "new"])
        }
        let statistics = try db.statistics()
        #expect(statistics.schemaVersion == 2)
        #expect(statistics.mode == mode)
        #expect(statistics.formatVersion == 1)
        #expect(statistics.types.map(\.name) == ["Note", "Person"])
        #expect(statistics.types[1].objectCount == 6)
        #expect(statistics.types[1].objectsBySchemaVersion == [1: 5, 2: 1])
        #expect(statistics.types[0].objectsBySchemaVersion == [2: 1])
        #expect(statistics.fileSize >= statistics.usedSize && statistics.usedSize > 0)
    }

    @Test(arguments: Fixtures.modes) func usedSizeLeavesOutFreePagesThatCompactGivesBack(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 20_000, mode: mode)
        let db = try Database(
            configuration: Migrations.configuration(path, version: 1, [Migrations.personV1], mode: mode))
        try db.write { tx in try tx.deleteAll("Person") }
        let after = try db.fileSize
        #expect(after.used < after.total / 10, "\(after)")
        db.close()
        let sizes = try Database.compact(path: path)
        #expect(sizes.after < sizes.before / 10, "\(sizes)")
    }

    // MARK: Verify

    @Test(arguments: Fixtures.modes) func verifyFindsNothingWrongInASoundFile(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 300, mode: mode)
        #expect(try Database(inspecting: path).verify() == [])
    }

    @Test(arguments: Fixtures.modes) func verifyFindsAMissingIndexEntryAStrayOneAndADamagedRecord(_ mode: Database.Mode)
        throws
    {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 10, mode: mode)
        try RawFile.withWrite(path) { txn in
            let index = try #require(try txn.openDatabase(FileLayout.index(TypeID(1), PropertyID(4)), create: false))
            let records = try #require(try txn.openDatabase(FileLayout.records(TypeID(1)), create: false))
            let key3 = ByteWriter(capacity: 8)
            let key4 = ByteWriter(capacity: 8)
            _ = KeyCodec.appendPrimaryKey(.int(3), type: .int, to: key3)
            _ = KeyCodec.appendPrimaryKey(.int(4), type: .int, to: key4)
            let age3 = ByteWriter(capacity: 9)
            KeyCodec.appendIndexKey(.int(3), to: age3)
            // Object 3 loses its index entry; a stray entry files object 4
            // under age 3; object 5's record is cut short.
            try age3.withUnsafeBytes { ageBytes in
                try key3.withUnsafeBytes { _ = try txn.delete(index, ageBytes, value: $0) }
                try key4.withUnsafeBytes { _ = try txn.put(index, ageBytes, $0) }
            }
            let key5 = ByteWriter(capacity: 8)
            _ = KeyCodec.appendPrimaryKey(.int(5), type: .int, to: key5)
            try key5.withUnsafeBytes { key in
                let record = Array(try #require(try txn.get(records, key)))
                try txn.put(records, Array(key), Array(record.prefix(record.count - 2)))
            }
        }
        let problems = try Database(inspecting: path).verify()
        #expect(
            problems.contains("The object of 'Person' with key 3 is missing from the index on 'age'."), "\(problems)")
        #expect(
            problems.contains("The index on 'Person.age' files the object with key 4 under another value than it has."),
            "\(problems)")
        #expect(
            problems.contains { $0.contains("The record of 'Person' with key 5") && $0.contains("is damaged") },
            "\(problems)")
    }

    // MARK: Compact

    @Test func compactDropsRetiredFieldsKeepsEveryObjectAndItsVersion() throws {
        let path = folder.path()
        let wide = ObjectSchema("Doc", primaryKey: "id") {
            Property("id", .int)
            Property("body", .string)
            Property("title", .string)
        }
        let narrow = ObjectSchema("Doc", primaryKey: "id") {
            Property("id", .int)
            Property("title", .string)
        }
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [wide]))
        let body = String(repeating: "x", count: 2000)
        try first.write { tx in
            for id in 1 ... 2000 {
                try tx.insert("Doc", ["id": .int(Int64(id)), "body": .string(body), "title": .string("Doc \(id)")])
            }
        }
        first.close()
        let second = try Database(configuration: Migrations.configuration(path, version: 2, [narrow]))
        #expect(Instrumentation.recordWritesOfLastOpen(second.path) == 0)
        second.close()
        let sizes = try Database.compact(path: path)
        #expect(sizes.after < sizes.before / 4, "\(sizes)")
        let db = try Database(configuration: Migrations.configuration(path, version: 2, [narrow]))
        try db.read { tx throws in
            #expect(try tx.objects("Doc").count == 2000)
            #expect(try tx.object("Doc", key: 1234)?.values == ["id": 1234, "title": "Doc 1234"])
            #expect(try tx.objects("Doc").whereSchemaVersion(1 ... 1).count == 2000)
            var stale = 0
            try tx.objects("Doc").forEach { object in
                object.record.forEachField { id, _ in if id == PropertyID(2) { stale += 1 } }
            }
            #expect(stale == 0)
        }
        #expect(try db.verify() == [])
    }

    /// Whatever the durability (which decides what compact flushes, see
    /// CompactPowerLossTests), the compacted file holds every object, and
    /// no copy is left beside it.
    @Test(arguments: [Database.Durability.full, .noMetaSync, .noSync])
    func compactKeepsEveryObjectWhateverTheDurability(_ durability: Database.Durability) throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 300)
        let db = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.personV1]))
        try db.write { tx in
            for id in 1 ... 200 as ClosedRange<Int64> { try tx.delete("Person", key: .int(id)) }
        }
        db.close()
        let sizes = try Database.compact(path: path, durability: durability)
        #expect(sizes.after < sizes.before, "\(sizes)")
        #expect(!FileManager.default.fileExists(atPath: path + ".compacting"))
        let reopened = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.personV1]))
        defer { reopened.close() }
        #expect(try reopened.read { tx in try tx.objects("Person").count } == 100)
        #expect(try reopened.verify() == [])
    }

    @Test(arguments: Fixtures.modes) func compactIsRefusedWhileTheFileIsOpenInThisProcess(_ mode: Database.Mode) throws
    {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 3, mode: mode)
        let holder = try Database(
            configuration: Migrations.configuration(path, version: 1, [Migrations.personV1], mode: mode))
        let before = try RawFile.contents(path)
        let error = expectStrataError(.fileSystem) { try Database.compact(path: path) }
        #expect(error?.message.contains("open elsewhere in this process") == true)
        holder.close()
        #expect(try RawFile.contents(path) == before)
    }

    // MARK: Logging

    @Test func migrationStepsAreLoggedWithTheirDurationsOnlyWhenALoggerIsGiven() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 20)
        let messages = Recorder<String>()
        var config = Migrations.configuration(path, version: 2, [Migrations.personV2]) { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { old, new in
                new?["fullName"] = old!["firstName"]
                new?["age"] = .int(old!["age"].int! + 1)
            }
        }
        var logger = Logger(label: "test") { _ in RecordingLogHandler(messages: messages) }
        logger.logLevel = .debug
        config.logger = logger
        _ = try Database(configuration: config)
        let lines = messages.all
        #expect(lines.contains { $0.hasPrefix("info Migrating \(path) from schema version 1 to 2") }, "\(lines)")
        #expect(
            lines.contains {
                $0.hasPrefix("info Migration closure of \(path) done: 20 records written,") && $0.hasSuffix(" ms")
            }, "\(lines)")
        #expect(
            lines.contains { $0.hasPrefix("debug Walked 'Person' of \(path): 20 objects, 20 written,") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("debug Built the index on 'Person.age'") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("info Opened \(path): migrate, schema version 2") }, "\(lines)")
    }
}

/// Records log messages as "level message".
struct RecordingLogHandler: LogHandler {
    let messages: Recorder<String>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        messages.append("\(event.level) \(event.message)")
    }
}
