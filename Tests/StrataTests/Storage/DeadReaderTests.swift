import Foundation
import Testing

@testable import Strata

/// LMDB's lock file, as `mdb.c` (0.9.x, 64-bit Linux) lays it out: a
/// header of two 64-byte cache lines (`MDB_txninfo`: magic, format, the
/// reader mutex, the last published transaction id `mti_txnid` and the
/// number of reader slots in use; then the writer mutex), then one 64-byte
/// `MDB_reader` slot per reader (its transaction id, pid and thread).
/// Tests check the magic before they trust the rest.
enum LockFileLayout {
    static let magic: UInt32 = 0xBEEF_C0DE
    static let txnidOffset = 48
    static let numReadersOffset = 56
    static let readersOffset = 128
    static let readerSize = 64

    static func read<T: FixedWidthInteger>(_ path: String, at offset: Int, as type: T.Type) throws -> T {
        let data = try RawFile.contents(path)
        return data.subdata(in: offset ..< offset + MemoryLayout<T>.size).withUnsafeBytes {
            $0.loadUnaligned(as: T.self)
        }
    }

    static func write<T: FixedWidthInteger>(_ value: T, to path: String, at offset: Int) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: withUnsafeBytes(of: value) { Data($0) })
    }

    /// The pids in the reader slots in use, other than this process's.
    static func otherReaders(_ path: String) throws -> [Int32] {
        let count = try read(path, at: numReadersOffset, as: UInt32.self)
        return try (0 ..< Int(count)).map { slot in
            try read(path, at: readersOffset + slot * readerSize + 8, as: Int32.self)
        }.filter { $0 != 0 && $0 != getpid() }
    }
}

/// Processes that die inside a read transaction leave their reader slot
/// behind: a process that keeps the file open clears them as it writes,
/// and when a read finds the reader table full.
@Suite(.temporaryFolder, .serialized) struct DeadReaderTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    static let children = 200

    /// One write transaction of churn: a changed object, one inserted and
    /// the one inserted the round before deleted.
    static func churn(_ db: Database, round: Int) throws {
        try db.write { tx in
            try tx.update("Person", key: .int(Int64(round % 100)), ["firstName": .string("Round \(round)")])
            _ = try tx.insert("Person", Fixtures.person(Int64(1_000_000 + round)))
            _ = try tx.delete("Person", key: .int(Int64(1_000_000 + round - 1)))
        }
    }

    static func size(_ path: String) throws -> Int { try RawFile.size(path) }

    /// 200 processes open the file and are killed inside a read
    /// transaction, while this process writes; the last one dies while
    /// nothing writes, so its slot is still there when the writes start
    /// again. The file grows while a dead reader pins its snapshot, then
    /// stays the same size over 3,000 writes.
    @Test(.timeLimit(.minutes(5)))
    func aFileStopsGrowingOnceTheReadersThatDiedAreCleared() async throws {
        let path = folder.path()
        let db = try Database(configuration: Fixtures.configuration(path))
        defer { db.close() }
        try await db.write { tx in for id in 0 ..< 100 { _ = try tx.insert("Person", Fixtures.person(Int64(id))) } }
        let clock = ContinuousClock()
        let start = clock.now

        let stop = Flag()
        let rounds = Counter()
        let writing = Task.detached {
            try await onItsOwnThread {
                while !stop.isSet {
                    try DeadReaderTests.churn(db, round: rounds.value)
                    rounds.increment()
                    // Writes often enough to meet every child, without
                    // taking a core from the children and the other tests.
                    usleep(2_000)
                }
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for child in 0 ..< Self.children - 1 {
                if child >= 2 { try await group.next() }
                group.addTask { try await Self.dieReading(path) }
            }
            try await group.waitForAll()
        }
        stop.set()
        try await writing.value
        try await Self.dieReading(path)
        let childrenTook = clock.now - start
        let writesMeanwhile = rounds.value

        let lockPath = path + "-lock"
        try #require(try LockFileLayout.read(lockPath, at: 0, as: UInt32.self) == LockFileLayout.magic)
        let dead = try LockFileLayout.otherReaders(lockPath)
        #expect(!dead.isEmpty, "the last child's reader slot should still be in the table")

        var round = writesMeanwhile
        let before = try Self.size(path)
        for _ in 0 ..< 500 {
            try Self.churn(db, round: round)
            round += 1
        }
        let settled = try Self.size(path)
        for _ in 0 ..< 3_000 {
            try Self.churn(db, round: round)
            round += 1
        }
        let after = try Self.size(path)
        #expect(after == settled, "the file grew from \(settled) to \(after) bytes over 3,000 writes")
        #expect(try LockFileLayout.otherReaders(lockPath).isEmpty)
        #expect(try await db.read { tx in try tx.objects("Person").count } == 101)
        print(
            "Dead readers: \(Self.children) children killed inside a read transaction in \(childrenTook) while this process made \(writesMeanwhile) writes; \(dead.count) dead slot(s) left when writing resumed; the file was \(before) bytes, \(settled) after 500 more writes and \(after) after 3,000 more."
        )
    }

    /// A child that opens the file and is killed inside a read transaction.
    static func dieReading(_ path: String) async throws {
        await #expect(processExitsWith: .signal(SIGKILL)) { [path = path as String] in
            let db = try Database(configuration: Fixtures.configuration(path))
            try db.read { tx in
                _ = try tx.objects("Person").count
                killSelf()
            }
        }
    }

    /// Every slot of the reader table is taken by a process that died (the
    /// slots are written into the lock file, with pids no process has):
    /// a read clears them and goes on instead of failing with
    /// `MDB_READERS_FULL`.
    @Test func aReadThatFindsTheReaderTableFullOfDeadReadersClearsItAndGoesOn() throws {
        let path = folder.path()
        try Fixtures.seed(path)
        let db = try Database(configuration: Fixtures.configuration(path))
        defer { db.close() }
        let lockPath = path + "-lock"
        try #require(try LockFileLayout.read(lockPath, at: 0, as: UInt32.self) == LockFileLayout.magic)
        // This process's own slot, while it reads, names its pid where the
        // layout says.
        let ownSlot = try db.read { _ in
            try LockFileLayout.read(lockPath, at: LockFileLayout.readersOffset + 8, as: Int32.self)
        }
        try #require(ownSlot == getpid())
        let txnid = try LockFileLayout.read(lockPath, at: LockFileLayout.txnidOffset, as: UInt64.self)
        let slots = (Environment.lockFileSize - LockFileLayout.readersOffset) / LockFileLayout.readerSize
        #expect(slots == 126)
        for slot in 0 ..< slots {
            let offset = LockFileLayout.readersOffset + slot * LockFileLayout.readerSize
            try LockFileLayout.write(txnid, to: lockPath, at: offset)
            // Above the kernel's largest pid: no process holds its lock byte.
            try LockFileLayout.write(Int32(4_194_400 + slot), to: lockPath, at: offset + 8)
        }
        try LockFileLayout.write(UInt32(slots), to: lockPath, at: LockFileLayout.numReadersOffset)
        #expect(try LockFileLayout.otherReaders(lockPath).count == slots)

        #expect(try Fixtures.people(db).count == 3)
        #expect(try LockFileLayout.otherReaders(lockPath).isEmpty)
    }

    /// What a check costs, beside what it saves: the time of one
    /// `mdb_reader_check` with no other process reading and with 2 other
    /// processes inside a read transaction (one `fcntl` each), and of one
    /// churn write transaction at each durability.
    @Test(.timeLimit(.minutes(2)))
    func theCostOfAReaderCheck() async throws {
        let path = folder.path()
        try Fixtures.seed(path)
        let db = try Database(configuration: Fixtures.configuration(path))
        defer { db.close() }
        try await db.write { tx in for id in 4 ..< 100 { _ = try tx.insert("Person", Fixtures.person(Int64(id))) } }
        let environment = db.environment
        // Inside one read transaction, which keeps the environment open;
        // a check passes over this process's own slot.
        @Sendable func checkCost() throws -> Double {
            let calls = 20_000
            let elapsed = try ContinuousClock().measure {
                try environment.withReadTransaction { _ in
                    for _ in 0 ..< calls { environment.clearDeadReaders() }
                }
            }
            return elapsed / calls / .microseconds(1)
        }
        let alone = try checkCost()

        // No more children than the cooperative pool has threads: each
        // child's exit test holds one until the child ends.
        let readers = 2
        let release = folder.path("release")
        let holding = folder.path("holding")
        try FileManager.default.createDirectory(atPath: holding, withIntermediateDirectories: true)
        // Measured on a thread of its own: the children's exit tests hold
        // the pool's threads until the measurement releases them.
        let measuring = Task {
            try await onItsOwnThread { () throws -> (Int, Double) in
                let deadline = ContinuousClock.now + .seconds(60)
                while (try? FileManager.default.contentsOfDirectory(atPath: holding).count) ?? 0 < readers,
                    ContinuousClock.now < deadline
                {
                    usleep(20_000)
                }
                defer { _ = FileManager.default.createFile(atPath: release, contents: nil) }
                let others = try LockFileLayout.otherReaders(path + "-lock").count
                return (others, try checkCost())
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0 ..< readers {
                group.addTask {
                    await #expect(processExitsWith: .success) {
                        [path = path as String, release = release as String, holding = holding as String] in
                        let db = try Database(configuration: Fixtures.configuration(path))
                        try db.read { _ in
                            _ = FileManager.default.createFile(atPath: holding + "/\(getpid())", contents: nil)
                            while !FileManager.default.fileExists(atPath: release) { usleep(10_000) }
                        }
                    }
                }
            }
        }
        let withReaders = try await measuring.value
        #expect(withReaders.0 == readers)

        func writeCost(_ durability: Database.Durability) throws -> Double {
            var configuration = Fixtures.configuration(folder.path("\(durability).strata"))
            configuration.durability = durability
            let db = try Database(configuration: configuration)
            defer { db.close() }
            try db.write { tx in for id in 0 ..< 100 { _ = try tx.insert("Person", Fixtures.person(Int64(id))) } }
            let writes = 300
            let elapsed = try ContinuousClock().measure {
                for round in 0 ..< writes { try Self.churn(db, round: round) }
            }
            return elapsed / writes / .microseconds(1)
        }
        let noSync = try writeCost(.noSync)
        let full = try writeCost(.full)
        print(
            String(
                format:
                    "Reader check: %.2f µs with no other reader, %.2f µs with %d other processes reading; a churn write transaction: %.0f µs (.noSync), %.0f µs (.full); a check every %d writes adds %.3f%% to .noSync writes",
                alone, withReaders.1, withReaders.0, noSync, full, DeadReaderSchedule.writes,
                withReaders.1 / Double(DeadReaderSchedule.writes) / noSync * 100))
    }
}
