import Foundation

// @unchecked: `listener` is read and written only while holding `lock`;
// the stream's continuation is Sendable.
/// What wakes ``DatabaseSync/run(with:options:)`` between two exchanges:
/// a commit to the file, a commit on the hub, or the end of the poll
/// interval, as signals of one stream that the run loop alone reads
/// (``waiter()``).
final class SyncWakeup: @unchecked Sendable {
    enum Signal: Sendable {
        /// A commit to the file: a local write, or an exchange's own apply.
        case localCommit
        /// The hub's sequence number after one of its commits.
        case hubCommit(UInt64)
        /// The poll interval of the wait of this number ended.
        case timeout(Int)
    }

    private let stream: AsyncStream<Signal>
    private let continuation: AsyncStream<Signal>.Continuation
    private let lock = NSLock()
    /// The task that reads the hub's commits, while the hub's stream runs.
    private var listener: Task<Void, Never>?

    init() {
        // A wait needs only the newest signals: a burst of commits during
        // an exchange is one reason to exchange again.
        (stream, continuation) = AsyncStream.makeStream(of: Signal.self, bufferingPolicy: .bufferingNewest(64))
    }

    func signal(_ signal: Signal) {
        continuation.yield(signal)
    }

    /// Reads the hub's commits, unless a stream of them still runs: the
    /// last one may have ended (a connection lost, or a hub that cannot
    /// tell).
    func listen(to hub: some SyncHub) {
        lock.withLock {
            guard listener == nil else { return }
            listener = Task { [continuation] in
                for await seq in hub.commits() { continuation.yield(.hubCommit(seq)) }
                self.lock.withLock { self.listener = nil }
            }
        }
    }

    /// Stops reading the hub's commits and ends the stream.
    func finish() {
        let listener = lock.withLock {
            defer { self.listener = nil }
            return self.listener
        }
        listener?.cancel()
        continuation.finish()
    }

    /// The one reader of the signals.
    func waiter() -> Waiter {
        Waiter(iterator: stream.makeAsyncIterator(), continuation: continuation)
    }

    struct Waiter {
        var iterator: AsyncStream<Signal>.Iterator
        let continuation: AsyncStream<Signal>.Continuation
        var generation = 0

        /// Waits for a commit to the file past `localAfter`, a hub commit
        /// past `hubAfter`, or `interval`; false when the task was
        /// cancelled. Signals from before (the exchange's own applies, its
        /// own push on the hub, an earlier wait's timer) wake nothing.
        mutating func wait(
            _ interval: Duration, localAfter: UInt64, hubAfter: UInt64, sync: DatabaseSync
        ) async -> Bool {
            generation += 1
            let current = generation
            let timer = Task { [continuation] in
                do { try await Task.sleep(for: interval) } catch { return }
                continuation.yield(.timeout(current))
            }
            defer { timer.cancel() }
            while let signal = await iterator.next() {
                switch signal {
                case .timeout(let number) where number == current:
                    return true
                case .hubCommit(let seq) where seq > hubAfter:
                    return true
                case .localCommit:
                    // A file that cannot be read wakes the loop: its
                    // exchange reports why.
                    if (try? sync.lastSequenceNumber()) ?? .max > localAfter { return true }
                default:
                    continue
                }
            }
            return !Task.isCancelled
        }
    }
}
