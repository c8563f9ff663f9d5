import Foundation
import Testing

@testable import Strata

/// A query shape whose order is driven by one number `v`: `make(id, v)`
/// is a card that sorts as `v` ascending would, and `excluded(id)` one
/// the query leaves out (nil when it keeps every card).
struct OrderedShape: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let query: @Sendable (ModelQuery<Card>) -> ModelQuery<Card>
    let make: @Sendable (Int, Int) -> Card
    let excluded: (@Sendable (Int) -> Card)?
    /// Whether two versions of a card sort alike.
    let sameOrder: @Sendable (Card, Card) -> Bool

    static let all: [OrderedShape] = [
        OrderedShape(
            testDescription: "sorted by an indexed property, ascending", query: { $0.sorted(by: \.score) },
            make: { Card(id: $0, score: $1) }, excluded: nil, sameOrder: { $0.score == $1.score }),
        OrderedShape(
            testDescription: "sorted by an indexed property, descending",
            query: { $0.sorted(by: \.score, ascending: false) }, make: { Card(id: $0, score: -$1) }, excluded: nil,
            sameOrder: { $0.score == $1.score }),
        OrderedShape(
            testDescription: "sorted by a plain property, ascending", query: { $0.sorted(by: \.rank) },
            make: { Card(id: $0, rank: $1) }, excluded: nil, sameOrder: { $0.rank == $1.rank }),
        OrderedShape(
            testDescription: "sorted by a plain property, descending",
            query: { $0.sorted(by: \.rank, ascending: false) }, make: { Card(id: $0, rank: -$1) }, excluded: nil,
            sameOrder: { $0.rank == $1.rank }),
        OrderedShape(
            testDescription: "where on an index, in its order", query: { $0.where(\.score, in: -1000 ... 1000) },
            make: { Card(id: $0, score: $1) }, excluded: { Card(id: $0, score: 5000) },
            sameOrder: { $0.score == $1.score }),
        OrderedShape(
            testDescription: "where on a plain property, sorted by an index descending",
            query: { $0.where(\.rank, in: 0...).sorted(by: \.score, ascending: false) },
            make: { Card(id: $0, score: -$1) }, excluded: { Card(id: $0, rank: -1) },
            sameOrder: { $0.score == $1.score }),
        OrderedShape(
            testDescription: "filter closure, sorted by a plain property",
            query: { $0.filter { !$0.title.hasPrefix("x") }.sorted(by: \.rank) },
            make: { Card(id: $0, rank: $1) }, excluded: { Card(id: $0, title: "xcluded") },
            sameOrder: { $0.rank == $1.rank }),
        OrderedShape(
            testDescription: "where on an index and filter, sorted by a plain property",
            query: { $0.where(\.score, in: 0...).filter { $0.title != "hidden" }.sorted(by: \.rank) },
            make: { Card(id: $0, score: 1, rank: $1) }, excluded: { Card(id: $0, score: 1, title: "hidden") },
            sameOrder: { $0.rank == $1.rank }),
    ]
}

@Suite(.temporaryFolder) struct QueryObservationDeliveryTests {
    let folder = TemporaryFolder.current

    /// Receives the next element and checks it against the element before
    /// and a fresh query at the newest commit.
    func expectNext(
        _ follower: inout Follower<QueryChange<Card>>, after previous: [Card], in db: Database,
        _ shape: OrderedShape, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> QueryChange<Card> {
        let change = try #require(try await follower.next(), sourceLocation: sourceLocation)
        #expect(!change.isInitial, sourceLocation: sourceLocation)
        expectListsReproduce(
            change, from: previous, id: \.id, sameOrder: shape.sameOrder, sourceLocation: sourceLocation)
        let fresh = try await db.read { try shape.query($0.objects(Card.self)).array() }
        #expect(Array(change.results) == fresh, sourceLocation: sourceLocation)
        #expect(change.transactionID == (try Observing.newestTransaction(db)), sourceLocation: sourceLocation)
        return change
    }

    /// Commits that leave the results as they were (another type, an
    /// object the query leaves out, identical values) give no element;
    /// inserts, modifications and deletes at the start, middle and end of
    /// the results, and moves, give one element each, with exact lists.
    @Test(arguments: OrderedShape.all) func eachRelevantCommitGivesOneElementWithExactLists(_ shape: OrderedShape)
        async throws
    {
        let db = try Observing.open(folder.path())
        try await withTimeout {
            // Cards 1...5 sort as 10, 20, 30, 40, 50.
            try await db.write { tx in
                for id in 1 ... 5 { try tx.insert(shape.make(id, id * 10)) }
                if let excluded = shape.excluded { try tx.insert(excluded(100)) }
            }
            var follower = Follower(db.observe(Card.self, shape.query))
            let first = try #require(try await follower.next())
            #expect(first.isInitial)
            #expect(
                first.results.map(\.id)
                    == (try await db.read { try shape.query($0.objects(Card.self)).array() }).map(\.id))
            #expect(first.results.count == 5)
            #expect(first.deletions.isEmpty && first.insertions.isEmpty && first.modifications.isEmpty)
            var ids = first.results.map(\.id)
            var previous = Array(first.results)

            // Irrelevant commits, each evaluated while the consumer waits.
            try await db.write { tx in try tx.insert(Pin(id: 1, text: "another type")) }
            await db.observationsSettled()
            if let excluded = shape.excluded {
                try await db.write { tx in try tx.insert(excluded(101)) }
                await db.observationsSettled()
            }
            let unchanged = previous[2]
            try await db.write { tx in try tx.update(unchanged) }
            await db.observationsSettled()

            func step(_ write: @escaping @Sendable (WriteTransaction) throws -> Void) async throws -> QueryChange<Card>
            {
                try await db.write(write)
                let change = try await expectNext(&follower, after: previous, in: db, shape)
                previous = Array(change.results)
                return change
            }
            let card = { (id: Int) in previous.first { $0.id == id }! }

            var change = try await step { tx in try tx.insert(shape.make(6, 5)) }
            #expect(change.insertions == [0] && change.insertedKeys == [6])
            #expect(change.deletions.isEmpty && change.modifications.isEmpty)
            change = try await step { tx in try tx.insert(shape.make(7, 25)) }
            #expect(change.insertions == [3] && change.insertedKeys == [7])
            change = try await step { tx in try tx.insert(shape.make(8, 60)) }
            #expect(change.insertions == [7] && change.insertedKeys == [8])
            ids = previous.map(\.id)

            for (position, id) in [(0, ids[0]), (3, ids[3]), (7, ids[7])] {
                let edited = {
                    var edited = card(id)
                    edited.title += "!"
                    return edited
                }()
                change = try await step { tx in try tx.update(edited) }
                #expect(change.modifications == [position] && change.modificationsInPrevious == [position])
                #expect(change.modifiedKeys == [id])
                #expect(change.insertions.isEmpty && change.deletions.isEmpty)
            }

            // A move: the second card now sorts between the last two.
            let moving = ids[1]
            let moved = {
                var moved = shape.make(moving, 55)
                moved.title = card(moving).title
                return moved
            }()
            change = try await step { tx in try tx.update(moved) }
            #expect(change.deletions == [1] && change.deletedKeys == [moving])
            #expect(change.insertions == [6] && change.insertedKeys == [moving])
            #expect(change.modifications.isEmpty)
            ids = previous.map(\.id)

            for (position, id) in [(0, ids[0]), (1, ids[2]), (5, ids.last!)] {
                change = try await step { tx in _ = try tx.delete(Card.self, primaryKey: id) }
                #expect(change.deletions == [position] && change.deletedKeys == [id])
                #expect(change.insertions.isEmpty && change.modifications.isEmpty)
            }
            ids = previous.map(\.id)
            #expect(ids.count == 5)

            if let excluded = shape.excluded {
                // A card leaves the results by a change, another enters them.
                let leaving = ids[2]
                change = try await step { tx in try tx.update(excluded(leaving)) }
                #expect(change.deletions == [2] && change.deletedKeys == [leaving])
                #expect(change.insertions.isEmpty)
                let entering = shape.make(100, 45)
                change = try await step { tx in
                    _ = try tx.delete(Card.self, primaryKey: 100)
                    try tx.insert(entering)
                }
                #expect(change.insertedKeys == [entering.id])
                #expect(change.insertions == [2])
            }
            let count = previous.count
            try await db.write { tx in try tx.deleteAll(Pin.self) }
            await db.observationsSettled()
            change = try await step { tx in try tx.deleteAll(Card.self) }
            #expect(change.results.isEmpty)
            #expect(change.deletions == Array(0 ..< count))
            follower.task.cancel()
        }
    }

    /// A limited query: a card entering the window pushes the last one
    /// out; a card deleted in the window lets the next one in; writes
    /// beyond the window give nothing.
    @Test(arguments: [true, false]) func limitedResultsFollowTheirWindow(ascending: Bool) async throws {
        let db = try Observing.open(folder.path())
        let sign = ascending ? 1 : -1
        let shape = OrderedShape(
            testDescription: "limit", query: { $0.sorted(by: \.score, ascending: ascending).limit(3) },
            make: { Card(id: $0, score: sign * $1) }, excluded: nil, sameOrder: { $0.score == $1.score })
        try await withTimeout {
            try await db.write { tx in for id in 1 ... 5 { try tx.insert(shape.make(id, id * 10)) } }
            var follower = Follower(db.observe(Card.self, shape.query))
            var previous = Array(try #require(try await follower.next()).results)
            #expect(previous.map(\.id) == [1, 2, 3])

            func step(_ write: @escaping @Sendable (WriteTransaction) throws -> Void) async throws -> QueryChange<Card>
            {
                try await db.write(write)
                let change = try await expectNext(&follower, after: previous, in: db, shape)
                previous = Array(change.results)
                return change
            }
            // Beyond the window: an insert, a modification, a delete.
            try await db.write { tx in try tx.insert(shape.make(9, 90)) }
            await db.observationsSettled()
            try await db.write { tx in try tx.update(Card(id: 4, score: sign * 40, title: "changed")) }
            await db.observationsSettled()
            try await db.write { tx in _ = try tx.delete(Card.self, primaryKey: 5) }
            await db.observationsSettled()

            var change = try await step { tx in try tx.insert(shape.make(6, 5)) }
            #expect(change.insertions == [0] && change.insertedKeys == [6])
            #expect(change.deletions == [2] && change.deletedKeys == [3])
            change = try await step { tx in try tx.insert(shape.make(7, 15)) }
            #expect(change.insertions == [2] && change.deletions == [2])
            #expect(previous.map(\.id) == [6, 1, 7])
            change = try await step { tx in _ = try tx.delete(Card.self, primaryKey: 6) }
            #expect(change.deletions == [0] && change.insertions == [2] && change.insertedKeys == [2])
            change = try await step { tx in try tx.update(Card(id: 7, score: sign * 15, title: "in the window")) }
            #expect(change.modifications == [1] && change.modifiedKeys == [7])
            // A move out of the window and the next one in.
            change = try await step { tx in try tx.update(Card(id: 1, score: sign * 100)) }
            #expect(change.deletions == [0] && change.deletedKeys == [1])
            #expect(change.insertions == [2] && change.insertedKeys == [3])
            #expect(previous.map(\.id) == [7, 2, 3])
            follower.task.cancel()
        }
    }

    /// Commits made while the consumer is away give one element that
    /// describes them all against the element before.
    @Test func commitsWhileTheConsumerIsAwayComeAsOneElement() async throws {
        let db = try Observing.open(folder.path())
        try await withTimeout {
            try await db.write { tx in for id in 1 ... 5 { try tx.insert(Card(id: id, score: id * 10)) } }
            var iterator = db.observe(Card.self) { $0.sorted(by: \.score) }.makeAsyncIterator()
            let first = try #require(try await iterator.next())
            try await db.write { tx in try tx.insert(Card(id: 6, score: 5)) }
            try await db.write { tx in _ = try tx.delete(Card.self, primaryKey: 3) }
            try await db.write { tx in try tx.update(Card(id: 5, score: 50, title: "five")) }
            try await db.write { tx in try tx.insert(Pin(id: 1)) }
            try await db.write { tx in try tx.update(Card(id: 1, score: 45)) }
            try await db.write { tx in try tx.insert(Card(id: 7, score: 1)) }
            try await db.write { tx in _ = try tx.delete(Card.self, primaryKey: 7) }
            let newest = try Observing.newestTransaction(db)
            let change = try #require(try await iterator.next())
            expectListsReproduce(change, from: Array(first.results), id: \.id, sameOrder: { $0.score == $1.score })
            #expect(change.transactionID == newest)
            #expect(change.results.map(\.id) == [6, 2, 4, 1, 5])
            #expect(change.deletions == [0, 2] && change.deletedKeys == [1, 3])
            #expect(change.insertions == [0, 3] && change.insertedKeys == [6, 1])
            #expect(change.modifications == [4] && change.modificationsInPrevious == [4] && change.modifiedKeys == [5])
        }
    }
}
