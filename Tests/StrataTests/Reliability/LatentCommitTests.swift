import Foundation
import Testing

@testable import Strata

#if os(Linux)
/// LMDB's two meta pages (`MDB_meta` in `mdb.c`, 64-bit): each page starts
/// with a 16-byte page header, then the meta's magic; its transaction id
/// is 128 bytes into the meta.
enum MetaPages {
    static let pageSize = Int(getpagesize())
    static let magic: UInt32 = 0xBEEF_C0DE

    /// The transaction id of each meta page, after checking its magic.
    static func transactionIDs(_ path: String) throws -> [Int] {
        let data = try RawFile.contents(path)
        return try (0 ..< 2).map { page in
            let base = page * pageSize + 16
            let magic = data.subdata(in: base ..< base + 4).withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
            try #require(magic == Self.magic, "meta page \(page) of \(path)")
            return Int(
                data.subdata(in: base + 128 ..< base + 136).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
        }
    }
}

/// A process killed after it wrote a commit's meta page but before it
/// published the commit in the lock file leaves a latent commit: in the
/// file, unseen by the readers of processes that keep the file open.
/// `compact` must copy it all the same.
@Suite(.temporaryFolder) struct LatentCommitTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    static let attempts = ProcessInfo.processInfo.environment["STRATA_LATENT_ATTEMPTS"].flatMap { Int($0) } ?? 10

    /// `.full`, so that the meta page is written through LMDB's `O_DSYNC`
    /// descriptor: its `pwrite` waits for the disk, long enough to be seen.
    static func configuration(_ path: String) -> Database.Configuration {
        var configuration = Fixtures.configuration(path)
        configuration.durability = .full
        return configuration
    }

    static func age(_ db: Database) throws -> Int64 {
        try db.read { tx in try #require(try tx.object("Person", key: 1))["age"].int! }
    }

    /// The first line of a file of /proc, read without Foundation (the
    /// watch loop reads one every few microseconds).
    static func procFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// Watches the writer's system calls and stops it (SIGSTOP) while it is
    /// inside a `pwrite` (18 on x86_64) to one of the meta pages, then kills
    /// it once it is stopped: a stop takes effect when the call returns, so
    /// the meta page is written and the commit not yet published. Returns
    /// whether it saw such a call before the deadline; kills it anyway.
    static func killInMetaWrite(_ pid: Int32) -> Bool {
        let deadline = ContinuousClock.now + .seconds(3)
        // The thread that commits: the first seen in a write or a flush
        // (pwrite64 18, pwritev 296, fdatasync 75).
        var writer: String?
        while writer == nil && ContinuousClock.now < deadline {
            let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            writer = threads.first { thread in
                let number = procFile("/proc/\(pid)/task/\(thread)/syscall")?.split(separator: " ").first
                return number == "18" || number == "296" || number == "75"
            }
        }
        var seen = false
        while let writer, !seen && ContinuousClock.now < deadline {
            guard let line = procFile("/proc/\(pid)/task/\(writer)/syscall") else { continue }
            let fields = line.split(separator: " ")
            if fields.count > 4, fields[0] == "18", let offset = Int(fields[4].dropFirst(2), radix: 16),
                offset < 2 * MetaPages.pageSize
            {
                kill(pid, SIGSTOP)
                seen = true
            }
        }
        if !seen { kill(pid, SIGSTOP) }
        // The fields after the name in /proc/<pid>/stat: the state first.
        while let stat = procFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")"),
            stat[stat.index(close, offsetBy: 2)] != "T"
        {
            usleep(100)
        }
        kill(pid, SIGKILL)
        return seen
    }

    struct Outcome: CustomStringConvertible {
        var sawMetaWrite: Bool
        var metas: [Int]
        var visible: Int
        var visibleAge: Int64
        var compactedAge: Int64
        var latent: Bool { metas.max()! > visible }
        var description: String {
            "killed in a meta write: \(sawMetaWrite), meta pages' txnids \(metas), visible txnid \(visible), visible age \(visibleAge), compacted age \(compactedAge)"
        }
    }

    /// This process's part of an attempt: waits for both children, kills
    /// the writer inside a meta page's write, reads what this process sees
    /// and what the file holds, compacts the file while the holder still
    /// has it open, then lets the holder go and reads the compacted file.
    static func watchKillAndCompact(_ path: String) throws -> Outcome {
        let release = path + ".release"
        defer { _ = FileManager.default.createFile(atPath: release, contents: nil) }
        while !FileManager.default.fileExists(atPath: path + ".holding") { usleep(5_000) }
        let watcher = try Database(configuration: configuration(path))
        var pid: Int32?
        while pid == nil {
            pid = (try? String(contentsOfFile: path + ".writer", encoding: .utf8)).flatMap { Int32($0) }
            if pid == nil { usleep(5_000) }
        }
        // Let it commit a few times first.
        usleep(50_000)
        let sawMetaWrite = killInMetaWrite(pid!)
        while kill(pid!, 0) == 0, procFile("/proc/\(pid!)/stat").map({ !$0.contains(") Z") }) ?? false {
            usleep(1_000)
        }
        let metas = try MetaPages.transactionIDs(path)
        let visible = try watcher.environment.withReadTransaction { $0.id }
        let visibleAge = try age(watcher)
        watcher.close()
        try Database.compact(path: path)
        _ = FileManager.default.createFile(atPath: release, contents: nil)
        // The holder closes its environment before the compacted file opens
        // here, so that this open has the file and its lock file alone.
        while lockFileInUse(path) { usleep(5_000) }
        let compacted = try Database(configuration: configuration(path))
        defer { compacted.close() }
        return Outcome(
            sawMetaWrite: sawMetaWrite, metas: metas, visible: visible, visibleAge: visibleAge,
            compactedAge: try age(compacted))
    }

    /// Whether another process holds LMDB's lock on the lock file (every
    /// process that has the file open holds a shared lock on its first byte).
    static func lockFileInUse(_ path: String) -> Bool {
        let fd = open(path + "-lock", O_RDWR)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        guard fcntl(fd, F_GETLK, &lock) == 0 else { return false }
        return lock.l_type != Int16(F_UNLCK)
    }

    /// A child commits in a loop (each commit adds 1 to a Person's age)
    /// and is killed inside the meta page's write; another child keeps the
    /// file open throughout, so that nothing opening the file afterwards
    /// has it alone (an open that has the file alone takes the newest meta
    /// page anyway). Where the kill left a latent commit, this process,
    /// which kept the file open, still reads the commit before it, and the
    /// compacted file holds the latent commit.
    @Test(.timeLimit(.minutes(5)))
    func compactKeepsACommitWhoseWriterDiedBeforePublishingIt() async throws {
        var landed = 0
        var watched = 0
        for attempt in 0 ..< Self.attempts {
            let path = folder.path("attempt\(attempt).strata")
            let holding = path + ".holding"
            let release = path + ".release"
            let writerPID = path + ".writer"
            do {
                let db = try Database(configuration: Self.configuration(path))
                try await db.write { tx in _ = try tx.insert("Person", Fixtures.person(1, age: 0)) }
                let seen = try db.environment.withReadTransaction { $0.id }
                // The meta page layout is the one this test reads.
                try #require(try MetaPages.transactionIDs(path).max() == seen)
                db.close()
            }
            // Both children's exit tests hold a thread of the pool until
            // their child ends, so what ends them runs on its own thread.
            let orchestrating = Task {
                try await onItsOwnThread { try Self.watchKillAndCompact(path) }
            }
            async let holder = #expect(processExitsWith: .success) {
                [path = path as String, holding = holding as String, release = release as String] in
                let db = try Database(configuration: LatentCommitTests.configuration(path))
                _ = FileManager.default.createFile(atPath: holding, contents: nil)
                while !FileManager.default.fileExists(atPath: release) { usleep(10_000) }
                db.close()
            }
            async let writer = #expect(processExitsWith: .signal(SIGKILL)) {
                [path = path as String, holding = holding as String, pidFile = writerPID as String] in
                while !FileManager.default.fileExists(atPath: holding) { usleep(10_000) }
                let db = try Database(configuration: LatentCommitTests.configuration(path))
                _ = FileManager.default.createFile(atPath: pidFile, contents: Data("\(getpid())".utf8))
                var age: Int64 = 1
                while true {
                    try db.write { tx in try tx.update("Person", key: 1, ["age": .int(age)]) }
                    age += 1
                }
            }
            _ = await (holder, writer)
            let outcome = try await orchestrating.value
            if outcome.sawMetaWrite { watched += 1 }
            if outcome.latent { landed += 1 }
            #expect(
                outcome.compactedAge == outcome.visibleAge + (outcome.latent ? 1 : 0),
                "attempt \(attempt): \(outcome)")
            if outcome.latent {
                #expect(outcome.metas.max()! == outcome.visible + 1, "attempt \(attempt): \(outcome)")
            }
        }
        print(
            "Latent commits: \(Self.attempts) attempts, \(watched) killed inside a meta page's pwrite, \(landed) left a latent commit; compact kept it every time."
        )
        // Under a sanitizer the writer's commits are slow and its meta page
        // write lands in another window: seen 0 latent commits in 10
        // attempts under ThreadSanitizer. Each attempt's checks above still
        // hold there; only whether compact met a latent commit is left to
        // the ordinary runs.
        if !Sanitizer.thread && !Sanitizer.address {
            #expect(landed > 0, "no attempt left a latent commit, so compact was not tested")
        }
    }
}
#endif
