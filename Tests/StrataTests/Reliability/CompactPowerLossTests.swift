import Foundation
import Testing

@testable import Strata

#if os(Linux)
/// `compact` and a power loss, through a fault-injecting layer: the
/// `strata` binary runs with ``WriteRecorder`` preloaded, which records
/// every write, rename and flush of the database's folder (or makes one
/// flush fail), and ``PowerLossImages`` builds every state of the disk that
/// a power cut after any of those calls may leave. A kill (`SIGKILL`) could
/// not show this: the page cache survives it.
///
/// The sanitizers' runtimes must come first among a process's libraries,
/// so these tests do not run under `make sanitize`.
@Suite(
    .temporaryFolder,
    .disabled(if: Sanitizer.address || Sanitizer.thread, "a preloaded library comes before the sanitizer's runtime"))
struct CompactPowerLossTests {
    let folder = TemporaryFolder.current

    static let dataset = UUID(uuidString: "5C1E3A7B-2D4F-4B8A-9E6C-0A1B2C3D4E5F")!

    static let schema = Schema([
        ObjectSchema("Note", primaryKey: "id") {
            Property("id", .int)
            Property("body", .string, default: "")
        }
    ])

    /// A device's file of the dataset, sync enabled, as an app would open it.
    static func open(_ path: String) throws -> Database {
        var config = Database.Configuration(path: path, schemaVersion: 1, schema: schema)
        config.mode = .synced
        config.durability = .noSync
        config.sync = .init(dataset: dataset)
        return try Database(configuration: config)
    }

    /// The ids of the notes in the file at `path`.
    static func noteIDs(_ path: String) throws -> Set<Int64> {
        let db = try Database(inspecting: path)
        defer { db.close() }
        return Set(try db.read { tx in try tx.objects("Note").map { $0["id"].int ?? -1 } })
    }

    /// `disk/a.strata`: 150 notes written, the first 100 deleted, so that compact
    /// has pages to give back. The file is closed.
    func seededFile() throws -> String {
        let disk = folder.path("disk")
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: false)
        let path = disk + "/a.strata"
        let db = try Self.open(path)
        let body = String(repeating: "n", count: 600)
        try db.write { tx in
            for id in 1 ... 150 as ClosedRange<Int64> {
                try tx.insert("Note", ["id": .int(id), "body": .string(body)])
            }
        }
        try db.write { tx in
            for id in 1 ... 100 as ClosedRange<Int64> { try tx.delete("Note", key: .int(id)) }
        }
        db.close()
        return path
    }

    /// Compacts `disk/a.strata` in a child, then, three times, adds a note
    /// to another device's file and syncs the two in a child: each sync
    /// commits the note into `a.strata` with full durability. Every image
    /// of a power cut at any point must open, verify, hold the notes that
    /// were there before and every note whose sync had returned, and, once
    /// compact had returned, be the compacted file.
    @Test func everyPowerCutDuringAndAfterCompactLeavesAFileWithEveryWriteThatReturned() throws {
        let path = try seededFile()
        let before = try Self.noteIDs(path)
        #expect(before == Set(101 ... 150))
        let other = folder.path("b.strata")
        try Self.open(other).close()
        let recorder = try WriteRecorder(recording: folder.path("disk"), scratch: folder)
        let original = try PowerLossImages.File(path: path)

        let compacted = try StrataBinary.run(["compact", path], environment: recorder.environment())
        try #require(compacted.status == 0, "stderr: \(compacted.error)")
        try recorder.mark(0)
        for round in 1 ... 3 as ClosedRange<Int64> {
            let device = try Self.open(other)
            try device.write { tx in try tx.insert("Note", ["id": .int(1000 + round), "body": "from b"]) }
            device.close()
            let synced = try StrataBinary.run(["sync", path, other], environment: recorder.environment())
            try #require(synced.status == 0, "stderr: \(synced.error)")
            try recorder.mark(Int(round))
        }
        #expect(try Self.noteIDs(path) == before.union(1001 ... 1003))

        let events = try recorder.events()
        let renames = events.filter { if case .rename(_, _, "a.strata") = $0 { true } else { false } }
        #expect(renames.count == 1, "compact renames its copy over the file once: \(events)")
        let images = PowerLossImages(events: events, name: "a.strata", base: ["a.strata": original])
        let image = folder.path("image.strata")
        var seen: [[UInt8]: (problems: [String], ids: Set<Int64>)] = [:]
        var failures: [Failure: [String]] = [:]
        var counts = (images: 0, distinct: 0, compacted: 0, afterSyncs: 0)
        for state in images {
            counts.images += 1
            let label = "cut after \(state.cut) of \(events.count) events (\(state.variant); marks \(state.marks))"
            guard let inode = state.inode, let bytes = state.bytes else {
                failures[.gone, default: []].append(label)
                continue
            }
            if seen[bytes] == nil {
                counts.distinct += 1
                try Data(bytes).write(to: URL(fileURLWithPath: image))
                seen[bytes] = Self.observe(image)
                try? FileManager.default.removeItem(atPath: image + "-lock")
            }
            let (problems, ids) = seen[bytes]!
            var required = before
            for mark in state.marks where mark > 0 { required.insert(1000 + Int64(mark)) }
            if !problems.isEmpty {
                failures[.doesNotOpen, default: []].append("\(label): \(problems.joined(separator: " "))")
            } else if !required.isSubset(of: ids) {
                failures[.lostWrites, default: []].append(
                    "\(label): notes \(required.subtracting(ids).sorted()) are missing")
            }
            if state.marks.contains(0) && inode == original.inode {
                failures[.compactUndone, default: []].append(label)
            }
            if inode != original.inode { counts.compacted += 1 }
            if state.marks.contains(3) { counts.afterSyncs += 1 }
        }
        let wrong = failures.values.map(\.count).reduce(0, +)
        print(
            "Compact and a power cut: \(events.count) recorded events, \(counts.images) images (\(counts.distinct) distinct), \(counts.compacted) of them of the compacted file; \(wrong) wrong."
        )
        #expect(counts.compacted > 0 && counts.afterSyncs > 0, "the images never reached the end of the work")
        for (failure, examples) in failures.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            Issue.record(
                "\(examples.count) of \(counts.images) images \(failure.rawValue), for example:\n\(examples.prefix(4).joined(separator: "\n"))"
            )
        }
    }

    /// What an image of a power cut can get wrong.
    enum Failure: String {
        case gone = "have no a.strata"
        case doesNotOpen = "do not open or do not verify"
        case lostWrites = "lack notes whose sync had returned"
        case compactUndone = "hold the file before compact, although compact had returned"
    }

    /// The problems `Database.verify(path:)` finds in the file at `path`,
    /// or the error it throws, and the ids of its notes when it is sound.
    static func observe(_ path: String) -> (problems: [String], ids: Set<Int64>) {
        do {
            let problems = try Database.verify(path: path)
            guard problems.isEmpty else { return (problems, []) }
            return ([], try noteIDs(path))
        } catch {
            return (["it does not open: \(error)"], [])
        }
    }

    enum FailingFlush: String, CaseIterable, CustomTestStringConvertible {
        case copy, folder

        var testDescription: String { "of the \(rawValue)" }
    }

    /// A flush that fails is an error that names the file; when the copy's
    /// flush fails, the file keeps every object, the copy is gone, and a
    /// later compact succeeds. When the folder's flush fails, the file is
    /// compacted and the error says its new name may not survive a power loss.
    @Test(arguments: FailingFlush.allCases)
    func aFlushThatFailsDuringCompactIsAnErrorThatNamesTheFile(_ failing: FailingFlush) throws {
        let path = try seededFile()
        let before = try FileVerifier.verify(path)
        let inode = try PowerLossImages.File(path: path).inode
        let recorder = try WriteRecorder(recording: folder.path("disk"), scratch: folder)
        let suffix = failing == .copy ? ".compacting" : "/disk"
        let result = try StrataBinary.run(["compact", path], environment: recorder.environment(failingSyncOf: suffix))
        let message = StrataBinary.expectOneLineError(result, containing: [path, "fsync failed", "Input/output error"])
        let after = try FileVerifier.verify(path)
        #expect(after.problems.isEmpty, "\(after.problems)")
        #expect(after.digests == before.digests, "the objects changed")
        #expect(try Self.noteIDs(path) == Set(101 ... 150))
        #expect(!FileManager.default.fileExists(atPath: path + ".compacting"))
        switch failing {
        case .copy:
            #expect(message.contains(path + ".compacting") && message.contains("is as it was"), "\(message)")
            #expect(try PowerLossImages.File(path: path).inode == inode, "the file was replaced")
            let again = try StrataBinary.run(["compact", path])
            #expect(again.status == 0, "stderr: \(again.error)")
        case .folder:
            #expect(message.contains("now holds its compacted copy") && message.contains("power loss"), "\(message)")
            #expect(try PowerLossImages.File(path: path).inode != inode, "the file was not replaced")
        }
    }
}
#endif
