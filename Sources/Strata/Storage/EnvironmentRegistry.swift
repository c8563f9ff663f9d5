import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// @unchecked: `entries` and `openPaths` are only read and written while holding `lock`.
/// The environments open in this process: one per file, shared by leases.
///
/// LMDB forbids opening the same file twice in one process, so environments
/// are shared: ``open(path:options:)`` hands out leases on the one
/// environment of a file (found by device and inode, whatever the path's
/// spelling), and ``release(_:)`` of the last lease closes it.
final class EnvironmentRegistry: @unchecked Sendable {
    static let shared = EnvironmentRegistry()

    /// A file's identity, whatever path names it.
    struct FileID: Hashable {
        var device: UInt64
        var inode: UInt64

        /// The identity of the file at `path`, following symbolic links.
        init?(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    private let lock = NSLock()
    private var entries: [FileID: (environment: Environment, leases: Int)] = [:]
    /// The file each open environment's resolved path named when it was
    /// opened, to notice a file replaced while open (a new inode under a
    /// path whose lock file is still in use).
    private var openPaths: [String: FileID] = [:]

    /// Returns the environment already open for the file at `path` in this
    /// process, or opens it. Every successful call must be balanced by one
    /// ``release(_:)``.
    func open(path: String, options: EnvironmentOptions) throws -> Environment {
        lock.lock()
        defer { lock.unlock() }
        let resolved = EnvironmentRegistry.resolvedPath(path)
        let id = FileID(path: resolved)
        if let id, let entry = entries[id] {
            let open = entry.environment.options
            if open.readOnly && !options.readOnly {
                throw StrataError.fileInUse(
                    .readOnly, path: path, "is already open read-only in this process",
                    remedy: "Release every read-only Database for it before opening it for writing.")
            }
            if open.noSync != options.noSync || open.noMetaSync != options.noMetaSync {
                throw StrataError.fileInUse(
                    .storage, path: path,
                    "is already open in this process with another durability, which every Database of one file shares",
                    remedy: "Open it with the same durability, or release the other Database first.")
            }
            entries[id] = (entry.environment, entry.leases + 1)
            return entry.environment
        }
        if let previous = openPaths[resolved], previous != id, entries[previous] != nil {
            throw StrataError.fileInUse(
                .fileSystem, path: path, "was replaced or deleted while a Database still has it open in this process",
                remedy: "Release every Database for it before opening it again.")
        }
        let environment = try Environment(path: path, resolvedPath: resolved, options: options)
        entries[environment.fileID] = (environment, 1)
        openPaths[resolved] = environment.fileID
        return environment
    }

    /// Gives back a lease taken by ``open(path:options:)``; the last one
    /// closes the environment, under the registry lock, so that no other
    /// environment can open the file until this one has closed it.
    func release(_ environment: Environment) {
        lock.lock()
        defer { lock.unlock() }
        let fileID = environment.fileID
        guard let entry = entries[fileID], entry.environment === environment else { return }
        if entry.leases > 1 {
            entries[fileID] = (environment, entry.leases - 1)
        } else {
            entries[fileID] = nil
            if openPaths[environment.resolvedPath] == fileID { openPaths[environment.resolvedPath] = nil }
            environment.close()
        }
    }

    /// The number of leases on `environment`: how many `Database`s of this
    /// process use its file.
    func leases(of environment: Environment) -> Int {
        lock.withLock { entries[environment.fileID]?.leases ?? 0 }
    }

    /// The options of the environment already open in this process for the
    /// file at `path`, if there is one.
    func optionsOfOpenEnvironment(atPath path: String) -> EnvironmentOptions? {
        lock.withLock {
            guard let id = FileID(path: EnvironmentRegistry.resolvedPath(path)) else { return nil }
            return entries[id]?.environment.options
        }
    }

    /// Deletes a database file and its lock file, refusing while any
    /// `Database` in this process has the file open.
    func deleteFiles(atPath path: String) throws {
        lock.lock()
        defer { lock.unlock() }
        let resolved = EnvironmentRegistry.resolvedPath(path)
        if let id = FileID(path: resolved), entries[id] != nil {
            throw StrataError.fileInUse(
                .fileSystem, path: path,
                "needs a migration and deleteIfMigrationNeeded is set, but another Database in this process has the file open, so it cannot be deleted",
                remedy: "Release that Database first.")
        }
        for file in [resolved, resolved + "-lock"] where unlink(file) != 0 && errno != ENOENT {
            throw StrataError.fileSystem(
                path: path, "Could not delete \(file) (deleteIfMigrationNeeded): \(String(cString: strerror(errno))).")
        }
    }

    /// Puts the file at `copy` in the place of the database file at `path`
    /// (one `rename`), refusing while any `Database` in this process has
    /// the file open; when `syncing`, then flushes their folder to disk, so
    /// that the new name survives a power loss. Under the registry lock: no
    /// environment opens the old file between the check and the rename, to
    /// go on writing into a file that no name reaches any more. On failure
    /// before the rename, `copy` is removed and the file is as it was.
    func replaceFile(atPath path: String, with copy: String, syncing: Bool) throws {
        lock.lock()
        defer { lock.unlock() }
        let resolved = EnvironmentRegistry.resolvedPath(path)
        if let id = FileID(path: resolved), entries[id] != nil {
            unlink(copy)
            throw StrataError.fileInUse(
                .fileSystem, path: path, "was opened elsewhere in this process while it was being compacted",
                remedy: "Close every Database for it before compacting; the file is as it was.")
        }
        try FileCalls.move(copy, over: resolved, for: path)
        if syncing { try FileCalls.flushFolder(of: resolved, for: path) }
    }

    /// The path LMDB opens: an existing file's real path, with every
    /// symbolic link resolved, so that every spelling of one file uses one
    /// lock file; for a new file, the real path of its folder.
    static func resolvedPath(_ path: String) -> String {
        if let real = realpath(path, nil) {
            defer { free(real) }
            return String(cString: real)
        }
        let url = URL(fileURLWithPath: path).standardizedFileURL
        let folder = url.deletingLastPathComponent().path
        guard let realFolder = realpath(folder, nil) else { return url.path }
        defer { free(realFolder) }
        return URL(fileURLWithPath: String(cString: realFolder)).appendingPathComponent(url.lastPathComponent).path
    }
}
