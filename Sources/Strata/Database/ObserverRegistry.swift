import Dispatch
import Foundation

/// One observation as a ``Database`` sees it. The observation layer
/// implements it; the database tells it about commits, evaluates it on
/// its observation queue and ends it when it closes.
protocol DatabaseObserver: AnyObject, Sendable {
    /// A commit (or several noticed together, then without changes), on
    /// the thread that noticed it. Returns whether the observer wants to
    /// be evaluated now: it has a consumer waiting and the commit may
    /// concern it. Must be quick and must not read the database.
    func noteCommit(_ commit: CommitFeed.Commit) -> Bool

    /// Evaluates the observer in `transaction`, a read transaction shared
    /// by every observer due at once, on the database's observation queue.
    func evaluate(in transaction: ReadTransaction)

    /// The shared read transaction could not begin: the observer ends with
    /// `error`.
    func fail(_ error: any Error)

    /// The database closed: the observer ends.
    func databaseClosed()
}

// @unchecked: every stored `var` is read and written only while holding `lock`.
/// The observers of one ``Database``: it listens to the environment's
/// ``CommitFeed`` while it has any, hands them each commit, and evaluates
/// the ones that are due together, in one read transaction, on one serial
/// queue, so that an observer is never evaluated twice at once.
final class ObserverRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private var observers: [ObjectIdentifier: any DatabaseObserver] = [:]
    private var due: [ObjectIdentifier: any DatabaseObserver] = [:]
    private var drainScheduled = false
    private var feedToken: Int?
    private var closed = false
    /// Where observers are evaluated, one batch at a time.
    let queue = DispatchQueue(label: "Strata.observation", qos: .userInitiated)

    /// The number of observers: each running observation is one.
    var count: Int { lock.withLock { observers.count } }

    /// Adds an observer; returns false when the database is closed.
    func add(_ observer: any DatabaseObserver, to database: Database) -> Bool {
        lock.withLock {
            guard !closed else { return false }
            observers[ObjectIdentifier(observer)] = observer
            if feedToken == nil {
                feedToken = database.environment.feed.add(interval: database.configuration.externalChangeCheckInterval)
                { [weak database] commit in
                    database?.observers.committed(commit, database: database)
                }
            }
            return true
        }
    }

    /// Removes an observer; the registry stops listening with the last one.
    func remove(_ observer: any DatabaseObserver, from database: Database) {
        let token: Int? = lock.withLock {
            observers[ObjectIdentifier(observer)] = nil
            due[ObjectIdentifier(observer)] = nil
            guard observers.isEmpty, let token = feedToken else { return nil }
            feedToken = nil
            return token
        }
        if let token { database.environment.feed.remove(token) }
    }

    /// Evaluates `observer` soon, with any others due.
    func schedule(_ observer: any DatabaseObserver, database: Database) {
        schedule(CollectionOfOne(observer), database: database)
    }

    /// Evaluates `batch` soon, with any others due: one lock and at most
    /// one drain for all of them.
    private func schedule<Batch: Collection>(_ batch: Batch, database: Database)
    where Batch.Element == any DatabaseObserver {
        guard !batch.isEmpty else { return }
        let start: Bool = lock.withLock {
            guard !closed else { return false }
            var added = false
            for observer in batch where observers[ObjectIdentifier(observer)] != nil {
                due[ObjectIdentifier(observer)] = observer
                added = true
            }
            guard added else { return false }
            defer { drainScheduled = true }
            return !drainScheduled
        }
        if start { queue.async { [weak database] in database?.observers.drain(database) } }
    }

    private func committed(_ commit: CommitFeed.Commit, database: Database?) {
        guard let database else { return }
        let current = lock.withLock { Array(observers.values) }
        var wanting: [any DatabaseObserver] = []
        wanting.reserveCapacity(current.count)
        for observer in current where observer.noteCommit(commit) { wanting.append(observer) }
        schedule(wanting, database: database)
    }

    /// Evaluates every due observer in one read transaction.
    private func drain(_ database: Database?) {
        let batch: [any DatabaseObserver] = lock.withLock {
            defer {
                due.removeAll()
                drainScheduled = false
            }
            return Array(due.values)
        }
        guard let database, !batch.isEmpty else { return }
        do {
            try database.read { transaction in
                for observer in batch { observer.evaluate(in: transaction) }
            }
        } catch {
            for observer in batch { observer.fail(error) }
        }
    }

    /// Ends every observer; later ones are refused.
    func closeAll(_ database: Database) {
        let (ended, token): ([any DatabaseObserver], Int?) = lock.withLock {
            closed = true
            defer {
                observers.removeAll()
                due.removeAll()
                feedToken = nil
            }
            return (Array(observers.values), feedToken)
        }
        if let token { database.environment.feed.remove(token) }
        for observer in ended { observer.databaseClosed() }
    }
}
