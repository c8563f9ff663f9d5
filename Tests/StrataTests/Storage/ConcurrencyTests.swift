import Foundation
import Testing

@testable import Strata

@Suite(.temporaryFolder) struct ConcurrencyTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    static let accounts = Schema([
        ObjectSchema("Account", primaryKey: "id") {
            Property("id", .int)
            Property("balance", .int)
        }
    ])
    static let accountCount: Int64 = 20
    static let startingBalance: Int64 = 1_000

    static let ledger = Schema(
        accounts.objectSchemas + [
            ObjectSchema("Clock", primaryKey: "id") {
                Property("id", .int)
                Property("tick", .int)
            }
        ])

    /// Every write transaction moves money between accounts and advances a
    /// clock, so that every committed state has the same total; a reader
    /// that ever sees another total, or the clock go back, has seen a
    /// half-applied transaction or an older snapshot after a newer one.
    /// Readers close their Database and open the file again every 25
    /// reads, and the writer does the same halfway through: opens that
    /// migrate nothing, while other threads read and write.
    @Test(.timeLimit(.minutes(5)), arguments: Fixtures.modes)
    func readersAlwaysSeeAConsistentSnapshotWhileOneThreadWritesAndDatabasesReopen(_ mode: Database.Mode) throws {
        let config = Fixtures.configuration(folder.path(), schema: Self.ledger, mode: mode)
        var writer = try Database(configuration: config)
        try writer.write { tx in
            for id in 1 ... Self.accountCount {
                try tx.insert("Account", ["id": .int(id), "balance": .int(Self.startingBalance)])
            }
            try tx.insert("Clock", ["id": 0, "tick": 0])
        }
        let expectedTotal = Self.accountCount * Self.startingBalance
        let transfers = 400
        let readerCount = 8
        let anomalies = Recorder<String>()
        let reads = Counter()
        let reopens = Counter()
        let writerDone = Flag()
        let readersStarted = DispatchSemaphore(value: 0)
        let readersFinished = DispatchGroup()

        for reader in 0 ..< readerCount {
            readersFinished.enter()
            Thread {
                defer { readersFinished.leave() }
                readersStarted.signal()
                var lastTick: Int64 = -1
                var own = 0
                var db: Database?
                // Bounded: until the writer is done, or a cap on reads; then one more.
                while own < 20_000 {
                    let last = writerDone.isSet
                    do {
                        if db == nil || own % 25 == 0 {
                            db?.close()
                            db = try Database(configuration: config)
                            if db?.openingPlan.action != .open {
                                anomalies.append("reader \(reader): a reopen did \(db!.openingPlan.action)")
                            }
                            reopens.increment()
                        }
                        let (total, count, tick) = try db!.read { tx in
                            let all = try tx.objects("Account")
                            return (
                                try all.map { $0["balance"].int! }.reduce(0, +), try all.count,
                                try tx.object("Clock", key: 0)!["tick"].int!
                            )
                        }
                        if total != expectedTotal || count != Int(Self.accountCount) {
                            anomalies.append("reader \(reader) at tick \(tick): total \(total) over \(count) accounts")
                        }
                        if tick < lastTick {
                            anomalies.append("reader \(reader): the clock went from \(lastTick) back to \(tick)")
                        }
                        lastTick = tick
                    } catch {
                        anomalies.append("reader \(reader): \(error)")
                    }
                    reads.increment()
                    own += 1
                    if last { break }
                }
                db?.close()
            }.start()
        }
        for _ in 0 ..< readerCount { readersStarted.wait() }

        var generator = SplitMix64(seed: 6)
        for transfer in 1 ... transfers {
            if transfer == transfers / 2 {
                writer.close()
                writer = try Database(configuration: config)
                #expect(writer.openingPlan.action == .open)
            }
            let from = Int64.random(in: 1 ... Self.accountCount, using: &generator)
            let to = Int64.random(in: 1 ... Self.accountCount, using: &generator)
            let amount = Int64.random(in: 1 ... 50, using: &generator)
            try writer.write { tx in
                let fromBalance = try tx.object("Account", key: .int(from))!["balance"].int!
                try tx.update("Account", key: .int(from), ["balance": .int(fromBalance - amount)])
                let toBalance = try tx.object("Account", key: .int(to))!["balance"].int!
                try tx.update("Account", key: .int(to), ["balance": .int(toBalance + amount)])
                try tx.update("Clock", key: 0, ["tick": .int(Int64(transfer))])
            }
        }
        writerDone.set()
        readersFinished.wait()

        #expect(anomalies.all.isEmpty, "\(anomalies.all.prefix(10))")
        #expect(reads.value >= readerCount)
        #expect(reopens.value >= readerCount)
        let (finalTotal, tick) = try writer.read { tx in
            (
                try tx.objects("Account").map { $0["balance"].int! }.reduce(0, +),
                try tx.object("Clock", key: 0)?["tick"].int
            )
        }
        #expect(finalTotal == expectedTotal)
        #expect(tick == Int64(transfers))
        writer.close()
        try expectFileVerified(folder.path())
    }

    @Test(arguments: Fixtures.modes) func writesFromManyThreadsAreSerializedAndNoneIsLost(_ mode: Database.Mode) throws
    {
        let db = try Database(configuration: Fixtures.configuration(folder.path(), schema: Self.accounts, mode: mode))
        try db.write { tx in try tx.insert("Account", ["id": 1, "balance": 0]) }
        let threads = 4
        let incrementsPerThread = 100
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

    @Test(arguments: Fixtures.modes) func aReadTransactionKeepsItsSnapshotWhileAnotherThreadCommits(
        _ mode: Database.Mode
    ) throws {
        let db = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
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

    @Test(arguments: Fixtures.modes) func asyncOpenReadAndWriteRunOffTheCallersThread(_ mode: Database.Mode)
        async throws
    {
        let db = try await Database.open(configuration: Fixtures.configuration(folder.path(), mode: mode))
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

    @Test(arguments: Fixtures.modes) func asyncWriteRollsBackWhenTheClosureThrows(_ mode: Database.Mode) async throws {
        struct Abort: Error {}
        let db = try await Database.open(configuration: Fixtures.configuration(folder.path(), mode: mode))
        await #expect(throws: Abort.self) {
            try await db.write { tx in
                try tx.insert("Person", Fixtures.person(1))
                throw Abort()
            }
        }
        #expect(try await db.read { tx in try tx.objects("Person").count } == 0)
    }

    @Test func openingAFileWithALowerVersionAsynchronouslyReportsTheError() async throws {
        _ = try Database(configuration: Fixtures.configuration(folder.path(), version: 3))
        await #expect(throws: StrataError.self) {
            _ = try await Database.open(configuration: Fixtures.configuration(folder.path(), version: 2))
        }
    }
}
