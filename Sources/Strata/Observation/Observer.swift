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
    private var waiter: CheckedContinuation<Element?, any Error>?
    /// Commits newer than the last element, not yet evaluated.
    private var pending: [CommitFeed.Commit] = []
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
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Element?, any Error>) in
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
                    continuation.resume(returning: nil)
                    database.observers.remove(self, from: database)
                case .fail(let error):
                    continuation.resume(throwing: error)
                    database.observers.remove(self, from: database)
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Ends the observation: a waiting consumer gets nil.
    func cancel() {
        let waiting: CheckedContinuation<Element?, any Error>? = lock.withLock {
            state = .finished
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume(returning: nil)
        database.observers.remove(self, from: database)
    }

    // MARK: DatabaseObserver

    func noteCommit(_ commit: CommitFeed.Commit) -> Bool {
        lock.withLock {
            guard case .running = state, commit.transactionID > seen else { return false }
            if let changes = commit.changes, let watched, !changes.touches(watched) { return false }
            pending.append(commit)
            if pending.count > Self.pendingLimit { compactPending() }
            return waiter != nil
        }
    }

    func evaluate(in transaction: ReadTransaction) {
        let snapshot = transaction.context.lmdb.id
        let taken: [CommitFeed.Commit]? = lock.withLock {
            guard case .running = state, waiter != nil else { return nil }
            let taken = pending.filter { $0.transactionID <= snapshot }
            pending.removeAll { $0.transactionID <= snapshot }
            return taken
        }
        guard let taken else { return }
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
                let changes = Self.merged(taken)
                element = try evaluator.update(in: transaction, changes: changes)
                applied = changes == nil ? snapshot : taken.map(\.transactionID).max()!
            }
        } catch {
            fail(error)
            return
        }
        let (ready, again): (CheckedContinuation<Element?, any Error>?, Bool) = lock.withLock {
            seen = max(seen, applied)
            if element != nil, let waiting = waiter, case .running = state {
                waiter = nil
                deliveredInitial = true
                return (waiting, false)
            }
            return (nil, waiter != nil && !pending.isEmpty)
        }
        ready?.resume(returning: element)
        if again { database.observers.schedule(self, database: database) }
    }

    func fail(_ error: any Error) {
        let waiting: CheckedContinuation<Element?, any Error>? = lock.withLock {
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
        let waiting: CheckedContinuation<Element?, any Error>? = lock.withLock {
            state = .finished
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume(returning: nil)
    }

    /// How many commits the observer keeps apart while its consumer is
    /// busy; older ones are merged into one.
    static var pendingLimit: Int { 32 }
    /// How many keys merged commits may name before the observer forgets
    /// them and runs its query again when evaluated: a consumer that
    /// stalls while writers go on costs bounded memory.
    static var mergedKeyLimit: Int { 50_000 }

    /// Merges every pending commit but the newest into one, which carries
    /// the newest id of those it merges: an evaluation whose snapshot
    /// predates that id leaves it for the next evaluation, which only
    /// delays it. Call while holding `lock`.
    private func compactPending() {
        let older = pending.dropLast()
        var merged = Self.merged(Array(older))
        if let keys = merged?.keys.values.reduce(0, { $0 + $1.count }), keys > Self.mergedKeyLimit { merged = nil }
        let newest = older.map(\.transactionID).max() ?? 0
        pending = [CommitFeed.Commit(transactionID: newest, changes: merged)] + [pending.last!]
    }

    /// The changes of several commits together; nil when one of them is
    /// unknown.
    private static func merged(_ commits: [CommitFeed.Commit]) -> CommittedChanges? {
        var merged = CommittedChanges()
        for commit in commits {
            guard let changes = commit.changes else { return nil }
            merged.formUnion(changes)
        }
        return merged
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
