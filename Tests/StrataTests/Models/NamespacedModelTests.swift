import Foundation
import Strata
import Testing

/// The first shipped version of an app, its models nested in the schema's
/// enum: a self link, a link to a sibling, a sibling embedded type by its
/// short and its qualified name.
enum ShopV1: VersionedSchema {
    static let version: UInt64 = 1
    static let models: [any Model.Type] = [Person.self, Dog.self]

    @Embedded struct Address: Equatable {
        var street: String
        var city: String = "Leeds"
    }

    @Model struct Person: Equatable {
        @PrimaryKey var id: Int
        var firstName: String
        var lastName: String
        var home: Address
        var past: [ShopV1.Address] = []
        var best: Link<Person>?
        var friends: [Link<Person>] = []
    }

    @Model struct Dog: Equatable {
        @PrimaryKey var name: String
        @Relationship(deleteRule: .cascade) var owner: Link<Person>?
    }
}

/// The next version, in an enum of its own with the same type names.
enum ShopV2: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [Person.self, Dog.self]

    @Embedded struct Address: Equatable {
        var street: String
        var city: String = "Leeds"
        var postcode: String?
    }

    @Model struct Person: Equatable {
        @PrimaryKey var id: Int
        var fullName: String
        var home: Address
        var work: ShopV2.Address?
        var past: [Address] = []
        var best: Link<Person>?
        var friends: [Link<Person>] = []
    }

    @Model struct Dog: Equatable {
        @PrimaryKey var name: String
        @Relationship(deleteRule: .cascade) var owner: Link<Person>?
    }
}

/// Models nested in a namespace, one per shipped version, as SwiftData
/// apps keep them: they compile, store, link and migrate like top-level
/// ones.
@Suite(.temporaryFolder) struct NamespacedModelTests {
    let folder = TemporaryFolder.current

    static let ada = ShopV1.Person(
        id: 1, firstName: "Ada", lastName: "Lovelace", home: .init(street: "1 Main St"),
        past: [.init(street: "2 Old Rd", city: "London")])
    static let alan = ShopV1.Person(
        id: 2, firstName: "Alan", lastName: "Turing", home: .init(street: "5 High St", city: "Wilmslow"),
        best: Link(1), friends: [Link(1)])

    static let v1ToV2 = MigrationStep.step(from: ShopV1.self, to: ShopV2.self) {
        $0.map(ShopV1.Person.self, to: ShopV2.Person.self) { old in
            ShopV2.Person(
                id: old.id, fullName: "\(old.firstName) \(old.lastName)",
                home: ShopV2.Address(street: old.home.street, city: old.home.city),
                past: old.past.map { ShopV2.Address(street: $0.street, city: $0.city) },
                best: old.best.map { Link($0.key) }, friends: old.friends.map { Link($0.key) })
        }
    }

    func seedVersionOne(_ mode: Database.Mode) throws {
        var config = Database.Configuration(path: folder.path(), schema: ShopV1.self)
        config.mode = mode
        let db = try Database(configuration: config)
        defer { db.close() }
        try db.write { tx in
            try tx.insert(Self.ada)
            try tx.insert(Self.alan)
            try tx.insert(ShopV1.Dog(name: "Rex", owner: Link(2)))
        }
        let read = try db.read { tx in
            (try tx.objects(ShopV1.Person.self).array(), try tx.object(Link<ShopV1.Person>(1)))
        }
        #expect(read.0 == [Self.ada, Self.alan])
        #expect(read.1 == Self.ada)
    }

    func openVersionTwo() throws -> Database {
        let config = Database.Configuration(
            path: folder.path(), schema: ShopV2.self, versions: [ShopV1.self], migrations: [Self.v1ToV2])
        return try Database(configuration: config)
    }

    @Test(arguments: [Database.Mode.local, .synced])
    func nestedModelsStoreTheirLinksAndEmbeddedObjects(_ mode: Database.Mode) throws {
        try seedVersionOne(mode)
        var config = Database.Configuration(path: folder.path(), schema: ShopV1.self)
        config.mode = mode
        let db = try Database(configuration: config)
        defer { db.close() }
        let dog = try db.read { tx in try tx.object(ShopV1.Dog.self, primaryKey: "Rex") }
        #expect(dog?.owner == Link(2))
        try db.write { tx in _ = try tx.delete(ShopV1.Person.self, primaryKey: 2) }
        #expect(try db.read { tx in try tx.objects(ShopV1.Dog.self).count } == 0)
    }

    /// Local mode only: synced mode refuses typed steps.
    @Test func aTypedStepMigratesAFileFromOneNamespaceToTheNext() throws {
        try seedVersionOne(.local)
        let db = try openVersionTwo()
        defer { db.close() }
        #expect(db.fileSchemaVersion == 2)
        let people = try db.read { tx in try tx.objects(ShopV2.Person.self).array() }
        #expect(
            people == [
                ShopV2.Person(
                    id: 1, fullName: "Ada Lovelace", home: .init(street: "1 Main St"),
                    past: [.init(street: "2 Old Rd", city: "London")]),
                ShopV2.Person(
                    id: 2, fullName: "Alan Turing", home: .init(street: "5 High St", city: "Wilmslow"),
                    best: Link(1), friends: [Link(1)]),
            ])
        let (best, owner) = try db.read { tx in
            let alan = try #require(try tx.object(ShopV2.Person.self, primaryKey: 2))
            let rex = try #require(try tx.object(ShopV2.Dog.self, primaryKey: "Rex"))
            return (try alan.best.flatMap { try tx.object($0) }?.fullName, rex.owner)
        }
        #expect(best == "Ada Lovelace")
        #expect(owner == Link(2))
        #expect(try db.verify().isEmpty)
    }
}
