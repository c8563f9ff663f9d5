import Foundation

// @unchecked: `makers` is read and written only while holding `lock`.
/// What makes the ``ChangeSubscriber``s of a `Database`'s write
/// transactions besides observation's, which the engine makes itself: each
/// write transaction asks every maker for a subscriber of its own (a sync
/// change log, a test's recorder). It starts with the configuration's
/// makers (``Database/Configuration/changeSubscribers``), which a
/// migration at open gets too.
final class ChangeSubscriberRegistry: @unchecked Sendable {
    typealias Maker = @Sendable () -> any ChangeSubscriber

    private let lock = NSLock()
    private var makers: [Int: Maker] = [:]
    private var nextToken = 0

    init(_ initial: [Maker] = []) {
        for maker in initial { _ = add(maker) }
    }

    /// Adds a maker; returns the token ``remove(_:)`` takes.
    func add(_ maker: @escaping Maker) -> Int {
        lock.withLock {
            nextToken += 1
            makers[nextToken] = maker
            return nextToken
        }
    }

    /// Removes a maker: write transactions that begin afterwards get no
    /// subscriber from it.
    func remove(_ token: Int) {
        lock.withLock { makers[token] = nil }
    }

    /// A subscriber of each maker, in the order they were added, for one
    /// write transaction.
    func makeSubscribers() -> [any ChangeSubscriber] {
        let current = lock.withLock { makers.isEmpty ? [] : makers.keys.sorted().map { makers[$0]! } }
        return current.map { $0() }
    }
}
