import CLMDB
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How an environment is opened.
struct EnvironmentOptions: Sendable, Equatable {
    var readOnly = false
    /// The map size to start with; the map doubles whenever it fills up.
    var initialMapSize = 8 << 20
    /// `MDB_NOSYNC`: no fsync at commit.
    var noSync = false
    /// `MDB_NOMETASYNC`: fsync data but not the meta page at commit.
    var noMetaSync = false
    var maxNamedDatabases: UInt32 = 4096
}

/// One open LMDB environment: a data file plus its `-lock` file.
///
/// LMDB forbids opening the same file twice in one process, so environments
/// are shared through ``open(path:options:)``, one per path.
// @unchecked: the MDB_env handle is thread-safe when opened with MDB_NOTLS;
// the mutable map size is only touched inside `gate.exclusively` or under `mapLock`.
final class Environment: @unchecked Sendable {
    let path: String
    let options: EnvironmentOptions
    let handle: OpaquePointer
    /// Serialises `mdb_dbi_open`, which LMDB forbids in concurrent transactions.
    let setupLock = NSRecursiveLock()
    private let gate = TransactionGate()
    private let mapLock = NSLock()
    private var _mapSize: Int

    /// Open environments by canonical path. Recursive, because the last
    /// release of an environment (whose `deinit` takes this lock to close
    /// it) can happen while this thread holds the lock.
    private static let registryLock = NSRecursiveLock()
    // nonisolated(unsafe): only read and written while holding registryLock.
    nonisolated(unsafe) private static var registry: [String: WeakEnvironment] = [:]

    /// Returns the environment already open for `path` in this process, or
    /// opens it.
    static func open(path: String, options: EnvironmentOptions) throws -> Environment {
        let key = canonicalPath(path)
        registryLock.lock()
        defer { registryLock.unlock() }
        if let existing = registry[key]?.environment {
            if existing.options.readOnly && !options.readOnly {
                throw StrataError(.readOnly, "\(path) is already open read-only in this process; close every read-only Database for it before opening it for writing.", path: path)
            }
            return existing
        }
        let environment = try Environment(path: path, options: options)
        registry = registry.filter { $0.value.environment != nil }
        registry[key] = WeakEnvironment(environment: environment)
        return environment
    }

    private init(path: String, options: EnvironmentOptions) throws {
        self.path = path
        self.options = options
        let fileManager = FileManager.default
        let existed = fileManager.fileExists(atPath: path)
        if existed {
            let size = (try? fileManager.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
            if size == 0 {
                throw StrataError(.notAStrataFile, "\(path) is an empty file, not a Strata database. Delete it or choose another path.", path: path)
            }
        } else if options.readOnly {
            throw StrataError(.fileSystem, "\(path) does not exist; a database opened read-only must already exist.", path: path)
        }
        let lockPath = path + "-lock"
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
            let rc = mdb_env_open(env, path, flags, 0o644)
            if rc == ENOENT || rc == EACCES || rc == EROFS || rc == ENOTDIR {
                throw StrataError(.fileSystem, "Cannot open \(path): \(String(cString: strerror(rc))). Check that the folder exists and is writable.", path: path, lmdbCode: LMDBResultCode(rawValue: rc))
            }
            if rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH {
                throw StrataError(.notAStrataFile, "\(path) is not a Strata database (it is not an LMDB file of a supported version). Check the path; Strata leaves the file as it is.", path: path, lmdbCode: LMDBResultCode(rawValue: rc))
            }
            try check(rc, "mdb_env_open", path: path)
            if existed { try Environment.checkNotTruncated(env, path: path) }
            var dead: Int32 = 0
            try check(mdb_reader_check(env, &dead), "mdb_reader_check", path: path)
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

    deinit {
        // Under the registry lock, so that no new environment opens the file
        // until this one has closed it: LMDB allows one per file per process.
        Environment.registryLock.lock()
        mdb_env_close(handle)
        Environment.registryLock.unlock()
    }

    /// The current size of the memory map, in bytes.
    var mapSize: Int { mapLock.withLock { _mapSize } }

    /// The size of the data file, in bytes, and the bytes in use.
    func fileUsage() -> (fileSize: Int, usedSize: Int) {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        mdb_env_info(handle, &info)
        mdb_env_stat(handle, &stat)
        let fileSize = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        return (fileSize, (info.me_last_pgno + 1) * Int(stat.ms_psize))
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
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
            if rc == MDB_MAP_RESIZED {
                gate.leave()
                try adoptResizedMap(thread: thread)
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
        try resizeExclusively(reason: "is full and cannot grow") { () throws in
            guard _mapSize <= observed else { return }  // another thread already grew it
            let target = Environment.roundToPage(observed * 2)
            try check(mdb_env_set_mapsize(handle, target), "mdb_env_set_mapsize", path: path)
        }
    }

    private func adoptResizedMap(thread: ThreadTransactions) throws {
        try resizeExclusively(reason: "was grown by another process and cannot be remapped") { () throws in
            try check(mdb_env_set_mapsize(handle, 0), "mdb_env_set_mapsize", path: path)
        }
    }

    private func resizeExclusively(reason: String, _ body: () throws -> Void) throws {
        if ThreadTransactions.current.hasAny(on: ObjectIdentifier(self)) {
            throw StrataError(.storage, "The memory map of \(path) \(reason) while this thread holds another transaction on it. Finish the outer transaction first.", path: path, lmdbCode: .mapFull)
        }
        try gate.exclusively {
            try body()
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            mapLock.withLock { _mapSize = info.me_mapsize }
        }
    }

    // MARK: Helpers

    private static func checkNotTruncated(_ env: OpaquePointer, path: String) throws {
        var info = MDB_envinfo()
        var stat = MDB_stat()
        try check(mdb_env_info(env, &info), "mdb_env_info", path: path)
        try check(mdb_env_stat(env, &stat), "mdb_env_stat", path: path)
        let expected = (info.me_last_pgno + 1) * Int(stat.ms_psize)
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? 0
        if size < expected {
            throw StrataError(.corruptFile, "\(path) is truncated: it is \(size) bytes long but its pages reach \(expected) bytes. Restore it from a backup.", path: path)
        }
    }

    static func roundToPage(_ size: Int) -> Int {
        let page = Int(getpagesize())
        return max(page, (size + page - 1) / page * page)
    }

    /// An absolute path with the folder's symbolic links resolved, so that
    /// two spellings of one file share one environment.
    static func canonicalPath(_ path: String) -> String {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        let folder = url.deletingLastPathComponent().resolvingSymlinksInPath()
        return folder.appendingPathComponent(url.lastPathComponent).path
    }
}

private struct WeakEnvironment {
    weak var environment: Environment?
}
