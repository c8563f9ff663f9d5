import Foundation
import Testing

@testable import Strata

@Model(name: "Task")
struct Chore: Equatable {
    @PrimaryKey var id: Int
    var title: String
    @Indexed var priority: Int = 0
    var done: Bool = false
}

@Model(name: "Note")
struct Memo: Equatable {
    @PrimaryKey var id: Int
    var text: String
}

@Suite(.temporaryFolder) struct ObservationTests {
    let folder = TemporaryFolder.current

    func open() throws -> Database {
        var config = Database.Configuration(path: folder.path(), models: [Chore.self, Memo.self])
        config.durability = .noSync
        return try Database(configuration: config)
    }

    @Test func initialThenOneElementPerRelevantCommit() async throws {
        let db = try open()
        try await db.write { tx in
            try tx.insert(Chore(id: 1, title: "a"))
            try tx.insert(Chore(id: 3, title: "c"))
        }
        var iterator = db.observe(Chore.self).makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.isInitial)
        #expect(first.results.map(\.id) == [1, 3])
        try await db.write { tx in try tx.insert(Memo(id: 1, text: "unrelated")) }
        try await db.write { tx in try tx.insert(Chore(id: 2, title: "b")) }
        let second = try #require(try await iterator.next())
        #expect(!second.isInitial)
        #expect(second.results.map(\.id) == [1, 2, 3])
        #expect(second.insertions == [1])
        #expect(second.insertedKeys == [2])
        #expect(second.deletions.isEmpty && second.modifications.isEmpty)
        try await db.write { tx in try tx.update(Chore(id: 3, title: "C")) }
        let third = try #require(try await iterator.next())
        #expect(third.modifications == [2])
        #expect(third.modificationsInPrevious == [2])
        #expect(third.modifiedKeys == [3])
        try await db.write { tx in _ = try tx.delete(Chore.self, primaryKey: 1) }
        let fourth = try #require(try await iterator.next())
        #expect(fourth.deletions == [0])
        #expect(fourth.deletedKeys == [1])
        #expect(fourth.results.map(\.id) == [2, 3])
        #expect(db.observationCount == 1)
    }

    @Test func objectObservation() async throws {
        let db = try open()
        var iterator = db.observe(Chore.self, primaryKey: 7).makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.kind == .initial && first.object == nil)
        try await db.write { tx in try tx.insert(Chore(id: 7, title: "x")) }
        let inserted = try #require(try await iterator.next())
        #expect(inserted.kind == .inserted && inserted.object?.title == "x")
        try await db.write { tx in try tx.update(Chore(id: 7, title: "x", priority: 2, done: true)) }
        let modified = try #require(try await iterator.next())
        #expect(modified.kind == .modified)
        #expect(modified.changedProperties == ["priority", "done"])
        try await db.write { tx in _ = try tx.delete(Chore.self, primaryKey: 7) }
        let deleted = try #require(try await iterator.next())
        #expect(deleted.kind == .deleted && deleted.object == nil)
    }

    @Test func closingFinishesTheSequence() async throws {
        let db = try open()
        var iterator = db.observe(Chore.self).makeAsyncIterator()
        _ = try await iterator.next()
        db.close()
        #expect(try await iterator.next() == nil)
        #expect(db.observationCount == 0)
    }
}

/// A main-actor consumer, as an app's view model is: it compiles without
/// warnings under Swift 6 and receives elements on the main actor.
@MainActor final class ChoreListModel {
    private(set) var titles: [String] = []

    /// Follows the chores sorted by title for `elements` elements, calling
    /// `received` after each.
    func follow(_ db: Database, elements: Int, received: @MainActor () -> Void = {}) async throws {
        var count = 0
        for try await change in db.observe(Chore.self, { $0.sorted(by: \.title) }) {
            titles = change.results.map(\.title)
            received()
            count += 1
            if count == elements { return }
        }
    }
}

@Suite(.temporaryFolder) struct MainActorObservationTests {
    let folder = TemporaryFolder.current

    // On the main actor, shared with every other main-actor test: in a full
    // run it takes 45 s here, and two to four and a half minutes under
    // ThreadSanitizer on a loaded machine.
    @Test(.timeLimit(.minutes(10))) @MainActor func aMainActorModelFollowsAQuery() async throws {
        var config = Database.Configuration(path: folder.path(), models: [Chore.self, Memo.self])
        config.durability = .noSync
        let db = try Database(configuration: config)
        try await db.write { tx in try tx.insert(Chore(id: 1, title: "b")) }
        let model = ChoreListModel()
        let (elements, element) = AsyncStream<Void>.makeStream()
        let following = Task { @MainActor in try await model.follow(db, elements: 2) { element.yield() } }
        // The first element first: a write committed before the
        // observation reads it would be in that element, and no second
        // one would come.
        var delivered = elements.makeAsyncIterator()
        _ = await delivered.next()
        #expect(model.titles == ["b"])
        try await db.write { tx in try tx.insert(Chore(id: 2, title: "a")) }
        try await following.value
        #expect(model.titles == ["a", "b"])
    }
}
