import Foundation
import Testing

@testable import Strata

@Embedded(name: "Geo") struct RelGeo: Equatable {
    var lat: Double
    var lon: Double = 0
}

@Embedded(name: "Address") struct RelAddress: Equatable {
    var street: String
    var city: String = "Leeds"
    var geo: RelGeo?
    var lines: [String] = []
}

@Model(name: "Person") struct RelPerson: Equatable {
    @PrimaryKey var id: Int
    var name: String
    var home: RelAddress
    var work: RelAddress?
    var past: [RelAddress] = []
    var friends: [Link<RelPerson>] = []
    var nicknames: [String] = []
}

@Model(name: "Dog") struct RelDog: Equatable {
    @PrimaryKey var name: String
    @Relationship(deleteRule: .cascade) var owner: Link<RelPerson>?
    @Relationship(deleteRule: .deny) var vet: Link<RelVet>?
    var tags: [String] = []
}

@Model(name: "Vet") struct RelVet: Equatable {
    var name: String
}

/// Links, lists and embedded objects through `@Model` and `@Embedded`
/// structs, in both modes.
@Suite(.temporaryFolder) struct TypedRelationshipTests {
    let folder = TemporaryFolder.current

    func open(_ mode: Database.Mode) throws -> Database {
        var config = Database.Configuration(path: folder.path(), models: [RelPerson.self, RelDog.self, RelVet.self])
        config.durability = .noSync
        config.mode = mode
        return try Database(configuration: config)
    }

    static let ada = RelPerson(
        id: 1, name: "Ada", home: RelAddress(street: "1 Main St", geo: RelGeo(lat: 53.8, lon: -1.5)),
        past: [RelAddress(street: "2 Old Rd", city: "London", lines: ["flat 3"])])
    static let charles = RelPerson(
        id: 2, name: "Charles", home: RelAddress(street: "5 High St"), work: RelAddress(street: "Lab"),
        friends: [Link(1)], nicknames: ["Chuck"])

    @Test func theSchemaHoldsTheEmbeddedTypesAndTheRules() throws {
        let schema = Database.Configuration(path: "x", models: [RelPerson.self, RelDog.self, RelVet.self]).schema
        let names = schema.objectSchemas.map(\.name)
        #expect(names == ["Person", "Dog", "Vet", "Address", "Geo"])
        let address = try #require(schema.objectSchemas.first { $0.name == "Address" })
        #expect(address.isEmbedded)
        #expect(address[property: "geo"] == Property.embedded("geo", "Geo"))
        #expect(address[property: "lines"] == Property.list("lines", of: .string))
        let person = try #require(schema.objectSchemas.first { $0.name == "Person" })
        #expect(person[property: "home"] == Property.embedded("home", "Address", optional: false))
        #expect(person[property: "work"] == Property.embedded("work", "Address"))
        #expect(person[property: "past"] == Property.list("past", embedded: "Address"))
        #expect(person[property: "friends"] == Property.list("friends", linksTo: "Person"))
        let dog = try #require(schema.objectSchemas.first { $0.name == "Dog" })
        #expect(dog[property: "owner"] == Property.link("owner", to: "Person", onDelete: .cascade))
        #expect(dog[property: "vet"] == Property.link("vet", to: "Vet", onDelete: .deny))
        try schema.validate()
        // Without the model a link names, the schema says what is missing.
        let partial = Database.Configuration(path: "x", models: [RelPerson.self, RelDog.self]).schema
        let error = try #require(throws: StrataError.self) { try partial.validate() }
        #expect(error.message.contains("'Dog.vet' of type link(Vet) names 'Vet', which is not in the schema"))
    }

    @Test(arguments: Fixtures.modes)
    func valuesReadBackTypedAndDynamic(mode: Database.Mode) throws {
        let db = try open(mode)
        try db.write { tx in
            try tx.insert(Self.ada)
            try tx.insert(Self.charles)
            try tx.insert(RelDog(name: "Rex", owner: Link(to: Self.ada), tags: ["good"]))
        }
        try db.read { tx throws in
            #expect(try tx.object(RelPerson.self, primaryKey: 1) == Self.ada)
            #expect(try tx.object(RelPerson.self, primaryKey: 2) == Self.charles)
            let rex = try #require(try tx.object(RelDog.self, primaryKey: "Rex"))
            #expect(rex.owner == Link(1))
            #expect(try tx.object(try #require(rex.owner)) == Self.ada)
            let dynamic = try #require(try tx.object("Person", key: 1))
            #expect(dynamic["home"]["geo"]["lat"] == 53.8)
            #expect(
                dynamic["past"] == .list([["street": "2 Old Rd", "city": "London", "geo": .null, "lines": ["flat 3"]]]))
            #expect(try tx.object("Person", key: 2)?["friends"] == .list([.link(1)]))
        }
    }

    @Test(arguments: Fixtures.modes)
    func backlinksAreTypedQueries(mode: Database.Mode) throws {
        let db = try open(mode)
        try db.write { tx in
            try tx.insert(Self.ada)
            try tx.insert(Self.charles)
            try tx.insert(RelPerson(id: 3, name: "Mary", home: RelAddress(street: "x"), friends: [Link(1), Link(2)]))
            try tx.insert(RelDog(name: "Rex", owner: Link(1)))
            try tx.insert(RelDog(name: "Fido", owner: Link(1)))
            try tx.insert(RelDog(name: "Spot", owner: Link(2)))
        }
        try db.read { tx throws in
            #expect(try tx.objects(RelDog.self, linkingTo: 1, through: \.owner).map(\.name) == ["Fido", "Rex"])
            #expect(try tx.objects(RelDog.self, linkingTo: 2, through: \.owner).map(\.name) == ["Spot"])
            #expect(try tx.objects(RelDog.self, linkingTo: 9, through: \.owner).isEmpty)
            #expect(try tx.objects(RelPerson.self, linkingTo: 1, through: \.friends).map(\.id) == [2, 3])
        }
    }

    @Test(arguments: Fixtures.modes)
    func deleteRulesApplyToTypedDeletes(mode: Database.Mode) throws {
        let db = try open(mode)
        let vetKey = try db.write { tx in
            try tx.insert(Self.ada)
            try tx.insert(Self.charles)
            let vet = try tx.insert(RelVet(name: "Herriot"))
            try tx.insert(RelDog(name: "Rex", owner: Link(1), vet: Link(vet)))
            try tx.insert(RelDog(name: "Spot", owner: Link(2)))
            return vet
        }
        // Deny: Rex's vet cannot go while Rex links to it; nothing written.
        let denied = try #require(throws: StrataError.self) {
            try db.write { tx in _ = try tx.delete(RelVet.self, primaryKey: vetKey) }
        }
        #expect(denied.code == .deleteDenied)
        #expect(denied.message.contains("Rex"))
        // Cascade: deleting Ada deletes Rex; nullify: Charles's list drops her.
        try db.write { tx throws in #expect(try tx.delete(Self.ada)) }
        try db.read { tx throws in
            #expect(try tx.object(RelDog.self, primaryKey: "Rex") == nil)
            #expect(try tx.object(RelDog.self, primaryKey: "Spot") != nil)
            #expect(try tx.object(RelPerson.self, primaryKey: 2)?.friends == [])
        }
        // With Rex gone, the vet may go.
        try db.write { tx throws in #expect(try tx.delete(RelVet.self, primaryKey: vetKey)) }
        #expect(try db.verify().isEmpty)
    }

    @Test(arguments: Fixtures.modes)
    func aTypedLinkToAMissingObjectIsRefused(mode: Database.Mode) throws {
        let db = try open(mode)
        let error = try #require(throws: StrataError.self) {
            try db.write { tx in try tx.insert(RelDog(name: "Ghost", owner: Link(42))) }
        }
        #expect(error.code == .invalidValue)
        #expect(try db.read { tx throws in try tx.objects(RelDog.self).count } == 0)
    }
}

@Model(name: "Owner") struct StepOwnerV1: Equatable {
    @PrimaryKey var id: Int
    var name: String
    var street: String
}

@Model(name: "Pet") struct StepPetV1: Equatable {
    @PrimaryKey var name: String
    var ownerID: Int
}

@Embedded(name: "Home") struct StepHome: Equatable {
    var street: String
    var rooms: [String] = []
}

@Model(name: "Owner") struct StepOwner: Equatable {
    @PrimaryKey var id: Int
    var name: String
    var home: StepHome?
    var best: Link<StepPet>?
}

@Model(name: "Pet") struct StepPet: Equatable {
    @PrimaryKey var name: String
    @Relationship(deleteRule: .cascade) var owner: Link<StepOwner>?
}

enum StepAppV1: VersionedSchema {
    static let version: UInt64 = 1
    static let models: [any Model.Type] = [StepOwnerV1.self, StepPetV1.self]
}

enum StepAppV2: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [StepOwner.self, StepPet.self]
}

/// Typed steps create embedded objects and links, and a new object with
/// its links through the step's context.
@Suite(.temporaryFolder) struct TypedRelationshipMigrationTests {
    let folder = TemporaryFolder.current

    func configuration(_ path: String, steps: [MigrationStep]? = nil) -> Database.Configuration {
        var config =
            steps.map {
                Database.Configuration(path: path, schema: StepAppV2.self, versions: [StepAppV1.self], migrations: $0)
            } ?? Database.Configuration(path: path, schema: StepAppV1.self)
        config.durability = .noSync
        return config
    }

    /// A version-1 file holding `owners` and `pets`.
    func seed(_ path: String, _ owners: [StepOwnerV1], _ pets: [StepPetV1]) throws {
        let first = try Database(configuration: configuration(path))
        defer { first.close() }
        try first.write { tx in
            for owner in owners { try tx.insert(owner) }
            for pet in pets { try tx.insert(pet) }
        }
    }

    @Test func aTypedStepCreatesEmbeddedObjectsAndLinks() throws {
        let path = folder.path()
        try seed(
            path,
            [
                StepOwnerV1(id: 1, name: "Ada", street: "1 Main St"),
                StepOwnerV1(id: 2, name: "Charles", street: "5 High St"),
            ],
            [StepPetV1(name: "Rex", ownerID: 1), StepPetV1(name: "Spot", ownerID: 2)])
        let step = MigrationStep.step(from: StepAppV1.self, to: StepAppV2.self) {
            $0.map(StepOwnerV1.self, to: StepOwner.self) { old, context in
                if old.id == 1 { try context.insert(StepPet(name: "Pup", owner: Link(old.id))) }
                return StepOwner(id: old.id, name: old.name, home: StepHome(street: old.street, rooms: ["hall"]))
            }
            $0.map(StepPetV1.self, to: StepPet.self) { old in StepPet(name: old.name, owner: Link(old.ownerID)) }
        }
        let db = try Database(configuration: configuration(path, steps: [step]))
        try db.read { tx throws in
            let ada = try #require(try tx.object(StepOwner.self, primaryKey: 1))
            #expect(ada.home == StepHome(street: "1 Main St", rooms: ["hall"]))
            #expect(try tx.objects(StepPet.self, linkingTo: 1, through: \.owner).map(\.name) == ["Pup", "Rex"])
            #expect(try tx.objects(StepPet.self, linkingTo: 2, through: \.owner).map(\.name) == ["Spot"])
        }
        // The cascade rule holds for links written by the step.
        try db.write { tx throws in #expect(try tx.delete(StepOwner.self, primaryKey: 1)) }
        #expect(try db.read { tx in try tx.objects(StepPet.self).map(\.name) } == ["Spot"])
        #expect(try db.verify().isEmpty)
    }

    @Test func aTypedStepThatLinksToAMissingObjectFailsAndWritesNothing() throws {
        let path = folder.path()
        try seed(path, [StepOwnerV1(id: 1, name: "Ada", street: "1 Main St")], [StepPetV1(name: "Rex", ownerID: 7)])
        let step = MigrationStep.step(from: StepAppV1.self, to: StepAppV2.self) {
            $0.map(StepPetV1.self, to: StepPet.self) { old in StepPet(name: old.name, owner: Link(old.ownerID)) }
        }
        let error = try #require(throws: StrataError.self) {
            _ = try Database(configuration: configuration(path, steps: [step]))
        }
        #expect(error.message.contains("links to the 'Owner' 7, which does not exist"), "\(error.message)")
        let again = try Database(configuration: configuration(path))
        #expect(try again.read { tx in try tx.objects(StepPetV1.self).array() } == [StepPetV1(name: "Rex", ownerID: 7)])
    }
}
