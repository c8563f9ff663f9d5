import Foundation
import Testing

/// A fault-injecting layer under a child process: `WriteRecorder.c`,
/// compiled by the test with `cc` and preloaded (`LD_PRELOAD`) into the
/// child, records every call that changes what the disk holds for the
/// files of one folder, in order, with the bytes written; or makes the
/// flushes of one file fail. ``PowerLossImages`` replays the record as a
/// power loss would leave it.
///
/// Preloading reaches every call the child makes through the C library:
/// Strata's own, LMDB's (a shared library) and Foundation's. Calls made
/// by the kernel for the process (a write through a memory map without
/// `msync`) are not seen; LMDB writes its data file with `pwrite` and
/// `writev` unless `MDB_WRITEMAP` is set, which Strata never sets.
struct WriteRecorder {
    /// What one recorded call did.
    enum Event: Equatable, CustomStringConvertible {
        /// Bytes written at an offset; `durable` for a descriptor opened
        /// with `O_DSYNC` or `O_SYNC`, whose write is on the disk when it returns.
        case write(inode: UInt64, offset: Int, bytes: [UInt8], durable: Bool)
        case truncate(inode: UInt64, length: Int)
        /// `fsync` or `fdatasync` of a file.
        case sync(inode: UInt64)
        /// `msync(MS_SYNC)` of part of a mapped file.
        case rangeSync(inode: UInt64, offset: Int, length: Int)
        /// `fsync` of the folder: its names are on the disk.
        case folderSync
        case create(inode: UInt64, name: String)
        /// A rename within the folder (or into or out of it: a name is
        /// empty then).
        case rename(inode: UInt64, from: String, to: String)
        case unlink(name: String)
        /// A point in the work that the test marked, between two children.
        case mark(Int)

        var description: String {
            switch self {
            case .write(let inode, let offset, let bytes, let durable):
                "write \(bytes.count) bytes at \(offset) of inode \(inode)\(durable ? " (O_DSYNC)" : "")"
            case .truncate(let inode, let length): "truncate inode \(inode) to \(length)"
            case .sync(let inode): "sync inode \(inode)"
            case .rangeSync(let inode, let offset, let length): "msync \(length) bytes at \(offset) of inode \(inode)"
            case .folderSync: "sync the folder"
            case .create(let inode, let name): "create \(name) (inode \(inode))"
            case .rename(let inode, let from, let to): "rename \(from) to \(to) (inode \(inode))"
            case .unlink(let name): "unlink \(name)"
            case .mark(let mark): "mark \(mark)"
            }
        }
    }

    /// The folder whose files are recorded, as its real path.
    let folder: String
    let log: String
    let library: String

    private static let markOperation: UInt32 = 100

    /// Compiles the recorder into `scratch` (which must not be `folder`)
    /// and starts an empty log there.
    init(recording folder: String, scratch: TemporaryFolder) throws {
        self.folder = URL(fileURLWithPath: folder).resolvingSymlinksInPath().path
        log = scratch.path("writes.log")
        library = scratch.path("WriteRecorder.so")
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "WriteRecorder.c")
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        compiler.arguments = ["cc", "-shared", "-fPIC", "-O1", "-o", library, source.path, "-ldl", "-lpthread"]
        let output = Pipe()
        compiler.standardOutput = output
        compiler.standardError = output
        try compiler.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        compiler.waitUntilExit()
        try #require(compiler.terminationStatus == 0, "cc could not build the write recorder: \(text)")
        try #require(FileManager.default.createFile(atPath: log, contents: nil), "cannot create \(log)")
    }

    /// The environment that preloads the recorder into a child; with
    /// `failingSyncOf`, `fsync` and `fdatasync` of every path that ends
    /// with it fail with `EIO` instead.
    func environment(failingSyncOf suffix: String? = nil) -> [String: String] {
        var environment = ["LD_PRELOAD": library, "STRATA_RECORD_FOLDER": folder, "STRATA_RECORD_LOG": log]
        if let suffix { environment["STRATA_FAIL_SYNC"] = suffix }
        return environment
    }

    /// Appends a mark to the log, between two children.
    func mark(_ value: Int) throws {
        var record: [UInt8] = []
        Self.append(Self.markOperation, to: &record)
        Self.append(UInt32(0), to: &record)
        Self.append(UInt64(0), to: &record)
        Self.append(UInt64(value), to: &record)
        Self.append(UInt64(0), to: &record)
        Self.append(UInt32(0), to: &record)
        Self.append(UInt32(0), to: &record)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: record)
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    /// Every event recorded so far, in order.
    func events() throws -> [Event] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: log)))
        var reader = Reader(bytes: bytes)
        var events: [Event] = []
        while !reader.atEnd {
            let operation: UInt32 = try reader.integer()
            let flags: UInt32 = try reader.integer()
            let inode: UInt64 = try reader.integer()
            let offset = Int(try reader.integer() as Int64)
            let length = Int(try reader.integer() as Int64)
            let nameLength = Int(try reader.integer() as UInt32)
            let secondNameLength = Int(try reader.integer() as UInt32)
            let name = String(decoding: try reader.bytes(nameLength), as: UTF8.self)
            let secondName = String(decoding: try reader.bytes(secondNameLength), as: UTF8.self)
            switch operation {
            case 1:
                events.append(
                    .write(inode: inode, offset: offset, bytes: try reader.bytes(length), durable: flags & 1 != 0))
            case 2: events.append(.truncate(inode: inode, length: length))
            case 3: events.append(.sync(inode: inode))
            case 4: events.append(.rangeSync(inode: inode, offset: offset, length: length))
            case 5: events.append(.folderSync)
            case 6: events.append(.create(inode: inode, name: name))
            case 7: events.append(.rename(inode: inode, from: name, to: secondName))
            case 8: events.append(.unlink(name: name))
            case Self.markOperation: events.append(.mark(offset))
            default: throw RecordError(message: "unknown operation \(operation) in \(log)")
            }
        }
        return events
    }

    struct RecordError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        var atEnd: Bool { position == bytes.count }

        mutating func bytes(_ count: Int) throws -> [UInt8] {
            guard count >= 0, position + count <= bytes.count else {
                throw RecordError(message: "the log ends inside a record")
            }
            defer { position += count }
            return Array(bytes[position ..< position + count])
        }

        mutating func integer<T: FixedWidthInteger>() throws -> T {
            let raw = try bytes(MemoryLayout<T>.size)
            return raw.reversed().reduce(T.zero) { $0 << 8 | T($1) }
        }
    }
}
