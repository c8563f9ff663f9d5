import CLMDB
import Dispatch
import Foundation

// @unchecked: every stored property is read and written only while holding `lock`.
/// Tells listeners about the commits to an environment's file: those made
/// in this process at once, after each commit, and those of other
/// processes when asked to look, or on a timer while anyone listens.
///
/// LMDB sends no notifications. A commit of this process is published by
/// ``Environment/withWriteTransaction(_:)`` with what the committing transaction
/// recorded that it changed. Another process's commits are noticed from the newest
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
        /// What the committing transaction changed; nil when unknown
        /// (another process's commit, or nothing recorded).
        var changes: CommittedChanges?
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

    /// The number of listeners, kept for ``isWatched``: written while
    /// holding `lock`, read atomically without it.
    private let watchers: UnsafeMutablePointer<Int> = {
        let pointer = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        pointer.initialize(to: 0)
        return pointer
    }()

    deinit {
        watchers.deallocate()
    }

    /// Whether anyone listens: a write transaction records its changes, and
    /// publishes its commit, only then. Read when the transaction begins
    /// and after it commits, without a lock (an unwatched write pays an
    /// atomic load each time); a listener added meanwhile gets the commit
    /// without changes, which is still correct.
    var isWatched: Bool { strata_atomic_load(watchers) > 0 }

    /// Sets how the feed finds the newest transaction id of the file.
    func setLook(_ look: @escaping @Sendable () -> Int?) {
        lock.withLock { self.look = look }
    }

    /// Adds a listener, and looks for other processes' commits every
    /// `interval` while it listens (the shortest interval of all listeners
    /// wins; nil: only when asked). Returns the token that ``remove(_:)``
    /// takes.
    ///
    /// The first listener sets the feed's baseline, the file's newest
    /// commit: commits up to it are not published, later ones are.
    func add(interval: Duration?, _ listener: @escaping Listener) -> Int {
        let (token, first, look) = lock.withLock {
            nextToken += 1
            let first = listeners.isEmpty
            listeners[nextToken] = (listener, interval)
            strata_atomic_store(watchers, listeners.count)
            rescheduleTimer()
            return (nextToken, first, self.look)
        }
        if first, let id = look?() { lock.withLock { newest = max(newest, id) } }
        return token
    }

    /// Removes a listener; the timer stops with the last one.
    func remove(_ token: Int) {
        lock.withLock {
            listeners[token] = nil
            strata_atomic_store(watchers, listeners.count)
            rescheduleTimer()
        }
    }

    /// The number of listeners.
    var listenerCount: Int { lock.withLock { listeners.count } }

    /// Publishes a commit of this process. Called after the commit, on the
    /// committing thread, only while the feed ``isWatched``.
    ///
    /// - `changes` nil (not recorded) publishes the file's newest commit
    ///   without changes, as a look does: a transaction that wrote nothing
    ///   takes no id in LMDB, so its own id may belong to nobody, or to
    ///   another process's next commit.
    /// - Otherwise a commit whose id is more than one past the newest
    ///   published is published without changes too: the ids between are
    ///   commits this feed did not see (another process's).
    ///
    /// A transaction that recorded that it changed nothing is not
    /// published: the caller does not call this.
    func committed(transactionID: Int, changes: CommittedChanges?) {
        guard changes != nil else {
            lookForOtherCommits(including: transactionID)
            return
        }
        let current: (listeners: [Listener], skipped: Bool)? = lock.withLock {
            guard !listeners.isEmpty else { return nil }
            let skipped = transactionID > newest + 1
            newest = max(newest, transactionID)
            return (listeners.keys.sorted().map { listeners[$0]!.listener }, skipped)
        }
        guard let current else { return }
        let commit = Commit(transactionID: transactionID, changes: current.skipped ? nil : changes)
        for listener in current.listeners { listener(commit) }
    }

    /// Looks for commits this feed has not published (another process's),
    /// and publishes the newest one, without changes. Returns whether it
    /// found one; always false while no one listens, as commits are only
    /// counted while someone does.
    @discardableResult
    func lookForOtherCommits() -> Bool {
        lookForOtherCommits(including: nil)
    }

    /// ``lookForOtherCommits()``, publishing also when the newest commit is
    /// `committed`, a commit of this process whose changes were not
    /// recorded.
    @discardableResult
    private func lookForOtherCommits(including committed: Int?) -> Bool {
        guard let look = lock.withLock({ listeners.isEmpty ? nil : self.look }), let id = look() else { return false }
        let isNew = lock.withLock { id > newest || (committed != nil && id >= committed!) }
        guard isNew else { return false }
        publish(Commit(transactionID: id, changes: nil))
        return true
    }

    private func publish(_ commit: Commit) {
        let current: [Listener] = lock.withLock {
            newest = max(newest, commit.transactionID)
            return listeners.keys.sorted().map { listeners[$0]!.listener }
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
