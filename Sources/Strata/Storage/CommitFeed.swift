import Dispatch
import Foundation

// @unchecked: every stored property is read and written only while holding `lock`.
/// Tells listeners about the commits to an environment's file: those made
/// in this process at once, after each commit, and those of other
/// processes when asked to look, or on a timer while anyone listens.
///
/// LMDB sends no notifications. A commit of this process is published by
/// ``Environment/withWriteTransaction(_:)`` with what the committing layer
/// said it changed. Another process's commits are noticed from the newest
/// transaction id: a read transaction begins at the newest commit, and its
/// id is that commit's. What those commits changed is unknown, so they are
/// published without changes.
///
/// Listeners are called on the thread that noticed the commit, outside the
/// feed's lock, and must return quickly.
final class CommitFeed: @unchecked Sendable {
    /// One commit, or several noticed together.
    struct Commit: Sendable {
        /// The LMDB transaction id of the (newest) commit.
        var transactionID: Int
        /// What the committing transaction changed, as its layer recorded
        /// it; nil when unknown (another process, or nothing recorded).
        var changes: (any Sendable)?
    }

    typealias Listener = @Sendable (Commit) -> Void

    private let lock = NSLock()
    private var listeners: [Int: (listener: Listener, interval: Duration?)] = [:]
    private var nextToken = 0
    /// The newest transaction id published.
    private var newest = 0
    private var timer: DispatchSourceTimer?
    private var timerInterval: Duration?
    /// Looks for commits of other processes; set by the environment.
    private var look: (@Sendable () -> Int?)?

    /// Whether anyone listens: a write transaction records its changes only
    /// then. Read once when the transaction begins; a listener added later
    /// gets that commit without changes, which is still correct.
    var isWatched: Bool { lock.withLock { !listeners.isEmpty } }

    /// Sets how the feed finds the newest transaction id of the file.
    func setLook(_ look: @escaping @Sendable () -> Int?) {
        lock.withLock { self.look = look }
    }

    /// Adds a listener, and looks for other processes' commits every
    /// `interval` while it listens (the shortest interval of all listeners
    /// wins; nil: only when asked). Returns the token that ``remove(_:)``
    /// takes.
    func add(interval: Duration?, _ listener: @escaping Listener) -> Int {
        lock.withLock {
            nextToken += 1
            listeners[nextToken] = (listener, interval)
            rescheduleTimer()
            return nextToken
        }
    }

    /// Removes a listener; the timer stops with the last one.
    func remove(_ token: Int) {
        lock.withLock {
            listeners[token] = nil
            rescheduleTimer()
        }
    }

    /// The number of listeners.
    var listenerCount: Int { lock.withLock { listeners.count } }

    /// Publishes a commit of this process. Called after the commit, on the
    /// committing thread.
    func committed(transactionID: Int, changes: (any Sendable)?) {
        publish(Commit(transactionID: transactionID, changes: changes))
    }

    /// Looks for commits this feed has not published (another process's),
    /// and publishes the newest one, without changes. Returns whether it
    /// found one.
    @discardableResult
    func lookForOtherCommits() -> Bool {
        guard let look = lock.withLock({ self.look }), let id = look() else { return false }
        let isNew = lock.withLock { id > newest }
        guard isNew else { return false }
        publish(Commit(transactionID: id, changes: nil))
        return true
    }

    private func publish(_ commit: Commit) {
        let current: [Listener] = lock.withLock {
            newest = max(newest, commit.transactionID)
            return listeners.isEmpty ? [] : listeners.keys.sorted().map { listeners[$0]!.listener }
        }
        for listener in current { listener(commit) }
    }

    /// Starts, changes or stops the timer for the listeners' shortest
    /// interval. Call while holding `lock`.
    private func rescheduleTimer() {
        let interval = listeners.values.compactMap(\.interval).filter { $0 > .zero }.min()
        guard interval != timerInterval else { return }
        timer?.cancel()
        timer = nil
        timerInterval = interval
        guard let interval else { return }
        let (seconds, attoseconds) = interval.components
        let nanoseconds = max(1, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
        timer.schedule(
            deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds),
            leeway: .nanoseconds(nanoseconds / 10))
        timer.setEventHandler { [weak self] in self?.lookForOtherCommits() }
        timer.resume()
        self.timer = timer
    }

    /// Stops the timer; called when the environment closes.
    func stop() {
        lock.withLock {
            timer?.cancel()
            timer = nil
            timerInterval = nil
            look = nil
        }
    }
}
