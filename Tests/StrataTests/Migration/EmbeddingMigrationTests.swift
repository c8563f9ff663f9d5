import Foundation
import Testing

@testable import Strata

/// A top-level type becomes embedded (its objects move into their parents'
/// records) and back (each embedded object becomes an object of its own),
/// with policies for objects that have no parent or several.
@Suite(.temporaryFolder) struct EmbeddingMigrationTests {
    let folder = TemporaryFolder.current

    static let addressTopLevel = ObjectSchema("Address") {
        Property("street", .string)
        Property("city", .string, default: "Leeds")
    }
    static let addressEmbedded = ObjectSchema("Address", embedded: true) {
        Property("street", .string)
        Property("city", .string, default: "Leeds")
    }
    static let personLinking = ObjectSchema("Person", primaryKey: "id") {
        Property("id", .int)
        Property.link("home", to: "Address")
        Property.list("past", linksTo: "Address")
    }
    static let personEmbedding = ObjectSchema("Person", primaryKey: "id") {
        Property("id", .int)
        Property.embedded("home", "Address")
        Property.list("past", embedded: "Address")
    }

    /// Three addresses: Ada lives at 1, lived at 2; Charles lives at 3.
    /// With `extra`, address 4 has no parent and address 1 is Charles's
    /// past too.
    func seedLinked(_ path: String, extra: Bool = false) throws {
        let db = try Database(
            configuration: Migrations.configuration(path, version: 1, [Self.personLinking, Self.addressTopLevel]))
        try db.write { tx in
            for street in ["1 Main St", "2 Old Rd", "3 High St"] {
                try tx.insert("Address", ["street": .string(street)])
            }
            try tx.insert("Person", ["id": 1, "home": .link(1), "past": [.link(2)]])
            try tx.insert("Person", ["id": 2, "home": .link(3), "past": extra ? [.link(1)] : []])
            if extra { try tx.insert("Address", ["street": "4 Nowhere"]) }
        }
        db.close()
    }

    func people(_ db: Database) throws -> [[String: Value]] {
        try db.read { tx in try tx.objects("Person").map(\.values) }
    }

    @Test func linksBecomeEmbeddedCopiesAndTheTableGoes() throws {
        let path = folder.path()
        try seedLinked(path)
        let plan = try Database.migrationPlan(
            for: Migrations.configuration(path, version: 2, [Self.personEmbedding, Self.addressEmbedded]))
        #expect(plan.steps.map(\.handling).allSatisfy { $0 == .automatic }, "\(plan)")
        #expect(plan.description.contains("Object type 'Address' has been made embedded."))
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [Self.personEmbedding, Self.addressEmbedded]))
        #expect(
            try people(db) == [
                [
                    "id": 1, "home": ["street": "1 Main St", "city": "Leeds"],
                    "past": [["street": "2 Old Rd", "city": "Leeds"]],
                ],
                ["id": 2, "home": ["street": "3 High St", "city": "Leeds"], "past": []],
            ])
        #expect(try db.read { tx in tx.typeNames } == ["Person"])
        #expect(try db.verify().isEmpty)
        db.close()
        try expectFileVerified(path)
    }

    @Test func orphansAndSharedObjectsFailUnlessAPolicySaysOtherwise() throws {
        let path = folder.path()
        try seedLinked(path, extra: true)
        let before = try Migrations.state(
            opening: Migrations.configuration(path, version: 1, [Self.personLinking, Self.addressTopLevel]))
        let target = [Self.personEmbedding, Self.addressEmbedded]
        let orphans = try #require(throws: StrataError.self) {
            _ = try Database(configuration: Migrations.configuration(path, version: 2, target))
        }
        #expect(orphans.message.contains("no object linked to the 'Address' 4"), "\(orphans.message)")
        #expect(orphans.message.contains("Nothing was written"))
        let shared = try #require(throws: StrataError.self) {
            _ = try Database(
                configuration: Migrations.configuration(path, version: 2, target) { migration, _ in
                    try migration.setEmbeddingPolicy(.init(orphans: .delete), forType: "Address")
                })
        }
        #expect(shared.message.contains("several objects linked to the 'Address' 1"), "\(shared.message)")
        #expect(
            try Migrations.state(
                opening: Migrations.configuration(path, version: 1, [Self.personLinking, Self.addressTopLevel]))
                == before)
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, target) { migration, _ in
                try migration.setEmbeddingPolicy(
                    .init(orphans: .delete, sharedObjects: .copyPerParent), forType: "Address")
            })
        let all = try people(db)
        #expect(all[1]["past"] == .list([["street": "1 Main St", "city": "Leeds"]]))
        #expect(all[0]["home"] == ["street": "1 Main St", "city": "Leeds"])
        #expect(try db.verify().isEmpty)
    }

    @Test func embeddedObjectsBecomeObjectsOfTheirOwnLinkedFromTheirParents() throws {
        let path = folder.path()
        let v1 = try Database(
            configuration: Migrations.configuration(path, version: 1, [Self.personEmbedding, Self.addressEmbedded]))
        try v1.write { tx in
            try tx.insert("Person", ["id": 1, "home": ["street": "1 Main St"], "past": [["street": "2 Old Rd"]]])
            try tx.insert("Person", ["id": 2])
        }
        v1.close()
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [Self.personLinking, Self.addressTopLevel]))
        let (ada, charles, addresses) = try db.read { tx throws in
            let ada = try #require(try tx.object("Person", key: 1)?.values)
            let charles = try #require(try tx.object("Person", key: 2)?.values)
            return (ada, charles, try tx.objects("Address").map(\.values))
        }
        #expect(addresses.map { $0["street"] } == ["1 Main St", "2 Old Rd"])
        #expect(ada["home"] == .link(1))
        #expect(ada["past"] == .list([.link(2)]))
        #expect(charles["home"] == .null)
        #expect(try db.read { tx in try tx.objects("Person", linkingTo: 2, through: "past").count } == 1)
        #expect(try db.verify().isEmpty)
        // And back again: the objects move into their parents once more.
        db.close()
        let back = try Database(
            configuration: Migrations.configuration(path, version: 3, [Self.personEmbedding, Self.addressEmbedded]))
        #expect(try people(back)[0]["past"] == .list([["street": "2 Old Rd", "city": "Leeds"]]))
        #expect(try back.verify().isEmpty)
        back.close()
        try expectFileVerified(path)
    }

    @Test func aPolicyForATypeThatIsNotBeingEmbeddedIsRefused() throws {
        let path = folder.path()
        try seedLinked(path)
        let error = try #require(throws: StrataError.self) {
            _ = try Database(
                configuration: Migrations.configuration(path, version: 2, [Self.personLinking, Self.addressTopLevel]) {
                    migration, _ in
                    try migration.setEmbeddingPolicy(.init(orphans: .delete), forType: "Address")
                })
        }
        #expect(error.message.contains("no embedded type 'Address' that was top-level"))
    }

    @Test func syncedModeRefusesToChangeEmbedding() throws {
        let path = folder.path()
        let db1 = try Database(
            configuration: Migrations.configuration(
                path, version: 1, [Self.personLinking, Self.addressTopLevel], mode: .synced))
        db1.close()
        let error = try #require(throws: StrataError.self) {
            _ = try Database(
                configuration: Migrations.configuration(
                    path, version: 2, [Self.personEmbedding, Self.addressEmbedded], mode: .synced))
        }
        #expect(error.code == .migrationForbidden)
        #expect(error.message.contains("Object type 'Address' has been made embedded."))
    }
}
