import Foundation
import Testing

@testable import Strata

/// Changing a type's primary key re-keys its objects, or fails and writes nothing.
@Suite(.temporaryFolder) struct PrimaryKeyMigrationTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    @Test func primaryKeyChangeReKeysEveryObject() throws {
        let path = folder.path()
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.accountV1]))
        try first.write { tx in
            try tx.insert("Account", ["id": 1, "email": "b@example.org"])
            try tx.insert("Account", ["id": 2, "email": "a@example.org"])
        }
        first.close()
        let db = try Database(configuration: Migrations.configuration(path, version: 2, [Migrations.accountV2]))
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 2)
        try db.read { tx throws in
            #expect(try tx.objects("Account").map(\.primaryKey) == ["a@example.org", "b@example.org"])
            #expect(try tx.object("Account", key: "b@example.org")?["id"] == 1)
        }
    }

    @Test func primaryKeyChangeThatProducesDuplicatesFailsAndWritesNothing() throws {
        let path = folder.path()
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.accountV1]))
        try first.write { tx in
            try tx.insert("Account", ["id": 1, "email": "same@example.org"])
            try tx.insert("Account", ["id": 2, "email": "other@example.org"])
            try tx.insert("Account", ["id": 3, "email": "same@example.org"])
        }
        first.close()
        let old = Migrations.configuration(path, version: 1, [Migrations.accountV1])
        let before = try Migrations.state(opening: old)
        let error = expectStrataError(.duplicatePrimaryKey) {
            _ = try Database(configuration: Migrations.configuration(path, version: 2, [Migrations.accountV2]))
        }
        #expect(error?.message.contains("same@example.org") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("Nothing was written") == true)
        #expect(try Migrations.state(opening: old) == before)
        // The closure can fix the values.
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [Migrations.accountV2]) { migration, _ in
                try migration.enumerateObjects(ofType: "Account") { old, new in
                    if old?["id"] == 3 { new?["email"] = "third@example.org" }
                }
            })
        #expect(try db.read { tx in try tx.objects("Account").map { $0["id"] } } == [2, 1, 3])
    }

    @Test func changingAPrimaryKeyValueWithoutAPrimaryKeyChangeIsRefused() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 2)
        let old = Migrations.configuration(path, version: 1, [Migrations.personV1])
        let before = try Migrations.state(opening: old)
        let error = expectStrataError(.migrationFailed) {
            _ = try Database(
                configuration: Migrations.configuration(path, version: 2, [Migrations.personV1]) { migration, _ in
                    try migration.enumerateObjects(ofType: "Person") { _, new in
                        new?["id"] = .int(new!["id"].int! + 100)
                    }
                })
        }
        #expect(error?.message.contains("changed the primary key") == true, "\(error?.message ?? "")")
        #expect(try Migrations.state(opening: old) == before)
    }
}
