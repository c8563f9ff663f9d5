import Foundation
import Testing

@testable import Strata

#if os(Linux)
/// A small tmpfs mounted for one test, unmounted when it is released.
/// Mounting needs root; without it, or when the mount fails, the test is
/// cancelled (reported as skipped) with the reason.
final class SmallDisk {
    let folder: TemporaryFolder
    let mountPoint: String

    init(size: String) throws {
        folder = try TemporaryFolder()
        mountPoint = folder.path("disk")
        try Self.mountTmpfs(size: size, on: mountPoint)
    }

    // Cancelling from a function of its own: a call that never returns
    // inside the initializer, after a stored property is set, left
    // unreachable clean-up code there, which the compiler warned about.
    private static func mountTmpfs(size: String, on mountPoint: String) throws {
        guard geteuid() == 0 else {
            try Test.cancel(
                "Skipped: filling a disk needs a small tmpfs, and mounting one needs root; this process runs as uid \(geteuid())."
            )
        }
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
        guard mount("tmpfs", mountPoint, "tmpfs", 0, "size=\(size)") == 0 else {
            let reason = String(cString: strerror(errno))
            try Test.cancel(
                "Skipped: mounting a \(size) tmpfs on \(mountPoint) failed (\(reason)); the container may not allow mounts."
            )
        }
    }

    deinit {
        // Lazily, in case a Database still holds the file open.
        umount2(mountPoint, Int32(MNT_DETACH))
    }

    func path(_ name: String) -> String { mountPoint + "/" + name }

    /// Fills what is left of the disk with a file.
    func fill(_ name: String) throws {
        guard FileManager.default.createFile(atPath: path(name), contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path(name)])
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path(name)))
        defer { try? handle.close() }
        while (try? handle.write(contentsOf: Data(count: 4096))) != nil {}
    }
}

/// A disk that fills up under a write: the write fails with an error that
/// names the file, and the file keeps what was committed before it.
@Suite struct DiskFullTests {
    static let schema = Blobs.schema
    static let blobSize = 64 << 10

    /// Writes 64 KiB blobs, one transaction each, until a write fails.
    /// Returns the ids committed and the error.
    static func fillWithBlobs(_ path: String) throws -> (committed: [Int64], error: StrataError?) {
        let db = try Database(configuration: Fixtures.configuration(path, schema: schema))
        defer { db.close() }
        var committed: [Int64] = []
        for id in 0 ..< 64 as Range<Int64> {
            do {
                try db.write { tx in
                    try tx.insert("Blob", ["id": .int(id), "payload": .data(Blobs.payload(Int(id), size: blobSize))])
                }
                committed.append(id)
            } catch let error as StrataError {
                // The Database still reads what was committed.
                #expect(try db.read { tx in try tx.objects("Blob").map { $0["id"].int! } } == committed)
                return (committed, error)
            }
        }
        return (committed, nil)
    }

    @Test func aWriteThatFindsTheDiskFullFailsAndTheFileKeepsItsData() throws {
        let disk = try SmallDisk(size: "2m")
        let path = disk.path("full.strata")
        // Room to free once the disk is full: 256 KiB of ballast.
        let ballast = disk.path("ballast")
        try Data(count: 256 << 10).write(to: URL(fileURLWithPath: ballast))
        let (committed, failure) = try Self.fillWithBlobs(path)
        let error = try #require(failure, "64 blobs of 64 KiB should not fit in 2 MiB")
        #expect(committed.count > 4, "the disk filled too early to prove anything: \(committed.count) blobs")
        #expect(error.code == .storage || error.code == .fileSystem, "\(error.code): \(error.message)")
        // LMDB reports a write that found no room as ENOSPC, and one that
        // found room for part of its pages (a short write) as EIO.
        #expect(error.lmdbCode == .noSpace || error.lmdbCode == LMDBResultCode(rawValue: EIO), "\(error.message)")
        #expect(error.message.contains(path), "\(error.message)")

        // The file opens with every committed object, on the full disk.
        let reopened = try Database(configuration: Fixtures.configuration(path, schema: Self.schema))
        #expect(reopened.openingPlan.action == .open)
        let stored = try reopened.read { tx in try tx.objects("Blob").map { ($0["id"].int!, $0["payload"].data!) } }
        #expect(stored.map(\.0) == committed)
        #expect(stored.allSatisfy { $0.1 == Blobs.payload(Int($0.0), size: Self.blobSize) })
        // Once there is room again, writes go on.
        try FileManager.default.removeItem(atPath: ballast)
        try reopened.write { tx in try tx.insert("Blob", ["id": 1000, "payload": .data(Data(count: 1024))]) }
        reopened.close()
        let verified = try expectFileVerified(path)
        #expect(verified.objectCounts == ["Blob": committed.count + 1])
    }

    @Test
    func aWriteThatFindsTheDiskFullSaysTheDiskIsFull() throws {
        let disk = try SmallDisk(size: "2m")
        let path = disk.path("full.strata")
        let error = try #require(try Self.fillWithBlobs(path).error)
        #expect(error.message.contains("disk is full"), "\(error.message)")
    }

    /// Opening a new file on a full disk: LMDB maps the lock file it
    /// creates and writes its reader table through the map, where a page
    /// that the disk has no room for would be a SIGBUS, not an error; so
    /// Strata reserves the lock file's space first. With no room at all the
    /// lock file does not fit; with 8 KiB, the lock file fits but not the
    /// data file's two meta pages; with 16 KiB, both fit but not the first
    /// commit. Each is an error saying the disk is full, and leaves nothing
    /// that keeps the file from being created once there is room.
    @Test(arguments: [0, 8 << 10, 16 << 10])
    func openingANewDatabaseOnAFullDiskIsAnErrorNotACrash(room: Int) async throws {
        let disk = try SmallDisk(size: "2m")
        let ballast = disk.path("ballast")
        if room > 0 { try Data(count: room).write(to: URL(fileURLWithPath: ballast)) }
        try disk.fill("fill")
        if room > 0 { try FileManager.default.removeItem(atPath: ballast) }
        let path = disk.path("new.strata")
        await #expect(processExitsWith: .success) { [path = path as String] in
            do {
                _ = try Database(configuration: Fixtures.configuration(path))
                Issue.record("a database opened on a full disk")
            } catch let error as StrataError {
                #expect(error.code == .storage, "\(error.code): \(error.message)")
                #expect(error.message.contains(path) && error.message.contains("disk is full"), "\(error.message)")
                #expect(error.message.contains("Nothing was written"), "\(error.message)")
            }
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: disk.mountPoint).filter { $0 != "fill" }.sorted()
        print("A new file on a full disk with \(room) bytes free: an error; left behind: \(left)")
        try FileManager.default.removeItem(atPath: disk.path("fill"))
        let db = try Database(configuration: Fixtures.configuration(path))
        #expect(db.openingPlan.action == .createFile)
        try await db.write { tx in _ = try tx.insert("Person", Fixtures.ada) }
        #expect(try Fixtures.people(db) == [Fixtures.ada])
        db.close()
        _ = disk
    }
}
#endif
