import Foundation
import Strata
import StrataTesting
import Testing

/// The classic migration scenarios, written as an app's tests would be with
/// StrataTesting: a snapshot per shipped version, fixtures at old versions,
/// today's configuration opened on them.
@Suite(.temporaryFolder) struct StrataTestingTests {
    /// The running test's own folder, where each harness makes its own.
    let folder = TemporaryFolder.current

    /// The snapshots an app keeps in its repository, one per version.
    static let snapshots: [UInt64: Data] = [
        1: Schema([Migrations.personV1]).snapshot(schemaVersion: 1),
        2: Schema([Migrations.personV2]).snapshot(schemaVersion: 2),
    ]

    /// Today's app: version 3, where `email` was renamed `contact`.
    static let personV3 = ObjectSchema("Person", primaryKey: "id") {
        Property("id", .int)
        Property("fullName", .string)
        Property("age", .int, default: 0, indexed: true)
        Property("contact", .string, optional: true)
    }

    static var today: Database.Configuration {
        var config = Database.Configuration(path: "set by the harness", schemaVersion: 3, schema: Schema([personV3]))
        config.durability = .noSync
        config.migration = { migration, oldVersion in
            if oldVersion < 2 {
                try migration.enumerateObjects(ofType: "Person") { old, new in
                    new?["fullName"] = .string("\(old!["firstName"].string!) \(old!["lastName"].string!)")
                }
            }
            if oldVersion < 3 {
                try migration.renameProperty(onType: "Person", from: "email", to: "contact")
            }
        }
        return config
    }

    @Test func aVersionOneFileMigratesToToday() throws {
        let test = try MigrationTest(directory: folder.url)
        var v1 = try MigrationFixture(snapshot: try #require(Self.snapshots[1]))
        v1.add("Person", ["id": 1, "firstName": "Ada", "lastName": "Lovelace", "age": 36, "email": "ada@example.org"])
        v1.add("Person", ["id": 2, "firstName": "Alan", "lastName": "Turing", "age": 41])
        let db = try test.open(v1, with: Self.today)
        #expect(
            try test.objects("Person", in: db) == [
                ["id": 1, "fullName": "Ada Lovelace", "age": 36, "contact": "ada@example.org"],
                ["id": 2, "fullName": "Alan Turing", "age": 41, "contact": nil],
            ])
        #expect(try test.schemaVersions("Person", in: db) == [3, 3])
    }

    @Test func aVersionTwoFileOnlyRenamesAndRewritesNothing() throws {
        let test = try MigrationTest(directory: folder.url)
        var v2 = try MigrationFixture(snapshot: try #require(Self.snapshots[2]))
        v2.add("Person", ["id": 7, "fullName": "Grace Hopper", "age": 85, "email": "grace@example.org"])
        let plan = try test.plan(v2, with: Self.today)
        #expect(plan.action == .migrate)
        #expect(
            plan.changes.map(\.description) == [
                "Property 'Person.contact' has been added.", "Property 'Person.email' has been removed.",
            ])
        let db = try test.open(v2, with: Self.today)
        #expect(
            try test.objects("Person", in: db) == [
                ["id": 7, "fullName": "Grace Hopper", "age": 85, "contact": "grace@example.org"]
            ])
        // Untouched by the migration: still at the version that wrote it.
        #expect(try test.schemaVersions("Person", in: db) == [2])
    }

    @Test func aFixtureThatBreaksItsOwnSchemaIsRefused() throws {
        let test = try MigrationTest(directory: folder.url)
        var v1 = MigrationFixture(schemaVersion: 1, schema: Schema([Migrations.personV1]))
        v1.add("Person", ["id": 1, "firstName": 42])
        #expect(throws: StrataError.self) { try test.open(v1, with: Self.today) }
    }

    @Test func aHarnessKeepsItsFilesInTheGivenFolderAndRemovesThem() throws {
        var test: MigrationTest? = try MigrationTest(directory: folder.url)
        let path = try #require(test).newPath()
        #expect(path.hasPrefix(folder.url.path + "/"))
        let harnessFolder = try #require(test).folder
        #expect(FileManager.default.fileExists(atPath: harnessFolder.path))
        test = nil
        #expect(!FileManager.default.fileExists(atPath: harnessFolder.path))
    }

    @Test func aSyncedFixtureRefusesTodaysMigrationClosure() throws {
        let test = try MigrationTest(directory: folder.url)
        let v1 = MigrationFixture(schemaVersion: 1, schema: Schema([Migrations.personV1]), mode: .synced)
        var synced = Self.today
        synced.mode = .synced
        let error = try #require(throws: StrataError.self) { try test.open(v1, with: synced) }
        #expect(error.code == .migrationForbidden)
    }
}
