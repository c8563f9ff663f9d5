import Foundation

/// Counters that tests read to prove what an operation wrote, for example
/// that an additive migration rewrites no record. The one place such
/// counters live: production types hold at most a ``Tally`` that they
/// report here once, when their transaction is done.
enum Instrumentation {
    /// Record puts and deletes counted by one table engine. A migration
    /// that writes a type into a fresh tree counts the records it writes
    /// or leaves out (deletes), not the unchanged ones it carries over.
    struct Tally {
        private(set) var recordWrites = 0
        /// The indexes a migration built, as `Type.property`, in order.
        private(set) var indexesBuilt: [String] = []

        @inline(__always)
        mutating func recordWritten() { recordWrites += 1 }

        mutating func indexBuilt(_ name: String) { indexesBuilt.append(name) }
    }

    private static let lock = NSLock()
    // nonisolated(unsafe): only read and written while holding `lock`.
    nonisolated(unsafe) private static var recordWritesByPath: [String: Int] = [:]
    // nonisolated(unsafe): only read and written while holding `lock`.
    nonisolated(unsafe) private static var lastOpenByPath: [String: Int] = [:]
    // nonisolated(unsafe): only read and written while holding `lock`.
    nonisolated(unsafe) private static var lastOpenIndexesByPath: [String: [String]] = [:]

    /// Adds a finished transaction's tally to the file's count.
    static func report(_ tally: Tally, path: String) {
        guard tally.recordWrites > 0 else { return }
        lock.withLock { recordWritesByPath[path, default: 0] += tally.recordWrites }
    }

    /// Notes a successful open of the file at `path`, with what its
    /// migration wrote (an empty tally when it did not migrate).
    static func opened(_ path: String, migration tally: Tally) {
        report(tally, path: path)
        lock.withLock {
            lastOpenByPath[path] = tally.recordWrites
            lastOpenIndexesByPath[path] = tally.indexesBuilt
        }
    }

    /// The indexes the last successful open of the file at `path` built,
    /// as `Type.property`, in the order it built them.
    static func indexesBuiltByLastOpen(_ path: String) -> [String] {
        lock.withLock { lastOpenIndexesByPath[path, default: []] }
    }

    /// Records the last successful open of the file at `path` wrote or
    /// deleted: 0 unless it migrated the file and rewrote records.
    static func recordWritesOfLastOpen(_ path: String) -> Int {
        lock.withLock { lastOpenByPath[path, default: 0] }
    }

    /// Records written or deleted in the file at `path` (as the
    /// configuration spells it) by committed transactions of this process:
    /// ordinary writes and migrations alike. Tests compare it before and
    /// after an operation.
    static func recordWrites(in path: String) -> Int {
        lock.withLock { recordWritesByPath[path, default: 0] }
    }
}
