import CLMDB
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// @unchecked: the size and `unusable` are guarded by `lock`, and the map is only resized while `gate` holds every transaction of this process back.
/// The memory map of one environment: its size, and the only code that
/// changes it.
///
/// `mdb_env_set_mapsize` may run only while no transaction of this process
/// is active, so every resize goes through the environment's
/// ``TransactionGate``. LMDB unmaps the file before it maps it larger and
/// has no call that maps it again when that fails, so a failed resize leaves
/// the map unusable for good.
final class MemoryMap: @unchecked Sendable {
    private let environment: OpaquePointer
    /// The environment's path, for messages.
    private let path: String
    private let gate: TransactionGate
    private let lock = NSLock()
    private var _size: Int
    /// Set when a failed resize left LMDB without a usable map.
    private var unusable = false

    init(environment: OpaquePointer, path: String, gate: TransactionGate) {
        self.environment = environment
        self.path = path
        self.gate = gate
        var info = MDB_envinfo()
        mdb_env_info(environment, &info)
        _size = info.me_mapsize
    }

    /// The current size of the memory map, in bytes.
    var size: Int { lock.withLock { _size } }

    /// Whether a failed resize left the environment without a map, so that
    /// no transaction may run on it.
    var isUnusable: Bool { lock.withLock { unusable } }

    /// Doubles the map after a transaction filled it, unless another thread
    /// has grown it since `observed` was read.
    func grow(from observed: Int) throws {
        try resize(to: observed * 2, unlessAbove: observed)
    }

    /// Grows the map ahead of a large transaction, so that it does not
    /// fill the map, roll back and run again. Does nothing when the map is
    /// already that large, or when transactions are running in this process:
    /// waiting for them could wait forever for a reader that waits for the
    /// large transaction, and the transaction grows the map as it goes anyway.
    func growIfIdle(toAtLeast size: Int) throws {
        guard self.size < size, !gate.isHeldByCurrentThread else { return }
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

    /// Takes the size another process grew the map to (`MDB_MAP_RESIZED`).
    func adoptResizedMap() throws {
        try resizeExclusively(reason: "was grown by another process and cannot be remapped") {
            let rc = mdb_env_set_mapsize(environment, 0)
            if rc != MDB_SUCCESS { lock.withLock { unusable = true } }
            try check(rc, "mdb_env_set_mapsize", path: path)
        }
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
        guard _size <= limit else { return }
        let target = MemoryMap.roundToPage(size)
        let rc = mdb_env_set_mapsize(environment, target)
        if rc != MDB_SUCCESS {
            // LMDB unmapped the file before failing to map it larger, and
            // has no call that maps it again: no transaction may run.
            lock.withLock { unusable = true }
        }
        try check(rc, "mdb_env_set_mapsize", path: path, context: .growingMap(from: _size, to: target))
        readSize()
    }

    private func resizeExclusively(reason: String, _ body: () throws -> Void) throws {
        if gate.isHeldByCurrentThread {
            throw StrataError.storage(
                path: path, "The memory map of \(path) \(reason) while this thread holds another transaction on it.",
                remedy: "Finish the outer transaction first.")
        }
        try gate.exclusively {
            try body()
            readSize()
        }
    }

    private func readSize() {
        var info = MDB_envinfo()
        mdb_env_info(environment, &info)
        lock.withLock { _size = info.me_mapsize }
    }

    /// `size` rounded up to whole pages, as `mdb_env_set_mapsize` wants it.
    static func roundToPage(_ size: Int) -> Int {
        let page = Int(getpagesize())
        return max(page, (size + page - 1) / page * page)
    }
}
