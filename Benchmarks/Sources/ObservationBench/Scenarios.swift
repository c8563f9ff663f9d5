import Foundation
import Strata

/// The observations of item 4 and of the commit latency of item 3.
enum Kind: String, CaseIterable {
    /// The whole type, in primary-key order.
    case whole
    /// One object by primary key.
    case object
    /// Sorted by the indexed `rank`; each write moves an object.
    case sortedIndexed = "sorted-indexed"
    /// Sorted by the plain `score`; each write moves an object.
    case sortedPlain = "sorted-plain"
    /// A range of the indexed `rank` and a `filter` closure.
    case rangeFilter = "range-filter"
    /// `sorted(by: \.rank).limit(50)`: re-run on every commit.
    case limit
    /// The whole type, after `checkForExternalChanges()` finds another
    /// process's one-object update: re-run and compared.
    case external

    var title: String {
        switch self {
        case .whole: "whole type"
        case .object: "object by key"
        case .sortedIndexed: "sorted(by: indexed)"
        case .sortedPlain: "sorted(by: plain)"
        case .rangeFilter: "where(range)+filter"
        case .limit: "sorted(indexed).limit(50)"
        case .external: "whole type, external commit"
        }
    }
}

/// The keys the one-object updates of `kind` write, in turn.
func updatedKeys(_ kind: Kind, n: Int) -> [Int] {
    switch kind {
    case .object:
        return [n / 2]
    case .rangeFilter:
        return (0 ..< n).lazy.filter { id in
            let rank = Item.rank(id, of: n)
            return rank >= n / 10 && rank < n / 10 * 6 && id % 1000 != 7
        }.prefix(1000).map { $0 }
    case .limit:
        return (0 ..< n).filter { Item.rank($0, of: n) < 50 }
    default:
        var generator = SystemRandomNumberGenerator()
        return (0 ..< 1000).map { _ in Int.random(in: 0 ..< n, using: &generator) }
    }
}

/// Starts one observation of `kind` per arrival, `count` of them.
func observations(_ kind: Kind, _ db: Database, n: Int) -> (Arrivals) -> [Task<Void, Never>] {
    { arrivals in
        switch kind {
        case .whole, .external: [consume(db.observe(Item.self), arrivals)]
        case .object: [consume(db.observe(Item.self, primaryKey: n / 2), arrivals)]
        case .sortedIndexed: [consume(db.observe(Item.self) { $0.sorted(by: \.rank) }, arrivals)]
        case .sortedPlain: [consume(db.observe(Item.self) { $0.sorted(by: \.score) }, arrivals)]
        case .rangeFilter:
            [
                consume(
                    db.observe(Item.self) { $0.where(\.rank, in: n / 10 ..< n / 10 * 6).filter { $0.name != "Item7" } },
                    arrivals)
            ]
        case .limit: [consume(db.observe(Item.self) { $0.sorted(by: \.rank).limit(50) }, arrivals)]
        }
    }
}

/// Commit→element latency of one observation of `kind` over `n` objects.
func latency(_ kind: Kind, n: Int, rounds: Int, folder: String) async throws -> LatencyResult {
    // Only the whole-type and object scenarios keep the ranks as made, so
    // only they reuse a file (the 1M one, slow to make).
    let db = try openItems(n, in: folder, reuse: kind == .whole || kind == .object)
    defer { db.close() }
    let keys = updatedKeys(kind, n: n)
    var generator = SystemRandomNumberGenerator()
    // Every update writes a score no object has, so that it changes the
    // observed values; sorted by score, it moves the object to a random
    // place.
    func score(_ round: Int) -> Int {
        kind == .sortedPlain ? (n + Int.random(in: 0 ..< n, using: &generator)) * 1000 + round % 1000 : Int(now())
    }
    if kind == .external {
        return try await measure(
            rounds: rounds, warmup: 3,
            prepare: { round in try childUpdate(folder: folder, n: n, id: keys[round % keys.count], score: score(round))
            },
            start: observations(kind, db, n: n),
            trigger: { _ in precondition(db.checkForExternalChanges(), "the child's commit was not found") })
    }
    return try await measure(
        rounds: rounds, start: observations(kind, db, n: n),
        trigger: { round in
            let rank = kind == .sortedIndexed ? Int.random(in: 0 ..< n, using: &generator) : nil
            try update(db, id: keys[round % keys.count], of: n, score: score(round), rank: rank)
        })
}

/// Runs this program again as another process that updates one object.
func childUpdate(folder: String, n: Int, id: Int, score: Int) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).absoluteURL
    process.arguments = ["child-update", folder, String(n), String(id), String(score)]
    try process.run()
    process.waitUntilExit()
    precondition(process.terminationStatus == 0, "the child process failed")
}

/// Item 2: 100 observations of mixed queries over `n` objects, and one
/// object's update that reaches them all.
func fanout(n: Int, rounds: Int, folder: String) async throws -> LatencyResult {
    let db = try openItems(n, in: folder)
    defer { db.close() }
    let key = n / 3
    let rank = Item.rank(key, of: n)
    return try await measure(
        rounds: rounds,
        start: { arrivals in
            (0 ..< 25).flatMap { i -> [Task<Void, Never>] in
                let low = max(0, rank - 40 * (i + 1))
                let high = rank + 1 + 30 * (i + 1)
                return [
                    consume(db.observe(Item.self), arrivals),
                    consume(db.observe(Item.self) { $0.where(\.rank, in: low ..< high) }, arrivals),
                    i % 2 == 0
                        ? consume(db.observe(Item.self) { $0.sorted(by: \.rank) }, arrivals)
                        : consume(db.observe(Item.self) { $0.sorted(by: \.score, ascending: false) }, arrivals),
                    consume(db.observe(Item.self, primaryKey: key), arrivals),
                ]
            }
        },
        trigger: { _ in try update(db, id: key, of: n, score: Int(now())) })
}

/// Item 5: nanoseconds per `checkForExternalChanges()` that finds nothing,
/// with one observation running.
func poll(calls: Int, folder: String) async throws -> Double {
    let db = try openItems(1000, in: folder)
    defer { db.close() }
    let arrivals = Arrivals()
    let task = consume(db.observe(Item.self, primaryKey: 1), arrivals)
    defer { task.cancel() }
    _ = await arrivals.wait(for: 1)
    for _ in 0 ..< 1000 { precondition(!db.checkForExternalChanges()) }
    let start = now()
    for _ in 0 ..< calls { precondition(!db.checkForExternalChanges()) }
    return Double(now() - start) / Double(calls)
}
