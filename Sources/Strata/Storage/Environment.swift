import CLMDB
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// @unchecked: the MDB_env handle is thread-safe when opened with MDB_NOTLS, and every use of it that reads the map goes through `gate`; `closed` is guarded by `closedLock`, the map's state by `map`.
/// One open LMDB environment: a data file plus its `-lock` file, and the
/// transactions on it.
///
/// Environments are shared by every `Database` of a file in this process:
/// ``open(path:options:)`` takes a lease from the ``EnvironmentRegistry``,
/// and ``release()`` gives it back.
final class Environment: @unchecked Sendable {
    /// The path as the caller spelled it, for messages.
    let path: String
    let options: EnvironmentOptions
    private let handle: OpaquePointer
    /// The file LMDB opened, by which the registry finds this environment.
    let fileID: EnvironmentRegistry.FileID
    /// The path LMDB opened.
    let resolvedPath: String
    /// Serialises `mdb_dbi_open`, which LMDB forbids in concurrent transactions.
    let setupLock = NSRecursiveLock()
    private let gate: TransactionGate
    let map: MemoryMap
    private let closedLock = NSLock()
    private var closed = false

    /// Returns the environment already open for the file at `path` in this
    /// process, or opens it. Every successful call must be balanced by one
    /// ``release()``.
    static func open(path: String, options: EnvironmentOptions) throws -> Environment {
        try EnvironmentRegistry.shared.open(path: path, options: options)
    }

    /// Gives back a lease taken by ``open(path:options:)``; the last one
    /// closes the environment.
    func release() {
        EnvironmentRegistry.shared.release(self)
    }

    /// Whether this environment has one lease: no other `Database` of this
    /// process uses the file.
    var isExclusive: Bool { EnvironmentRegistry.shared.leases(of: self) == 1 }

    /// Deletes a database file and its lock file, refusing while any
    /// `Database` in this process has the file open.
    static func deleteFiles(atPath path: String) throws {
        try EnvironmentRegistry.shared.deleteFiles(atPath: path)
    }

    /// The options of the environment already open in this process for the
    /// file at `path`, if there is one.
    static func optionsOfOpenEnvironment(atPath path: String) -> EnvironmentOptions? {
        EnvironmentRegistry.shared.optionsOfOpenEnvironment(atPath: path)
    }

    /// Opens the file at `resolvedPath`; only the ``EnvironmentRegistry``
    /// calls this, so that each file is opened once.
    init(path: String, resolvedPath: String, options: EnvironmentOptions) throws {
        self.path = path
        self.resolvedPath = resolvedPath
        self.options = options
        let fileManager = FileManager.default
        var existing = stat()
        let existed = stat(resolvedPath, &existing) == 0
        if existed {
            if (existing.st_mode & S_IFMT) == S_IFDIR {
                throw StrataError(
                    .fileSystem,
                    "\(path) is a folder; give the path of a database file (for example \(path)/data.strata).",
                    path: path)
            }
            if existing.st_size == 0 {
                throw StrataError(
                    .notAStrataFile,
                    "\(path) is an empty file, not a Strata database. Delete it or choose another path.", path: path)
            }
            if options.checksFileStructure {
                try LMDBFileCheck.run(path: path)
            }
        } else if options.readOnly {
            throw StrataError(
                .fileSystem, "\(path) does not exist; a database opened read-only must already exist.", path: path)
        }
        let lockPath = resolvedPath + "-lock"
        let lockExisted = fileManager.fileExists(atPath: lockPath)

        var env: OpaquePointer?
        try check(mdb_env_create(&env), "mdb_env_create", path: path)
        guard let env else {
            throw StrataError(.storage, "mdb_env_create returned no environment for \(path).", path: path)
        }
        do {
            try check(mdb_env_set_maxdbs(env, options.maxNamedDatabases), "mdb_env_set_maxdbs", path: path)
            try check(
                mdb_env_set_mapsize(env, MemoryMap.roundToPage(options.initialMapSize)), "mdb_env_set_mapsize",
                path: path)
            var flags = UInt32(MDB_NOSUBDIR | MDB_NOTLS)
            if options.readOnly { flags |= UInt32(MDB_RDONLY) }
            if options.noSync { flags |= UInt32(MDB_NOSYNC) }
            if options.noMetaSync { flags |= UInt32(MDB_NOMETASYNC) }
            try check(mdb_env_open(env, resolvedPath, flags, 0o644), "mdb_env_open", path: path, context: .openingFile)
            if existed {
                let usage = Environment.usage(env)
                if usage.fileSize < usage.usedSize {
                    throw StrataError(
                        .corruptFile,
                        "\(path) is truncated: it is \(usage.fileSize) bytes long but its pages reach \(usage.usedSize) bytes. Restore it from a backup.",
                        path: path)
                }
            }
            var dead: Int32 = 0
            try check(mdb_reader_check(env, &dead), "mdb_reader_check", path: path)
            guard let id = EnvironmentRegistry.FileID(path: resolvedPath) else {
                throw StrataError(.fileSystem, "\(path) disappeared while it was being opened.", path: path)
            }
            self.fileID = id
        } catch {
            mdb_env_close(env)
            if !lockExisted { try? fileManager.removeItem(atPath: lockPath) }
            throw error
        }
        self.handle = env
        let gate = TransactionGate()
        self.gate = gate
        self.map = MemoryMap(environment: env, path: path, gate: gate)
    }

    /// Closes the environment once no transaction of this process is
    /// running on it; a transaction begun afterwards is refused. Only the
    /// ``EnvironmentRegistry`` calls this, for the last lease.
    func close() {
        precondition(
            !gate.isHeldByCurrentThread,
            "The last Database of \(path) was closed inside one of its own transactions.")
        gate.exclusively {
            closedLock.withLock {
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
    var mapSize: Int { map.size }

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
            let observedMapSize = map.size
            do {
                let result = try body(txn)
                if txn.ranOutOfMapSpace {
                    // `body` caught and ignored the map-full error.
                    txn.finish()
                    try map.grow(from: observedMapSize)
                    continue
                }
                try txn.commit()
                return result
            } catch let error as StrataError where error.lmdbCode == .mapFull || txn.ranOutOfMapSpace {
                txn.finish()
                try map.grow(from: observedMapSize)
            } catch {
                txn.finish()
                throw error
            }
        }
    }

    /// Begins a transaction; the caller must `commit()` or `finish()` it on
    /// this thread.
    func begin(readOnly: Bool) throws -> LMDBTransaction {
        let id = ObjectIdentifier(gate)
        let thread = ThreadTransactions.current
        if !readOnly {
            precondition(
                !thread.writes.contains(id),
                "A write transaction on \(path) is already open on this thread; nested write transactions are not supported."
            )
        }
        while true {
            gate.enter(reentrant: thread.hasAny(on: id))
            if closedLock.withLock({ closed }) {
                gate.leave()
                throw StrataError(.closed, "\(path) was closed. Open it again to use it.", path: path)
            }
            if map.isUnusable {
                gate.leave()
                throw StrataError(
                    .storage,
                    "The memory map of \(path) could not be restored after a failed resize. Release every Database for this file and open it again.",
                    path: path)
            }
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
            if rc == MDB_MAP_RESIZED {
                gate.leave()
                try map.adoptResizedMap()
                continue
            }
            if rc != MDB_SUCCESS { gate.leave() }
            try check(rc, "mdb_txn_begin", path: path)
            if readOnly { thread.reads[id, default: 0] += 1 } else { thread.writes.insert(id) }
            return LMDBTransaction(environment: self, handle: txn!, readOnly: readOnly)
        }
    }

    /// Ends the bookkeeping of a transaction that `begin(readOnly:)` began;
    /// called by the transaction when it commits or aborts.
    func transactionEnded(readOnly: Bool) {
        let id = ObjectIdentifier(gate)
        let thread = ThreadTransactions.current
        if readOnly {
            thread.reads[id, default: 1] -= 1
            if thread.reads[id] == 0 { thread.reads[id] = nil }
        } else {
            thread.writes.remove(id)
        }
        gate.leave()
    }
}
