import Foundation
import Strata
import StrataTesting
import Testing

/// StrataTesting with models: fixtures written from a shipped version's
/// model types, typed reads, and dumps that show nothing changed.
@Suite(.temporaryFolder) struct TypedFixtureTests {
    let folder = TemporaryFolder.current

    enum AppV1: VersionedSchema {
        static let version: UInt64 = 1
        static let models: [any Model.Type] = [HandPerson.self]
    }

    static let ada = HandPerson(id: 1, firstName: "Ada", lastName: "Lovelace", age: 36, email: "ada@example.org")
    static let alan = HandPerson(id: 2, firstName: "Alan", lastName: "Turing", age: 41)

    static func today() -> Database.Configuration {
        var config = Database.Configuration(
            path: "set by the harness", schemaVersion: 2, models: [HandPerson.self, HandNote.self])
        config.durability = .noSync
        return config
    }

    @Test(arguments: Fixtures.modes)
    func aFixtureFromModelsOpensWithTodaysConfiguration(mode: Database.Mode) throws {
        let test = try MigrationTest(directory: folder.url)
        var v1 = MigrationFixture(version: AppV1.self, mode: mode)
        #expect(v1.snapshot.schemaVersion == 1)
        #expect(v1.snapshot.schema == Schema([HandPerson.objectSchema]))
        v1.add(Self.ada)
        v1.add(Self.alan)
        var today = Self.today()
        today.mode = mode
        let db = try test.open(v1, with: today)
        #expect(try test.objects(HandPerson.self, in: db) == [Self.ada, Self.alan])
        #expect(try test.schemaVersions("Person", in: db) == [1, 1])
        #expect(try test.objects(HandNote.self, in: db).isEmpty)
    }

    @Test func storedValuesAreWhatTheDynamicAPIReads() throws {
        #expect(
            Self.ada.storedValues == [
                "id": 1, "firstName": "Ada", "lastName": "Lovelace", "age": 36, "email": "ada@example.org",
            ])
        #expect(Self.alan.storedValues["email"] == .null)
    }

    @Test(arguments: Fixtures.modes)
    func aDumpHoldsEveryTypeKeyValueAndVersion(mode: Database.Mode) throws {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        let dump = try DatabaseDump(path: path)
        #expect(dump.fileSchemaVersion == 1)
        #expect(dump.types.map(\.name) == ["Person"])
        let people = try #require(dump.types.first).objects
        #expect(people.map(\.key) == [1, 2, 3])
        #expect(people.map(\.schemaVersion) == [1, 1, 1])
        #expect(people[0].values == Fixtures.ada)
        #expect(dump.description.contains("  1 v1: age=36, email=\"ada@example.org\", firstName=\"Ada\""))
        #expect(dump.digest.count == 32)
        #expect(try DatabaseDump(path: path) == dump)
        #expect(try DatabaseDump(path: path).digest == dump.digest)
    }

    @Test func anyChangeChangesTheDumpAndItsDigest() throws {
        let path = folder.path()
        try Fixtures.seed(path)
        let before = try DatabaseDump(path: path)
        let db = try Database(configuration: Fixtures.configuration(path))
        try db.write { tx in try tx.update("Person", key: 2, ["age": 80]) }
        let after = try DatabaseDump(db)
        db.close()
        #expect(after != before)
        #expect(after.digest != before.digest)
        #expect(after.differences(from: before).count == 2)
        #expect(after.differences(from: before).contains { $0.hasPrefix("+ ") && $0.contains("age=80") })
        #expect(before.differences(from: before).isEmpty)
    }

    @Test func aFailedMigrationLeavesTheSameDump() throws {
        struct Refused: Error {}
        let path = folder.path()
        try Fixtures.seed(path)
        let before = try DatabaseDump(path: path)
        var config = Fixtures.configuration(path, version: 2)
        config.migration = { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { _, new in
                new?["age"] = 1
                throw Refused()
            }
        }
        #expect(throws: StrataError.self) { try Database(configuration: config) }
        let after = try DatabaseDump(path: path)
        #expect(after == before, "\(after.differences(from: before))")
    }
}
