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
    /// When the next write transaction looks for dead readers.
    private let deadReaders = DeadReaderSchedule()
    /// The commits to the file, for observers.
    let feed = CommitFeed()

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

    /// Puts the file at `copy` in the place of the data file at `path`,
    /// refusing while any `Database` in this process has the file open;
    /// when `syncing`, the new name is flushed to disk before this returns.
    /// See ``EnvironmentRegistry/replaceFile(atPath:with:syncing:)``.
    static func replaceFile(atPath path: String, with copy: String, syncing: Bool) throws {
        try EnvironmentRegistry.shared.replaceFile(atPath: path, with: copy, syncing: syncing)
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
                throw StrataError.fileSystem(
                    path: path, "\(path) is a folder.",
                    remedy: "Give the path of a database file (for example \(path)/data.strata).")
            }
            if existing.st_size == 0 {
                throw StrataError.notAStrataFile(
                    path: path, because: "it is an empty file", remedy: "Delete it or choose another path.")
            }
            if options.checksFileStructure {
                try LMDBFileCheck.run(path: path)
            }
        } else if options.readOnly {
            throw StrataError.fileMissing(path: path, readOnly: true)
        }
        let lockPath = resolvedPath + "-lock"
        let lockExisted = fileManager.fileExists(atPath: lockPath)
        if !lockExisted { try Environment.reserveLockFile(lockPath, path: path) }

        var env: OpaquePointer?
        try check(mdb_env_create(&env), "mdb_env_create", path: path)
        guard let env else {
            throw StrataError.storage(path: path, "mdb_env_create returned no environment for \(path).")
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
                    throw StrataError.corruptFile(
                        path: path,
                        "\(path) is truncated: it is \(usage.fileSize) bytes long but its pages reach \(usage.usedSize) bytes."
                    )
                }
            }
            var dead: Int32 = 0
            try check(mdb_reader_check(env, &dead), "mdb_reader_check", path: path)
            guard let id = EnvironmentRegistry.FileID(path: resolvedPath) else {
                throw StrataError.fileSystem(path: path, "\(path) disappeared while it was being opened.")
            }
            self.fileID = id
        } catch {
            mdb_env_close(env)
            if !lockExisted { try? fileManager.removeItem(atPath: lockPath) }
            // A data file this open created, shorter than LMDB's two meta
            // pages, is one whose first pages did not fit on the disk: left
            // behind, the next open would refuse it as empty or damaged.
            if !existed, Environment.fileSize(resolvedPath).map({ $0 < 2 * Int(getpagesize()) }) == true {
                try? fileManager.removeItem(atPath: resolvedPath)
            }
            throw error
        }
        self.handle = env
        let gate = TransactionGate()
        self.gate = gate
        self.map = MemoryMap(environment: env, path: path, gate: gate)
        feed.setLook { [weak self] in try? self?.newestTransactionID() }
    }

    /// The id of the file's newest commit, of any process: a read
    /// transaction begins at it. Costs one read transaction (about a
    /// microsecond: two lock-file writes and a meta-page read).
    func newestTransactionID() throws -> Int {
        try withReadTransaction { $0.id }
    }

    /// The size of the lock file LMDB makes with its default reader table:
    /// `mdb_env_setup_locks` truncates it to `(maxreaders - 1) *
    /// sizeof(MDB_reader) + sizeof(MDB_txninfo)`, with 126 readers of one
    /// 64-byte cache line each and a header of two cache lines plus the
    /// first reader. A lock file of another size would change the number
    /// of readers LMDB computes from it.
    static let lockFileSize = (126 - 1) * 64 + 3 * 64

    /// Creates the lock file of a file opened for the first time, with its
    /// disk space reserved. LMDB would make it with `ftruncate`, which
    /// reserves nothing, and write its header and reader table through a
    /// memory map: on a full disk the first write to that map kills the
    /// process with `SIGBUS` instead of returning an error.
    private static func reserveLockFile(_ lockPath: String, path: String) throws {
        #if canImport(Glibc)
        let fd = Glibc.open(lockPath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        // Another process created it meanwhile, or the folder is not
        // writable: mdb_env_open reports the latter.
        guard fd >= 0 else { return }
        defer { Glibc.close(fd) }
        let rc = posix_fallocate(fd, 0, off_t(lockFileSize))
        if rc != 0 {
            unlink(lockPath)
            try check(rc, "posix_fallocate", path: path, context: .reservingLockFile)
        }
        #endif
    }

    private static func fileSize(_ path: String) -> Int? {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : nil
    }

    /// Closes the environment once no transaction of this process is
    /// running on it; a transaction begun afterwards is refused. Only the
    /// ``EnvironmentRegistry`` calls this, for the last lease.
    func close() {
        feed.stop()
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

    /// Writes a compacted copy of the environment's data file to a new file
    /// at `copy`, with the data file's permissions: free pages left out,
    /// pages renumbered in order (`mdb_env_copyfd2` with `MDB_CP_COMPACT`).
    /// Runs its own read transaction. On failure the copy is removed.
    ///
    /// When `syncing`, the copy is flushed to disk before this returns.
    /// LMDB's copy never flushes, and a copy renamed over the data file
    /// before its pages reach the disk can leave, after a power loss, a
    /// file that is empty or cut short under the file's name.
    func copyCompacted(to copy: String, syncing: Bool) throws {
        let context = LMDBCallContext.writingCopy(copy: copy)
        let descriptor = try FileCalls.create(copy, permissionsOf: resolvedPath, for: path, context: context)
        var unclosed: Int32? = descriptor
        do {
            try withReadTransaction { _ in
                try check(
                    mdb_env_copyfd2(handle, descriptor, UInt32(MDB_CP_COMPACT)), "mdb_env_copyfd2", path: path,
                    context: context)
            }
            if syncing { try FileCalls.flush(descriptor, for: path, context: context) }
            unclosed = nil
            try FileCalls.closeFile(descriptor, for: path, context: context)
        } catch {
            FileCalls.discard(unclosed, copy)
            throw error
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
                let id = txn.id
                let changes = txn.committedChanges
                let publishes = txn.publishesCommit
                try txn.commit()
                if publishes && feed.isWatched { feed.committed(transactionID: id, changes: changes) }
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
        var checkedReaders = false
        while true {
            gate.enter(reentrant: thread.hasAny(on: id))
            if closedLock.withLock({ closed }) {
                gate.leave()
                throw StrataError.closed(path: path)
            }
            if map.isUnusable {
                gate.leave()
                throw StrataError.storage(
                    path: path, "The memory map of \(path) could not be restored after a failed resize.",
                    remedy: "Release every Database for this file and open it again.")
            }
            if !readOnly && deadReaders.isDue() { clearDeadReaders() }
            var txn: OpaquePointer?
            let rc = mdb_txn_begin(handle, nil, readOnly ? UInt32(MDB_RDONLY) : 0, &txn)
            if rc == MDB_MAP_RESIZED {
                gate.leave()
                try map.adoptResizedMap()
                continue
            }
            // Every slot of the reader table is taken; slots of processes
            // that died inside a read transaction are freed by a check.
            if rc == MDB_READERS_FULL && !checkedReaders {
                checkedReaders = true
                let cleared = clearDeadReaders()
                gate.leave()
                if cleared > 0 { continue }
                try check(rc, "mdb_txn_begin", path: path)
            }
            if rc != MDB_SUCCESS { gate.leave() }
            try check(rc, "mdb_txn_begin", path: path)
            if readOnly { thread.reads[id, default: 0] += 1 } else { thread.writes.insert(id) }
            return LMDBTransaction(environment: self, handle: txn!, readOnly: readOnly)
        }
    }

    /// Frees the reader-table slots of processes that died inside a read
    /// transaction (`mdb_reader_check`), and returns how many it freed.
    /// Call with the gate entered, so that the environment stays open.
    ///
    /// A dead reader's slot keeps its snapshot's pages from being reused, so
    /// that every write makes the file grow, until a check frees it. LMDB
    /// checks only when asked: Strata asks at open, when a read transaction
    /// finds the table full, and every ``DeadReaderSchedule`` interval of
    /// writes. A failed check changes nothing and is not the caller's
    /// failure, so it counts as freeing none.
    @discardableResult
    func clearDeadReaders() -> Int {
        var dead: Int32 = 0
        return mdb_reader_check(handle, &dead) == MDB_SUCCESS ? Int(dead) : 0
    }

    /// Makes this environment see the newest commit of the file, even one
    /// whose writer died between writing its meta page and publishing it.
    ///
    /// LMDB publishes a commit to other processes after writing its meta
    /// page, by storing its transaction id in the lock file (`mti_txnid`),
    /// and read transactions take that id. A writer killed in between
    /// leaves a commit that is in the file but that readers of processes
    /// which keep the file open do not see. The next write transaction
    /// finds the write lock's owner dead and takes the newest meta page
    /// (`mdb_mutex_failed` sets `mti_txnid` from `mdb_env_pick_meta`), so
    /// beginning and aborting one publishes it. Waits for a writer of
    /// another process to finish.
    func adoptNewestCommit() throws {
        precondition(!options.readOnly, "Adopting the newest commit of read-only environment \(path)")
        let txn = try begin(readOnly: false)
        txn.finish()
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
