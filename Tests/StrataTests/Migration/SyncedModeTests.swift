import Foundation
import Testing

@testable import Strata

/// Synced mode: older app versions share the data, so only additive changes
/// are allowed and nothing an older version reads ever goes away.
@Suite(.temporaryFolder) struct SyncedModeTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    @Test func aMigrationClosureIsRefusedBeforeAnythingIsWritten() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 10, mode: .synced)
        let before = try RawFile.contents(path)
        let ran = Recorder<Bool>()
        for version in [UInt64(1), 2] {
            let error = expectStrataError(.migrationForbidden) {
                _ = try Database(
                    configuration: Migrations.configuration(
                        path, version: version, [Migrations.personV1], mode: .synced
                    ) { _, _ in
                        ran.append(true)
                    })
            }
            #expect(error?.message.contains("synced mode") == true)
            #expect(error?.message.contains("Remove Configuration.migration") == true)
        }
        #expect(ran.all.isEmpty)
        #expect(try RawFile.contents(path) == before)
        // A new file is refused the same way, and not created.
        let fresh = folder.path("fresh.strata")
        expectStrataError(.migrationForbidden) {
            _ = try Database(
                configuration: Migrations.configuration(fresh, version: 1, [Migrations.personV1], mode: .synced) {
                    _, _ in
                })
        }
        #expect(!FileManager.default.fileExists(atPath: fresh))
    }

    @Test func destructiveChangesAreRefusedAllListedAndTheFileIsUntouched() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 10, mode: .synced)
        let before = try RawFile.contents(path)
        let destructive = ObjectSchema("Person", primaryKey: "email") {
            Property("id", .int)
            Property("firstName", .string, optional: true)
            Property("lastName", .string)
            Property("age", .string, default: "?", indexed: true)
            Property("email", .string)
        }
        let error = expectStrataError(.migrationForbidden) {
            _ = try Database(configuration: Migrations.configuration(path, version: 2, [destructive], mode: .synced))
        }
        let lines = [
            "Primary key of 'Person' has been changed from 'id' to 'email'.",
            "Property 'Person.firstName' has been made optional.",
            "Property 'Person.age' has been changed from 'int' to 'string'.",
            "Property 'Person.email' has been made required.",
        ]
        #expect(error?.items == lines, "\(error?.message ?? "")")
        #expect(lines.allSatisfy { (error?.message ?? "").contains("\n- \($0)") }, "\(error?.message ?? "")")
        #expect(try RawFile.contents(path) == before)
        // Each change alone is refused too.
        let single: [ObjectSchema] = [
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("firstName", .string)
                Property("lastName", .string)
                Property("age", .double, default: 0)
                Property("email", .string, optional: true)
            },
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("firstName", .string)
                Property("lastName", .string)
                Property("age", .int, default: 0, indexed: true)
                Property("email", .string)
            },
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("firstName", .string, optional: true)
                Property("lastName", .string)
                Property("age", .int, default: 0, indexed: true)
                Property("email", .string, optional: true)
            },
            ObjectSchema("Person", primaryKey: "firstName") {
                Property("id", .int)
                Property("firstName", .string)
                Property("lastName", .string)
                Property("age", .int, default: 0, indexed: true)
                Property("email", .string, optional: true)
            },
        ]
        for schema in single {
            expectStrataError(.migrationForbidden) {
                _ = try Database(configuration: Migrations.configuration(path, version: 2, [schema], mode: .synced))
            }
        }
        #expect(try RawFile.contents(path) == before)
    }

    static let personWithoutContact = ObjectSchema("Person", primaryKey: "id") {
        Property("id", .int)
        Property("firstName", .string)
        Property("age", .int, default: 0, indexed: true)
        Property("nickname", .string, default: "-")
    }

    @Test func aRemovedPropertyStaysForOlderVersionsAndNewObjectsStoreItsEmptyValue() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 3, mode: .synced)
        let newer = try Database(
            configuration: Migrations.configuration(path, version: 2, [Self.personWithoutContact], mode: .synced))
        #expect(Instrumentation.recordWritesOfLastOpen(newer.path) == 0)
        try newer.write { tx in
            try tx.insert("Person", ["id": 10, "firstName": "New", "age": 20])
            // Writes of objects an older version wrote keep what it stored.
            try tx.update("Person", key: 3, ["nickname": "three"])
            try tx.upsert("Person", ["id": 2, "firstName": "Second", "age": 5])
        }
        try newer.read { tx in
            let person = try #require(try tx.object("Person", key: 10))
            expectStrataError(.unknownProperty) { _ = try person.value("lastName") }
            #expect(person.schemaVersion == 2)
        }
        newer.close()
        // The version-1 app still opens the file, a lower version included.
        let older = try Database(
            configuration: Migrations.configuration(path, version: 1, [Migrations.personV1], mode: .synced))
        try older.read { tx in
            let fresh = try #require(try tx.object("Person", key: 10))
            #expect(fresh["lastName"] == "")
            #expect(fresh["email"] == .null)
            #expect(fresh.schemaVersion == 2)
            let updated = try #require(try tx.object("Person", key: 3))
            #expect(updated["lastName"] == "Last3")
            #expect(updated["email"] == "p3@example.org")
            #expect(updated.schemaVersion == 2)
            #expect(try tx.object("Person", key: 2)?["lastName"] == "Last2")
            #expect(try tx.object("Person", key: 2)?["firstName"] == "Second")
            // Objects written by a newer app version than this one.
            #expect(
                try tx.objects("Person").whereSchemaVersion((tx.appSchemaVersion + 1)...).map(\.primaryKey) == [
                    2, 3, 10,
                ])
        }
        // Objects the older app writes carry its version.
        try older.write { tx in try tx.insert("Person", Fixtures.person(11)) }
        #expect(try older.read { tx in try tx.object("Person", key: 11)?.schemaVersion } == 1)
        #expect(older.fileSchemaVersion == 2)
    }

    @Test func anIndexOnAPropertyAnotherVersionRemovedIsRebuiltWhenItComesBack() throws {
        let path = folder.path()
        let v1 = ObjectSchema("Tag") {
            Property("name", .string, indexed: true)
            Property("color", .string, default: "red", indexed: true)
        }
        let v2 = ObjectSchema("Tag") { Property("name", .string, indexed: true) }
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [v1], mode: .synced))
        try first.write { tx in try tx.insert("Tag", ["name": "a", "color": "blue"]) }
        first.close()
        let second = try Database(configuration: Migrations.configuration(path, version: 2, [v2], mode: .synced))
        try second.write { tx in try tx.insert("Tag", ["name": "b"]) }
        second.close()
        let third = try Database(configuration: Migrations.configuration(path, version: 1, [v1], mode: .synced))
        try third.read { tx throws in
            #expect(try tx.objects("Tag").where("color", equals: "blue").map { $0["name"] } == ["a"])
            // The version-2 object stored the empty value: "", not the default.
            #expect(try tx.objects("Tag").where("color", equals: "").map { $0["name"] } == ["b"])
        }
    }

    /// A kept property named again with another type is another field:
    /// the open succeeds, the new field starts at its default, and the
    /// kept values stay for the app versions that read them.
    @Test func namingAKeptPropertyAgainWithAnotherTypeMakesAnotherField() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 2, mode: .synced)
        _ = try Database(
            configuration: Migrations.configuration(path, version: 2, [Self.personWithoutContact], mode: .synced))
        let clash = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("firstName", .string)
            Property("lastName", .int, default: 0)
            Property("age", .int, default: 0, indexed: true)
        }
        let db = try Database(configuration: Migrations.configuration(path, version: 3, [clash], mode: .synced))
        #expect(db.openingPlan.error == nil)
        try db.write { tx in try tx.update("Person", key: 1, ["lastName": 7]) }
        #expect(try db.read { tx in try tx.objects("Person").map { $0["lastName"] } } == [7, 0])
        db.close()
        // Version 1 still reads its own lastName, as it stored it.
        let older = try Database(
            configuration: Migrations.configuration(path, version: 1, [Migrations.personV1], mode: .synced))
        #expect(try older.read { tx in try tx.objects("Person").map { $0["lastName"] } } == ["Last1", "Last2"])
    }

    @Test func addingTypesAndPropertiesIsAutomaticAtAnyVersion() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 2, mode: .synced)
        let more = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("firstName", .string)
            Property("lastName", .string)
            Property("age", .int, default: 0, indexed: true)
            Property("email", .string, optional: true)
            Property("score", .double, default: 1.5)
        }
        for version in [UInt64(1), 3] {
            let db = try Database(
                configuration: Migrations.configuration(path, version: version, [more, Migrations.note], mode: .synced))
            #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 0)
            #expect(try db.read { tx in try tx.objects("Person").map { $0["score"] } } == [1.5, 1.5])
            try db.write { tx in try tx.insert("Note", ["text": .string("v\(version)")]) }
            db.close()
        }
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [more, Migrations.note], mode: .synced))
        #expect(db.fileSchemaVersion == 3)
        #expect(try db.read { tx in try tx.objects("Note").map(\.schemaVersion) } == [1, 3])
    }

    @Test func aTypeThisVersionLeavesOutStaysForOlderVersions() throws {
        let path = folder.path()
        let first = try Database(
            configuration: Migrations.configuration(
                path, version: 1, [Migrations.personV1, Migrations.note], mode: .synced))
        try first.write { tx in try tx.insert("Note", ["text": "for older versions"]) }
        first.close()
        let newer = try Database(
            configuration: Migrations.configuration(path, version: 2, [Migrations.personV1], mode: .synced))
        #expect(
            newer.openingPlan.steps.map(\.description) == [
                "Object type 'Note' has been removed. Its objects stay in the file for older app versions, ignored by this one. (automatic)"
            ])
        #expect(try newer.read { tx in tx.typeNames } == ["Person"])
        newer.close()
        let older = try Database(
            configuration: Migrations.configuration(
                path, version: 1, [Migrations.personV1, Migrations.note], mode: .synced))
        #expect(try older.read { tx in try tx.objects("Note").map { $0["text"] } } == ["for older versions"])
    }
}
