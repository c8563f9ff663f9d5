import Foundation
import Testing
@testable import Strata

@Suite struct ConcurrencyTests {
    static let accounts = Schema([
        ObjectSchema("Account", primaryKey: "id") {
            Property("id", .int)
            Property("balance", .int)
        },
    ])
    static let accountCount: Int64 = 20
    static let startingBalance: Int64 = 1_000

    /// Every write transaction moves money between accounts, so the total
    /// is the same in every committed state; a reader that ever sees another
    /// total has seen a half-applied transaction.
    @Test func readersAlwaysSeeAConsistentSnapshotWhileOneThreadWrites() throws {
        let folder = try TemporaryFolder()
        let db = try Database(configuration: Fixtures.configuration(folder.path(), schema: Self.accounts))
        try db.write { tx in
            for id in 1 ... Self.accountCount {
                try tx.insert("Account", ["id": .int(id), "balance": .int(Self.startingBalance)])
            }
        }
        let expectedTotal = Self.accountCount * Self.startingBalance
        let transfers = 300
        let readerCount = 4
        let anomalies = Counter()
        let reads = Counter()
        let writerDone = Flag()
        let readersStarted = DispatchSemaphore(value: 0)
        let readersFinished = DispatchGroup()

        @Sendable func checkOnce() {
            let snapshot = try? db.read { tx in
                let all = try tx.objects("Account")
                return (try all.map { $0["balance"].int! }.reduce(0, +), try all.count)
            }
            if snapshot?.0 != expectedTotal || snapshot?.1 != Int(Self.accountCount) { anomalies.increment() }
            reads.increment()
        }

        for _ in 0 ..< readerCount {
            readersFinished.enter()
            Thread {
                readersStarted.signal()
                // Bounded: until the writer is done, or a cap on reads.
                var own = 0
                while !writerDone.isSet && own < 100_000 {
                    checkOnce()
                    own += 1
                }
                checkOnce()
                readersFinished.leave()
            }.start()
        }
        for _ in 0 ..< readerCount { readersStarted.wait() }

        var generator = SystemRandomNumberGenerator()
        for _ in 0 ..< transfers {
            let from = Int64.random(in: 1 ... Self.accountCount, using: &generator)
            let to = Int64.random(in: 1 ... Self.accountCount, using: &generator)
            let amount = Int64.random(in: 1 ... 50, using: &generator)
            try db.write { tx in
                let fromBalance = try tx.object("Account", key: .int(from))!["balance"].int!
                try tx.update("Account", key: .int(from), ["balance": .int(fromBalance - amount)])
                let toBalance = try tx.object("Account", key: .int(to))!["balance"].int!
                try tx.update("Account", key: .int(to), ["balance": .int(toBalance + amount)])
            }
        }
        writerDone.set()
        readersFinished.wait()

        #expect(anomalies.value == 0)
        #expect(reads.value >= readerCount)
        let finalTotal = try db.read { tx in try tx.objects("Account").map { $0["balance"].int! }.reduce(0, +) }
        #expect(finalTotal == expectedTotal)
    }

    @Test func writesFromManyThreadsAreSerializedAndNoneIsLost() throws {
        let folder = try TemporaryFolder()
        let db = try Database(configuration: Fixtures.configuration(folder.path(), schema: Self.accounts))
        try db.write { tx in try tx.insert("Account", ["id": 1, "balance": 0]) }
        let threads = 4, incrementsPerThread = 100
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0 ..< incrementsPerThread {
                try! db.write { tx in
                    let balance = try tx.object("Account", key: 1)!["balance"].int!
                    try tx.update("Account", key: 1, ["balance": .int(balance + 1)])
                }
            }
        }
        let balance = try db.read { tx in try tx.object("Account", key: 1)?["balance"].int }
        #expect(balance == Int64(threads * incrementsPerThread))
    }

    @Test func aReadTransactionKeepsItsSnapshotWhileAnotherThreadCommits() throws {
        let folder = try TemporaryFolder()
        let db = try Database(configuration: Fixtures.configuration(folder.path()))
        try db.write { tx in try tx.insert("Person", Fixtures.person(1, age: 10)) }
        let (before, after) = try db.read { tx -> (Int64, Int64) in
            let before = try tx.object("Person", key: 1)!["age"].int!
            // Another thread commits while this read transaction is open.
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                try! db.write { tx in try tx.update("Person", key: 1, ["age": 99]) }
                done.signal()
            }
            done.wait()
            return (before, try tx.object("Person", key: 1)!["age"].int!)
        }
        #expect(before == 10)
        #expect(after == 10)
        #expect(try db.read { tx in try tx.object("Person", key: 1)!["age"].int } == 99)
    }

    @Test func asyncOpenReadAndWriteRunOffTheCallersThread() async throws {
        let folder = try TemporaryFolder()
        let db = try await Database.open(configuration: Fixtures.configuration(folder.path()))
        let key = try await db.write { tx in try tx.insert("Person", Fixtures.person(7, "Grace", "Hopper", age: 85)) }
        #expect(key == .int(7))
        let name = try await db.read { tx in try tx.object("Person", key: 7)?["firstName"].string }
        #expect(name == "Grace")

        async let first = db.read { tx in try tx.objects("Person").count }
        async let second = db.read { tx in try tx.objects("Person").where("age", equals: 85).count }
        let (count, matching) = try await (first, second)
        #expect(count == 1)
        #expect(matching == 1)
    }

    @Test func asyncWriteRollsBackWhenTheClosureThrows() async throws {
        struct Abort: Error {}
        let folder = try TemporaryFolder()
        let db = try await Database.open(configuration: Fixtures.configuration(folder.path()))
        await #expect(throws: Abort.self) {
            try await db.write { tx in
                try tx.insert("Person", Fixtures.person(1))
                throw Abort()
            }
        }
        #expect(try await db.read { tx in try tx.objects("Person").count } == 0)
    }

    @Test func openingAFileWithALowerVersionAsynchronouslyReportsTheError() async throws {
        let folder = try TemporaryFolder()
        _ = try Database(configuration: Fixtures.configuration(folder.path(), version: 3))
        await #expect(throws: StrataError.self) {
            _ = try await Database.open(configuration: Fixtures.configuration(folder.path(), version: 2))
        }
    }
}

/// A counter shared between threads.
final class Counter: @unchecked Sendable {
    // @unchecked: `count` is only touched while holding `lock`.
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// A flag set once by one thread and read by others.
final class Flag: @unchecked Sendable {
    // @unchecked: `set` is only touched while holding `lock`.
    private let lock = NSLock()
    private var flag = false
    func set() { lock.withLock { flag = true } }
    var isSet: Bool { lock.withLock { flag } }
}
