import Foundation
import Testing

@testable import Strata

@Suite(.temporaryFolder) struct ObjectObservationTests {
    let folder = TemporaryFolder.current

    /// An object's life, seen by its observation: nil at first, inserted,
    /// modified with the exact properties that changed, deleted and
    /// inserted again; writes to other objects, to another type, and
    /// writes of identical values give nothing.
    @Test func followsOneObjectThroughItsLife() async throws {
        let db = try Observing.open(folder.path())
        try await withTimeout {
            try await db.write { tx in try tx.insert(Card(id: 1, score: 1)) }
            var follower = Follower(db.observe(Card.self, primaryKey: 7))
            let first = try #require(try await follower.next())
            #expect(first.kind == .initial && first.object == nil && first.changedProperties.isEmpty)

            func expectNext(
                _ kind: ObjectChange<Card>.Kind, _ object: Card?, changed: [String] = [],
                sourceLocation: SourceLocation = #_sourceLocation
            ) async throws {
                let change = try #require(try await follower.next(), sourceLocation: sourceLocation)
                #expect(change.kind == kind, sourceLocation: sourceLocation)
                #expect(change.object == object, sourceLocation: sourceLocation)
                #expect(change.changedProperties == changed, sourceLocation: sourceLocation)
                #expect(change.transactionID == (try Observing.newestTransaction(db)), sourceLocation: sourceLocation)
            }
            func unrelated() async throws {
                try await db.write { tx in try tx.upsert(Card(id: 1, score: Int.random(in: 2 ... 1000))) }
                await db.observationsSettled()
                try await db.write { tx in try tx.upsert(Pin(id: 7, text: "same key, another type")) }
                await db.observationsSettled()
            }

            try await unrelated()
            try await db.write { tx in try tx.insert(Card(id: 7, score: 3, title: "x")) }
            try await expectNext(.inserted, Card(id: 7, score: 3, title: "x"))

            try await unrelated()
            try await db.write { tx in try tx.update(Card(id: 7, score: 3, title: "x")) }
            await db.observationsSettled()
            try await db.write { tx in try tx.update(Card(id: 7, score: 4, title: "y")) }
            try await expectNext(.modified, Card(id: 7, score: 4, title: "y"), changed: ["score", "title"])
            try await db.write { tx in try tx.upsert(Card(id: 7, score: 4, rank: 9, title: "y")) }
            try await expectNext(.modified, Card(id: 7, score: 4, rank: 9, title: "y"), changed: ["rank"])

            try await unrelated()
            try await db.write { tx in _ = try tx.delete(Card.self, primaryKey: 7) }
            try await expectNext(.deleted, nil)
            try await db.write { tx in try tx.deleteAll(Card.self) }
            await db.observationsSettled()
            try await db.write { tx in _ = try tx.delete(Card.self, primaryKey: 7) }
            await db.observationsSettled()

            try await db.write { tx in try tx.insert(Card(id: 7, title: "again")) }
            try await expectNext(.inserted, Card(id: 7, title: "again"))
            try await db.write { tx in try tx.deleteAll(Card.self) }
            try await expectNext(.deleted, nil)
            follower.task.cancel()
        }
    }

    /// An object that exists is the first element; several commits while
    /// the consumer is away come as one element against it.
    @Test func startsWithTheObjectAndCoalesces() async throws {
        let db = try Observing.open(folder.path())
        try await withTimeout {
            try await db.write { tx in try tx.insert(Card(id: 2, score: 1, rank: 1, title: "a")) }
            var iterator = db.observe(Card.self, primaryKey: 2).makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(first.kind == .initial && first.object == Card(id: 2, score: 1, rank: 1, title: "a"))
            try await db.write { tx in try tx.update(Card(id: 2, score: 2, rank: 1, title: "a")) }
            try await db.write { tx in try tx.update(Card(id: 2, score: 1, rank: 1, title: "b")) }
            let change = try #require(try await iterator.next())
            #expect(change.kind == .modified)
            #expect(change.changedProperties == ["title"])
            // Deleted and inserted again with other values while away: modified.
            try await db.write { tx in _ = try tx.delete(Card.self, primaryKey: 2) }
            try await db.write { tx in try tx.insert(Card(id: 2, score: 1, rank: 5, title: "b")) }
            let back = try #require(try await iterator.next())
            #expect(back.kind == .modified && back.changedProperties == ["rank"])
        }
    }
}
