import Foundation
import Testing

@testable import Strata

/// Random writes against a fresh query at the same moment, for several
/// query shapes at once.
@Suite(.temporaryFolder) struct QueryObservationOracleTests {
    let folder = TemporaryFolder.current

    struct Shape: Sendable {
        let name: String
        let query: @Sendable (ModelQuery<Card>) -> ModelQuery<Card>
        let sameOrder: @Sendable (Card, Card) -> Bool
    }

    static let shapes: [Shape] = [
        Shape(name: "whole type", query: { $0 }, sameOrder: { _, _ in true }),
        Shape(name: "sorted by index", query: { $0.sorted(by: \.score) }, sameOrder: { $0.score == $1.score }),
        Shape(
            name: "sorted by plain, descending", query: { $0.sorted(by: \.rank, ascending: false) },
            sameOrder: { $0.rank == $1.rank }),
        Shape(
            name: "where index range", query: { $0.where(\.score, in: 20 ..< 60) }, sameOrder: { $0.score == $1.score }),
        Shape(
            name: "where plain range, sorted by title", query: { $0.where(\.rank, in: ...50).sorted(by: \.title) },
            sameOrder: { $0.title == $1.title }),
        Shape(
            name: "sorted by index descending, limit", query: { $0.sorted(by: \.score, ascending: false).limit(10) },
            sameOrder: { $0.score == $1.score }),
        Shape(
            name: "filter, sorted by plain, limit",
            query: { $0.filter { $0.title.hasSuffix("a") }.sorted(by: \.rank).limit(7) },
            sameOrder: { $0.rank == $1.rank }),
        Shape(
            name: "where index, limit", query: { $0.where(\.score, in: 10...).limit(5) },
            sameOrder: { $0.score == $1.score }),
    ]

    enum Operation: Sendable {
        case insert(Card)
        case update(Card)
        case upsert(Card)
        case delete(Int)
        case deleteAll
    }

    static func randomCard(_ random: inout SplitMix64) -> Card {
        Card(
            id: Int.random(in: 0 ..< 60, using: &random), score: Int.random(in: 0 ..< 80, using: &random),
            rank: Int.random(in: 0 ..< 80, using: &random),
            title: ["a", "b", "ca", "da", "e"].randomElement(using: &random)!)
    }

    static func randomOperation(_ random: inout SplitMix64) -> Operation {
        let card = randomCard(&random)
        switch Int.random(in: 0 ..< 200, using: &random) {
        case 0: return .deleteAll
        case 1 ..< 60: return .insert(card)
        case 60 ..< 110: return .update(card)
        case 110 ..< 150: return .upsert(card)
        default: return .delete(card.id)
        }
    }

    static func apply(_ operations: [Operation], _ tx: WriteTransaction) throws {
        for operation in operations {
            switch operation {
            case .insert(let card):
                if try tx.object(Card.self, primaryKey: card.id) == nil { try tx.insert(card) }
            case .update(var card):
                // Half the updates rewrite a property or none of the old values.
                if let old = try tx.object(Card.self, primaryKey: card.id) {
                    if card.score % 2 == 0 {
                        card = Card(id: old.id, score: old.score, rank: card.rank, title: old.title)
                    }
                    if card.rank % 5 == 0 { card = old }
                    try tx.update(card)
                }
            case .upsert(let card):
                try tx.upsert(card)
            case .delete(let id):
                _ = try tx.delete(Card.self, primaryKey: id)
            case .deleteAll:
                try tx.deleteAll(Card.self)
            }
        }
    }

    /// Thousands of random inserts, updates, upserts, deletes and
    /// deleteAlls in batches of several commits: after each batch, every
    /// shape's next element (when its values changed) turns the element
    /// before into its results by its lists, and its results are what a
    /// fresh query reads at the same commit.
    @Test(arguments: [1, 2, 3] as [UInt64]) func listsAndResultsMatchAFreshQuery(seed: UInt64) async throws {
        let db = try Observing.open(folder.path())
        try await withTimeout {
            var random = SplitMix64(seed: seed)
            let shapes = Self.shapes
            try await db.write { tx in
                var seeding = SplitMix64(seed: seed ^ 0xABCD)
                for _ in 0 ..< 40 { try tx.upsert(Self.randomCard(&seeding)) }
            }
            var iterators = shapes.map { db.observe(Card.self, $0.query).makeAsyncIterator() }
            var previous: [[Card]] = []
            for index in shapes.indices {
                let first = try #require(try await iterators[index].next())
                #expect(first.isInitial)
                let fresh = try await db.read { try shapes[index].query($0.objects(Card.self)).array() }
                #expect(Array(first.results) == fresh, "\(shapes[index].name)")
                previous.append(fresh)
            }
            var elements = 0
            for batch in 0 ..< 400 {
                for _ in 0 ..< Int.random(in: 1 ... 4, using: &random) {
                    let operations = (0 ..< Int.random(in: 1 ... 5, using: &random)).map { _ in
                        Self.randomOperation(&random)
                    }
                    try await db.write { tx in try Self.apply(operations, tx) }
                }
                let newest = try Observing.newestTransaction(db)
                for index in shapes.indices {
                    let fresh = try await db.read { try shapes[index].query($0.objects(Card.self)).array() }
                    guard fresh != previous[index] else { continue }
                    let change = try #require(
                        try await iterators[index].next(), "\(shapes[index].name), batch \(batch)")
                    elements += 1
                    #expect(!change.isInitial)
                    expectListsReproduce(change, from: previous[index], id: \.id, sameOrder: shapes[index].sameOrder)
                    #expect(
                        Array(change.results) == fresh,
                        "\(shapes[index].name), batch \(batch): \(change.results.map(\.id)) != \(fresh.map(\.id))")
                    #expect(change.transactionID == newest)
                    previous[index] = fresh
                }
            }
            #expect(elements > 1000)
        }
    }

    /// A burst of 10,000 commits of one small write each, from another
    /// thread, while the consumer reads slowly or at once: it ends with an
    /// element holding the final data, and never gets more elements than
    /// commits plus the initial one.
    @Test(arguments: [false, true]) func aBurstOfCommitsEndsWithTheLatestState(slowConsumer: Bool) async throws {
        let db = try Observing.open(folder.path())
        let commits = 10_000
        try await withTimeout {
            var iterator = db.observe(Card.self).makeAsyncIterator()
            var previous = Array(try #require(try await iterator.next()).results)
            #expect(previous.isEmpty)
            let writer = Task.detached {
                try await offThePool {
                    for index in 0 ..< commits - 1 {
                        try db.write { tx in try tx.upsert(Card(id: index % 50, score: index)) }
                    }
                    // The last commit, which the consumer waits for.
                    try db.write { tx in try tx.insert(Card(id: -1)) }
                }
            }
            var elements = 1
            while !previous.contains(where: { $0.id == -1 }) {
                let change = try #require(try await iterator.next())
                elements += 1
                expectListsReproduce(change, from: previous, id: \.id)
                previous = Array(change.results)
                if slowConsumer { try await Task.sleep(for: .milliseconds(2)) }
            }
            try await writer.value
            let final = try await db.read { try $0.objects(Card.self).array() }
            #expect(previous == final)
            #expect(final.count == 51)
            #expect(elements <= commits + 1)
            if slowConsumer { #expect(elements < commits / 2, "a slow consumer gets coalesced elements") }
        }
    }
}
