import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Lets transactions run concurrently, and lets the map be resized only when
/// none is active in this process — `mdb_env_set_mapsize` requires that.
///
/// A resize waits for active transactions to finish and holds new ones back
/// while it waits, except on a thread that already has a transaction open on
/// the same environment (holding that one back would deadlock).
// @unchecked: all counters are guarded by `condition`.
final class TransactionGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var active = 0
    private var resizing = false
    private var resizesWaiting = 0

    func enter(reentrant: Bool) {
        condition.lock()
        while resizing || (resizesWaiting > 0 && !reentrant) { condition.wait() }
        active += 1
        condition.unlock()
    }

    func leave() {
        condition.lock()
        active -= 1
        if active == 0 { condition.broadcast() }
        condition.unlock()
    }

    /// Runs `body` exclusively if no transaction is active right now, and
    /// returns false without waiting otherwise.
    func exclusivelyIfIdle(_ body: () throws -> Void) rethrows -> Bool {
        condition.lock()
        guard !resizing && active == 0 else {
            condition.unlock()
            return false
        }
        resizing = true
        condition.unlock()
        defer { endResize() }
        try body()
        return true
    }

    private func endResize() {
        condition.lock()
        resizing = false
        condition.broadcast()
        condition.unlock()
    }

    func exclusively<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        resizesWaiting += 1
        while resizing || active > 0 { condition.wait() }
        resizesWaiting -= 1
        resizing = true
        condition.unlock()
        defer { endResize() }
        return try body()
    }

    /// Whether the current thread has a transaction open behind this gate:
    /// waiting for the gate to empty would then wait for the thread itself.
    var isHeldByCurrentThread: Bool {
        ThreadTransactions.current.hasAny(on: ObjectIdentifier(self))
    }
}

/// The transactions the current thread has open, per environment (keyed by
/// the environment's ``TransactionGate``).
///
/// Used to trap nested write transactions on one thread (LMDB would
/// deadlock on its own writer lock) and to refuse a map resize that would
/// wait for the calling thread itself.
final class ThreadTransactions {
    var reads: [ObjectIdentifier: Int] = [:]
    var writes: Set<ObjectIdentifier> = []

    static var current: ThreadTransactions {
        if let raw = pthread_getspecific(threadTransactionsKey) {
            return Unmanaged<ThreadTransactions>.fromOpaque(raw).takeUnretainedValue()
        }
        let state = ThreadTransactions()
        pthread_setspecific(threadTransactionsKey, Unmanaged.passRetained(state).toOpaque())
        return state
    }

    func hasAny(on environment: ObjectIdentifier) -> Bool {
        writes.contains(environment) || reads[environment, default: 0] > 0
    }
}

private let threadTransactionsKey: pthread_key_t = {
    var key = pthread_key_t()
    #if canImport(Darwin)
    pthread_key_create(&key) { raw in
        Unmanaged<ThreadTransactions>.fromOpaque(raw).release()
    }
    #else
    pthread_key_create(&key) { raw in
        guard let raw else { return }
        Unmanaged<ThreadTransactions>.fromOpaque(raw).release()
    }
    #endif
    return key
}()
