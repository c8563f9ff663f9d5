import Foundation
import Testing

@testable import Strata

@Model(name: "Card")
struct SubscribedCard {
    @PrimaryKey var id: Int
    var deck: String
    var stars: Int = 0
    var tags: [String] = []
}

/// What a subscription keeps of a query, on the device: the hub's side is
/// in Hub/Tests (HubSubscriptionTests).
@Suite("Sync subscriptions on the device")
struct SyncSubscriptionTests {
    static func open(_ folder: TemporaryFolder, _ name: String = "device.strata") throws -> Database {
        var config = Database.Configuration(path: folder.path(name), schemaVersion: 1, models: [SubscribedCard.self])
        config.mode = .synced
        config.durability = .noSync
        config.sync = .init(dataset: UUID(uuidString: "6F1B0C2E-1D7A-4B54-9E0C-2B8E5D0A7F11")!)
        return try Database(configuration: config)
    }

    @Test func aQuerysEqualitiesBecomeItsFilter() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let db = try Self.open(folder)
        defer { db.close() }
        let decks = ["red", "blue"]
        let cases: [(SyncSubscription, SyncFilter)] = [
            (try db.sync.subscribe { tx in try tx.objects(SubscribedCard.self) }, .everything),
            (
                try db.sync.subscribe("red") { tx in
                    try tx.objects(SubscribedCard.self).filter(#Predicate { $0.deck == "red" })
                }, .oneOf(field: "deck", values: [.string("red")])
            ),
            (
                try db.sync.subscribe { tx in
                    try tx.objects(SubscribedCard.self).filter(#Predicate { decks.contains($0.deck) })
                }, .oneOf(field: "deck", values: [.string("red"), .string("blue")])
            ),
            (
                try db.sync.subscribe { tx in
                    try tx.objects(SubscribedCard.self).filter(#Predicate { $0.deck != "red" && $0.stars == 3 })
                },
                .all([.not(.oneOf(field: "deck", values: [.string("red")])), .oneOf(field: "stars", values: [.int(3)])])
            ),
            (
                try db.sync.subscribe { tx in try tx.objects("Card").where("id", in: [.int(1), .int(2)]) },
                .oneOf(field: "id", values: [.int(1), .int(2)])
            ),
            (
                try db.sync.subscribe("three stars or more") { tx in
                    try tx.objects(SubscribedCard.self).filter(#Predicate { $0.stars >= 3 })
                }, .range(field: "stars", lower: .init(.int(3), inclusive: true), upper: nil)
            ),
            (
                try db.sync.subscribe { tx in
                    try tx.objects(SubscribedCard.self).filter(#Predicate { $0.deck > "b" && $0.deck < "r" })
                },
                .all([
                    .range(field: "deck", lower: .init(.string("b"), inclusive: false), upper: nil),
                    .range(field: "deck", lower: nil, upper: .init(.string("r"), inclusive: false)),
                ])
            ),
        ]
        for (subscription, filter) in cases {
            #expect(subscription.filter == filter, "\(subscription)")
            #expect(subscription.typeName == "Card")
            #expect(subscription.state == .pending)
        }
        #expect(try db.sync.subscriptions() == cases.map(\.0))
        // What each keeps is what the query selects, on the device too.
        let card = ["id": Value.int(7), "deck": .string("green"), "stars": .int(4)]
        #expect(cases.map { $0.1.matches { card[$0] ?? .null } } == [true, false, false, false, false, true, true])
        // And what the file keeps reads back the same (JSON, values as bytes).
        let data = try JSONEncoder().encode(cases.map(\.1))
        #expect(try JSONDecoder().decode([SyncFilter].self, from: data) == cases.map(\.1))
        #expect(cases[1].0.description == "\"red\": Card where deck == \"red\" (pending)")
        // Filters travel as JSON and come back equal.
        let wire = HubSubscriptions(cases.map(\.0))
        #expect(HubSubscriptions(parameter: try wire.parameter) == wire)
        #expect(HubSubscriptions(parameter: "not base64 json") == nil)
    }

    @Test func subscriptionsSurviveAReopenAndGoAwayOneByOne() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        var kept: [SyncSubscription] = []
        do {
            let db = try Self.open(folder)
            defer { db.close() }
            kept.append(
                try db.sync.subscribe("a") { tx in try tx.objects(SubscribedCard.self).where(\.deck, equals: "a") })
            kept.append(
                try db.sync.subscribe("b") { tx in try tx.objects(SubscribedCard.self).where(\.deck, equals: "b") })
        }
        let db = try Self.open(folder)
        defer { db.close() }
        #expect(try db.sync.subscriptions() == kept)
        #expect(try db.sync.unsubscribe(kept[0].id))
        #expect(!(try db.sync.unsubscribe(kept[0].id)))
        #expect(try db.sync.subscriptions() == [kept[1]])
        #expect(try db.sync.unsubscribe(kept[1].id))
        #expect(try db.sync.subscriptions().isEmpty)
        // The file is whole.
        #expect(try db.verify().isEmpty)
    }

    /// Removing a subscription removes only what no peer has yet been
    /// sent nothing of: objects made here, never acknowledged, stay.
    @Test func removingASubscriptionKeepsWhatWasNeverSent() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let db = try Self.open(folder)
        defer { db.close() }
        let red = try db.sync.subscribe { tx in try tx.objects(SubscribedCard.self).where(\.deck, equals: "red") }
        try db.sync.subscribe { tx in try tx.objects(SubscribedCard.self).where(\.deck, equals: "blue") }
        try db.write { tx in
            for id in 0 ..< 4 { try tx.insert(SubscribedCard(id: id, deck: id % 2 == 0 ? "red" : "blue")) }
        }
        #expect(try db.sync.unsubscribe(red.id))
        #expect(try db.read { try $0.objects(SubscribedCard.self).count } == 4)
        #expect(try db.verify().isEmpty)
        #expect(try db.sync.lastSequenceNumber() > 0)
    }

    @Test func aQueryTheHubCannotEvaluateIsRefusedAndNothingKept() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let db = try Self.open(folder)
        defer { db.close() }
        let refused: [(String, @Sendable (ReadTransaction) throws -> ObjectQuery<SubscribedCard>)] = [
            (
                "a range of lists",
                { tx in try tx.objects(SubscribedCard.self).filter(#Predicate { $0.tags.count >= 3 }) }
            ),
            ("a closure", { tx in try tx.objects(SubscribedCard.self).filter { $0.tags.isEmpty } }),
            (
                "part of a string",
                { tx in try tx.objects(SubscribedCard.self).filter(#Predicate { $0.deck.starts(with: "r") }) }
            ),
            ("a sort", { tx in try tx.objects(SubscribedCard.self).sorted(by: \.stars) }),
            ("a limit", { tx in try tx.objects(SubscribedCard.self).limit(3) }),
        ]
        for (what, query) in refused {
            #expect(throws: StrataError.self, "\(what)") { try db.sync.subscribe(to: query) }
        }
        #expect(try db.sync.subscriptions().isEmpty)
    }

    @Test func aFileWithoutSyncHasNoSubscriptions() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let db = try Database(
            configuration: Database.Configuration(
                path: folder.path("local.strata"), schemaVersion: 1, models: [SubscribedCard.self]))
        defer { db.close() }
        #expect(throws: StrataError.self) { try db.sync.subscribe { tx in try tx.objects(SubscribedCard.self) } }
        #expect(throws: StrataError.self) { try db.sync.subscriptions() }
    }
}
