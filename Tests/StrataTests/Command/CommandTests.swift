import Foundation
import Testing

@testable import Strata

/// Runs the built `strata` binary's inspecting subcommands on real files and
/// compares their output and exit codes.
@Suite(.temporaryFolder) struct CommandTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    /// The subcommands that take a database file, with the options each needs.
    static let fileCommands = ["info", "schema", "dump", "plan", "verify", "compact"]

    static func arguments(_ command: String, _ path: String, snapshot: String) -> [String] {
        switch command {
        case "dump": [command, path, "--type", "Person"]
        case "plan": [command, path, "--schema", snapshot]
        default: [command, path]
        }
    }

    // MARK: Help and usage

    @Test(arguments: ["demo"] + fileCommands)
    func helpOfEachSubcommandExitsZero(_ command: String) throws {
        let result = try StrataBinary.run([command, "--help"])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(result.output.contains("USAGE: strata \(command)"), "\(result.output)")
        #expect(result.error.isEmpty)
    }

    @Test func rootHelpListsEverySubcommand() throws {
        let result = try StrataBinary.run(["--help"])
        #expect(result.status == 0)
        for command in ["demo"] + Self.fileCommands {
            #expect(result.output.contains("\n  \(command) "), "\(result.output)")
        }
    }

    @Test func dumpHelpDocumentsTheJSONValues() throws {
        let result = try StrataBinary.run(["dump", "--help"])
        #expect(result.status == 0)
        let text = result.output.replacingOccurrences(of: "\n", with: " ").split(separator: " ").joined(separator: " ")
        for fragment in ["\"_schemaVersion\"", "base64", "ISO-8601", "UUID", "\"NaN\"", "decimal"] {
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
        UsageCase(
            arguments: ["dump", "x.strata"], message: "Missing expected argument '--type <type>'",
            hint: "strata dump --help"),
        UsageCase(
            arguments: ["dump", "x.strata", "--type", "Person", "--limit=-1"], message: "--limit must be zero or more.",
            hint: "strata dump --help"),
        UsageCase(
            arguments: ["plan", "x.strata"], message: "Missing expected argument '--schema <snapshot>'",
            hint: "strata plan --help"),
        UsageCase(
            arguments: ["plan", "x.strata", "--schema", "s.json", "--version", "two"], message: "'two'",
            hint: "strata plan --help"),
        UsageCase(
            arguments: ["verify", "a.strata", "b.strata"], message: "Unexpected argument 'b.strata'",
            hint: "strata verify --help"),
        UsageCase(arguments: ["frobnicate"], message: "frobnicate", hint: "strata --help"),
    ])
    func usageErrorsAreOneLine(_ usage: UsageCase) throws {
        let result = try StrataBinary.run(usage.arguments)
        StrataBinary.expectOneLineError(
            result, containing: [usage.message, "See '\(usage.hint)' for more information."])
        #expect(result.output.isEmpty)
    }

    // MARK: info

    @Test func infoOnADemoFile() throws {
        let path = try StrataBinary.demoFile(folder)
        let result = try StrataBinary.run(["info", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        let lines = StrataBinary.lines(result.output)
        #expect(
            Array(lines.prefix(6)) == [
                path, "Format version: 1", "Schema version: 2", "Mode: local", "Types: 1",
                "  Person  25 objects  (version 2: 25)",
            ])
        let size = try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let sizeLine = try #require(lines.dropFirst(6).first)
        #expect(sizeLine.hasPrefix("File size: \(size) bytes, "), "\(sizeLine)")
        #expect(lines.count == 8 && lines[7].isEmpty, "\(result.output)")
    }

    @Test func infoCountsObjectsAtEachVersionAndMarksKeptTypes() throws {
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
        let result = try StrataBinary.run(["info", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        let lines = StrataBinary.lines(result.output)
        #expect(lines.contains("Schema version: 2"), "\(result.output)")
        #expect(lines.contains("Types: 2"), "\(result.output)")
        #expect(
            lines.contains("  Note    2 objects  (version 1: 2)                kept: not in the schema"),
            "\(result.output)")
        #expect(lines.contains("  Person  5 objects  (version 1: 3, version 2: 2)"), "\(result.output)")
    }

    // MARK: schema

    @Test func schemaPrintsEachTypeAndProperty() throws {
        let path = try StrataBinary.demoFile(folder)
        let result = try StrataBinary.run(["schema", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(
            result.output == """
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
        let path = folder.path()
        try Database(configuration: Fixtures.configuration(path, version: 3, schema: Self.everyKind)).close()
        let result = try StrataBinary.run(["schema", path, "--json"])
        #expect(result.status == 0, "stderr: \(result.error)")
        let snapshot = try SchemaSnapshot(jsonData: Data(result.output.utf8))
        #expect(snapshot == SchemaSnapshot(schemaVersion: 3, schema: Self.everyKind))
        // And the text form shows what the JSON holds.
        let text = try StrataBinary.run(["schema", path])
        #expect(text.status == 0)
        #expect(text.output.contains("Log (no primary key: automatic ids)\n  line  string\n"), "\(text.output)")
        #expect(text.output.contains("  count  int     default -3, indexed\n"), "\(text.output)")
        #expect(text.output.contains("  ratio  double  optional, default 0.5\n"), "\(text.output)")
    }

    // MARK: dump

    @Test func dumpPrintsATableWithTheEffectiveSchemaVersion() throws {
        let path = try StrataBinary.demoFile(folder)
        let result = try StrataBinary.run(["dump", path, "--type", "Person", "--limit", "2"])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(
            result.output == """
                id  fullName           age  email              status    _schemaVersion
                --  -----------------  ---  -----------------  --------  --------------
                1   "Ada Lovelace"     36   "ada@example.org"  "active"  2
                2   "Charles Babbage"  79   null               "active"  2
                (2 of 25 objects)

                """)
        let all = try StrataBinary.run(["dump", path, "--type", "Person"])
        #expect(all.status == 0)
        let lines = StrataBinary.lines(all.output)
        #expect(lines.count == 2 + 25 + 2, "\(all.output)")
        #expect(lines.dropLast().last == "(25 objects)")
        #expect(lines[2 + 24].hasPrefix("25  "), "\(all.output)")
    }

    @Test func dumpJSONWritesOneLineOfPlainJSONPerObject() throws {
        let path = folder.path()
        let ids = [UUID(), UUID(), UUID()]
        let when = Date(timeIntervalSince1970: 1_714_564_800.25)
        do {
            let db = try Database(configuration: Fixtures.configuration(path, schema: Self.everyKind))
            try db.write { tx in
                try tx.insert(
                    "Sample",
                    [
                        "key": .uuid(ids[0]), "flag": false, "count": 42, "ratio": .double(.nan),
                        "name": "tab\there \"quote\" \\ new\nline é 😀", "blob": .data(Data([0, 1, 254, 255])),
                        "when": .date(when),
                    ])
                try tx.insert("Sample", ["key": .uuid(ids[1]), "ratio": .double(-.infinity), "blob": nil])
                try tx.insert("Sample", ["key": .uuid(ids[2]), "ratio": 1e-7])
            }
            db.close()
        }
        let result = try StrataBinary.run(["dump", path, "--type", "Sample", "--json"])
        #expect(result.status == 0, "stderr: \(result.error)")
        let lines = result.output.split(separator: "\n")
        #expect(lines.count == 3, "\(result.output)")
        let objects = try lines.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
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
        let log = try StrataBinary.run(["dump", path, "--type", "Log", "--json"])
        #expect(log.status == 0 && log.output.isEmpty, "\(log)")
        let limited = try StrataBinary.run(["dump", path, "--type", "Sample", "--json", "--limit", "1"])
        #expect(limited.status == 0)
        #expect(limited.output.split(separator: "\n").count == 1)
        // The table keeps one object per line, whatever its strings hold.
        let table = try StrataBinary.run(["dump", path, "--type", "Sample"])
        #expect(table.status == 0)
        #expect(StrataBinary.lines(table.output).count == 2 + 3 + 2, "\(table.output)")
        #expect(table.output.contains("<4 bytes>"), "\(table.output)")
    }

    @Test func dumpOfAnUnknownTypeListsTheTypes() throws {
        let path = folder.path()
        try Database(configuration: Fixtures.configuration(path, schema: Self.everyKind)).close()
        let result = try StrataBinary.run(["dump", path, "--type", "Person"])
        StrataBinary.expectOneLineError(result, containing: [path, "'Person'", "Log, Sample"])
        #expect(result.output.isEmpty)
    }

    // MARK: Files that are missing or not Strata databases

    @Test(arguments: fileCommands)
    func missingFileIsAOneLineError(_ command: String) throws {
        let path = folder.path("missing.strata")
        let snapshot = folder.path("v1.json")
        try StrataBinary.writeSnapshot(Fixtures.schema, version: 1, to: snapshot)
        let result = try StrataBinary.run(Self.arguments(command, path, snapshot: snapshot))
        StrataBinary.expectOneLineError(result, containing: ["\(path) does not exist."])
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
        let path = folder.path("foreign.strata")
        try foreign.bytes.write(to: URL(fileURLWithPath: path))
        let snapshot = folder.path("v1.json")
        try StrataBinary.writeSnapshot(Fixtures.schema, version: 1, to: snapshot)
        let result = try StrataBinary.run(Self.arguments(command, path, snapshot: snapshot))
        StrataBinary.expectOneLineError(result, containing: [path, "not a Strata database"])
        #expect(try RawFile.contents(path) == foreign.bytes)
    }

    @Test func damagedCatalogIsAOneLineError() throws {
        let path = folder.path()
        try Fixtures.seed(path)
        try RawFile.rewriteCatalog(path) { $0["mode"] = "shared" }
        for command in ["info", "verify"] {
            let result = try StrataBinary.run([command, path])
            StrataBinary.expectOneLineError(result, containing: [path, "is damaged"])
        }
    }
}
