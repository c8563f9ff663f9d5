import Foundation
import Strata
import Testing

/// A model of every supported kind of property, declared with the macro.
@Model
struct Gadget: Equatable {
    @PrimaryKey var id: String
    var label: String
    @Indexed var count: Int = 0
    var weight: Double = 1.5
    var delta: Int64 = -3
    var active: Bool = true
    var blob: Data?
    var made: Date
    var serial: UUID?
    var initials: String { String(label.prefix(1)) }
    @Transient var isSelected = false
}

/// `HandPerson` written with the macro.
@Model(name: "Person")
struct MacroPerson {
    @PrimaryKey var id: Int
    var firstName: String
    var lastName: String
    @Indexed var age: Int = 0
    var email: String?
}

/// A model without a primary key.
@Model
struct Jotting: Equatable {
    var text: String
}

@Model(name: "Member")
struct MemberV1 {
    @PrimaryKey var id: Int
    var name: String
}

@Model(name: "Member")
struct MemberV2: Equatable {
    @PrimaryKey var id: Int
    var name: String
    var nickname: String = "none"
}

enum Shelf {
    /// A nested model with a property the rest of the module cannot set.
    @Model
    struct Entry: Equatable {
        @PrimaryKey var id: Int
        private(set) var note: String = "new"

        init(id: Int, note: String) {
            self.id = id
            self.note = note
        }
    }
}

@Suite(.temporaryFolder) struct MacroModelTests {
    let folder = TemporaryFolder.current

    func open(_ models: [any Model.Type], version: UInt64 = 1, mode: Database.Mode) throws -> Database {
        var config = Database.Configuration(path: folder.path(), schemaVersion: version, models: models)
        config.durability = .noSync
        config.mode = mode
        return try Database(configuration: config)
    }

    @Test(arguments: Fixtures.modes)
    func macroModelsRoundTrip(mode: Database.Mode) throws {
        let db = try open([Gadget.self, Jotting.self], mode: mode)
        let made = Date(timeIntervalSince1970: 1_700_000_000)
        let lamp = Gadget(
            id: "lamp", label: "Lamp", count: 3, weight: 0.25, delta: 9, active: false, blob: Data([1, 2]), made: made,
            serial: UUID())
        let fan = Gadget(id: "fan", label: "Fan", made: made)
        try db.write { tx in
            try tx.insert(lamp)
            try tx.insert(fan)
            #expect(try tx.insert(Jotting(text: "first")) == 1)
        }
        try db.read { tx throws in
            #expect(try tx.object(Gadget.self, primaryKey: "lamp") == lamp)
            #expect(try tx.object(Gadget.self, primaryKey: "fan") == fan)
            #expect(try tx.object(Gadget.self, primaryKey: "none") == nil)
            #expect(try tx.objects(Gadget.self).array() == [fan, lamp])
            #expect(try tx.objects(Jotting.self).array() == [Jotting(text: "first")])
            let dynamic = try #require(try tx.object("Gadget", key: "lamp"))
            #expect(dynamic["weight"] == .double(0.25))
            #expect(try tx.objects("Gadget").where("count", equals: 3).map { $0["id"] } == ["lamp"])
        }
    }

    @Test func nestedModelWithPrivateSetterRoundTrips() throws {
        let db = try open([Shelf.Entry.self], mode: .local)
        try db.write { tx in try tx.insert(Shelf.Entry(id: 1, note: "kept")) }
        let read = try db.read { tx in try tx.object(Shelf.Entry.self, primaryKey: 1) }
        #expect(read == Shelf.Entry(id: 1, note: "kept"))
        #expect(Shelf.Entry.schema.name == "Entry")
    }

    @Test func transientPropertyIsNotStoredAndReadsItsInitialValue() throws {
        #expect(!Gadget.schema.objectSchema.properties.map(\.name).contains("isSelected"))
        #expect(Gadget.schema.position(of: \Gadget.isSelected) == nil)
        let db = try open([Gadget.self], mode: .local)
        var gadget = Gadget(id: "a", label: "A", made: Date(timeIntervalSince1970: 0))
        gadget.isSelected = true
        try db.write { tx in try tx.insert(gadget) }
        let read = try db.read { tx in try tx.object(Gadget.self, primaryKey: "a") }
        #expect(read?.isSelected == false)
        #expect(read?.label == "A")
    }

    @Test(arguments: Fixtures.modes)
    func literalInitialValueIsTheSchemaDefault(mode: Database.Mode) throws {
        let v1 = try open([MemberV1.self], mode: mode)
        try v1.write { tx in
            try tx.insert(MemberV1(id: 1, name: "Ada"))
            try tx.insert(MemberV1(id: 2, name: "Grace"))
        }
        v1.close()
        #expect(MemberV2.schema.objectSchema[property: "nickname"]?.defaultValue == "none")

        let v2 = try open([MemberV2.self], version: 2, mode: mode)
        try v2.write { tx in try tx.insert(MemberV2(id: 3, name: "Hedy", nickname: "H")) }
        try v2.read { tx throws in
            #expect(
                try tx.objects(MemberV2.self).array() == [
                    MemberV2(id: 1, name: "Ada"), MemberV2(id: 2, name: "Grace"),
                    MemberV2(id: 3, name: "Hedy", nickname: "H"),
                ])
            #expect(try tx.object("Member", key: 1)?["nickname"] == "none")
            #expect(try tx.object("Member", key: 3)?["nickname"] == "H")
        }
    }

    @Test func generatedSchemaEqualsTheHandWrittenOne() {
        #expect(MacroPerson.schema.objectSchema == HandPerson.schema.objectSchema)
        #expect(MacroPerson.schema.originalNames == HandPerson.schema.originalNames)
        #expect(MacroPerson.schema.position(of: \MacroPerson.age) == HandPerson.schema.position(of: \HandPerson.age))
        #expect(MacroPerson.Key.self == HandPerson.Key.self)
        #expect(Jotting.Key.self == Int64.self)
    }

    @Test func twoModelsWithOneStoredNameAreRefusedBeforeAnythingIsWritten() {
        let error = expectStrataError(.invalidSchema) {
            _ = try open([MemberV1.self, MemberV2.self], mode: .local)
        }
        #expect(error?.message.contains("Object type 'Member' is declared more than once") == true)
        #expect(!FileManager.default.fileExists(atPath: folder.path()))
    }
}
