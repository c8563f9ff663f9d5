import Foundation
import Testing

@testable import Strata

// Version 2 of a synced app: its embedded types have properties version 1
// does not declare (`Address.city`, `Geo.label`), at every nesting level.

@Embedded(name: "Geo") struct KeptGeoV2: Equatable {
    var lat: Double = 0
    var label: String = ""
}

@Embedded(name: "Address") struct KeptAddressV2: Equatable {
    var street: String = ""
    var city: String = ""
    var geo: KeptGeoV2 = KeptGeoV2()
    /// A list nested in an embedded object.
    var stops: [KeptGeoV2] = []
}

@Model(name: "Pet") struct KeptPet {
    @PrimaryKey var id: Int
}

@Model(name: "Person") struct KeptPersonV2 {
    @PrimaryKey var id: Int
    var name: String
    var home: KeptAddressV2 = KeptAddressV2()
    var work: KeptAddressV2?
    var past: [KeptAddressV2] = []
    var pet: Link<KeptPet>?
    /// A top-level embedded property version 1 does not declare at all.
    var holiday: KeptAddressV2 = KeptAddressV2()
}

// Version 1: the same types without `city` and `label`.

@Embedded(name: "Geo") struct KeptGeoV1: Equatable {
    var lat: Double = 0
}

@Embedded(name: "Address") struct KeptAddressV1: Equatable {
    var street: String = ""
    var geo: KeptGeoV1 = KeptGeoV1()
    var stops: [KeptGeoV1] = []
}

@Model(name: "Person") struct KeptPersonV1 {
    @PrimaryKey var id: Int
    var name: String
    var home: KeptAddressV1 = KeptAddressV1()
    var work: KeptAddressV1?
    var past: [KeptAddressV1] = []
    var pet: Link<KeptPet>?
}

/// Synced mode keeps every stored field whose id is not a current property
/// when an older app rewrites a record, at every nesting level: embedded
/// objects, optional ones, lists of them and objects embedded in them,
/// through every write path that replaces a record.
@Suite(.temporaryFolder) struct SyncedEmbeddedKeptFieldTests {
    let folder = TemporaryFolder.current

    private func open(_ version: UInt64) throws -> Database {
        var config = Database.Configuration(
            path: folder.path(), schemaVersion: version,
            models: version == 1 ? [KeptPersonV1.self, KeptPet.self] : [KeptPersonV2.self, KeptPet.self])
        config.durability = .noSync
        config.mode = .synced
        return try Database(configuration: config)
    }

    private static func address(_ street: String, _ city: String, lat: Double, label: String) -> KeptAddressV2 {
        KeptAddressV2(
            street: street, city: city, geo: KeptGeoV2(lat: lat, label: label),
            stops: [KeptGeoV2(lat: lat + 0.1, label: "\(label) stop")])
    }

    static let home = address("1 Main St", "Leeds", lat: 53.8, label: "home")
    static let work = address("2 Mill Rd", "York", lat: 53.9, label: "office")
    static let past = [
        address("3 Old Ln", "Hull", lat: 53.7, label: "first"),
        address("4 Elm Ct", "Bath", lat: 51.3, label: "second"),
        address("5 Ash Wy", "Ely", lat: 52.4, label: "third"),
    ]

    /// Version 2 writes Person 1 with every embedded shape filled in.
    private func seed() throws {
        let db = try open(2)
        try db.write { tx in
            try tx.insert(KeptPet(id: 7))
            try tx.insert(
                KeptPersonV2(
                    id: 1, name: "Ada", home: Self.home, work: Self.work, past: Self.past, pet: Link(7),
                    holiday: Self.past[1]))
        }
    }

    private func person(_ db: Database) throws -> KeptPersonV2 {
        try #require(try db.read { tx in try tx.object(KeptPersonV2.self, primaryKey: 1) })
    }

    enum Write: String, CaseIterable, Sendable {
        case typedUpdate, typedUpsert, dynamicUpdate, dynamicUpsert, cascadeNullify, compact
    }

    /// The version 1 app changes the name (or, for the nullify and compact
    /// paths, has a record rewritten for it) and leaves every address as it
    /// reads it.
    private func rewriteAtVersion1(_ write: Write) throws {
        try rewriteAtVersion1(write, try open(1))
        if write == .compact {
            _ = try Database.compact(path: folder.path())
        }
    }

    private func rewriteAtVersion1(_ write: Write, _ db: Database) throws {
        let old = try #require(try db.read { tx in try tx.object(KeptPersonV1.self, primaryKey: 1) })
        #expect(old.home.street == "1 Main St")
        switch write {
        case .typedUpdate:
            var changed = old
            changed.name = "Ada L."
            try db.write { tx in try tx.update(changed) }
        case .typedUpsert:
            var changed = old
            changed.name = "Ada L."
            try db.write { tx in _ = try tx.upsert(changed) }
        case .dynamicUpdate:
            try db.write { tx in try tx.update("Person", key: 1, ["name": "Ada L."]) }
        case .dynamicUpsert:
            let stored = try #require(try db.read { tx in try tx.object("Person", key: 1)?.values })
            var values = stored
            values["name"] = "Ada L."
            try db.write { tx in _ = try tx.upsert("Person", values) }
        case .cascadeNullify:
            try db.write { tx in _ = try tx.delete(KeptPet.self, primaryKey: 7) }
        case .compact:
            break
        }
    }

    @Test(arguments: Write.allCases)
    func anOlderAppsRewriteKeepsEmbeddedFieldsItDoesNotDeclare(write: Write) throws {
        try seed()
        try rewriteAtVersion1(write)
        let db = try open(2)
        let person = try person(db)
        #expect(person.home == Self.home)
        #expect(person.work == Self.work)
        #expect(person.past == Self.past)
        #expect(person.holiday == Self.past[1])
        switch write {
        case .typedUpdate, .typedUpsert, .dynamicUpdate, .dynamicUpsert: #expect(person.name == "Ada L.")
        case .cascadeNullify: #expect(person.pet == nil)
        case .compact: #expect(person.name == "Ada")
        }
        #expect(try db.verify() == [])
    }

    /// Embedded objects have no identity: an element of a list takes over
    /// the kept fields of a stored element equal to it in what the older app
    /// declares, or the one at its position when edited in place.
    @Test func listElementsKeepTheirFieldsWhenTheOlderAppReordersRemovesAppendsAndEdits() throws {
        try seed()
        do {
            let db = try open(1)
            var old = try #require(try db.read { tx in try tx.object(KeptPersonV1.self, primaryKey: 1) })
            // [first, second, third] -> [third, first, new]; then "first" is edited in place.
            old.past = [old.past[2], old.past[0], KeptAddressV1(street: "6 New St", geo: KeptGeoV1(lat: 1))]
            try db.write { tx in try tx.update(old) }
            old.past[1].street = "3 Old Lane"
            try db.write { tx in try tx.update(old) }
        }
        let person = try person(try open(2))
        #expect(person.past.map(\.street) == ["5 Ash Wy", "3 Old Lane", "6 New St"])
        #expect(person.past.map(\.city) == ["Ely", "Hull", ""])
        #expect(person.past.map(\.geo.label) == ["third", "first", ""])
    }

    /// In one write the older app edits the first element and appends one:
    /// the edited element keeps its kept fields (the stored element most
    /// like it), the new one starts empty. Through both APIs.
    @Test(arguments: [false, true])
    func anElementEditedWhileTheListGrowsKeepsItsFields(dynamic: Bool) throws {
        try seedAndEditList(dynamic: dynamic) { past in
            guard case .object(var first) = past[0] else { return }
            first["street"] = "3 Old Lane"
            past[0] = .object(first)
            past.append(.object(["street": "6 New St"]))
        }
        let person = try person(try open(2))
        #expect(person.past.map(\.street) == ["3 Old Lane", "4 Elm Ct", "5 Ash Wy", "6 New St"])
        #expect(person.past.map(\.city) == ["Hull", "Bath", "Ely", ""])
        #expect(person.past.map(\.geo.label) == ["first", "second", "third", ""])
        #expect(person.past.map { $0.stops.map(\.label) } == [["first stop"], ["second stop"], ["third stop"], []])
    }

    /// In one write the older app removes the first element and edits the
    /// (then) first one: each kept field stays with the element it was on.
    @Test(arguments: [false, true])
    func anElementEditedWhileAnotherIsRemovedKeepsItsFields(dynamic: Bool) throws {
        try seedAndEditList(dynamic: dynamic) { past in
            past.removeFirst()
            guard case .object(var second) = past[0] else { return }
            second["street"] = "4 Elm Court"
            past[0] = .object(second)
        }
        let person = try person(try open(2))
        #expect(person.past.map(\.street) == ["4 Elm Court", "5 Ash Wy"])
        #expect(person.past.map(\.city) == ["Bath", "Ely"])
        #expect(person.past.map(\.geo.label) == ["second", "third"])
    }

    /// Seeds, then has the version 1 app change `past` by `edit`, on the
    /// list's dynamic values, and write it back by the typed or the
    /// dynamic API.
    private func seedAndEditList(dynamic: Bool, _ edit: (inout [Value]) -> Void) throws {
        try seed()
        let db = try open(1)
        let stored = try #require(try db.read { tx in try tx.object("Person", key: 1)?["past"] })
        guard case .list(var past) = stored else {
            Issue.record("past is \(stored)")
            return
        }
        edit(&past)
        if dynamic {
            try db.write { tx in try tx.update("Person", key: 1, ["past": .list(past)]) }
        } else {
            var old = try #require(try db.read { tx in try tx.object(KeptPersonV1.self, primaryKey: 1) })
            old.past = past.map { element in
                guard case .object(let fields) = element else { return KeptAddressV1() }
                var address = KeptAddressV1(street: fields["street"]?.string ?? "")
                if case .object(let geo)? = fields["geo"] { address.geo.lat = geo["lat"]?.double ?? 0 }
                if case .list(let stops)? = fields["stops"] {
                    address.stops = stops.map {
                        guard case .object(let stop) = $0 else { return KeptGeoV1() }
                        return KeptGeoV1(lat: stop["lat"]?.double ?? 0)
                    }
                }
                return address
            }
            try db.write { tx in try tx.update(old) }
        }
    }

    /// An optional embedded object the older app removes takes its kept
    /// fields with it; one it sets anew has none to keep.
    @Test func anEmbeddedObjectTheOlderAppReplacesOrClearsKeepsNothing() throws {
        try seed()
        do {
            let db = try open(1)
            var old = try #require(try db.read { tx in try tx.object(KeptPersonV1.self, primaryKey: 1) })
            old.work = nil
            try db.write { tx in try tx.update(old) }
            old.work = KeptAddressV1(street: "9 Quay", geo: KeptGeoV1(lat: 2))
            try db.write { tx in try tx.update(old) }
        }
        let person = try person(try open(2))
        #expect(person.work == KeptAddressV2(street: "9 Quay", city: "", geo: KeptGeoV2(lat: 2, label: "")))
        #expect(person.home == Self.home)
    }

    /// A new object written by the older app stores the empty values of the
    /// embedded properties it does not declare, so the newer app reads them.
    @Test func aNewObjectOfTheOlderAppReadsEmptyKeptEmbeddedFields() throws {
        try seed()
        do {
            let db = try open(1)
            try db.write { tx in
                try tx.insert(
                    KeptPersonV1(
                        id: 2, name: "Bo", home: KeptAddressV1(street: "8 Row", geo: KeptGeoV1(lat: 3)),
                        past: [KeptAddressV1(street: "7 Lane")]))
            }
        }
        let db = try open(2)
        let bo = try #require(try db.read { tx in try tx.object(KeptPersonV2.self, primaryKey: 2) })
        #expect(bo.home == KeptAddressV2(street: "8 Row", city: "", geo: KeptGeoV2(lat: 3, label: "")))
        #expect(bo.past == [KeptAddressV2(street: "7 Lane")])
        #expect(bo.holiday == KeptAddressV2())
        #expect(try db.verify() == [])
    }

    /// The older app reads the newer app's file read-only through its own
    /// models; the file stays byte for byte as it was.
    @Test func theOlderAppReadsTheNewerFileReadOnlyThroughItsModels() throws {
        try seed()
        let before = try RawFile.contents(folder.path())
        var config = Database.Configuration(
            path: folder.path(), schemaVersion: 1, models: [KeptPersonV1.self, KeptPet.self])
        config.mode = .synced
        config.readOnly = true
        do {
            let db = try Database(configuration: config)
            let ada = try #require(try db.read { tx in try tx.object(KeptPersonV1.self, primaryKey: 1) })
            #expect(ada.home.street == "1 Main St" && ada.past.count == 3 && ada.pet == Link(7))
            #expect(ada.home.stops.map(\.lat) == [53.9])
        }
        #expect(try RawFile.contents(folder.path()) == before)
    }

    /// In local mode the same rewrite drops the values of the removed
    /// property: a record's retired bytes go away when it is rewritten.
    @Test func localModeDropsARemovedEmbeddedPropertyOnRewrite() throws {
        func open(_ version: UInt64) throws -> Database {
            var config = Database.Configuration(
                path: folder.path(), schemaVersion: version,
                models: version == 1 ? [KeptPersonV2.self, KeptPet.self] : [KeptPersonV1.self, KeptPet.self])
            config.durability = .noSync
            return try Database(configuration: config)
        }
        do {
            let db = try open(1)
            try db.write { tx in
                try tx.insert(KeptPersonV2(id: 1, name: "Ada", home: Self.home))
            }
        }
        let before = try #require(try RawFile.record(folder.path(), type: "Person", id: 1))
        do {
            let db = try open(2)
            try db.write { tx in try tx.update("Person", key: 1, ["name": "Ada"]) }
        }
        let after = try #require(try RawFile.record(folder.path(), type: "Person", id: 1))
        func holds(_ record: [UInt8], _ text: String) -> Bool {
            let bytes = Array(text.utf8)
            return (0 ... record.count - bytes.count).contains { Array(record[$0 ..< $0 + bytes.count]) == bytes }
        }
        #expect(holds(before, "Leeds") && holds(before, "home"))
        #expect(!holds(after, "Leeds") && !holds(after, "home"))
        #expect(holds(after, "1 Main St"))
    }

    /// A migration's rewrite goes through the same encoder as an update: an
    /// object the closure changes drops the removed embedded property too
    /// (before, the rewrite copied the embedded bytes as stored), and keeps
    /// its other embedded values.
    @Test func aMigrationsRewriteDropsARemovedEmbeddedPropertyLikeAnUpdate() throws {
        do {
            var config = Database.Configuration(
                path: folder.path(), schemaVersion: 1, models: [KeptPersonV2.self, KeptPet.self])
            config.durability = .noSync
            let db = try Database(configuration: config)
            try db.write { tx in try tx.insert(KeptPersonV2(id: 1, name: "Ada", home: Self.home)) }
        }
        var config = Database.Configuration(
            path: folder.path(), schemaVersion: 2, models: [KeptPersonV1.self, KeptPet.self])
        config.durability = .noSync
        config.migration = { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { _, new in new?["name"] = "Ada L." }
        }
        do {
            let db = try Database(configuration: config)
            #expect(try db.read { tx in try tx.object("Person", key: 1)?["home"]["street"] } == "1 Main St")
        }
        let after = try #require(try RawFile.record(folder.path(), type: "Person", id: 1))
        let text = String(decoding: after, as: UTF8.self)
        #expect(!text.contains("Leeds") && !text.contains("home"))
        #expect(text.contains("1 Main St") && text.contains("Ada L."))
    }
}
