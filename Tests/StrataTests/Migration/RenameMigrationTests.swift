import Foundation
import Testing

@testable import Strata

/// Renamed properties and types keep their values without rewriting records.
@Suite(.temporaryFolder) struct RenameMigrationTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    static func item(_ name: String) -> ObjectSchema {
        ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property(name, .string, optional: true)
        }
    }

    @Test func renameChainedAcrossThreeVersionsKeepsValuesWithoutRewriting() throws {
        let migration: Database.MigrationBlock = { migration, oldVersion in
            if oldVersion < 2 { try migration.renameProperty(onType: "Item", from: "a", to: "b") }
            if oldVersion < 3 { try migration.renameProperty(onType: "Item", from: "b", to: "c") }
        }
        for start in [UInt64(1), 2] {
            let path = folder.path("from-version-\(start).strata")
            let first = try Database(configuration: Migrations.configuration(path, version: 1, [Self.item("a")]))
            try first.write { tx in
                try tx.insert("Item", ["id": 1, "a": "one"])
                try tx.insert("Item", ["id": 2, "a": nil])
            }
            first.close()
            if start == 2 {
                // The version-2 app knew only the first rename.
                let second = try Database(
                    configuration: Migrations.configuration(path, version: 2, [Self.item("b")]) {
                        migration, oldVersion in
                        if oldVersion < 2 { try migration.renameProperty(onType: "Item", from: "a", to: "b") }
                    })
                #expect(try second.read { tx in try tx.object("Item", key: 1)?["b"] } == "one")
                second.close()
            }
            let db = try Database(
                configuration: Migrations.configuration(path, version: 3, [Self.item("c")], migration: migration))
            #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 0)
            #expect(
                try db.read { tx in try tx.objects("Item").map(\.values) } == [
                    ["id": 1, "c": "one"], ["id": 2, "c": nil],
                ])
            #expect(try db.read { tx in try tx.objects("Item").map(\.schemaVersion) } == [1, 1])
        }
    }

    @Test func renameRefusesWhatRealmRefuses() throws {
        let path = folder.path()
        let v1 = ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property("a", .string)
            Property("n", .int)
        }
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [v1]))
        try first.write { tx in try tx.insert("Item", ["id": 1, "a": "one", "n": 5]) }
        first.close()
        let v2 = ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property("a", .string)
            Property("b", .string)
            Property("m", .string)
        }
        let cases: [(String, Database.MigrationBlock)] = [
            ("is still in the new schema", { m, _ in try m.renameProperty(onType: "Item", from: "a", to: "b") }),
            ("had no property 'zzz'", { m, _ in try m.renameProperty(onType: "Item", from: "zzz", to: "b") }),
            ("a rename keeps the type", { m, _ in try m.renameProperty(onType: "Item", from: "n", to: "m") }),
            (
                "neither the old nor the new schema has a type 'Nope'",
                { m, _ in try m.renameProperty(onType: "Nope", from: "n", to: "m") }
            ),
            (
                "no later rename moves it on",
                { m, _ in try m.renameProperty(onType: "Item", from: "n", to: "elsewhere") }
            ),
            (
                "inside enumerateObjects",
                { m, _ in
                    try m.enumerateObjects(ofType: "Item") { _, _ in
                        try m.renameProperty(onType: "Item", from: "a", to: "b")
                    }
                }
            ),
        ]
        let before = try Migrations.state(opening: Migrations.configuration(path, version: 1, [v1]))
        for (expected, block) in cases {
            let error = expectStrataError(.migrationFailed) {
                _ = try Database(configuration: Migrations.configuration(path, version: 2, [v2], migration: block))
            }
            #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("Nothing was written") == true)
        }
        #expect(try Migrations.state(opening: Migrations.configuration(path, version: 1, [v1])) == before)
    }

    @Test func aRenameAfterAnEnumerationMovesTheValuesIntoTheRewrittenObjects() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 30)
        let v2 = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("fullName", .string)
            Property("age", .int, default: 0, indexed: true)
            Property("contact", .string, optional: true)
        }
        // A closure written version by version: version 2 rewrote every
        // object, version 3 renamed email to contact.
        let db = try Database(
            configuration: Migrations.configuration(path, version: 3, [v2, Migrations.note]) { migration, _ in
                try migration.enumerateObjects(ofType: "Person") { old, new in
                    if old!["id"].int! % 2 == 0 {
                        new?["fullName"] = .string(old!["firstName"].string! + " " + old!["lastName"].string!)
                    }
                }
                try migration.create(
                    "Person", value: ["id": 100, "fullName": "Created", "contact": "made@example.org"])
                try migration.renameProperty(onType: "Person", from: "email", to: "contact")
            })
        try db.read { tx throws in
            for id in Int64(1) ... 30 {
                let person = try #require(try tx.object("Person", key: .int(id)))
                #expect(person["contact"] == (id % 3 == 0 ? .string("p\(id)@example.org") : .null), "\(id)")
                #expect(person["fullName"] == (id % 2 == 0 ? .string("First\(id) Last\(id)") : ""), "\(id)")
            }
            #expect(try tx.object("Person", key: 100)?["contact"] == "made@example.org")
            #expect(try tx.objects("Person").where("age", equals: 12).map(\.primaryKey) == [12])
        }
        #expect(try db.verify() == [])
    }

    @Test func renameTypeKeepsObjectsAndIdsWithoutRewriting() throws {
        let path = folder.path()
        let dog = ObjectSchema("Dog") { Property("name", .string, indexed: true) }
        let hound = ObjectSchema("Hound") { Property("name", .string, indexed: true) }
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [dog]))
        try first.write { tx in
            try tx.insert("Dog", ["name": "Rex"])
            try tx.insert("Dog", ["name": "Fido"])
        }
        first.close()
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [hound]) { migration, _ in
                try migration.renameType(from: "Dog", to: "Hound")
            })
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 0)
        try db.read { tx throws in
            #expect(tx.typeNames == ["Hound"])
            #expect(try tx.objects("Hound").map { $0["name"] } == ["Rex", "Fido"])
            #expect(try tx.objects("Hound").where("name", equals: "Fido").map(\.primaryKey) == [2])
        }
        // The automatic ids go on from where Dog left them.
        #expect(try db.write { tx in try tx.insert("Hound", ["name": "Bo"]) } == 3)
    }
}
