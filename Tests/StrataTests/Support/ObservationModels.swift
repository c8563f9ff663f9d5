import Foundation
import Testing

@testable import Strata

/// The observation suites' main model: an indexed and a plain integer to
/// sort and filter by, and a plain string.
@Model(name: "Card")
struct Card: Equatable {
    @PrimaryKey var id: Int
    @Indexed var score: Int = 0
    var rank: Int = 0
    var title: String = ""
}

/// Another type in the same file, whose commits no `Card` observation may
/// report.
@Model(name: "Pin")
struct Pin: Equatable {
    @PrimaryKey var id: Int
    var text: String = ""
}

/// `Card` at schema version 2, with an added property.
@Model(name: "Card")
struct CardV2: Equatable {
    @PrimaryKey var id: Int
    @Indexed var score: Int = 0
    var rank: Int = 0
    var title: String = ""
    var note: String = ""
}

enum Observing {
    /// The configuration of the observation suites' file.
    static func configuration(
        _ path: String, version: UInt64 = 1, models: [any Model.Type] = [Card.self, Pin.self],
        checkInterval: Duration? = nil
    ) -> Database.Configuration {
        var config = Database.Configuration(path: path, schemaVersion: version, models: models)
        config.durability = .noSync
        config.externalChangeCheckInterval = checkInterval
        return config
    }

    /// Opens the observation suites' file.
    static func open(_ path: String, checkInterval: Duration? = nil) throws -> Database {
        try Database(configuration: configuration(path, checkInterval: checkInterval))
    }

    /// The newest transaction id of the file, as a read transaction sees it.
    static func newestTransaction(_ db: Database) throws -> Int {
        try db.read { $0.context.lmdb.id }
    }
}

/// A test ran out of time: a guard against a hang, never a wait for
/// correctness.
struct TimedOut: Error, CustomStringConvertible {
    let seconds: Int
    var description: String { "The test did not finish within \(seconds) s" }
}

/// Runs `body`, and cancels it when it has not finished after `seconds`
/// (a waiting observation then ends, and the test fails instead of
/// hanging).
func withTimeout(seconds: Int = 300, _ body: @escaping @Sendable () async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask {
            try await body()
            return true
        }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return false
        }
        defer { group.cancelAll() }
        guard try await group.next() == true else { throw TimedOut(seconds: seconds) }
    }
}

/// Checks that `change`'s lists describe how `previous` (the values of
/// the element before) became `change.results`: removing the values at
/// `deletions` (highest first), inserting the new values at `insertions`
/// (lowest first) and replacing those at `modifications` gives exactly
/// the results; every list is ascending, each key list names the values
/// at its positions, every modification changed a stored value, and a
/// value deleted and inserted again (a move) changed its place in the
/// order (`sameOrder` says whether two versions of a value sort alike).
func expectListsReproduce<M: Model & Sendable & Equatable>(
    _ change: QueryChange<M>, from previous: [M], id: (M) -> M.Key,
    sameOrder: (M, M) -> Bool = { _, _ in true }, sourceLocation: SourceLocation = #_sourceLocation
) where M.Key: Hashable & Sendable {
    let results = Array(change.results)
    for list in [change.deletions, change.insertions, change.modifications] {
        #expect(
            zip(list, list.dropFirst()).allSatisfy { $0 < $1 }, "\(list) is not ascending",
            sourceLocation: sourceLocation)
    }
    guard change.deletions.allSatisfy(previous.indices.contains),
        change.insertions.allSatisfy(results.indices.contains),
        change.modifications.allSatisfy(results.indices.contains),
        change.modificationsInPrevious.allSatisfy(previous.indices.contains),
        change.modifications.count == change.modificationsInPrevious.count
    else {
        Issue.record(
            "Positions out of range: \(change.lists) for \(previous.count) → \(results.count)",
            sourceLocation: sourceLocation)
        return
    }
    var rebuilt = previous
    for position in change.deletions.reversed() { rebuilt.remove(at: position) }
    for position in change.insertions { rebuilt.insert(results[position], at: min(position, rebuilt.count)) }
    for position in change.modifications where rebuilt.indices.contains(position) {
        rebuilt[position] = results[position]
    }
    #expect(
        rebuilt == results, "the lists \(change.lists) do not turn \(previous.map(id)) into \(results.map(id))",
        sourceLocation: sourceLocation)
    #expect(change.deletedKeys == change.deletions.map { id(previous[$0]) }, sourceLocation: sourceLocation)
    #expect(change.insertedKeys == change.insertions.map { id(results[$0]) }, sourceLocation: sourceLocation)
    #expect(change.modifiedKeys == change.modifications.map { id(results[$0]) }, sourceLocation: sourceLocation)
    for (now, before) in zip(change.modifications, change.modificationsInPrevious) {
        #expect(id(results[now]) == id(previous[before]), sourceLocation: sourceLocation)
        #expect(
            results[now] != previous[before], "\(id(results[now])) reported modified, unchanged",
            sourceLocation: sourceLocation)
    }
    let oldByKey = Dictionary(previous.map { (id($0), $0) }) { a, _ in a }
    let newByKey = Dictionary(results.map { (id($0), $0) }) { a, _ in a }
    for key in Set(change.deletedKeys).intersection(change.insertedKeys) {
        if let old = oldByKey[key], let new = newByKey[key] {
            #expect(
                !sameOrder(old, new), "\(key) was deleted and inserted without moving", sourceLocation: sourceLocation)
        }
    }
    #expect(
        !change.deletions.isEmpty || !change.insertions.isEmpty || !change.modifications.isEmpty,
        "an element that changes nothing", sourceLocation: sourceLocation)
}

extension QueryChange {
    /// The position lists, for messages.
    var lists: String { "-\(deletions) +\(insertions) ~\(modifications)/\(modificationsInPrevious)" }
}

/// Consumes an observation in a task of its own that always waits for the
/// next element, and hands the elements over in order: a commit that must
/// not give an element is then evaluated while a consumer waits, so an
/// element it wrongly gave would be the next one handed over.
struct Follower<Element: Sendable> {
    private var elements: AsyncThrowingStream<Element, any Error>.Iterator
    let task: Task<Void, Never>

    init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Element.self)
        elements = stream.makeAsyncIterator()
        task = Task {
            do {
                for try await element in sequence { continuation.yield(element) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
    }

    /// The next element the observation gave; nil once it ended.
    mutating func next() async throws -> Element? { try await elements.next() }
}

extension Database {
    /// Returns once the evaluations due on the observation queue now are done.
    func observationsSettled() async {
        await withCheckedContinuation { continuation in observers.queue.async { continuation.resume() } }
    }
}
