import Foundation
import Testing

@testable import Strata

/// How an update shares the results tree: a change copies at most one
/// root-to-leaf path, and none while no element holds the tree.
@Suite struct ObservedResultsTests {
    /// Results in primary-key order over keys 0, 2, 4, …; each value a
    /// box of its key.
    static func results(_ count: Int) -> ObservedResults {
        let order = QueryOrder(position: nil, ascending: true)
        let entries = (0 ..< count).map { (key: resultKey(2 * $0), value: TypedBox(2 * $0) as ResultBox) }
        return ObservedResults(order: order, sorted: entries)
    }

    static func resultKey(_ key: Int) -> ResultKey {
        ResultKey(
            value: nil, key: withUnsafeBytes(of: UInt64(key).bigEndian) { Array($0) },
            order: QueryOrder(position: nil, ascending: true))
    }

    /// Every node of `tree`, by identity.
    static func nodes(_ tree: RankedTree<ResultKey, ResultBox>) -> Set<ObjectIdentifier> {
        var found: Set<ObjectIdentifier> = []
        var stack = tree.root.map { [$0] } ?? []
        while let node = stack.popLast() {
            found.insert(ObjectIdentifier(node))
            stack += node.children
        }
        return found
    }

    static func depth(_ tree: RankedTree<ResultKey, ResultBox>) -> Int {
        var depth = 0
        var node = tree.root
        while let current = node {
            depth += 1
            node = current.children.first
        }
        return depth
    }

    /// A one-value change of 10,000 values, as one object's update makes.
    static func modification(_ results: ObservedResults, key: Int, value: Int) -> ResultsEdit {
        var edit = ResultsEdit()
        let old = results.entry(forKey: resultKey(key).key)
        edit.note(key: resultKey(key).key, old: old, new: (resultKey(key), TypedBox(value))) { _, _ in false }
        return edit
    }

    @Test func anUpdateOfUnsharedResultsCopiesNoNode() {
        var results = Self.results(10_000)
        let before = Self.nodes(results.tree)
        let diff = results.apply(Self.modification(results, key: 5_000, value: -1))
        #expect(diff.modifications.map(\.position) == [2_500])
        #expect(diff.modifications.map(\.before) == [2_500])
        #expect(Self.nodes(results.tree) == before)
        #expect(TypedBox<Int>.model(of: results.tree[2_500].value) == -1)
    }

    @Test(arguments: [false, true])
    func anUpdateOfHeldResultsCopiesOnePathAndLeavesTheHeldOnesAlone(moves: Bool) {
        var results = Self.results(10_000)
        let held = results.tree
        let before = Self.nodes(held)
        var edit = Self.modification(results, key: 5_000, value: -1)
        if moves {
            // The value leaves one leaf and enters another.
            edit = ResultsEdit()
            edit.note(
                key: Self.resultKey(5_000).key, old: results.entry(forKey: Self.resultKey(5_000).key),
                new: (Self.resultKey(19_001), TypedBox(-1)), sameValues: { _, _ in false })
        }
        let diff = results.apply(edit)
        let after = Self.nodes(results.tree)
        // The new tree shares every node but one path (two when a value
        // moves between leaves) with the held one.
        let copied = after.subtracting(before).count
        if moves {
            // Two paths at most, and the leaf that the insertion split.
            #expect(copied >= Self.depth(held) && copied <= 2 * Self.depth(held) + 1)
        } else {
            #expect(copied == Self.depth(held))
            #expect(before.subtracting(after).count == copied)
        }
        #expect(held.count == 10_000)
        #expect(TypedBox<Int>.model(of: held[2_500].value) == 5_000)
        #expect(held.map { TypedBox<Int>.model(of: $0.value) } == (0 ..< 10_000).map { 2 * $0 })
        if moves {
            #expect(diff.deletions.map(\.position) == [2_500])
            #expect(diff.insertions.map(\.position) == [9_500])
        } else {
            #expect(diff.modifications.map(\.position) == [2_500])
        }
    }

    @Test func deletionsAreCountedInThePreviousValuesAndInsertionsInTheNewOnes() {
        var results = Self.results(100)
        var edit = ResultsEdit()
        for key in [10, 20] {
            edit.note(key: Self.resultKey(key).key, old: results.entry(forKey: Self.resultKey(key).key), new: nil) {
                _, _ in false
            }
        }
        edit.note(key: Self.resultKey(11).key, old: nil, new: (Self.resultKey(11), TypedBox(11))) { _, _ in false }
        let thirty = Self.resultKey(30)
        edit.note(key: thirty.key, old: results.entry(forKey: thirty.key), new: (thirty, TypedBox(-30))) { _, _ in false
        }
        let diff = results.apply(edit)
        #expect(diff.deletions.map(\.position) == [5, 10])
        #expect(diff.insertions.map(\.position) == [5])
        #expect(diff.modifications.map(\.position) == [14])
        #expect(diff.modifications.map(\.before) == [15])
        #expect(results.tree.count == 99)
    }
}

/// A result key's shortcut (precomputed bits of its value and key)
/// orders exactly as the query's walk does.
@Suite struct ResultKeyOrderTests {
    static let values: [Value?] = [
        nil, .null, .int(.min), .int(-1), .int(0), .int(1), .int(.max), .double(-.infinity), .double(-1.5),
        .double(-0.0), .double(0.0), .double(2.5), .double(.infinity), .double(.nan),
        .date(Date(timeIntervalSince1970: 0)),
        .date(Date(timeIntervalSince1970: 1e9)), .string(""), .string("a"), .string("ab"), .bool(false), .bool(true),
    ]
    static let keys: [[UInt8]] = [
        [], [0], [1], [1, 0], [1, 2], [0, 0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 1, 0],
        [0, 0, 0, 0, 0, 0, 0, 1, 9], [255, 255, 255, 255, 255, 255, 255, 255, 0], [128, 0, 0, 0, 0, 0, 0, 0],
    ]

    @Test(arguments: [true, false])
    func resultKeysOrderAsTheQueryOrderCompares(ascending: Bool) {
        var mismatches: [String] = []
        for a in Self.values {
            for b in Self.values {
                for x in Self.keys {
                    for y in Self.keys {
                        let order = QueryOrder(position: 0, ascending: ascending)
                        let expected = x.withUnsafeBytes { x in y.withUnsafeBytes { order.compare(a, x, b, $0) } }
                        let sign = (ascending ? expected : -expected).signum()
                        let first = ResultKey(value: a, key: x, order: order)
                        let second = ResultKey(value: b, key: y, order: order)
                        let got = first < second ? -1 : (first == second ? 0 : 1)
                        if got != sign {
                            mismatches.append("\(String(describing: a)) \(x) vs \(String(describing: b)) \(y)")
                        }
                    }
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
    }
}

@Suite(.temporaryFolder) struct ObservedQueryDescriptionTests {
    let folder = TemporaryFolder.current

    @Test func theQueryClosureRunsOncePerObservation() async throws {
        let db = try Observing.open(folder.path())
        let runs = RunCounter()
        try await withTimeout {
            var changes = db.observe(Card.self) { query in
                runs.add()
                return query.where(\.score, in: 1 ... 100).sorted(by: \.rank)
            }.makeAsyncIterator()
            #expect(try await changes.next()?.results.isEmpty == true)
            for id in 1 ... 3 {
                try await db.write { tx in try tx.insert(Card(id: id, score: id, rank: -id)) }
                #expect(try await changes.next()?.results.map(\.id) == Array((1 ... id).reversed()))
            }
            try await db.write { tx in try tx.insert(Card(id: 9, score: 500)) }
            try await db.write { tx in try tx.update(Card(id: 2, score: 2, rank: -9)) }
            #expect(try await changes.next()?.results.map(\.id) == [2, 3, 1])
        }
        #expect(runs.count == 1)
    }

    /// Each update changes the results in place when the consumer dropped
    /// the previous element, and each element is read as soon as it is
    /// handed over, on the consumer's thread: under the thread sanitizer,
    /// this checks that the evaluation's writes (new nodes and nodes
    /// changed in place) are ordered before those reads. Elements kept
    /// across later updates stay as they were.
    @Test func handedOverResultsAreReadAfterTheUpdateAndNeverChangeLater() async throws {
        let db = try Observing.open(folder.path())
        try await withTimeout {
            var changes = db.observe(Card.self) { $0.where(\.score, in: 1 ... 1_000).sorted(by: \.rank) }
                .makeAsyncIterator()
            #expect(try await changes.next()?.results.isEmpty == true)
            var kept: [(results: QueryResults<Card>, ids: [Int], titles: [String])] = []
            for round in 1 ... 30 {
                // A value added (into an empty tree at first), and from the
                // fourth round an earlier one changed in place as well.
                try await db.write { tx in
                    try tx.insert(Card(id: round, score: round, rank: -round))
                    if round > 3 {
                        try tx.update(Card(id: round / 2, score: round / 2, rank: -(round / 2), title: "\(round)"))
                    }
                }
                if round % 5 != 0 {
                    // Read at once, and dropped: the next update is in place.
                    #expect(try await changes.next()?.results.map(\.id) == Array((1 ... round).reversed()))
                    continue
                }
                let results = try #require(try await changes.next()).results
                kept.append((results, results.map(\.id), results.map(\.title)))
            }
            for (results, ids, titles) in kept {
                #expect(results.map(\.id) == ids)
                #expect(results.map(\.title) == titles)
            }
        }
    }
}

// @unchecked: `value` is read and written only while holding `lock`.
/// Counts the runs of a closure called from the observation queue.
final class RunCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func add() { lock.withLock { value += 1 } }

    var count: Int { lock.withLock { value } }
}
