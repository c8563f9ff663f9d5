import Foundation
import Testing

@testable import Strata

/// Commits of other `Database` instances and other processes reach an
/// observation; a schema change by them ends it.
@Suite(.temporaryFolder) struct ObservationAcrossWritersTests {
    let folder = TemporaryFolder.current

    /// Another `Database` on the same file in this process: its commits
    /// are evaluated at once, without looking for external changes.
    @Test func anotherDatabaseInThisProcessIsSeenAtOnce() async throws {
        let path = folder.path()
        let db = try Observing.open(path)
        let other = try Observing.open(path)
        try await withTimeout {
            var follower = Follower(db.observe(Card.self) { $0.sorted(by: \.score) })
            let first = try #require(try await follower.next())
            try await other.write { tx in try tx.insert(Pin(id: 1)) }
            await db.observationsSettled()
            try await other.write { tx in try tx.insert(Card(id: 1, score: 3)) }
            let change = try #require(try await follower.next())
            expectListsReproduce(change, from: Array(first.results), id: \.id)
            #expect(change.insertedKeys == [1])
            #expect(change.transactionID == (try Observing.newestTransaction(other)))
            try await other.write { tx in try tx.update(Card(id: 1, score: 3, title: "t")) }
            let modified = try #require(try await follower.next())
            #expect(modified.modifiedKeys == [1] && modified.modifications == [0])
            follower.task.cancel()
        }
    }

    /// Another process's commits reach the observation when asked to look.
    @Test func anotherProcessIsSeenOnCheckForExternalChanges() async throws {
        let path = folder.path()
        let db = try Observing.open(path)
        try await db.write { tx in try tx.insert(Card(id: 1, score: 10)) }
        try await withTimeout {
            var iterator = db.observe(Card.self) { $0.sorted(by: \.score) }.makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(!db.checkForExternalChanges())
            await #expect(processExitsWith: .success) { [path = path as String] in
                let db = try Observing.open(path)
                try db.write { tx in
                    try tx.insert(Card(id: 2, score: 5))
                    try tx.update(Card(id: 1, score: 10, title: "child"))
                }
            }
            #expect(db.checkForExternalChanges())
            let change = try #require(try await iterator.next())
            expectListsReproduce(change, from: Array(first.results), id: \.id)
            #expect(change.results.map(\.id) == [2, 1])
            #expect(change.insertions == [0] && change.insertedKeys == [2])
            #expect(change.modifications == [1] && change.modificationsInPrevious == [0])
            #expect(change.transactionID == (try Observing.newestTransaction(db)))
            #expect(!db.checkForExternalChanges())
        }
    }

    /// Another process commits, then this process commits before anyone
    /// looks: the local commit's id is past a gap, so the observation runs
    /// its query again and the other process's changes are in the element.
    @Test func aLocalCommitAfterAnUnseenExternalOneBringsBoth() async throws {
        let path = folder.path()
        let db = try Observing.open(path)
        try await db.write { tx in try tx.insert(Card(id: 1, score: 10)) }
        try await withTimeout {
            var iterator = db.observe(Card.self) { $0.sorted(by: \.score) }.makeAsyncIterator()
            let first = try #require(try await iterator.next())
            await #expect(processExitsWith: .success) { [path = path as String] in
                let db = try Observing.open(path)
                try db.write { tx in try tx.insert(Card(id: 2, score: 5)) }
            }
            try await db.write { tx in try tx.insert(Card(id: 3, score: 20)) }
            var change = try #require(try await iterator.next())
            var previous = Array(first.results)
            // The local commit's publication and the gap may come as one
            // element or two; the last one holds both commits.
            while change.results.count < 3 {
                expectListsReproduce(change, from: previous, id: \.id)
                previous = Array(change.results)
                change = try #require(try await iterator.next())
            }
            expectListsReproduce(change, from: previous, id: \.id)
            #expect(change.results.map(\.id) == [2, 1, 3])
            #expect(!db.checkForExternalChanges())
        }
    }

    /// A write transaction that writes nothing takes no id in LMDB: it must
    /// not hide the next commit of another process, which takes that id.
    @Test func anEmptyWriteDoesNotHideTheNextExternalCommit() async throws {
        let path = folder.path()
        let db = try Observing.open(path)
        try await db.write { tx in try tx.insert(Card(id: 1, score: 10)) }
        try await withTimeout {
            var iterator = db.observe(Card.self, primaryKey: 2).makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(first.object == nil)
            let before = try Observing.newestTransaction(db)
            try await db.write { _ in }
            #expect(try Observing.newestTransaction(db) == before)
            await #expect(processExitsWith: .success) { [path = path as String] in
                let db = try Observing.open(path)
                try db.write { tx in try tx.insert(Card(id: 2, score: 5)) }
            }
            #expect(db.checkForExternalChanges())
            let change = try #require(try await iterator.next())
            #expect(change.kind == .inserted && change.object?.score == 5)
        }
    }

    /// The poller notices another process's commits without being asked.
    @Test func anotherProcessIsSeenByThePoller() async throws {
        let path = folder.path()
        let db = try Observing.open(path, checkInterval: .milliseconds(20))
        try await withTimeout {
            var iterator = db.observe(Card.self, primaryKey: 1).makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(first.object == nil)
            await #expect(processExitsWith: .success) { [path = path as String] in
                let db = try Observing.open(path)
                try db.write { tx in try tx.insert(Card(id: 1, title: "from a child")) }
            }
            let change = try #require(try await iterator.next())
            #expect(change.kind == .inserted && change.object?.title == "from a child")
        }
    }

    /// Another `Database` in this process opening the file with a newer
    /// schema ends the observation with `.schemaChanged`; the new one's
    /// observations never see the migration's writes.
    @Test func aMigrationByAnotherDatabaseEndsTheObservation() async throws {
        let path = folder.path()
        let db = try Observing.open(path)
        try await db.write { tx in for id in 1 ... 3 { try tx.insert(Card(id: id, score: id)) } }
        try await withTimeout {
            var follower = Follower(db.observe(Card.self))
            _ = try #require(try await follower.next())
            let migrated = try Database(
                configuration: Observing.configuration(path, version: 2, models: [CardV2.self, Pin.self]))
            var newer = migrated.observe(CardV2.self).makeAsyncIterator()
            let start = try #require(try await newer.next())
            #expect(start.results.map(\.id) == [1, 2, 3])
            do {
                let element = try await follower.next()
                Issue.record(
                    "the observation went on after a migration: \(String(describing: element?.results.map(\.id)))")
            } catch let error as StrataError {
                #expect(error.code == .schemaChanged, "\(error)")
            }
            try await migrated.write { tx in try tx.insert(CardV2(id: 4, note: "new")) }
            let next = try #require(try await newer.next())
            #expect(next.insertedKeys == [4] && next.deletions.isEmpty && next.modifications.isEmpty)
            #expect(next.transactionID == (try Observing.newestTransaction(migrated)))
        }
    }

    /// Another process changing the schema ends the observation with
    /// `.schemaChanged`.
    @Test func aMigrationByAnotherProcessEndsTheObservation() async throws {
        let path = folder.path()
        let db = try Observing.open(path)
        try await db.write { tx in try tx.insert(Card(id: 1)) }
        try await withTimeout {
            var query = db.observe(Card.self).makeAsyncIterator()
            var object = db.observe(Card.self, primaryKey: 1).makeAsyncIterator()
            _ = try await query.next()
            _ = try await object.next()
            await #expect(processExitsWith: .success) { [path = path as String] in
                _ = try Database(
                    configuration: Observing.configuration(path, version: 2, models: [CardV2.self, Pin.self]))
            }
            #expect(db.checkForExternalChanges())
            let queryError = await #expect(throws: StrataError.self) { _ = try await query.next() }
            #expect(queryError?.code == .schemaChanged)
            let objectError = await #expect(throws: StrataError.self) { _ = try await object.next() }
            #expect(objectError?.code == .schemaChanged)
            do {
                var fresh = db.observe(Card.self).makeAsyncIterator()
                _ = try await fresh.next()
                Issue.record("a new observation started on a changed schema")
            } catch let error as StrataError {
                #expect(error.code == .schemaChanged, "\(error)")
            }
            #expect(db.observationCount == 0)
        }
    }
}
