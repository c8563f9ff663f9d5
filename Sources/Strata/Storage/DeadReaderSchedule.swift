import Foundation

// @unchecked: both counters are guarded by `lock`.
/// How often write transactions look for readers of dead processes: once
/// every ``writes`` write transactions or ``interval``, whichever comes
/// first. A check scans LMDB's reader table (126 slots) and asks the kernel
/// about each other process in it with one `fcntl`, taking the reader
/// table's mutex only to clear a slot; see docs/Reliability.md for its
/// measured cost.
final class DeadReaderSchedule: @unchecked Sendable {
    static let writes = 64
    static let interval: Duration = .seconds(1)

    private let lock = NSLock()
    private var writesSinceCheck = 0
    private var lastCheck = ContinuousClock.now

    /// Counts a write transaction, and returns whether it should check.
    func isDue() -> Bool {
        lock.withLock {
            writesSinceCheck += 1
            let now = ContinuousClock.now
            guard writesSinceCheck >= Self.writes || now - lastCheck >= Self.interval else { return false }
            writesSinceCheck = 0
            lastCheck = now
            return true
        }
    }
}
