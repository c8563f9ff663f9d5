import Foundation
import Testing

@_spi(Hub) @testable import Strata

/// Embedded objects merge per path: each field inside one is a register,
/// and an optional one's life (set, null, set again) decides as an
/// object's causal length does. Between an older and a newer app, fields
/// inside embedded objects that the older one does not declare, at every
/// nesting level, are learned, kept through its edits, sent on, and read
/// by the newer app. Models: `SyncedEmbeddedKeptFieldTests.swift`.
@Suite(.temporaryFolder) struct SyncEmbeddedTests {
    let folder = TemporaryFolder.current
    static let dataset = UUID(uuidString: "2C7A3E51-8B0D-4F6A-9D21-5E4B7C0A9F33")!

    func open(_ name: String, version: UInt64 = 1, _ models: [any Model.Type]) throws -> Database {
        var config = Database.Configuration(path: folder.path(name), schemaVersion: version, models: models)
        config.durability = .noSync
        config.mode = .synced
        config.sync = .init(dataset: SyncEmbeddedTests.dataset)
        return try Database(configuration: config)
    }

    func newer(_ name: String) throws -> Database {
        try open(name, version: 2, [KeptPersonV2.self, KeptPet.self])
    }

    func person(_ db: Database) throws -> KeptPersonV2? {
        try db.read { tx in try tx.object(KeptPersonV2.self, primaryKey: 1) }
    }

    func address(_ street: String, _ city: String, lat: Double = 0, label: String = "") -> KeptAddressV2 {
        KeptAddressV2(street: street, city: city, geo: KeptGeoV2(lat: lat, label: label))
    }

    @Test func editsOfTwoFieldsOfOneEmbeddedObjectBothSurvive() throws {
        let a = try newer("a.strata")
        let b = try newer("b.strata")
        try a.write { tx in try tx.insert(KeptPersonV2(id: 1, name: "Ada", home: address("Main St", "Springfield"))) }
        try a.sync.exchange(with: b)
        // At once, unseen by each other: a street here, a city and the
        // nested latitude there.
        try a.write { tx in try tx.update("Person", key: 1, ["home": ["street": "Elm St", "city": "Springfield"]]) }
        try b.write { tx in
            var person = try #require(try tx.object(KeptPersonV2.self, primaryKey: 1))
            person.home.city = "Shelbyville"
            person.home.geo.lat = 4.5
            try tx.update(person)
        }
        try a.sync.exchange(with: b)
        let expected = address("Elm St", "Shelbyville", lat: 4.5)
        #expect(try person(a)?.home == expected)
        #expect(try person(b)?.home == expected)
        // Applied again, the changes are a no-op that takes no sequence number.
        let last = try b.sync.lastSequenceNumber()
        let report = try b.sync.apply(try a.sync.changes())
        #expect(report.changedObjects == 0 && report.changedFields == 0)
        #expect(try b.sync.lastSequenceNumber() == last)
    }

    @Test func nullBeatsConcurrentEditsAndSettingAgainBeatsNull() throws {
        let a = try newer("a.strata")
        let b = try newer("b.strata")
        try a.write { tx in
            try tx.insert(KeptPersonV2(id: 1, name: "Ada", work: address("Dock 4", "Harbour")))
        }
        try a.sync.exchange(with: b)
        // a clears the address while b edits it, later by the clock: the
        // clearing wins, as a delete beats concurrent edits.
        try a.write { tx in try tx.update("Person", key: 1, ["work": nil]) }
        try b.write { tx in try tx.update("Person", key: 1, ["work": ["street": "Dock 5", "city": "Harbour"]]) }
        try b.sync.exchange(with: a)
        #expect(try person(a)?.work == nil)
        #expect(try person(b)?.work == nil)
        // Set again after the null: it starts empty of the old fields.
        try b.write { tx in try tx.update("Person", key: 1, ["work": ["street": "Pier 1"]]) }
        try b.sync.exchange(with: a)
        #expect(try person(a)?.work == address("Pier 1", ""))
        #expect(try person(b)?.work == address("Pier 1", ""))
        // A stale edit of the first life, arriving late, changes nothing.
        let c = try newer("c.strata")
        try a.sync.exchange(with: c)
        #expect(try person(c)?.work == address("Pier 1", ""))
    }

    @Test func fieldsInsideEmbeddedObjectsTravelThroughAnOlderAppAndAreRevealed() throws {
        let newer = try newer("newer.strata")
        let older = try open("older.strata", [KeptPersonV1.self, KeptPet.self])
        let relay = try open("relay.strata", [KeptPersonV1.self, KeptPet.self])
        try newer.write { tx in
            try tx.insert(
                KeptPersonV2(
                    id: 1, name: "Ada", home: address("Main St", "Springfield", lat: 1.5, label: "door"),
                    work: address("Dock 4", "Harbour"), holiday: address("Beach Rd", "Seaside")))
        }
        let report = try older.sync.apply(try newer.sync.changes())
        #expect(report.learnedFields.isSuperset(of: ["Person.home.city", "Person.home.geo.label", "Person.holiday"]))
        #expect(report.skippedFields.isEmpty)
        // Fields inside its embedded objects that it cannot read count.
        #expect(try older.read { tx in try tx.objects(KeptPersonV1.self).holdingUndeclaredFields().count } == 1)
        // The older app edits what it declares; what it keeps stays.
        try older.write { tx in
            var person = try #require(try tx.object(KeptPersonV1.self, primaryKey: 1))
            person.home.street = "Oak St"
            person.home.geo.lat = 2.5
            try tx.update(person)
        }
        // Relayed by another older app, which only learns them.
        try older.sync.exchange(with: relay)
        try relay.sync.exchange(with: newer)
        let merged = try #require(try person(newer))
        #expect(merged.home == address("Oak St", "Springfield", lat: 2.5, label: "door"))
        #expect(merged.work == address("Dock 4", "Harbour"))
        #expect(merged.holiday == address("Beach Rd", "Seaside"))
        // Upgraded, the older file reads them at once: nothing pulled again.
        let path = older.path
        older.close()
        let upgraded = try open("older.strata", version: 2, [KeptPersonV2.self, KeptPet.self])
        #expect(upgraded.path == path)
        let revealed = try #require(try person(upgraded))
        #expect(revealed.home == merged.home && revealed.work == merged.work && revealed.holiday == merged.holiday)
        #expect(try upgraded.verify().isEmpty)
    }

    @Test func aFieldInsideSomethingNotAnEmbeddedObjectIsRefused() throws {
        let site = SiteID(high: 1, low: 2)
        let content = ChangesetContent(
            dataset: SiteID(uuid: SyncEmbeddedTests.dataset), sender: site, writerSchemaVersion: 1, senderTime: .zero,
            fromSeq: 0, toSeq: 1, hasMore: false,
            types: [WireType(name: "Person", keyName: "id", keyDescriptor: "int")],
            fields: [
                WireField(type: 0, path: "name", descriptor: "string"),
                WireField(type: 0, path: "street", descriptor: "string", parent: 0),
            ], origins: [site], entries: [])
        #expect {
            try ChangesetCodec.decode(ChangesetCodec.encode(content))
        } throws: { error in
            (error as? StrataError)?.code == .invalidChangeset
                && (error as? StrataError)?.message.contains("not an embedded object") == true
        }
    }
}
