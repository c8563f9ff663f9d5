import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How an environment is opened.
struct EnvironmentOptions: Sendable, Equatable {
    /// The map size a new environment starts with, unless told otherwise:
    /// 1 GiB of address space on 64-bit systems (LMDB does not grow the file
    /// to the map's size, so this costs no disk), 8 MiB elsewhere. Large
    /// enough that few apps ever pay for a transaction that fills the map,
    /// is rolled back and runs again.
    static let defaultInitialMapSize = MemoryLayout<Int>.size == 8 ? 1 << 30 : 8 << 20

    var readOnly = false
    /// The map size to start with; the map doubles whenever it fills up.
    var initialMapSize = defaultInitialMapSize
    /// `MDB_NOSYNC`: no fsync at commit.
    var noSync = false
    /// `MDB_NOMETASYNC`: fsync data but not the meta page at commit.
    var noMetaSync = false
    var maxNamedDatabases: UInt32 = 4096
}

// @unchecked: the MDB_env handle is thread-safe when opened with MDB_NOTLS, and every use of it that reads the map goes through `gate`; mutable state is guarded by `mapLock` or the registry lock.
/// One open LMDB environment: a data file plus its `-lock` file.
///
/// LMDB forbids opening the same file twice in one process, so environments
/// are shared: ``open(path:options:)`` hands out leases on the one
/// environment of a file (found by device and inode, whatever the path's
/// spelling), and ``release()`` of the last lease closes it.
final class Environment: @unchecked Sendable {
    /// The path as the caller spelled it, for messages.
    let path: String
    let options: EnvironmentOptions
    private let handle: OpaquePointer
    private let fileID: FileID
    /// The path LMDB opened; set once, under the registry lock.
    private var resolvedPath = ""
    /// Serialises `mdb_dbi_open`, which LMDB forbids in concurrent transactions.
    let setupLock = NSRecursiveLock()
    private let gate = TransactionGate()
    private let mapLock = NSLock()
    private var _mapSize: Int
    /// Set when a failed resize left LMDB without a usable map.
    private var unusable = false
    private var closed = false

    private struct FileID: Hashable {
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

    private static let registryLock = NSLock()
    // nonisolated(unsafe): only read and written while holding registryLock.
    nonisolated(unsafe) private static var registry: [FileID: (environment: Environment, leases: Int)] = [:]
    /// The file each open environment's resolved path named when it was
    /// opened, to notice a file replaced while open (a new inode under a
    /// path whose lock file is still in use).
    // nonisolated(unsafe): only read and written while holding registryLock.
    nonisolated(unsafe) private static var openPaths: [String: FileID] = [:]

    /// Returns the environment already open for the file at `path` in this
    /// process, or opens it. Every successful call must be balanced by one
    /// ``release()``.
    static func open(path: String, options: EnvironmentOptions) throws -> Environment {
        registryLock.lock()
        defer { registryLock.unlock() }
        let resolved = resolvedPath(path)
        let id = FileID(path: resolved)
        if let id, let entry = registry[id] {
            let open = entry.environment.options
            if open.readOnly && !options.readOnly {
                throw StrataError(.readOnly, "\(path) is already open read-only in this process; release every read-only Database for it before opening it for writing.", path: path)
            }
            if open.noSync != options.noSync || open.noMetaSync != options.noMetaSync {
                throw StrataError(.storage, "\(path) is already open in this process with another durability, which every Database of one file shares. Open it with the same durability, or release the other Database first.", path: path)
            }
            registry[id] = (entry.environment, entry.leases + 1)
            return entry.environment
        }
        if let previous = openPaths[resolved], previous != id, registry[previous] != nil {
            throw StrataError(.fileSystem, "\(path) was replaced or deleted while a Database still has it open in this process. Release every Database for it before opening it again.", path: path)
        }
        let environment = try Environment(path: path, resolvedPath: resolved, options: options)
        registry[environment.fileID] = (environment, 1)
        openPaths[resolved] = environment.fileID
        environment.resolvedPath = resolved
        return environment
    }

    /// Gives back a lease taken by ``open(path:options:)``; the last one
    /// closes the environment, under the registry lock, so that no other
    /// environment can open the file until this one has closed it.
    func release() {
        Environment.registryLock.lock()
        defer { Environment.registryLock.unlock() }
        guard let entry = Environment.registry[fileID], entry.environment === self else { return }
        if entry.leases > 1 {
            Environment.registry[fileID] = (self, entry.leases - 1)
        } else {
            Environment.registry[fileID] = nil
            if Environment.openPaths[resolvedPath] == fileID { Environment.openPaths[resolvedPath] = nil }
            close()
        }
    }

    /// The options of the environment already open in this process for the
    /// file at `path`, if there is one.
    static func optionsOfOpenEnvironment(atPath path: String) -> EnvironmentOptions? {
        registryLock.withLock {
            guard let id = FileID(path: resolvedPath(path)) else { return nil }
            return registry[id]?.environment.options
        }
    }

    /// Whether the file system holding `path` has (almost) no free space left.
    static func diskIsFull(_ path: String) -> Bool {
        var info = statvfs()
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard statvfs(folder, &info) == 0 else { return false }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize) < 64 * 1024
    }

    /// Whether this environment has one lease: no other `Database` of this
    /// process uses the file.
    var isExclusive: Bool {
        Environment.registryLock.withLock { Environment.registry[fileID]?.leases == 1 }
    }

    /// Deletes a database file and its lock file, refusing while any
    /// `Database` in this process has the file open.
    static func deleteFiles(atPath path: String) throws {
        registryLock.lock()
        defer { registryLock.unlock() }
        let resolved = resolvedPath(path)
        if let id = FileID(path: resolved), registry[id] != nil {
            throw StrataError(.fileSystem, "\(path) needs a migration and deleteIfMigrationNeeded is set, but another Database in this process has the file open, so it cannot be deleted. Release that Database first.", path: path)
        }
        for file in [resolved, resolved + "-lock"] where unlink(file) != 0 && errno != ENOENT {
            throw StrataError(.fileSystem, "Could not delete \(file) (deleteIfMigrationNeeded): \(String(cString: strerror(errno))).", path: path)
        }
    }

    private init(path: String, resolvedPath: String, options: EnvironmentOptions) throws {
        self.path = path
        self.options = options
        let fileManager = FileManager.default
        var existing = stat()
        let existed = stat(resolvedPath, &existing) == 0
        if existed {
            if (existing.st_mode & S_IFMT) == S_IFDIR {
                throw StrataError(.fileSystem, "\(path) is a folder; give the path of a database file (for example \(path)/data.strata).", path: path)
            }
            if existing.st_size == 0 {
                throw StrataError(.notAStrataFile, "\(path) is an empty file, not a Strata database. Delete it or choose another path.", path: path)
            }
        } else if options.readOnly {
            throw StrataError(.fileSystem, "\(path) does not exist; a database opened read-only must already exist.", path: path)
        }
        let lockPath = resolvedPath + "-lock"
        let lockExisted = fileManager.fileExists(atPath: lockPath)

        var env: OpaquePointer?
        try check(mdb_env_create(&env), "mdb_env_create", path: path)
        guard let env else { throw StrataError(.storage, "mdb_env_create returned no environment for \(path).", path: path) }
        do {
            try check(mdb_env_set_maxdbs(env, options.maxNamedDatabases), "mdb_env_set_maxdbs", path: path)
            try check(mdb_env_set_mapsize(env, Environment.roundToPage(options.initialMapSize)), "mdb_env_set_mapsize", path: path)
            var flags = UInt32(MDB_NOSUBDIR | MDB_NOTLS)
            if options.readOnly { flags |= UInt32(MDB_RDONLY) }
            if options.noSync { flags |= UInt32(MDB_NOSYNC) }
            if options.noMetaSync { flags |= UInt32(MDB_NOMETASYNC) }
            let rc = mdb_env_open(env, resolvedPath, flags, 0o644)
            if rc == ENOENT || rc == EACCES || rc == EROFS || rc == ENOTDIR || rc == EISDIR {
                throw StrataError(.fileSystem, "Cannot open \(path): \(String(cString: strerror(rc))). Check that the folder exists and is writable.", path: path, lmdbCode: LMDBResultCode(rawValue: rc))
            }
            if rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH {
                throw StrataError(.notAStrataFile, "\(path) is not a Strata database (it is not an LMDB file of a supported version). Check the path; Strata leaves the file as it is.", path: path, lmdbCode: LMDBResultCode(rawValue: rc))
            }
            try check(rc, "mdb_env_open", path: path)
            if existed {
                let usage = Environment.usage(env)
                if usage.fileSize < usage.usedSize {
                    throw StrataError(.corruptFile, "\(path) is truncated: it is \(usage.fileSize) bytes long but its pages reach \(usage.usedSize) bytes. Restore it from a backup.", path: path)
                }
            }
            var dead: Int32 = 0
            try check(mdb_reader_check(env, &dead), "mdb_reader_check", path: path)
            guard let id = FileID(path: resolvedPath) else {
                throw StrataError(.fileSystem, "\(path) disappeared while it was being opened.", path: path)
            }
            self.fileID = id
        } catch {
            mdb_env_close(env)
            if !lockExisted { try? fileManager.removeItem(atPath: lockPath) }
            throw error
        }
        self.handle = env
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        self._mapSize = info.me_mapsize
    }

    /// Closes the environment once no transaction of this process is
    /// running on it; a transaction begun afterwards is refused.
    private func close() {
        precondition(!ThreadTransactions.current.hasAny(on: ObjectIdentifier(self)),
                     "The last Database of \(path) was closed inside one of its own transactions.")
        gate.exclusively {
            mapLock.withLock {
                precondition(!closed)
                closed = true
            }
            mdb_env_close(handle)
        }
    }

    deinit {
        if !closed { mdb_env_close(handle) }
    }

    /// The current size of the memory map, in bytes.
    var mapSize: Int { mapLock.withLock { _mapSize } }

    /// The size of the data file and the bytes its data uses: its pages
    /// less those on LMDB's free list (space that writes will reuse, and
    /// that `compact` gives back). Read inside a transaction, because LMDB
    /// reads it from the map, which a resize on another thread would
    /// otherwise unmap underneath.
    func fileUsage() throws -> (fileSize: Int, usedSize: Int) {
        try withReadTransaction { txn in
            let usage = Environment.usage(handle)
            var pages = MDB_stat()
            mdb_env_stat(handle, &pages)
            let free = try txn.freePageCount() * Int(pages.ms_psize)
            return (usage.fileSize, max(0, usage.usedSize - free))
        }
    }

    private static func usage(_ env: OpaquePointer) -> (fileSize: Int, usedSize: Int) {
        var info = MDB_envinfo()
        var pages = MDB_stat()
        mdb_env_info(env, &info)
        mdb_env_stat(env, &pages)
        var fd: Int32 = -1
        var file = stat()
        let fileSize = mdb_env_get_fd(env, &fd) == MDB_SUCCESS && fstat(fd, &file) == 0 ? Int(file.st_size) : 0
        return (fileSize, (info.me_last_pgno + 1) * Int(pages.ms_psize))
    }

    /// Writes a compacted copy of the environment's data file to `path`:
    /// free pages left out, pages renumbered in order (`mdb_env_copy2` with
    /// `MDB_CP_COMPACT`). Runs its own read transaction.
    func copyCompacted(to path: String) throws {
        try withReadTransaction { _ in
            try check(mdb_env_copy2(handle, path, UInt32(MDB_CP_COMPACT)), "mdb_env_copy2", path: self.path)
        }
    }

    // MARK: Transactions

    /// Runs `body` in a read transaction. The bytes LMDB returns are valid
    /// only inside `body`.
    func withReadTransaction<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        let txn = try begin(readOnly: true)
        defer { txn.finish() }
        return try body(txn)
    }

    /// Runs `body` in a write transaction and commits it. When the map fills
    /// up, the transaction is rolled back, the map doubled and `body` run
    /// again, so `body` must be safe to run more than once.
    func withWriteTransaction<T>(_ body: (LMDBTransaction) throws -> T) throws -> T {
        precondition(!options.readOnly, "Write transaction on read-only environment \(path)")
        while true {
            let txn = try begin(readOnly: false)
            let observedMapSize = mapSize
            do {
                let result = try body(txn)
                if txn.ranOutOfMapSpace {
                    // `body` caught and ignored the map-full error.
                    txn.finish()
                    try grow(from: observedMapSize)
                    continue
                }
                try txn.commit()
                return result
            } catch let error as StrataError where error.lmdbCode == .mapFull || txn.ranOutOfMapSpace {
                txn.finish()
                try grow(from: observedMapSize)
            } catch {
                txn.finish()
                throw error
            }
        }
    }

    /// Begins a transaction; the caller must `commit()` or `finish()` it on
    /// this thread.
    func begin(readOnly: Bool) throws -> LMDBTransaction {
        let id = ObjectIdentifier(self)
        let thread = ThreadTransactions.current
        if !readOnly {
            precondition(!thread.writes.contains(id), "A write transaction on \(path) is already open on this thread; nested write transactions are not supported.")
        }
        while true {
            gate.enter(reentrant: thread.hasAny(on: id))
            let (isClosed, isUnusable) = mapLock.withLock { (closed, unusable) }
            if isClosed {
                gate.leave()
                throw StrataError(.closed, "\(path) was closed. Open it again to use it.", path: path)
            }
            if isUnusable {
                gate.leave()
                throw StrataError(.storage, "The memory map of \(path) could not be restored after a failed resize. Release every Database for this file and open it again.", path: path)
            }
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
            if rc == MDB_MAP_RESIZED {
                gate.leave()
                try adoptResizedMap()
                continue
            }
            if rc != MDB_SUCCESS { gate.leave() }
            try check(rc, "mdb_txn_begin", path: path)
            if readOnly { thread.reads[id, default: 0] += 1 } else { thread.writes.insert(id) }
            return LMDBTransaction(environment: self, handle: txn!, readOnly: readOnly)
        }
    }

    func transactionEnded(readOnly: Bool) {
        let id = ObjectIdentifier(self)
        let thread = ThreadTransactions.current
        if readOnly {
            thread.reads[id, default: 1] -= 1
            if thread.reads[id] == 0 { thread.reads[id] = nil }
        } else {
            thread.writes.remove(id)
        }
        gate.leave()
    }

    // MARK: Map growth

    private func grow(from observed: Int) throws {
        try resize(to: observed * 2, unlessAbove: observed)
    }

    /// Grows the map ahead of a large transaction, so that it does not
    /// fill the map, roll back and run again. Does nothing when the map is
    /// already that large, or when transactions are running in this process:
    /// waiting for them could wait forever for a reader that waits for the
    /// large transaction, and the transaction grows the map as it goes anyway.
    func growMapIfIdle(toAtLeast size: Int) throws {
        guard mapSize < size, !ThreadTransactions.current.hasAny(on: ObjectIdentifier(self)) else { return }
        var failure: StrataError?
        _ = gate.exclusivelyIfIdle {
            do {
                try setMapSize(size, unlessAbove: size - 1)
            } catch let error as StrataError {
                failure = error
            } catch {
                preconditionFailure("setMapSize throws only StrataError")
            }
        }
        if let failure { throw failure }
    }

    /// Sets the map size to `size`, unless another thread has meanwhile
    /// made it larger than `limit`.
    private func resize(to size: Int, unlessAbove limit: Int) throws {
        try resizeExclusively(reason: "is full and cannot grow") {
            try setMapSize(size, unlessAbove: limit)
        }
    }

    /// Sets the map size; call only with the gate held exclusively.
    private func setMapSize(_ size: Int, unlessAbove limit: Int) throws {
        guard _mapSize <= limit else { return }
        let target = Environment.roundToPage(size)
        let rc = mdb_env_set_mapsize(handle, target)
        guard rc == MDB_SUCCESS else {
            // LMDB unmapped the file before failing to map it larger, and
            // has no call that maps it again: no transaction may run.
            mapLock.withLock { unusable = true }
            throw StrataError(.storage, "Could not grow the memory map of \(path) from \(_mapSize) to \(target) bytes: \(LMDBResultCode(rawValue: rc)). Nothing was written and the file is intact; free memory or address space, then release every Database for this file and open it again.", path: path, lmdbCode: LMDBResultCode(rawValue: rc))
        }
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        mapLock.withLock { _mapSize = info.me_mapsize }
    }

    private func adoptResizedMap() throws {
        try resizeExclusively(reason: "was grown by another process and cannot be remapped") {
            let rc = mdb_env_set_mapsize(handle, 0)
            if rc != MDB_SUCCESS { mapLock.withLock { unusable = true } }
            try check(rc, "mdb_env_set_mapsize", path: path)
        }
    }

    private func resizeExclusively(reason: String, _ body: () throws -> Void) throws {
        if ThreadTransactions.current.hasAny(on: ObjectIdentifier(self)) {
            throw StrataError(.storage, "The memory map of \(path) \(reason) while this thread holds another transaction on it. Finish the outer transaction first.", path: path)
        }
        try gate.exclusively {
            try body()
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            mapLock.withLock { _mapSize = info.me_mapsize }
        }
    }

    // MARK: Helpers

    static func roundToPage(_ size: Int) -> Int {
        let page = Int(getpagesize())
        return max(page, (size + page - 1) / page * page)
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
