import Foundation
import Testing

@testable import Strata

/// Migrations keep links whole: additive changes rewrite nothing, renames
/// keep links, deletes and new keys in a migration leave no link dangling,
/// and synced mode refuses what older app versions could not read.
@Suite(.temporaryFolder) struct RelationshipMigrationTests {
    let folder = TemporaryFolder.current

    static let person = ObjectSchema("Person", primaryKey: "id") {
        Property("id", .int)
        Property("name", .string)
    }

    /// Dog: a name, an owner and friends, then `extra` properties.
    static func dog(ownerRule: DeleteRule = .nullify, target: String = "Person", adding extra: [Property] = [])
        -> ObjectSchema
    {
        ObjectSchema(
            "Dog", primaryKey: "name",
            properties: [
                Property("name", .string), Property.link("owner", to: target, onDelete: ownerRule),
                Property.list("friends", linksTo: target),
            ] + extra)
    }

    /// Ada (1), Charles (2); Rex and Fido are Ada's, Spot is Charles's;
    /// Rex lists both people as friends.
    func seed(
        _ path: String, mode: Database.Mode = .local, ownerRule: DeleteRule = .nullify, person: ObjectSchema = person
    ) throws {
        let db = try Database(
            configuration: Migrations.configuration(
                path, version: 1, [person, Self.dog(ownerRule: ownerRule)], mode: mode))
        try db.write { tx in
            try tx.insert("Person", ["id": 1, "name": "Ada"])
            try tx.insert("Person", ["id": 2, "name": "Charles"])
            try tx.insert("Dog", ["name": "Rex", "owner": .link(1), "friends": [.link(1), .link(2)]])
            try tx.insert("Dog", ["name": "Fido", "owner": .link(1)])
            try tx.insert("Dog", ["name": "Spot", "owner": .link(2), "friends": [.link(2)]])
        }
        db.close()
    }

    func dogs(_ db: Database) throws -> [String: [String: Value]] {
        try db.read { tx throws in
            Dictionary(uniqueKeysWithValues: try tx.objects("Dog").map { ($0["name"].string!, $0.values) })
        }
    }

    func dogsLinking(to key: Value, _ db: Database) throws -> [String] {
        try db.read { tx throws in try tx.objects("Dog", linkingTo: key, through: "owner").map { $0["name"].string! } }
    }

    // MARK: Additive changes

    @Test(arguments: Fixtures.modes)
    func addingLinkListAndEmbeddedPropertiesRewritesNothing(mode: Database.Mode) throws {
        let path = folder.path()
        try seed(path, mode: mode)
        let person = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property.link("bestDog", to: "Dog")
            Property.list("pets", linksTo: "Dog")
            Property.list("scores", of: .int)
            Property.embedded("address", "Address")
            Property.embedded("home", "Address", optional: false)
        }
        let address = ObjectSchema("Address", embedded: true) {
            Property("street", .string, default: "unknown")
        }
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [person, Self.dog(), address], mode: mode))
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 0)
        let ada = try #require(try db.read { tx in try tx.object("Person", key: 1)?.values })
        #expect(ada["bestDog"] == .null)
        #expect(ada["pets"] == .list([]))
        #expect(ada["scores"] == .list([]))
        #expect(ada["address"] == .null)
        #expect(ada["home"] == ["street": "unknown"])
        // The new link works at once, backlinks included.
        try db.write { tx in try tx.update("Person", key: 1, ["bestDog": .link("Rex"), "pets": [.link("Fido")]]) }
        let fans = try db.read { tx in try tx.objects("Person", linkingTo: "Rex", through: "bestDog").map(\.values) }
        #expect(fans.map { $0["id"] } == [1])
        try db.write { tx throws in #expect(try tx.delete("Dog", key: "Rex")) }
        #expect(try db.read { tx in try tx.object("Person", key: 1)?["bestDog"] } == .null)
        #expect(try db.verify().isEmpty)
    }

    @Test func removingALinkPropertyDropsItsLinksAndBacklinks() throws {
        let path = folder.path()
        try seed(path)
        let dog = ObjectSchema("Dog", primaryKey: "name") {
            Property("name", .string)
            Property.list("friends", linksTo: "Person")
        }
        let db = try Database(configuration: Migrations.configuration(path, version: 2, [Self.person, dog]))
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 0)
        #expect(try dogs(db)["Rex"] == ["name": "Rex", "friends": [.link(1), .link(2)]])
        // Ada can go: no 'owner' link holds on to her any more.
        try db.write { tx throws in #expect(try tx.delete("Person", key: 1)) }
        #expect(try dogs(db)["Rex"]?["friends"] == .list([.link(2)]))
        #expect(try db.verify().isEmpty)
        db.close()
        try expectFileVerified(path)
    }

    // MARK: Renames

    @Test func renamingALinkedTypeKeepsEveryLinkAndRewritesNothing() throws {
        let path = folder.path()
        try seed(path)
        let human = ObjectSchema("Human", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
        }
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [human, Self.dog(target: "Human")]) {
                migration, _ in
                try migration.renameType(from: "Person", to: "Human")
            })
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 0)
        let rex = try #require(try dogs(db)["Rex"])
        #expect(rex["owner"] == .link(1))
        #expect(rex["friends"] == .list([.link(1), .link(2)]))
        #expect(try dogsLinking(to: 1, db) == ["Fido", "Rex"])
        #expect(try db.read { tx in try tx.objectSchema("Dog")[property: "owner"]?.target } == "Human")
        try db.write { tx throws in #expect(try tx.delete("Human", key: 1)) }
        #expect(try dogs(db)["Rex"]?["owner"] == .null)
        #expect(try dogs(db)["Rex"]?["friends"] == .list([.link(2)]))
        #expect(try db.verify().isEmpty)
    }

    @Test func renamingALinkedTypeAfterWalkingTheLinkingTypeKeepsTheLinks() throws {
        let path = folder.path()
        try seed(path)
        let human = ObjectSchema("Human", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
        }
        let dog = Self.dog(target: "Human", adding: [Property("age", .int, default: 1)])
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [human, dog]) { migration, _ in
                try migration.enumerateObjects(ofType: "Dog") { old, new in
                    if old?["name"] == "Rex" { new?["age"] = 7 }
                }
                try migration.renameType(from: "Person", to: "Human")
            })
        let rex = try #require(try dogs(db)["Rex"])
        #expect(rex["owner"] == .link(1))
        #expect(rex["age"] == 7)
        #expect(try dogsLinking(to: 2, db) == ["Spot"])
        #expect(try db.verify().isEmpty)
    }

    // MARK: Deletes and links written in a migration

    @Test(arguments: [DeleteRule.nullify, .cascade])
    func objectsDeletedInAMigrationLeaveNoLinkDangling(rule: DeleteRule) throws {
        let path = folder.path()
        try seed(path, ownerRule: rule)
        let person = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property("age", .int)
        }
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [person, Self.dog(ownerRule: rule)]) {
                migration, _ in
                try migration.enumerateObjects(ofType: "Person") { old, new in
                    if old?["id"] == 1, let new { migration.delete(new) }
                }
            })
        let remaining = try dogs(db)
        switch rule {
        case .cascade:
            #expect(remaining.keys.sorted() == ["Spot"])
        default:
            #expect(remaining.keys.sorted() == ["Fido", "Rex", "Spot"])
            #expect(remaining["Rex"]?["owner"] == .null)
            #expect(remaining["Fido"]?["owner"] == .null)
            #expect(remaining["Rex"]?["friends"] == .list([.link(2)]))
        }
        #expect(try dogsLinking(to: 1, db) == [])
        #expect(try db.verify().isEmpty)
    }

    @Test func aDenyRuleFailsAMigrationThatDeletesALinkedObject() throws {
        let path = folder.path()
        try seed(path, ownerRule: .deny)
        let before = try Migrations.state(
            opening: Migrations.configuration(path, version: 1, [Self.person, Self.dog(ownerRule: .deny)]))
        let person = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property("age", .int)
        }
        let error = try #require(throws: StrataError.self) {
            _ = try Database(
                configuration: Migrations.configuration(path, version: 2, [person, Self.dog(ownerRule: .deny)]) {
                    migration, _ in
                    try migration.enumerateObjects(ofType: "Person") { old, new in
                        if old?["id"] == 1, let new { migration.delete(new) }
                    }
                })
        }
        #expect(error.code == .deleteDenied)
        #expect(error.message.contains("'Dog' \"Rex\""))
        #expect(error.message.contains("Nothing was written"))
        #expect(
            try Migrations.state(
                opening: Migrations.configuration(path, version: 1, [Self.person, Self.dog(ownerRule: .deny)]))
                == before)
    }

    @Test func linksWrittenInAMigrationAreKeptInTheBacklinks() throws {
        let path = folder.path()
        try seed(path)
        let dog = Self.dog(adding: [Property("good", .bool, default: true)])
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [Self.person, dog]) { migration, _ in
                try migration.enumerateObjects(ofType: "Dog") { old, new in
                    // Every dog goes to Charles; Rex's friends become Ada alone.
                    new?["owner"] = .link(2)
                    if old?["name"] == "Rex" { new?["friends"] = [.link(1)] }
                }
                _ = try migration.create("Dog", value: ["name": "Pup", "owner": .link(1)])
            })
        #expect(try dogsLinking(to: 2, db) == ["Fido", "Rex", "Spot"])
        #expect(try dogsLinking(to: 1, db) == ["Pup"])
        #expect(try db.read { tx in try tx.objects("Dog", linkingTo: 1, through: "friends").count } == 1)
        #expect(try db.verify().isEmpty)
    }

    @Test func embeddedObjectsAreWrittenAndCreatedInAMigration() throws {
        let path = folder.path()
        try seed(path)
        let dog = Self.dog(adding: [Property.embedded("collar", "Collar"), Property.list("tags", embedded: "Collar")])
        let collar = ObjectSchema("Collar", embedded: true) {
            Property("color", .string)
            Property.list("charms", of: .string)
        }
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [Self.person, dog, collar]) { migration, _ in
                try migration.enumerateObjects(ofType: "Dog") { old, new in
                    if old?["name"] == "Rex" {
                        new?["collar"] = ["color": "red", "charms": ["bone"]]
                        new?["tags"] = [["color": "blue"], ["color": "green"]]
                    }
                }
                try migration.create(
                    "Dog", value: ["name": "Pup", "owner": .link(2), "collar": ["color": "pink"]])
            })
        let all = try dogs(db)
        #expect(all["Rex"]?["collar"] == ["color": "red", "charms": ["bone"]])
        #expect(all["Rex"]?["tags"] == [["color": "blue", "charms": []], ["color": "green", "charms": []]])
        #expect(all["Fido"]?["collar"] == .null)
        #expect(all["Pup"]?["collar"] == ["color": "pink", "charms": []])
        #expect(try dogsLinking(to: 2, db) == ["Pup", "Spot"])
        #expect(try db.verify().isEmpty)
    }

    @Test func aLinkToAMissingObjectFailsTheMigration() throws {
        let path = folder.path()
        try seed(path)
        let dog = Self.dog(adding: [Property("good", .bool, default: true)])
        let before = try Migrations.state(
            opening: Migrations.configuration(path, version: 1, [Self.person, Self.dog()]))
        let error = try #require(throws: StrataError.self) {
            _ = try Database(
                configuration: Migrations.configuration(path, version: 2, [Self.person, dog]) { migration, _ in
                    try migration.enumerateObjects(ofType: "Dog") { old, new in
                        if old?["name"] == "Fido" { new?["owner"] = .link(42) }
                    }
                })
        }
        #expect(error.message.contains("42"))
        #expect(error.message.contains("does not exist"))
        #expect(
            try Migrations.state(opening: Migrations.configuration(path, version: 1, [Self.person, Self.dog()]))
                == before)
    }

    // MARK: New primary keys

    @Test func linksFollowTheirTargetsToNewPrimaryKeys() throws {
        let path = folder.path()
        let personV1 = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property("email", .string, default: "")
        }
        let db1 = try Database(configuration: Migrations.configuration(path, version: 1, [personV1, Self.dog()]))
        try db1.write { tx in
            try tx.insert("Person", ["id": 1, "name": "Ada", "email": "ada@example.org"])
            try tx.insert("Person", ["id": 2, "name": "Charles", "email": "charles@example.org"])
            try tx.insert("Dog", ["name": "Rex", "owner": .link(1), "friends": [.link(2), .link(1)]])
            try tx.insert("Dog", ["name": "Spot", "owner": .link(2)])
        }
        db1.close()
        // Keyed by email from version 2: every link moves to the new key.
        let personV2 = ObjectSchema("Person", primaryKey: "email") {
            Property("id", .int)
            Property("name", .string)
            Property("email", .string)
        }
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [personV2, Self.dog(target: "Person")]))
        let all = try dogs(db)
        #expect(all["Rex"]?["owner"] == .link("ada@example.org"))
        #expect(all["Rex"]?["friends"] == .list([.link("charles@example.org"), .link("ada@example.org")]))
        #expect(all["Spot"]?["owner"] == .link("charles@example.org"))
        #expect(try db.read { tx in try tx.objects("Person").count } == 2)
        #expect(try dogsLinking(to: "ada@example.org", db) == ["Rex"])
        #expect(try db.verify().isEmpty)
    }

    // MARK: The closure's two sides

    @Test func oldLinksResolveToOldObjectsAndNewLinksToNewOnes() throws {
        let path = folder.path()
        try seed(path)
        let person = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("fullName", .string)
        }
        let dog = Self.dog(adding: [Property("ownerName", .string, default: "")])
        let seen = Locked<[String: [Value]]>([:])
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [person, dog]) { migration, _ in
                try migration.enumerateObjects(ofType: "Person") { old, new in
                    new?["fullName"] = .string("\(old!["name"].string!) of London")
                }
                try migration.enumerateObjects(ofType: "Dog") { old, new in
                    let oldOwner = try migration.oldObject(linkedFrom: old!, through: "owner")
                    let newOwner = try migration.newObject(linkedFrom: new!, through: "owner")
                    let names = [oldOwner?["name"] ?? .null, newOwner?["fullName"] ?? .null]
                    seen.withLock { $0[old!["name"].string!] = names }
                    new?["ownerName"] = newOwner?["fullName"] ?? ""
                }
            })
        #expect(seen.withLock { $0["Rex"] } == ["Ada", "Ada of London"])
        #expect(seen.withLock { $0["Spot"] } == ["Charles", "Charles of London"])
        #expect(try dogs(db)["Fido"]?["ownerName"] == "Ada of London")
    }

    // MARK: Removing a linked type

    @Test func deletingTheDataOfALinkedTypeAppliesTheDeleteRules() throws {
        let path = folder.path()
        let owner = ObjectSchema("Owner", primaryKey: "id") { Property("id", .int) }
        let dogV1 = ObjectSchema("Dog", primaryKey: "name") {
            Property("name", .string)
            Property("age", .int, default: 3, indexed: true)
            Property.link("owner", to: "Owner", onDelete: .cascade)
            Property.link("walker", to: "Owner")
        }
        let db1 = try Database(configuration: Migrations.configuration(path, version: 1, [owner, dogV1]))
        try db1.write { tx in
            try tx.insert("Owner", ["id": 1])
            try tx.insert("Owner", ["id": 2])
            try tx.insert("Dog", ["name": "Rex", "owner": .link(1)])
            try tx.insert("Dog", ["name": "Fido", "walker": .link(1)])
            try tx.insert("Dog", ["name": "Spot"])
        }
        db1.close()
        // The index makes verify() check that the cascade's victims left it too.
        let dogV2 = ObjectSchema("Dog", primaryKey: "name") {
            Property("name", .string)
            Property("age", .int, default: 3, indexed: true)
        }
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [dogV2]) { migration, _ in
                try migration.deleteData(forType: "Owner")
            })
        // Rex's owner link cascaded; Fido's walker link was nullified.
        #expect(try dogs(db).keys.sorted() == ["Fido", "Spot"])
        #expect(try db.read { tx in try tx.objects("Dog").where("age", equals: 3).count } == 2)
        #expect(try db.verify().isEmpty)
    }

    @Test func syncedModeRefusesToRemoveALinkedType() throws {
        let path = folder.path()
        try seed(path, mode: .synced)
        let dog = ObjectSchema("Dog", primaryKey: "name") { Property("name", .string) }
        let error = try #require(throws: StrataError.self) {
            _ = try Database(configuration: Migrations.configuration(path, version: 2, [dog], mode: .synced))
        }
        #expect(error.code == .migrationForbidden)
        #expect(error.message.contains("'Person'"))
        #expect(error.message.contains("Dog.owner"))
    }

    // MARK: Synced mode

    @Test func syncedModeKeepsARemovedLinkPropertyAndWritesItEmpty() throws {
        let path = folder.path()
        try seed(path, mode: .synced)
        let dog = ObjectSchema("Dog", primaryKey: "name") {
            Property("name", .string)
            Property.list("friends", linksTo: "Person")
        }
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [Self.person, dog], mode: .synced))
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 0)
        try db.write { tx in try tx.insert("Dog", ["name": "Pup"]) }
        db.close()
        // An older app version still reads the kept links.
        let old = try Database(
            configuration: Migrations.configuration(path, version: 1, [Self.person, Self.dog()], mode: .synced))
        let all = try dogs(old)
        #expect(all["Rex"]?["owner"] == .link(1))
        #expect(all["Pup"]?["owner"] == .null)
        #expect(try old.verify().isEmpty)
    }

    @Test func anOlderAppSettlesTheLinksOfATypeItNamesAgain() throws {
        let path = folder.path()
        try seed(path, mode: .synced)
        // Version 2 leaves Dog out (kept in the file) and deletes Ada.
        let v2 = try Database(configuration: Migrations.configuration(path, version: 2, [Self.person], mode: .synced))
        try v2.write { tx throws in #expect(try tx.delete("Person", key: 1)) }
        v2.close()
        // Version 1 still has Dog: links to Ada are settled as it opens.
        let v1 = try Database(
            configuration: Migrations.configuration(path, version: 1, [Self.person, Self.dog()], mode: .synced))
        let all = try dogs(v1)
        #expect(all["Rex"]?["owner"] == .null)
        #expect(all["Rex"]?["friends"] == .list([.link(2)]))
        #expect(all["Spot"]?["owner"] == .link(2))
        #expect(try dogsLinking(to: 2, v1) == ["Spot"])
        #expect(try v1.verify().isEmpty)
    }

    @Test func syncedModeRefusesToChangeALinkTargetOrEmbedding() throws {
        let path = folder.path()
        try seed(path, mode: .synced)
        let cat = ObjectSchema("Cat", primaryKey: "id") { Property("id", .int) }
        let retargeted = try #require(throws: StrataError.self) {
            _ = try Database(
                configuration: Migrations.configuration(
                    path, version: 2, [Self.person, cat, Self.dog(target: "Cat")], mode: .synced))
        }
        #expect(retargeted.code == .migrationForbidden)
        #expect(retargeted.message.contains("'Dog.owner' has been changed from 'link(Person)' to 'link(Cat)'"))
        let embeddedPerson = ObjectSchema("Person", embedded: true) {
            Property("id", .int)
            Property("name", .string)
        }
        let dog = ObjectSchema("Dog", primaryKey: "name") {
            Property("name", .string)
            Property.embedded("owner", "Person")
            Property.list("friends", embedded: "Person")
        }
        let embedded = try #require(throws: StrataError.self) {
            _ = try Database(
                configuration: Migrations.configuration(path, version: 2, [embeddedPerson, dog], mode: .synced))
        }
        #expect(embedded.code == .migrationForbidden)
        #expect(embedded.message.contains("Object type 'Person' has been made embedded."))
    }

    @Test func thePlanDescribesRelationshipChanges() throws {
        let path = folder.path()
        try seed(path)
        let dog = ObjectSchema("Dog", primaryKey: "name") {
            Property("name", .string)
            Property.link("owner", to: "Person", onDelete: .cascade)
            Property.list("friends", linksTo: "Person")
            Property.embedded("collar", "Collar")
        }
        let collar = ObjectSchema("Collar", embedded: true) { Property("color", .string) }
        let plan = try Database.migrationPlan(
            for: Migrations.configuration(path, version: 2, [Self.person, dog, collar]))
        let lines = plan.steps.map(\.description)
        #expect(lines.contains { $0.hasPrefix("Object type 'Collar' has been added.") })
        #expect(lines.contains { $0.hasPrefix("Property 'Dog.collar' has been added.") })
        #expect(
            lines.contains {
                $0.hasPrefix("Property 'Dog.owner' has had its delete rule changed from nullify to cascade.")
                    && $0.hasSuffix("(automatic)")
            })
    }
}
