import Foundation

/// What an ``Observer`` evaluates: the observed data at a snapshot, and
/// how it changed since the last element.
protocol ObservationEvaluator: SendableMetatype {
    associatedtype Element: Sendable

    /// The first element, and the type whose commits concern it.
    mutating func initial(in transaction: ReadTransaction) throws -> (Element, TypeID)

    /// The element after commits that made `changes` (nil: unknown, such as
    /// another process's commits), or nil when the observed data did not
    /// change.
    mutating func update(in transaction: ReadTransaction, changes: CommittedChanges?) throws -> Element?
}

// @unchecked: `evaluator` and `hasInitial` are used only on the registry's serial queue, in `evaluate(in:)`; every other `var` only while holding `lock`.
/// One running observation: it collects the commits that may concern it,
/// and, when its consumer waits for the next element, evaluates them
/// together on the database's observation queue.
///
/// Elements are pulled: an observer evaluates only while its consumer
/// waits, against the element it last handed over. Commits that arrive
/// while the consumer is busy are kept and evaluated together, so a
/// burst coalesces into one element and the element always reflects the
/// newest commit it read.
final class Observer<Evaluator: ObservationEvaluator>: DatabaseObserver, @unchecked Sendable {
    typealias Element = Evaluator.Element

    private enum State {
        case running
        case failed(any Error)
        case finished
    }

    let database: Database
    private var evaluator: Evaluator
    private var hasInitial = false

    private let lock = NSLock()
    private var state = State.running
    /// The waiting consumer, resumed without a value: it takes the element
    /// from `handedOver`, under `lock`.
    private var waiter: CheckedContinuation<Void, any Error>? {
        didSet { isWaiting = waiter != nil }
    }
    /// The element for the consumer that was just resumed. It goes through
    /// the lock, not through the continuation: the evaluation wrote the
    /// nodes the element reads (new ones, and ones it changed in place
    /// because no element held them any more), and the lock, released by
    /// the evaluation and taken by the consumer after its resumption,
    /// orders those writes before the consumer's reads in a way the thread
    /// sanitizer sees. A continuation's resumption alone does not always
    /// give it that edge (seen when the resumption races with the
    /// consumer's suspension).
    private var handedOver: Element?
    /// Whether `waiter` is set: asked on every commit, and, unlike the
    /// optional continuation (generic over `Element`), answered without a
    /// metadata lookup.
    private var isWaiting = false
    /// Commits newer than the last element, not yet evaluated.
    private var pending = PendingCommits()
    /// Whether the first element was handed over.
    private var deliveredInitial = false
    /// Every commit up to this transaction id is applied to the last
    /// element; later ones are applied when they are published.
    private var seen = -1
    /// The type whose commits concern the observer, once known.
    private var watched: TypeID?

    /// Starts observing: from now on, every commit is collected.
    init(database: Database, evaluator: Evaluator) {
        self.database = database
        self.evaluator = evaluator
        if !database.observers.add(self, to: database) {
            state = .failed(
                StrataError.closed(path: database.path, to: "observe it"))
        }
    }

    /// The next element; nil when the observation ended (cancelled, or the
    /// database closed).
    func next() async throws -> Element? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: WaitOutcome = lock.withLock {
                    switch state {
                    case .finished:
                        return .end
                    case .failed(let error):
                        state = .finished
                        return .fail(error)
                    case .running:
                        if Task.isCancelled {
                            state = .finished
                            return .end
                        }
                        precondition(waiter == nil, "An observation's iterator was used from two tasks at once.")
                        waiter = continuation
                        return .wait(schedule: !deliveredInitial || !pending.isEmpty)
                    }
                }
                switch outcome {
                case .wait(let schedule):
                    if schedule { database.observers.schedule(self, database: database) }
                case .end:
                    continuation.resume()
                    database.observers.remove(self, from: database)
                case .fail(let error):
                    continuation.resume(throwing: error)
                    database.observers.remove(self, from: database)
                }
            }
        } onCancel: {
            cancel()
        }
        return takeHandedOver()
    }

    /// The element `evaluate(in:)` left for the consumer it resumed, if
    /// any; taken under the lock, which orders the evaluation's writes
    /// before the consumer's reads.
    private func takeHandedOver() -> Element? {
        lock.lock()
        defer { lock.unlock() }
        let element = handedOver
        handedOver = nil
        return element
    }

    /// Ends the observation: a waiting consumer gets nil.
    func cancel() {
        let waiting: CheckedContinuation<Void, any Error>? = lock.withLock {
            state = .finished
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume()
        database.observers.remove(self, from: database)
    }

    // MARK: DatabaseObserver

    func noteCommit(_ commit: CommitFeed.Commit) -> Bool {
        lock.withLock {
            guard case .running = state, commit.transactionID > seen else { return false }
            if let changes = commit.changes, let watched, !changes.touches(watched) { return false }
            pending.append(commit)
            return isWaiting
        }
    }

    func evaluate(in transaction: ReadTransaction) {
        // Plain lock and unlock rather than `withLock` closures: in this
        // generic class, a closure returning the continuation costs a
        // tuple-metadata lookup per call.
        let snapshot = transaction.context.lmdb.id
        lock.lock()
        guard case .running = state, isWaiting else {
            lock.unlock()
            return
        }
        let taken = pending.take(upTo: snapshot)
        lock.unlock()
        var element: Element?
        // What the evaluation applied: every commit up to the snapshot after
        // a full read, else the commits taken. A commit of this process that
        // the snapshot holds but whose publication comes later is then
        // still applied when it comes.
        var applied = -1
        do {
            if !hasInitial {
                let (first, type) = try evaluator.initial(in: transaction)
                hasInitial = true
                element = first
                applied = snapshot
                lock.withLock { watched = type }
            } else if !taken.isEmpty {
                let changes = taken.merged
                element = try evaluator.update(in: transaction, changes: changes)
                applied = changes == nil ? snapshot : taken.newest
            }
        } catch {
            fail(error)
            return
        }
        var ready: CheckedContinuation<Void, any Error>?
        var again = false
        lock.lock()
        seen = max(seen, applied)
        if element != nil, let waiting = waiter, case .running = state {
            waiter = nil
            deliveredInitial = true
            handedOver = element
            ready = waiting
        } else {
            again = isWaiting && !pending.isEmpty
        }
        lock.unlock()
        ready?.resume()
        if again { database.observers.schedule(self, database: database) }
    }

    func fail(_ error: any Error) {
        let waiting: CheckedContinuation<Void, any Error>? = lock.withLock {
            guard case .running = state else { return nil }
            guard let waiting = waiter else {
                state = .failed(error)
                return nil
            }
            state = .finished
            waiter = nil
            return waiting
        }
        waiting?.resume(throwing: error)
        database.observers.remove(self, from: database)
    }

    func databaseClosed() {
        let waiting: CheckedContinuation<Void, any Error>? = lock.withLock {
            state = .finished
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume()
    }

}

/// What a consumer asking for the next element gets at once.
private enum WaitOutcome {
    /// It waits; the observer is evaluated now when `schedule`.
    case wait(schedule: Bool)
    /// Nothing: the observation ended.
    case end
    /// The error the observation ended with.
    case fail(any Error)
}

/// Ends an observation when the last copy of its iterator goes away, for
/// a loop left with `break` or a task that drops its iterator.
final class ObserverLifetime<Evaluator: ObservationEvaluator>: Sendable {
    let observer: Observer<Evaluator>

    init(_ observer: Observer<Evaluator>) { self.observer = observer }

    deinit { observer.cancel() }
}

/// The commits an observer has not evaluated yet, oldest first. Not
/// generic, so that it is compiled once, for its concrete types.
struct PendingCommits {
    private var commits: [CommitFeed.Commit] = []

    var isEmpty: Bool { commits.isEmpty }

    /// How many commits are kept apart while the consumer is busy; older
    /// ones are merged into one.
    static var limit: Int { 32 }
    /// How many keys merged commits may name before they are forgotten and
    /// the query runs again when evaluated: a consumer that stalls while
    /// writers go on costs bounded memory.
    static var mergedKeyLimit: Int { 50_000 }

    mutating func append(_ commit: CommitFeed.Commit) {
        commits.append(commit)
        if commits.count > Self.limit { compact() }
    }

    /// Removes and returns the commits up to the snapshot `snapshot`.
    mutating func take(upTo snapshot: Int) -> PendingCommits {
        // Filtering out of place and removing in place keeps this array's
        // capacity for the next commits.
        let taken = PendingCommits(commits: commits.filter { $0.transactionID <= snapshot })
        commits.removeAll { $0.transactionID <= snapshot }
        return taken
    }

    /// The id of the newest commit.
    var newest: Int {
        var newest = Int.min
        for commit in commits { newest = max(newest, commit.transactionID) }
        return newest
    }

    /// The changes of the commits together; nil when one of them is
    /// unknown.
    var merged: CommittedChanges? {
        if commits.count == 1 { return commits[0].changes }
        var merged = CommittedChanges()
        for commit in commits {
            guard let changes = commit.changes else { return nil }
            merged.formUnion(changes)
        }
        return merged
    }

    /// Merges every commit but the newest into one, which carries the
    /// newest id of those it merges: an evaluation whose snapshot predates
    /// that id leaves it for the next evaluation, which only delays it.
    private mutating func compact() {
        let older = PendingCommits(commits: Array(commits.dropLast()))
        var merged = older.merged
        if let keys = merged?.keys.values.reduce(0, { $0 + $1.count }), keys > Self.mergedKeyLimit { merged = nil }
        commits = [CommitFeed.Commit(transactionID: older.newest, changes: merged), commits.last!]
    }

    private init(commits: [CommitFeed.Commit]) {
        self.commits = commits
    }

    init() {}
}
