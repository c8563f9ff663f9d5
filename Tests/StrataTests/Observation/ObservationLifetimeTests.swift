import Dispatch
import Foundation
import Testing

@testable import Strata

/// Ending an observation, in every way a consumer can, releases it.
@Suite(.temporaryFolder) struct ObservationLifetimeTests {
    let folder = TemporaryFolder.current

    func expectReleased(_ db: Database, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(db.observationCount == 0, sourceLocation: sourceLocation)
        #expect(db.environment.feed.listenerCount == 0, sourceLocation: sourceLocation)
    }

    /// Waits until the observations of `db` have ended (a guard bounds it).
    func released(_ db: Database) async {
        while db.observationCount > 0 || db.environment.feed.listenerCount > 0, !Task.isCancelled {
            await Task.yield()
        }
    }

    @Test func cancellingTheTaskEndsTheObservation() async throws {
        let db = try Observing.open(folder.path())
        try await withTimeout {
            let (started, signal) = AsyncStream.makeStream(of: Void.self)
            let task = Task {
                var count = 0
                for try await _ in db.observe(Card.self) {
                    count += 1
                    signal.yield()
                }
                return count
            }
            var iterator = started.makeAsyncIterator()
            _ = await iterator.next()
            #expect(db.observationCount == 1)
            #expect(db.environment.feed.listenerCount == 1)
            task.cancel()
            let count = try await task.value
            #expect(count == 1)
            expectReleased(db)
        }
    }

    @Test func leavingTheLoopEndsTheObservation() async throws {
        let db = try Observing.open(folder.path())
        try await withTimeout {
            for try await change in db.observe(Card.self, primaryKey: 1) {
                #expect(change.kind == .initial)
                #expect(db.observationCount == 1)
                break
            }
            expectReleased(db)
            for try await _ in db.observe(Card.self) {
                try await db.write { tx in try tx.insert(Card(id: 1)) }
                break
            }
            expectReleased(db)
        }
    }

    @Test func droppingTheIteratorEndsTheObservation() async throws {
        let db = try Observing.open(folder.path())
        try await withTimeout {
            do {
                var query = db.observe(Card.self).makeAsyncIterator()
                var object = db.observe(Card.self, primaryKey: 1).makeAsyncIterator()
                #expect(db.observationCount == 2)
                _ = try await query.next()
                _ = try await object.next()
                #expect(db.observationCount == 2)
            }
            expectReleased(db)
            // An iterator never asked for an element counts too.
            do {
                let iterator = db.observe(Card.self).makeAsyncIterator()
                #expect(db.observationCount == 1)
                _ = iterator
            }
            expectReleased(db)
        }
    }

    /// A token stops its observation when cancelled or released, and after
    /// `cancel()` returns no callback runs, even while commits keep coming.
    @Test(arguments: [true, false]) func tokensStopTheirObservation(onQueue: Bool) async throws {
        let db = try Observing.open(folder.path())
        try await withTimeout {
            let queue = onQueue ? DispatchQueue(label: "observer") : nil
            let (received, signal) = AsyncStream.makeStream(of: Int.self)
            let cancelled = Flag()
            let lateCalls = Counter()
            let token = db.observe(Card.self).subscribe(on: queue) { change in
                if cancelled.isSet { lateCalls.increment() }
                signal.yield(change.results.count)
            }
            var counts = received.makeAsyncIterator()
            #expect(await counts.next() == 0)
            try await db.write { tx in try tx.insert(Card(id: 1)) }
            #expect(await counts.next() == 1)
            let writer = Task.detached {
                try await offThePool {
                    for index in 2 ..< 2_000 { try db.write { tx in try tx.insert(Card(id: index)) } }
                }
            }
            // Cancel in the middle of the burst.
            // A finished stream (the guard cancelled the test) ends the loop.
            while let count = await counts.next(), count < 20 {}
            token.cancel()
            cancelled.set()
            try await writer.value
            await db.observationsSettled()
            queue?.sync {}
            #expect(lateCalls.value == 0)
            await released(db)
            expectReleased(db)

            let calls = Counter()
            var kept: ObservationToken? = db.observe(Card.self, primaryKey: 1).subscribe(on: queue) { _ in
                calls.increment()
                signal.yield(-1)
            }
            while let count = await counts.next(), count != -1 {}
            #expect(db.observationCount == 1)
            _ = kept
            kept = nil
            await released(db)
            expectReleased(db)
            try await db.write { tx in try tx.update(Card(id: 1, title: "after release")) }
            await db.observationsSettled()
            queue?.sync {}
            #expect(calls.value == 1)
        }
    }

    /// Closing the database ends every sequence normally, and observing a
    /// closed database fails with `.closed`.
    @Test func closingEndsEverySequence() async throws {
        let db = try Observing.open(folder.path())
        try await withTimeout {
            var waiting = Follower(db.observe(Card.self) { $0.sorted(by: \.rank) })
            var object = Follower(db.observe(Card.self, primaryKey: 1))
            var idle = db.observe(Card.self).makeAsyncIterator()
            _ = try await waiting.next()
            _ = try await object.next()
            _ = try await idle.next()
            #expect(db.observationCount == 3)
            db.close()
            #expect(try await waiting.next() == nil)
            #expect(try await object.next() == nil)
            #expect(try await idle.next() == nil)
            #expect(try await idle.next() == nil)
            expectReleased(db)

            var late = db.observe(Card.self).makeAsyncIterator()
            do {
                _ = try await late.next()
                Issue.record("observing a closed database gave an element")
            } catch let error as StrataError {
                #expect(error.code == .closed)
            }
            #expect(try await late.next() == nil)
            var lateObject = db.observe(Card.self, primaryKey: 1).makeAsyncIterator()
            await #expect(throws: StrataError.self) { try await lateObject.next() }
            expectReleased(db)
        }
    }
}

/// Consumes observations in an actor's isolation: compiles without
/// warnings in Swift 6 mode.
actor Scoreboard {
    private(set) var totals: [Int] = []

    func follow(_ db: Database) async throws {
        var changes = db.observe(Card.self) { $0.where(\.score, in: 1...) }.makeAsyncIterator()
        while let change = try await changes.next() {
            totals.append(change.results.reduce(0) { $0 + $1.score })
            if totals.count == 2 { break }
            try await db.write { tx in try tx.insert(Card(id: 1, score: 5)) }
        }
    }
}

@Suite(.temporaryFolder) struct ObservationIsolationTests {
    let folder = TemporaryFolder.current

    @Test func anActorConsumesAnObservation() async throws {
        let db = try Observing.open(folder.path())
        try await withTimeout {
            let board = Scoreboard()
            try await board.follow(db)
            #expect(await board.totals == [0, 5])
            #expect(db.observationCount == 0)
        }
    }

    @MainActor @Test func theMainActorConsumesAnObservation() async throws {
        let db = try Observing.open(folder.path())
        try await db.write { tx in try tx.insert(Card(id: 1, score: 5)) }
        var titles: [String] = []
        for try await change in db.observe(Card.self, primaryKey: 1) {
            titles.append(change.object?.title ?? "")
            if titles.count == 2 { break }
            try await db.write { tx in try tx.update(Card(id: 1, score: 5, title: "main")) }
        }
        #expect(titles == ["", "main"])
        #expect(db.observationCount == 0)
    }
}
