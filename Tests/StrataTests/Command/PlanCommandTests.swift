import Foundation
import Testing

@testable import Strata

/// `strata plan` tells what opening a file with a schema snapshot would do,
/// and writes nothing.
@Suite(.temporaryFolder) struct PlanCommandTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    /// `--synced` warns about the delete rules that sync cannot keep as
    /// they are on one device: cascade and deny.
    @Test func aSyncedPlanWarnsAboutCascadeAndDeny() throws {
        let path = folder.path()
        let schema = Schema([
            ObjectSchema("Parent", primaryKey: "id") { Property("id", .int) },
            ObjectSchema("Child", primaryKey: "id") {
                Property("id", .int)
                Property.link("parent", to: "Parent", onDelete: .cascade)
                Property.link("guardian", to: "Parent", onDelete: .deny)
                Property.link("friend", to: "Parent")
            },
        ])
        var config = Fixtures.configuration(path, schema: schema)
        config.mode = .synced
        try Database(configuration: config).close()
        let snapshot = folder.path("snapshot.json")
        try StrataBinary.writeSnapshot(schema, version: 1, to: snapshot)
        let synced = try StrataBinary.run(["plan", path, "--schema", snapshot, "--synced"])
        let warnings = StrataBinary.lines(synced.output).filter { $0.hasPrefix("Warning: ") }
        #expect(warnings.count == 2, "\(synced.output)")
        #expect(warnings.contains { $0.hasPrefix("Warning: Child.parent cascades") })
        #expect(warnings.contains { $0.hasPrefix("Warning: Child.guardian denies deletes on this device only") })
    }

    enum BadSnapshot: String, CaseIterable, Sendable {
        case missing, notJSON, notASnapshot, newerFormat, invalidSchema

        func write(to path: String) throws {
            let text: String
            switch self {
            case .missing: return
            case .notJSON: text = "Person: id, name"
            case .notASnapshot: text = #"{"types": []}"#
            case .newerFormat:
                text = String(
                    decoding: SchemaSnapshot(schemaVersion: 1, schema: Fixtures.schema).jsonData(), as: UTF8.self
                )
                .replacingOccurrences(of: #""formatVersion" : 1"#, with: #""formatVersion" : 9"#)
            case .invalidSchema:
                // Two problems: the message lists both, on lines of their own.
                let schema = Schema([
                    ObjectSchema("Person", primaryKey: "nope") {
                        Property("id", .int)
                        Property("id", .string)
                    }
                ])
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
        let path = folder.path()
        try Fixtures.seed(path)
        let before = try RawFile.contents(path)
        let snapshot = folder.path("snapshot.json")
        try bad.write(to: snapshot)
        let result = try StrataBinary.run(["plan", path, "--schema", snapshot])
        let message = StrataBinary.expectOneLineError(result, containing: [snapshot, bad.fragment])
        if bad == .invalidSchema {
            #expect(message.contains("; "), "both problems on the line: \(message)")
        }
        #expect(result.output.isEmpty)
        #expect(try RawFile.contents(path) == before)
    }

    struct PlanCase: Sendable, CustomTestStringConvertible {
        let testDescription: String
        var mode: Database.Mode = .local
        let schema: Schema
        let version: UInt64?
        var synced = false
        /// `Type.property` of each property whose values the app discards.
        var discarded: [String] = []
        /// Whether the app passes a migration closure (`--with-closure`).
        var withClosure = false
        /// How the plan's first line ends.
        let summary: String
    }

    static let personWithNickname = Schema([
        ObjectSchema(
            "Person", primaryKey: "id",
            properties: Fixtures.person.properties + [
                Property("nickname", .string, default: "none")
            ])
    ])
    static let personWithStringAge = Schema([
        ObjectSchema(
            "Person", primaryKey: "id",
            properties: Fixtures.person.properties.map {
                $0.name == "age" ? Property("age", .string, default: "unknown") : $0
            })
    ])
    static let personWithIndexedLastName = Schema([
        ObjectSchema(
            "Person", primaryKey: "id",
            properties: Fixtures.person.properties.map {
                $0.name == "lastName" ? Property("lastName", .string, indexed: true) : $0
            })
    ])

    static let planCases: [PlanCase] = [
        PlanCase(
            testDescription: "same schema and version", schema: Fixtures.schema, version: nil,
            summary: "open it as it is."),
        PlanCase(
            testDescription: "property added, version raised", schema: personWithNickname, version: 2,
            summary: "migrate, without a migration closure."),
        PlanCase(
            testDescription: "property added at the same version", schema: personWithNickname, version: 1,
            summary: "refused."),
        PlanCase(
            testDescription: "index added at the same version", schema: personWithIndexedLastName, version: 1,
            summary: "apply automatic changes; no record is rewritten."),
        PlanCase(
            testDescription: "type changed, version raised, no code", schema: personWithStringAge, version: 3,
            summary: "refused."),
        PlanCase(
            testDescription: "type changed, version raised, values discarded", schema: personWithStringAge,
            version: 3, discarded: ["Person.age"],
            summary: "migrate, without a migration closure."),
        PlanCase(
            testDescription: "type changed, version raised, with a closure", schema: personWithStringAge,
            version: 3, withClosure: true,
            summary: "migrate, running the migration closure."),
        PlanCase(testDescription: "lower version", schema: Fixtures.schema, version: 0, summary: "refused."),
        PlanCase(
            testDescription: "synced mode on a local file", schema: Fixtures.schema, version: 1, synced: true,
            summary: "refused."),
        PlanCase(
            testDescription: "synced file, property added", mode: .synced, schema: personWithNickname, version: nil,
            synced: true,
            summary: "apply automatic changes; no record is rewritten."),
        PlanCase(
            testDescription: "synced file, type changed", mode: .synced, schema: personWithStringAge, version: 2,
            synced: true,
            summary: "refused."),
    ]

    @Test(arguments: planCases)
    func planAgreesWithWhatOpeningDoes(_ planCase: PlanCase) throws {
        let path = folder.path()
        var seed = Fixtures.configuration(path)
        seed.mode = planCase.mode
        do {
            let db = try Database(configuration: seed)
            try db.write { tx in
                for id in 1 ... 3 { try tx.insert("Person", Fixtures.person(Int64(id), age: Int64(id * 10))) }
            }
            db.close()
        }
        let snapshot = folder.path("snapshot.json")
        try StrataBinary.writeSnapshot(planCase.schema, version: 1, to: snapshot)
        let before = try RawFile.contents(path)
        var arguments = ["plan", path, "--schema", snapshot]
        if let version = planCase.version { arguments += ["--version", String(version)] }
        if planCase.synced { arguments.append("--synced") }
        for entry in planCase.discarded { arguments += ["--discard-values", entry] }
        if planCase.withClosure { arguments.append("--with-closure") }
        let result = try StrataBinary.run(arguments)
        #expect(try RawFile.contents(path) == before, "plan wrote nothing")
        let firstLine = StrataBinary.lines(result.output).first ?? ""
        #expect(firstLine.hasSuffix(planCase.summary), "\(result.output)")

        // The app's open with the same configuration.
        var configuration = Fixtures.configuration(path, version: planCase.version ?? 1, schema: planCase.schema)
        configuration.mode = planCase.synced ? .synced : .local
        for entry in planCase.discarded {
            let parts = entry.split(separator: ".").map(String.init)
            configuration.discardValues(of: parts[1], onType: parts[0])
        }
        if planCase.withClosure { configuration.migration = { _, _ in } }
        #expect(result.output == "\(try Database.migrationPlan(for: configuration))\n")
        if result.status == 0 {
            #expect(result.error.isEmpty)
            let db = try Database(configuration: configuration)
            #expect(db.fileSchemaVersion == max(planCase.version ?? 1, 1))
            #expect(db.schema == planCase.schema)
            #expect(try db.read { try $0.objects("Person").count } == 3)
        } else {
            let message = StrataBinary.expectOneLineError(result, containing: [])
            do {
                _ = try Database(configuration: configuration)
                Issue.record("plan refused, but opening succeeded")
            } catch let error as StrataError {
                // A list is on stdout and named by its heading; anything else
                // is said whole.
                #expect(message == (error.items.isEmpty ? error.message : "\(error.summary) (listed above)."))
                #expect(result.output.contains(error.message), "the whole refusal is on stdout")
            }
            #expect(try RawFile.contents(path) == before)
        }
    }
}
