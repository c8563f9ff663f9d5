import Foundation
import Testing
@testable import Strata

/// Runs the built `strata` binary's inspecting subcommands on real files and
/// compares their output and exit codes.
@Suite struct CommandTests {
    typealias Output = (status: Int32, output: String, error: String)

    static func run(_ arguments: [String]) throws -> Output {
        try DemoCommandTests.run(arguments)
    }

    /// The subcommands that take a database file, with the options each needs.
    static let fileCommands = ["info", "schema", "dump", "plan", "verify", "compact"]

    static func arguments(_ command: String, _ path: String, snapshot: String) -> [String] {
        switch command {
        case "dump": [command, path, "--type", "Person"]
        case "plan": [command, path, "--schema", snapshot]
        default: [command, path]
        }
    }

    /// Expects a failure: a non-zero exit and one line on stderr, "Error: ...".
    @discardableResult
    static func expectOneLineError(_ result: Output, containing fragments: [String], sourceLocation: SourceLocation = #_sourceLocation) -> String {
        #expect(result.status != 0, "stdout: \(result.output)", sourceLocation: sourceLocation)
        #expect(result.error.hasPrefix("Error: "), "stderr: \(result.error)", sourceLocation: sourceLocation)
        #expect(result.error.hasSuffix("\n") && result.error.filter { $0 == "\n" }.count == 1, "stderr: \(result.error)", sourceLocation: sourceLocation)
        for fragment in fragments {
            #expect(result.error.contains(fragment), "stderr: \(result.error)", sourceLocation: sourceLocation)
        }
        return String(result.error.dropFirst("Error: ".count).dropLast())
    }

    static func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// A file left by `strata demo`: 25 people at schema version 2.
    static func demoFile(_ folder: TemporaryFolder) throws -> String {
        let path = folder.path("people.strata")
        let result = try run(["demo", "--path", path, "--objects", "20"])
        try #require(result.status == 0, "stderr: \(result.error)")
        return path
    }

    static func contents(_ path: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path))
    }

    static func writeSnapshot(_ schema: Schema, version: UInt64, to path: String) throws {
        try SchemaSnapshot(schemaVersion: version, schema: schema).jsonData().write(to: URL(fileURLWithPath: path))
    }

    // MARK: Help and usage

    @Test(arguments: ["demo"] + fileCommands)
    func helpOfEachSubcommandExitsZero(_ command: String) throws {
        let result = try Self.run([command, "--help"])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(result.output.contains("USAGE: strata \(command)"), "\(result.output)")
        #expect(result.error.isEmpty)
    }

    @Test func rootHelpListsEverySubcommand() throws {
        let result = try Self.run(["--help"])
        #expect(result.status == 0)
        for command in ["demo"] + Self.fileCommands {
            #expect(result.output.contains("\n  \(command) "), "\(result.output)")
        }
    }

    @Test func dumpHelpDocumentsTheJSONValues() throws {
        let result = try Self.run(["dump", "--help"])
        #expect(result.status == 0)
        let text = result.output.replacingOccurrences(of: "\n", with: " ").split(separator: " ").joined(separator: " ")
        for fragment in ["\"_schemaVersion\"", "base64", "ISO-8601", "UUID", "\"NaN\""] {
            #expect(text.contains(fragment), "\(result.output)")
        }
    }

    struct UsageCase: Sendable, CustomTestStringConvertible {
        let arguments: [String]
        let message: String
        let hint: String
        var testDescription: String { arguments.joined(separator: " ") }
    }

    @Test(arguments: [
        UsageCase(arguments: ["info"], message: "Missing expected argument '<file>'", hint: "strata info --help"),
        UsageCase(arguments: ["dump", "x.strata"], message: "Missing expected argument '--type <type>'", hint: "strata dump --help"),
        UsageCase(arguments: ["dump", "x.strata", "--type", "Person", "--limit=-1"], message: "--limit must be zero or more.", hint: "strata dump --help"),
        UsageCase(arguments: ["plan", "x.strata"], message: "Missing expected argument '--schema <snapshot>'", hint: "strata plan --help"),
        UsageCase(arguments: ["plan", "x.strata", "--schema", "s.json", "--version", "two"], message: "'two'", hint: "strata plan --help"),
        UsageCase(arguments: ["verify", "a.strata", "b.strata"], message: "Unexpected argument 'b.strata'", hint: "strata verify --help"),
        UsageCase(arguments: ["frobnicate"], message: "frobnicate", hint: "strata --help"),
    ])
    func usageErrorsAreOneLine(_ usage: UsageCase) throws {
        let result = try Self.run(usage.arguments)
        Self.expectOneLineError(result, containing: [usage.message, "See '\(usage.hint)' for more information."])
        #expect(result.output.isEmpty)
    }

    // MARK: info

    @Test func infoOnADemoFile() throws {
        let folder = try TemporaryFolder()
        let path = try Self.demoFile(folder)
        let result = try Self.run(["info", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        let lines = Self.lines(result.output)
        #expect(Array(lines.prefix(6)) == [path, "Format version: 1", "Schema version: 2", "Mode: local", "Types: 1",
                                           "  Person  25 objects  (version 2: 25)"])
        let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let sizeLine = try #require(lines.dropFirst(6).first)
        #expect(sizeLine.hasPrefix("File size: \(size) bytes, "), "\(sizeLine)")
        #expect(lines.count == 8 && lines[7].isEmpty, "\(result.output)")
    }

    @Test func infoCountsObjectsAtEachVersionAndMarksKeptTypes() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let note = ObjectSchema("Note") { Property("text", .string) }
        do {
            let db = try Database(configuration: Fixtures.configuration(path, schema: Schema([Fixtures.person, note])))
            try db.write { tx in
                for id in 1 ... 3 { try tx.insert("Person", Fixtures.person(Int64(id))) }
                for text in ["a", "b"] { _ = try tx.insert("Note", ["text": .string(text)]) }
            }
            db.close()
        }
        do {
            // Version 2 leaves Note out (kept) and adds a property: no record is rewritten.
            var person = Fixtures.person
            person.properties.append(Property("nickname", .string, optional: true))
            let db = try Database(configuration: Fixtures.configuration(path, version: 2, schema: Schema([person])))
            try db.write { tx in
                for id in 4 ... 5 { try tx.insert("Person", Fixtures.person(Int64(id))) }
            }
            db.close()
        }
        let result = try Self.run(["info", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        let lines = Self.lines(result.output)
        #expect(lines.contains("Schema version: 2"), "\(result.output)")
        #expect(lines.contains("Types: 2"), "\(result.output)")
        #expect(lines.contains("  Note    2 objects  (version 1: 2)                kept: not in the schema"), "\(result.output)")
        #expect(lines.contains("  Person  5 objects  (version 1: 3, version 2: 2)"), "\(result.output)")
    }

    // MARK: schema

    @Test func schemaPrintsEachTypeAndProperty() throws {
        let folder = try TemporaryFolder()
        let path = try Self.demoFile(folder)
        let result = try Self.run(["schema", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(result.output == """
        Schema version 2, local mode, 1 type

        Person (primary key: id)
          id        int     primary key
          fullName  string
          age       int     default 0, indexed
          email     string  optional
          status    string  default "active"

        """)
    }

    /// Every property type, defaults of several kinds, a type without a
    /// primary key; as the catalog stores them (see Property.normalized).
    static let everyKind = Schema([
        ObjectSchema("Sample", primaryKey: "key") {
            Property("key", .uuid)
            Property("flag", .bool, default: true)
            Property("count", .int, default: -3, indexed: true)
            Property("ratio", .double, optional: true, default: 0.5)
            Property("name", .string, default: "a \"quoted\"\nname", indexed: true)
            Property("blob", .data, optional: true)
            Property("when", .date, default: .date(Date(timeIntervalSinceReferenceDate: 1234.5)))
        },
        ObjectSchema("Log") { Property("line", .string) },
    ])

    @Test func schemaJSONRoundTripsThroughSchemaSnapshot() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Database(configuration: Fixtures.configuration(path, version: 3, schema: Self.everyKind)).close()
        let result = try Self.run(["schema", path, "--json"])
        #expect(result.status == 0, "stderr: \(result.error)")
        let snapshot = try SchemaSnapshot(jsonData: Data(result.output.utf8))
        #expect(snapshot == SchemaSnapshot(schemaVersion: 3, schema: Self.everyKind))
        // And the text form shows what the JSON holds.
        let text = try Self.run(["schema", path])
        #expect(text.status == 0)
        #expect(text.output.contains("Log (no primary key: automatic ids)\n  line  string\n"), "\(text.output)")
        #expect(text.output.contains("  count  int     default -3, indexed\n"), "\(text.output)")
        #expect(text.output.contains("  ratio  double  optional, default 0.5\n"), "\(text.output)")
    }

    // MARK: dump

    @Test func dumpPrintsATableWithTheEffectiveSchemaVersion() throws {
        let folder = try TemporaryFolder()
        let path = try Self.demoFile(folder)
        let result = try Self.run(["dump", path, "--type", "Person", "--limit", "2"])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(result.output == """
        id  fullName           age  email              status    _schemaVersion
        --  -----------------  ---  -----------------  --------  --------------
        1   "Ada Lovelace"     36   "ada@example.org"  "active"  2
        2   "Charles Babbage"  79   null               "active"  2
        (2 of 25 objects)

        """)
        let all = try Self.run(["dump", path, "--type", "Person"])
        #expect(all.status == 0)
        let lines = Self.lines(all.output)
        #expect(lines.count == 2 + 25 + 2, "\(all.output)")
        #expect(lines.dropLast().last == "(25 objects)")
        #expect(lines[2 + 24].hasPrefix("25  "), "\(all.output)")
    }

    @Test func dumpJSONWritesOneLineOfPlainJSONPerObject() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let ids = [UUID(), UUID(), UUID()]
        let when = Date(timeIntervalSince1970: 1_714_564_800.25)
        do {
            let db = try Database(configuration: Fixtures.configuration(path, schema: Self.everyKind))
            try db.write { tx in
                try tx.insert("Sample", ["key": .uuid(ids[0]), "flag": false, "count": 42, "ratio": .double(.nan),
                                         "name": "tab\there \"quote\" \\ new\nline é 😀", "blob": .data(Data([0, 1, 254, 255])), "when": .date(when)])
                try tx.insert("Sample", ["key": .uuid(ids[1]), "ratio": .double(-.infinity), "blob": nil])
                try tx.insert("Sample", ["key": .uuid(ids[2]), "ratio": 1e-7])
            }
            db.close()
        }
        let result = try Self.run(["dump", path, "--type", "Sample", "--json"])
        #expect(result.status == 0, "stderr: \(result.error)")
        let lines = result.output.split(separator: "\n")
        #expect(lines.count == 3, "\(result.output)")
        let objects = try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let byKey = Dictionary(uniqueKeysWithValues: objects.map { ($0["key"] as? String ?? "", $0) })
        let first = try #require(byKey[ids[0].uuidString], "\(result.output)")
        #expect(first["flag"] as? Bool == false)
        #expect((first["count"] as? NSNumber)?.int64Value == 42)
        #expect(first["ratio"] as? String == "NaN")
        #expect(first["name"] as? String == "tab\there \"quote\" \\ new\nline é 😀")
        #expect((first["blob"] as? String).flatMap { Data(base64Encoded: $0) } == Data([0, 1, 254, 255]))
        let date = try #require(first["when"] as? String)
        #expect(date == "2024-05-01T12:00:00.250Z")
        #expect((first["_schemaVersion"] as? NSNumber)?.intValue == 1)
        let second = try #require(byKey[ids[1].uuidString])
        #expect(second["ratio"] as? String == "-Infinity")
        #expect(second["blob"] is NSNull)
        #expect(second["flag"] as? Bool == true, "the default")
        #expect(second["name"] as? String == "a \"quoted\"\nname", "the default")
        let third = try #require(byKey[ids[2].uuidString])
        #expect((third["ratio"] as? NSNumber)?.doubleValue == 1e-7)
        // Properties in schema order, then the effective schema version.
        for line in lines {
            #expect(line.hasPrefix("{\"key\":\""), "\(line)")
            #expect(line.hasSuffix(",\"_schemaVersion\":1}"), "\(line)")
        }
        // A type without a primary key, and a limit.
        let log = try Self.run(["dump", path, "--type", "Log", "--json"])
        #expect(log.status == 0 && log.output.isEmpty, "\(log)")
        let limited = try Self.run(["dump", path, "--type", "Sample", "--json", "--limit", "1"])
        #expect(limited.status == 0)
        #expect(limited.output.split(separator: "\n").count == 1)
        // The table keeps one object per line, whatever its strings hold.
        let table = try Self.run(["dump", path, "--type", "Sample"])
        #expect(table.status == 0)
        #expect(Self.lines(table.output).count == 2 + 3 + 2, "\(table.output)")
        #expect(table.output.contains("<4 bytes>"), "\(table.output)")
    }

    @Test func dumpOfAnUnknownTypeListsTheTypes() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Database(configuration: Fixtures.configuration(path, schema: Self.everyKind)).close()
        let result = try Self.run(["dump", path, "--type", "Person"])
        Self.expectOneLineError(result, containing: [path, "'Person'", "Log, Sample"])
        #expect(result.output.isEmpty)
    }

    // MARK: Files that are missing or not Strata databases

    @Test(arguments: fileCommands)
    func missingFileIsAOneLineError(_ command: String) throws {
        let folder = try TemporaryFolder()
        let path = folder.path("missing.strata")
        let snapshot = folder.path("v1.json")
        try Self.writeSnapshot(Fixtures.schema, version: 1, to: snapshot)
        let result = try Self.run(Self.arguments(command, path, snapshot: snapshot))
        Self.expectOneLineError(result, containing: ["\(path) does not exist."])
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!FileManager.default.fileExists(atPath: path + "-lock"))
    }

    enum Foreign: String, CaseIterable, Sendable {
        case text, randomBytes, empty
        var bytes: Data {
            switch self {
            case .text:
                return Data("name,age\nAda,36\n".utf8)
            case .randomBytes:
                var generator = SplitMix64(seed: 5)
                return Data((0 ..< 64 * 1024).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
            case .empty:
                return Data()
            }
        }
    }

    @Test(arguments: fileCommands, Foreign.allCases)
    func nonStrataFileIsAOneLineErrorAndStaysUntouched(_ command: String, _ foreign: Foreign) throws {
        let folder = try TemporaryFolder()
        let path = folder.path("foreign.strata")
        try foreign.bytes.write(to: URL(fileURLWithPath: path))
        let snapshot = folder.path("v1.json")
        try Self.writeSnapshot(Fixtures.schema, version: 1, to: snapshot)
        let result = try Self.run(Self.arguments(command, path, snapshot: snapshot))
        Self.expectOneLineError(result, containing: [path, "not a Strata database"])
        #expect(try Self.contents(path) == foreign.bytes)
    }

    @Test func damagedCatalogIsAOneLineError() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try FileOpeningTests.seed(path)
        try FileOpeningTests.rewriteCatalog(path) { $0["mode"] = "shared" }
        for command in ["info", "verify"] {
            let result = try Self.run([command, path])
            Self.expectOneLineError(result, containing: [path, "is damaged"])
        }
    }

    // MARK: plan

    enum BadSnapshot: String, CaseIterable, Sendable {
        case missing, notJSON, notASnapshot, newerFormat, invalidSchema

        func write(to path: String) throws {
            let text: String
            switch self {
            case .missing: return
            case .notJSON: text = "Person: id, name"
            case .notASnapshot: text = #"{"types": []}"#
            case .newerFormat:
                text = String(decoding: SchemaSnapshot(schemaVersion: 1, schema: Fixtures.schema).jsonData(), as: UTF8.self)
                    .replacingOccurrences(of: #""formatVersion" : 1"#, with: #""formatVersion" : 9"#)
            case .invalidSchema:
                // Two problems: the message lists both, on lines of their own.
                let schema = Schema([ObjectSchema("Person", primaryKey: "nope") { Property("id", .int); Property("id", .string) }])
                text = String(decoding: SchemaSnapshot(schemaVersion: 1, schema: schema).jsonData(), as: UTF8.self)
            }
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        }

        var fragment: String {
            switch self {
            case .missing: "Cannot read the schema snapshot"
            case .notJSON, .notASnapshot: "is not a Strata schema snapshot"
            case .newerFormat: "snapshot format 9 is newer"
            case .invalidSchema: "is invalid:"
            }
        }
    }

    @Test(arguments: BadSnapshot.allCases)
    func badSnapshotIsAOneLineError(_ bad: BadSnapshot) throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try FileOpeningTests.seed(path)
        let before = try Self.contents(path)
        let snapshot = folder.path("snapshot.json")
        try bad.write(to: snapshot)
        let result = try Self.run(["plan", path, "--schema", snapshot])
        let message = Self.expectOneLineError(result, containing: [snapshot, bad.fragment])
        if bad == .invalidSchema {
            #expect(message.contains("; "), "both problems on the line: \(message)")
        }
        #expect(result.output.isEmpty)
        #expect(try Self.contents(path) == before)
    }

    struct PlanCase: Sendable, CustomTestStringConvertible {
        let testDescription: String
        var mode: Database.Mode = .local
        let schema: Schema
        let version: UInt64?
        var synced = false
        /// How the plan's first line ends.
        let summary: String
    }

    static let personWithNickname = Schema([ObjectSchema("Person", primaryKey: "id", properties: Fixtures.person.properties + [
        Property("nickname", .string, default: "none"),
    ])])
    static let personWithStringAge = Schema([ObjectSchema("Person", primaryKey: "id", properties: Fixtures.person.properties.map {
        $0.name == "age" ? Property("age", .string, default: "unknown") : $0
    })])
    static let personWithIndexedLastName = Schema([ObjectSchema("Person", primaryKey: "id", properties: Fixtures.person.properties.map {
        $0.name == "lastName" ? Property("lastName", .string, indexed: true) : $0
    })])

    static let planCases: [PlanCase] = [
        PlanCase(testDescription: "same schema and version", schema: Fixtures.schema, version: nil, summary: "open it as it is."),
        PlanCase(testDescription: "property added, version raised", schema: personWithNickname, version: 2,
                 summary: "migrate, without a migration closure."),
        PlanCase(testDescription: "property added at the same version", schema: personWithNickname, version: 1, summary: "refused."),
        PlanCase(testDescription: "index added at the same version", schema: personWithIndexedLastName, version: 1,
                 summary: "apply automatic changes; no record is rewritten."),
        PlanCase(testDescription: "type changed, version raised", schema: personWithStringAge, version: 3,
                 summary: "migrate, without a migration closure."),
        PlanCase(testDescription: "lower version", schema: Fixtures.schema, version: 0, summary: "refused."),
        PlanCase(testDescription: "synced mode on a local file", schema: Fixtures.schema, version: 1, synced: true, summary: "refused."),
        PlanCase(testDescription: "synced file, property added", mode: .synced, schema: personWithNickname, version: nil, synced: true,
                 summary: "apply automatic changes; no record is rewritten."),
        PlanCase(testDescription: "synced file, type changed", mode: .synced, schema: personWithStringAge, version: 2, synced: true,
                 summary: "refused."),
    ]

    @Test(arguments: planCases)
    func planAgreesWithWhatOpeningDoes(_ planCase: PlanCase) throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        var seed = Fixtures.configuration(path)
        seed.mode = planCase.mode
        do {
            let db = try Database(configuration: seed)
            try db.write { tx in for id in 1 ... 3 { try tx.insert("Person", Fixtures.person(Int64(id), age: Int64(id * 10))) } }
            db.close()
        }
        let snapshot = folder.path("snapshot.json")
        try Self.writeSnapshot(planCase.schema, version: 1, to: snapshot)
        let before = try Self.contents(path)
        var arguments = ["plan", path, "--schema", snapshot]
        if let version = planCase.version { arguments += ["--version", String(version)] }
        if planCase.synced { arguments.append("--synced") }
        let result = try Self.run(arguments)
        #expect(try Self.contents(path) == before, "plan wrote nothing")
        let firstLine = Self.lines(result.output).first ?? ""
        #expect(firstLine.hasSuffix(planCase.summary), "\(result.output)")

        // The app's open with the same configuration.
        var configuration = Fixtures.configuration(path, version: planCase.version ?? 1, schema: planCase.schema)
        configuration.mode = planCase.synced ? .synced : .local
        #expect(result.output == "\(try Database.migrationPlan(for: configuration))\n")
        if result.status == 0 {
            #expect(result.error.isEmpty)
            let db = try Database(configuration: configuration)
            #expect(db.schemaVersion == max(planCase.version ?? 1, 1))
            #expect(db.schema == planCase.schema)
            #expect(try db.read { try $0.objects("Person").count } == 3)
        } else {
            let message = Self.expectOneLineError(result, containing: [])
            do {
                _ = try Database(configuration: configuration)
                Issue.record("plan refused, but opening succeeded")
            } catch let error as StrataError {
                let first = String(error.message.prefix { $0 != "\n" })
                #expect(message == (first.hasSuffix(":") ? "\(first.dropLast()) (listed above)." : first))
                #expect(result.output.contains(error.message), "the whole refusal is on stdout")
            }
            #expect(try Self.contents(path) == before)
        }
    }

    // MARK: verify

    @Test func verifyPassesOnADemoFile() throws {
        let folder = try TemporaryFolder()
        let path = try Self.demoFile(folder)
        let result = try Self.run(["verify", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(result.output == "OK: \(path): 1 type, 25 objects; the catalog is consistent, every record decodes and every index matches its table.\n")
        #expect(result.error.isEmpty)
    }

    /// A seeded file (3 people, `age` indexed), checked sound first so that
    /// what verify then finds comes from `damage`, which gets a write
    /// transaction of the storage layer, Person's records and its index on age.
    static func seeded(_ folder: TemporaryFolder,
                       damagedBy damage: (LMDBTransaction, _ records: DatabaseHandle, _ ageIndex: DatabaseHandle) throws -> Void) throws -> String {
        let path = folder.path()
        try FileOpeningTests.seed(path)
        let db = try Database(configuration: Fixtures.configuration(path))
        let person = try #require(db.catalog[type: "Person"])
        db.close()
        let sound = try run(["verify", path])
        #expect(sound.status == 0 && sound.output.hasPrefix("OK: "), "\(sound)")
        let age = try #require(person[property: "age"])
        try FileOpeningTests.withRawWrite(path) { txn in
            let records = try #require(try txn.openDatabase(person.recordsDatabaseName, create: false))
            let index = try #require(try txn.openDatabase(person.indexDatabaseName(age), duplicateKeys: true, create: false))
            try damage(txn, records, index)
        }
        return path
    }

    @Test func verifyCatchesAMissingIndexEntry() throws {
        let folder = try TemporaryFolder()
        let path = try Self.seeded(folder) { txn, _, index in
            // Charles (key 2) is 79: the last entry by age.
            let (indexKey, objectKey) = try #require(try txn.withCursor(index) { try $0.last().map { (Array($0.key), Array($0.value)) } })
            #expect(objectKey == FileOpeningTests.key(2))
            let deleted = try indexKey.withUnsafeBytes { k in try objectKey.withUnsafeBytes { v in try txn.delete(index, k, value: v) } }
            #expect(deleted)
        }
        let result = try Self.run(["verify", path])
        Self.expectOneLineError(result, containing: [path, "has a problem (listed above)."])
        #expect(result.output == "- The object of 'Person' with key 2 is missing from the index on 'age'.\n")
    }

    @Test func verifyCatchesAnIndexEntryForAnotherValue() throws {
        let folder = try TemporaryFolder()
        let path = try Self.seeded(folder) { txn, _, index in
            // File Ada (key 1, 36) under Charles's age too.
            let charles = try #require(try txn.withCursor(index) { try $0.last().map { Array($0.key) } })
            try txn.put(index, charles, FileOpeningTests.key(1))
        }
        let result = try Self.run(["verify", path])
        Self.expectOneLineError(result, containing: [path, "has a problem (listed above)."])
        #expect(result.output.contains("files the object with key 1 under another value"), "\(result.output)")
    }

    @Test func verifyCatchesACorruptedRecord() throws {
        let folder = try TemporaryFolder()
        let path = try Self.seeded(folder) { txn, records, _ in
            let original = try #require(try txn.get(records, FileOpeningTests.key(2)).map { Array($0) })
            try txn.put(records, FileOpeningTests.key(2), Array(original.prefix(original.count / 2)))
        }
        let result = try Self.run(["verify", path])
        Self.expectOneLineError(result, containing: [path, "(listed above)."])
        let problems = Self.lines(result.output).filter { !$0.isEmpty }
        #expect(problems.contains { $0.hasPrefix("- ") && $0.contains("'Person'") && $0.contains("key 2") }, "\(result.output)")
    }

    // MARK: compact

    @Test func compactKeepsTheObjectsAndDropsRetiredFields() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let marker = Array("RETIRED-BIO".utf8)
        var v1 = Fixtures.person
        v1.properties.append(Property("bio", .string))
        do {
            let db = try Database(configuration: Fixtures.configuration(path, schema: Schema([v1])))
            try db.write { tx in
                for id in 1 ... 300 {
                    var person = Fixtures.person(Int64(id), "First\(id)", age: Int64(id % 90))
                    person["bio"] = .string("RETIRED-BIO" + String(repeating: "x", count: 1500))
                    try tx.insert("Person", person)
                }
            }
            db.close()
        }
        // Version 2 removes bio: no record is rewritten, its bytes stay.
        let v2 = Fixtures.configuration(path, version: 2)
        let expected = try FileOpeningTests.people(opening: v2)
        #expect(expected.count == 300)
        func recordsHoldingTheBio() throws -> Int {
            try FileOpeningTests.withRawWrite(path) { txn in
                let records = try #require(try txn.openDatabase("__strata.t1", create: false))
                var count = 0
                try txn.withCursor(records) { cursor in
                    var entry = try cursor.first()
                    while let (_, record) = entry {
                        if Array(record).firstRange(of: marker) != nil { count += 1 }
                        entry = try cursor.next()
                    }
                }
                return count
            }
        }
        #expect(try recordsHoldingTheBio() == 300)

        let result = try Self.run(["compact", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(result.output.hasPrefix("Compacted \(path): "), "\(result.output)")
        // "Compacted PATH: 1 bytes before, 2 bytes after (-3.4%)."
        let sizes = result.output.dropFirst("Compacted \(path): ".count).split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        let size = try FileOpeningTests.size(path)
        try #require(sizes.count == 4, "\(result.output)")
        #expect(sizes[1] == size, "\(result.output)")
        #expect(size < sizes[0] / 2, "\(result.output)")
        #expect(try recordsHoldingTheBio() == 0)
        #expect(try FileOpeningTests.people(opening: v2) == expected)
        let info = try Self.run(["info", path])
        #expect(info.output.contains("  Person  300 objects  (version 1: 300)\n"), "each object keeps its effective version: \(info.output)")
        let verify = try Self.run(["verify", path])
        #expect(verify.status == 0 && verify.output.hasPrefix("OK: "), "\(verify)")
    }
}
