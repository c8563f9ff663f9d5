import Foundation
import Testing

@testable import Strata

/// A process that deletes parents, each cascading to many children and
/// grandchildren and nullifying list entries, one write transaction per
/// parent, killed with SIGKILL at seeded moments: after each kill the file
/// verifies, opens, and holds the state of one of the loop's commits,
/// whole (every parent still there has all its descendants, every deleted
/// one has none), with no link to a missing object.
///
/// `STRATA_CRASH_TRIALS` and `STRATA_CRASH_SEED` apply, as for
/// ``CrashTests``.
@Suite(.temporaryFolder) struct CascadeCrashTests {
    let folder = TemporaryFolder.current

    static let parents = 30
    static let childrenPerParent = 40
    static let grandchildrenPerChild = 2
    static let watchers = 3

    static let schema = Schema([
        ObjectSchema("Parent", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
        },
        ObjectSchema("Child", primaryKey: "id") {
            Property("id", .int)
            Property.link("parent", to: "Parent", onDelete: .cascade)
            Property.link("cousin", to: "Child")
            Property("name", .string)
        },
        ObjectSchema("Grandchild", primaryKey: "id") {
            Property("id", .int)
            Property.link("child", to: "Child", onDelete: .cascade)
        },
        ObjectSchema("Watcher", primaryKey: "id") {
            Property("id", .int)
            Property.list("watched", linksTo: "Parent")
        },
    ])

    static func configuration(_ path: String) -> Database.Configuration {
        var config = Fixtures.configuration(path, schema: schema)
        config.durability = .full
        return config
    }

    /// Child `c` of parent `p` has id `p * 1000 + c`; its cousin is the
    /// same child of the next parent (a link across parents, nullified when
    /// that parent goes first); watcher `w` watches the parents whose id
    /// is `w` modulo the number of watchers.
    static func seed(_ path: String) throws {
        let db = try Database(configuration: Fixtures.configuration(path, schema: schema))
        defer { db.close() }
        try db.write { tx throws in
            for p in 1 ... parents {
                try tx.insert("Parent", ["id": .int(Int64(p)), "name": .string("P\(p)")])
            }
            for p in 1 ... parents {
                for c in 1 ... childrenPerParent {
                    let id = Int64(p * 1000 + c)
                    try tx.insert(
                        "Child",
                        [
                            "id": .int(id), "parent": .link(.int(Int64(p))),
                            "name": .string(String(repeating: "c", count: 40)),
                        ])
                    for g in 1 ... grandchildrenPerChild {
                        try tx.insert("Grandchild", ["id": .int(id * 10 + Int64(g)), "child": .link(.int(id))])
                    }
                }
            }
            for p in 1 ..< parents {
                for c in 1 ... childrenPerParent {
                    try tx.update(
                        "Child", key: .int(Int64(p * 1000 + c)), ["cousin": .link(.int(Int64((p + 1) * 1000 + c)))])
                }
            }
            for w in 0 ..< watchers {
                let watched = (1 ... parents).filter { $0 % watchers == w }.map { Value.link(.int(Int64($0))) }
                try tx.insert("Watcher", ["id": .int(Int64(w)), "watched": .list(watched)])
            }
        }
    }

    /// Deletes the parents from the last to the first, one transaction
    /// each: deleting parent p cascades to its children and their
    /// grandchildren, nullifies the cousin links of the children of p - 1,
    /// which survive it, and drops p from its watcher's list. With
    /// `killingIn`, the process kills itself inside that transaction (0
    /// for the first), once its cascade is done and before it commits.
    static func deleteParents(_ db: Database, killingIn doomed: Int? = nil) throws {
        for (index, p) in (1 ... parents).reversed().enumerated() {
            try db.write { tx throws in
                #expect(try tx.delete("Parent", key: .int(Int64(p))))
                if index == doomed { killSelf() }
            }
        }
    }

    /// Checks a file the loop left, killed or not: verified, opened as it
    /// is, and in the state after some number of deletes, whole. Returns
    /// how many parents were left.
    static func check(_ path: String, _ label: String) throws -> Int {
        let verified = try FileVerifier.verify(path)
        #expect(verified.problems.isEmpty, "\(label): \(verified.problems)")
        let db = try Database(configuration: Fixtures.configuration(path, schema: schema))
        defer { db.close() }
        #expect(db.openingPlan.action == .open, "\(label)")
        #expect(try db.verify() == [], "\(label)")
        return try db.read { tx throws in
            let parents = try tx.objects("Parent").map { $0["id"].int! }
            let left = parents.count
            // The loop deletes from the last parent down: the first `left` remain.
            #expect(parents == (0 ..< left).map { Int64($0 + 1) }, "\(label)")
            let children = try tx.objects("Child").map { $0.values }
            #expect(children.count == left * childrenPerParent, "\(label)")
            for child in children {
                guard case .link(.int(let parent)) = child["parent"], case .int(let id) = child["id"] else {
                    Issue.record("\(label): a child without a parent: \(child)")
                    continue
                }
                #expect(parent >= 1 && parent <= Int64(left), "\(label): \(child)")
                // A cousin is there exactly when the next parent is.
                let cousin: Value = parent < Int64(left) ? .link(.int(id + 1000)) : .null
                #expect(child["cousin"] == cousin, "\(label): \(child)")
            }
            let grandchildren = try tx.objects("Grandchild").map { $0["child"] }
            #expect(grandchildren.count == left * childrenPerParent * grandchildrenPerChild, "\(label)")
            for link in grandchildren {
                guard case .link(let key) = link else {
                    Issue.record("\(label): a grandchild without a child")
                    continue
                }
                #expect(try tx.object("Child", key: key) != nil, "\(label): a grandchild's child is missing")
            }
            for watcher in try tx.objects("Watcher").map({ $0.values }) {
                let w = Int(watcher["id"]?.int ?? -1)
                let expected = (0 ..< left).map { $0 + 1 }.filter { $0 % watchers == w }.map {
                    Value.link(.int(Int64($0)))
                }
                #expect(watcher["watched"] == .list(expected), "\(label)")
            }
            return left
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func aLoopOfCascadingDeletesKilledAtAnyMomentLeavesAWholeCommit() async throws {
        let pristine = folder.path("pristine.strata")
        let reference = folder.path("finished.strata")
        let duration = try await offThePool {
            try Self.seed(pristine)
            #expect(try Self.check(pristine, "the seeded file") == Self.parents)
            try CrashTests.restore(pristine, to: reference)
            let db = try Database(configuration: Self.configuration(reference))
            let start = ContinuousClock.now
            try Self.deleteParents(db)
            let duration = start.duration(to: .now)
            db.close()
            #expect(try Self.check(reference, "the finished loop") == 0)
            return duration
        }
        // Odd trials: kills at moments spread over the loop. Even trials:
        // inside a transaction, after its cascade, before its commit.
        let span = CrashTests.microseconds(duration)
        var generator = SplitMix64(seed: CrashTests.seed &+ 3)
        let points = (0 ..< CrashTests.trials).map { trial in
            trial % 2 == 0
                ? (delay: 0, transaction: Int.random(in: 0 ..< Self.parents, using: &generator))
                : (delay: Int.random(in: 0 ... span, using: &generator), transaction: -1)
        }
        let lanes = [folder.path("lane0.strata"), folder.path("lane1.strata")]
        let left = try await withThrowingTaskGroup(of: [Int].self) { group in
            for (lane, path) in lanes.enumerated() {
                group.addTask {
                    var left: [Int] = []
                    for trial in stride(from: lane, to: points.count, by: lanes.count) {
                        let (delay, transaction) = points[trial]
                        let label =
                            "cascade trial \(trial) of seed \(CrashTests.seed), killed "
                            + (transaction < 0 ? "after \(delay) µs" : "before commit \(transaction)")
                        try await offThePool { try CrashTests.restore(pristine, to: path) }
                        await #expect(processExitsWith: .signal(SIGKILL), "\(label)") {
                            [path = path as String, delay = delay as Int, transaction = transaction as Int] in
                            let db = try Database(configuration: CascadeCrashTests.configuration(path))
                            if transaction < 0 { CrashTests.killSoon(delay) }
                            try CascadeCrashTests.deleteParents(db, killingIn: transaction < 0 ? nil : transaction)
                            CrashTests.dieAfterWork()
                        }
                        let parentsLeft = try await offThePool { try Self.check(path, label) }
                        if transaction >= 0 {
                            #expect(
                                parentsLeft == Self.parents - transaction, "\(label): the killed commit is lost whole")
                        }
                        left.append(parentsLeft)
                    }
                    return left
                }
            }
            var all: [Int] = []
            for try await some in group { all += some }
            return all
        }
        print("cascade: \(left.count) kills (seed \(CrashTests.seed)) left these parents: \(left.sorted())")
        #expect(left.count == CrashTests.trials)
        // The kills landed inside the loop, not all before or after it.
        #expect(left.contains { $0 > 0 && $0 < Self.parents }, "\(left)")
    }
}
