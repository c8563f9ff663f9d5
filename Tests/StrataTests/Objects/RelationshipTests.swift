import Foundation
import Testing

@testable import Strata

/// Links, lists and embedded objects through the dynamic API, with the
/// delete rules, in both modes.
@Suite(.temporaryFolder) struct RelationshipTests {
    let folder = TemporaryFolder.current

    static func schema(ownerRule: DeleteRule = .nullify, friendsRule: DeleteRule = .nullify) -> Schema {
        Schema([
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("name", .string)
                Property.list("friends", linksTo: "Person", onDelete: friendsRule)
                Property.embedded("address", "Address")
                Property.list("nicknames", of: .string)
            },
            ObjectSchema("Dog", primaryKey: "name") {
                Property("name", .string)
                Property.link("owner", to: "Person", onDelete: ownerRule)
                Property.list("tags", of: .string)
            },
            ObjectSchema("Address", embedded: true) {
                Property("street", .string)
                Property("city", .string, default: "Leeds")
                Property.embedded("geo", "Geo")
            },
            ObjectSchema("Geo", embedded: true) {
                Property("lat", .double)
                Property("lon", .double)
            },
        ])
    }

    func open(_ mode: Database.Mode, ownerRule: DeleteRule = .nullify, friendsRule: DeleteRule = .nullify) throws
        -> Database
    {
        try Database(
            configuration: Fixtures.configuration(
                folder.path(), schema: Self.schema(ownerRule: ownerRule, friendsRule: friendsRule), mode: mode))
    }

    /// Ada (1) with an address, Charles (2) her friend, and two dogs of Ada's.
    func seed(_ db: Database) throws {
        try db.write { tx throws in
            try tx.insert(
                "Person",
                ["id": 1, "name": "Ada", "address": ["street": "1 Main St", "geo": ["lat": 1.5, "lon": -0.5]]])
            try tx.insert("Person", ["id": 2, "name": "Charles", "friends": [.link(1)], "nicknames": ["Chuck"]])
            try tx.update("Person", key: 1, ["friends": [2]])
            try tx.insert("Dog", ["name": "Rex", "owner": .link(1), "tags": ["good", "loud"]])
            try tx.insert("Dog", ["name": "Fido", "owner": 1])
            try tx.insert("Dog", ["name": "Stray"])
        }
    }

    @Test(arguments: Fixtures.modes)
    func valuesReadBackAsWritten(mode: Database.Mode) throws {
        let db = try open(mode)
        try seed(db)
        try db.read { tx throws in
            let rex = try #require(try tx.object("Dog", key: "Rex"))
            #expect(rex["owner"] == .link(1))
            #expect(rex["tags"] == ["good", "loud"])
            #expect(try tx.object("Dog", key: "Stray")?["owner"] == .null)
            let ada = try #require(try tx.object("Person", key: 1))
            #expect(ada["friends"] == .list([.link(2)]))
            #expect(ada["nicknames"] == .list([]))
            let address = ada["address"]
            #expect(address["street"] == "1 Main St")
            #expect(address["city"] == "Leeds")
            #expect(address["geo"]["lat"] == 1.5)
            #expect(address["geo"]["lon"] == -0.5)
            #expect(try tx.object("Person", key: 2)?["address"] == .null)
            #expect(try tx.object(linkedFrom: rex, through: "owner")?["name"] == "Ada")
        }
    }

    @Test(arguments: Fixtures.modes)
    func backlinksFindTheLinkingObjects(mode: Database.Mode) throws {
        let db = try open(mode)
        try seed(db)
        try db.read { tx throws in
            #expect(try tx.objects("Dog", linkingTo: 1, through: "owner").map { $0["name"] } == ["Fido", "Rex"])
            #expect(try tx.objects("Dog", linkingTo: 2, through: "owner").isEmpty)
            #expect(try tx.objects("Person", linkingTo: 1, through: "friends").map { $0["id"] } == [2])
        }
        try db.write { tx throws in try tx.update("Dog", key: "Rex", ["owner": 2]) }
        try db.read { tx throws in
            #expect(try tx.objects("Dog", linkingTo: 1, through: "owner").map { $0["name"] } == ["Fido"])
            #expect(try tx.objects("Dog", linkingTo: 2, through: "owner").map { $0["name"] } == ["Rex"])
        }
    }

    @Test(arguments: Fixtures.modes)
    func aLinkToAMissingObjectIsRefused(mode: Database.Mode) throws {
        let db = try open(mode)
        try seed(db)
        let error = try #require(throws: StrataError.self) {
            try db.write { tx throws in try tx.insert("Dog", ["name": "Ghost", "owner": 99]) }
        }
        #expect(error.code == .invalidValue)
        #expect(error.message.contains("'Person' 99, which does not exist"))
        #expect(try db.read { tx throws in try tx.object("Dog", key: "Ghost") } == nil)
    }

    @Test(arguments: Fixtures.modes)
    func badRelationshipValuesAreRefused(mode: Database.Mode) throws {
        let db = try open(mode)
        try seed(db)
        let cases: [(String, [String: Value], String)] = [
            ("Dog", ["name": "A", "owner": "one"], "links to 'Person' by its primary key, of type int"),
            ("Dog", ["name": "B", "tags": [1]], "element 0 of the list 'Dog.tags' is 1"),
            ("Person", ["id": 9, "name": "X", "address": ["street": "s", "zip": "1"]], "has no property 'zip'"),
            ("Person", ["id": 9, "name": "X", "address": ["city": "Leeds"]], "'Address.street' is required"),
            ("Person", ["id": 9, "name": "X", "address": "nowhere"], "Person.address"),
        ]
        for (type, values, message) in cases {
            let error = try #require(throws: StrataError.self) {
                try db.write { tx throws in try tx.insert(type, values) }
            }
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    @Test(arguments: Fixtures.modes)
    func nullifyClearsLinksAndDropsListEntries(mode: Database.Mode) throws {
        let db = try open(mode)
        try seed(db)
        try db.write { tx throws in #expect(try tx.delete("Person", key: 1)) }
        try db.read { tx throws in
            #expect(try tx.object("Dog", key: "Rex")?["owner"] == .null)
            #expect(try tx.object("Dog", key: "Fido")?["owner"] == .null)
            #expect(try tx.object("Person", key: 2)?["friends"] == .list([]))
            #expect(try tx.object("Person", key: 2)?["nicknames"] == ["Chuck"])
        }
        try expectIntegrity(db)
    }

    @Test(arguments: Fixtures.modes)
    func cascadeDeletesTheLinkingObjects(mode: Database.Mode) throws {
        let db = try open(mode, ownerRule: .cascade)
        try seed(db)
        try db.write { tx throws in #expect(try tx.delete("Person", key: 1)) }
        try db.read { tx throws in
            #expect(try tx.objects("Dog").map { $0["name"] } == ["Stray"])
            #expect(try tx.object("Person", key: 2)?["friends"] == .list([]))
        }
        try expectIntegrity(db)
    }

    @Test(arguments: Fixtures.modes)
    func denyRefusesTheDeleteAndWritesNothing(mode: Database.Mode) throws {
        let db = try open(mode, ownerRule: .deny)
        try seed(db)
        let error = try #require(throws: StrataError.self) {
            try db.write { tx throws in try tx.delete("Person", key: 1) }
        }
        #expect(error.code == .deleteDenied)
        #expect(error.message.contains("'Dog' \"Fido\""))
        #expect(error.message.contains("'Dog' \"Rex\""))
        try db.read { tx throws in
            #expect(try tx.object("Person", key: 1) != nil)
            #expect(try tx.object("Person", key: 2)?["friends"] == .list([.link(1)]))
        }
        // Once the dogs are gone, the person can go.
        try db.write { tx throws in
            _ = try tx.delete("Dog", key: "Rex")
            _ = try tx.delete("Dog", key: "Fido")
            #expect(try tx.delete("Person", key: 1))
        }
        try expectIntegrity(db)
    }

    @Test(arguments: Fixtures.modes)
    func deleteAllAppliesTheRules(mode: Database.Mode) throws {
        let db = try open(mode, ownerRule: .cascade)
        try seed(db)
        try db.write { tx throws in try tx.deleteAll("Person") }
        try db.read { tx throws in
            #expect(try tx.objects("Person").count == 0)
            #expect(try tx.objects("Dog").map { $0["name"] } == ["Stray"])
        }
        try expectIntegrity(db)
    }

    @Test func cascadeOnAListIsRefusedBySchemaValidation() throws {
        let error = try #require(throws: StrataError.self) {
            try Self.schema(friendsRule: .cascade).validate()
        }
        #expect(error.message.contains("List 'Person.friends' has the delete rule cascade"))
    }

    @Test func relationshipSchemaRulesAreChecked() throws {
        let schema = Schema([
            ObjectSchema("A", primaryKey: "id") {
                Property("id", .int)
                Property.link("b", to: "Missing")
                Property("c", .link, target: "A")
                Property.embedded("d", "A")
                Property.link("e", to: "E")
            },
            ObjectSchema("E", primaryKey: "id", embedded: true) {
                Property("id", .int)
                Property.embedded("self", "E")
            },
        ])
        let error = try #require(throws: StrataError.self) { try schema.validate() }
        for expected in [
            "names 'Missing', which is not in the schema", "Link 'A.c' is required", "embeds 'A', a top-level type",
            "links to 'E', an embedded type", "Embedded type 'E' has a primary key",
            "Embedded type 'E' contains itself",
        ] {
            #expect(error.message.contains(expected), "\(expected)")
        }
    }

    @Test(arguments: Fixtures.modes)
    func relationshipsSurviveReopening(mode: Database.Mode) throws {
        do {
            let db = try open(mode)
            try seed(db)
        }
        let db = try open(mode)
        try db.read { tx throws in
            #expect(try tx.objects("Dog", linkingTo: 1, through: "owner").count == 2)
            #expect(try tx.object("Person", key: 1)?["address"]["geo"]["lat"] == 1.5)
        }
        try expectIntegrity(db)
    }

    /// Every link resolves, and every backlink is one of a stored link.
    func expectIntegrity(_ db: Database) throws {
        let problems = try db.verify()
        #expect(problems.isEmpty, "\(problems)")
    }
}

/// A refused link or a refused delete that the app catches inside its write
/// leaves nothing behind when the transaction commits anyway.
@Suite(.temporaryFolder) struct RelationshipRefusalTests {
    let folder = TemporaryFolder.current

    @Test(arguments: Fixtures.modes)
    func aCaughtLinkRefusalWritesNothingOfThatObject(mode: Database.Mode) throws {
        let db = try Database(
            configuration: Fixtures.configuration(
                folder.path(), schema: RelationshipTests.schema(ownerRule: .deny), mode: mode))
        try db.write { tx in
            try tx.insert("Person", ["id": 1, "name": "Ada"])
            try tx.insert("Dog", ["name": "Rex", "owner": .link(1)])
        }
        try db.write { tx throws in
            #expect(throws: StrataError.self) { try tx.insert("Dog", ["name": "Ghost", "owner": .link(9)]) }
            #expect(throws: StrataError.self) { try tx.update("Dog", key: "Rex", ["owner": .link(9)]) }
            #expect(throws: StrataError.self) { try tx.upsert("Dog", ["name": "Rex", "owner": .link(9)]) }
            #expect(throws: StrataError.self) { try tx.deleteAll("Person") }
            // A link of an object to itself names an existing object.
            try tx.insert("Person", ["id": 2, "name": "Narcissus", "friends": [.link(2)]])
        }
        try db.read { tx throws in
            #expect(try tx.object("Dog", key: "Ghost") == nil)
            #expect(try tx.object("Dog", key: "Rex")?["owner"] == .link(1))
            #expect(try tx.objects("Person").count == 2)
            #expect(try tx.object("Person", key: 2)?["friends"] == .list([.link(2)]))
        }
        #expect(try db.verify().isEmpty)
    }
}
