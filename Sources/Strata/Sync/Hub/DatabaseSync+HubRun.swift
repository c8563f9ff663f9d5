import Foundation

extension DatabaseSync {
    /// Keeps the file in sync with a hub until the task is cancelled:
    /// exchanges changes (``exchange(with:pageSize:)``), then waits for a
    /// commit to the file, a commit on the hub, or
    /// ``SyncRunOptions/pollInterval``, and exchanges again.
    ///
    /// ```swift
    /// let syncing = Task {
    ///     try await db.sync.run(with: HTTPHub(url: hubURL, token: token))
    /// }
    /// // ... when the user signs out:
    /// syncing.cancel()
    /// ```
    ///
    /// - A commit to the file by any `Database` of this process wakes it at
    ///   once; another process's commit within
    ///   ``Database/Configuration/externalChangeCheckInterval``. A hub's
    ///   commit wakes it when the hub tells (``SyncHub/commits()``; the
    ///   stream is opened again before the next exchange once it finished).
    ///   Without either, it exchanges every poll interval.
    /// - An error that may pass (the hub unavailable, a network failure, a
    ///   clock skew, a page this file refused) is reported to
    ///   ``SyncRunOptions/events`` and retried after a delay that doubles
    ///   from ``SyncRunOptions/initialBackoff`` up to
    ///   ``SyncRunOptions/maxBackoff``, each with a random part (so that
    ///   devices do not come back all at once).
    /// - An error that will not pass ends the run by throwing it: the hub
    ///   refused the token (401) or the dataset (403), a malformed request
    ///   (400), an object too large to push at all (413); the database was
    ///   closed, or sync is not enabled on it.
    /// - Cancelling the task ends the run promptly and without an error.
    ///
    /// - Parameters:
    ///   - hub: The hub.
    ///   - options: The intervals, the page size and the progress callback.
    /// - Throws: The first error that will not pass, a ``StrataError``.
    public func run(with hub: some SyncHub, options: SyncRunOptions = SyncRunOptions()) async throws {
        var loop = HubRunLoop(sync: self, hub: hub, options: options)
        try await loop.run()
    }
}

/// How ``DatabaseSync/run(with:options:)`` keeps a file in sync.
public struct SyncRunOptions: Sendable {
    /// How long the run waits at most between two exchanges when nothing
    /// wakes it. Default: 30 seconds.
    public var pollInterval: Duration
    /// The delay before the first retry after an error that may pass; it
    /// doubles with each further error. Default: 1 second.
    public var initialBackoff: Duration
    /// The longest delay between retries. Default: 5 minutes.
    public var maxBackoff: Duration
    /// How many objects a page holds at most. Default: 5,000.
    public var pageSize: Int
    /// Called with the run's progress, on the run's task: what each
    /// exchange moved, errors and retries, clock skews, refused fields,
    /// epoch changes. Must return quickly. Default: nil.
    public var events: (@Sendable (SyncEvent) -> Void)?

    /// Options; every argument has the default its property documents.
    public init(
        pollInterval: Duration = .seconds(30), initialBackoff: Duration = .seconds(1),
        maxBackoff: Duration = .seconds(300), pageSize: Int = 5_000,
        events: (@Sendable (SyncEvent) -> Void)? = nil
    ) {
        self.pollInterval = pollInterval
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.pageSize = pageSize
        self.events = events
    }
}

/// What ``DatabaseSync/run(with:options:)`` reports as it goes
/// (``SyncRunOptions/events``).
public enum SyncEvent: Sendable {
    /// An exchange ended: what it pushed and pulled.
    case exchanged(SyncHubReport)
    /// The hub refused fields of a push: the dataset has them with another
    /// type. The rest was merged.
    case refusedFields([HubRefusedField])
    /// The hub refused objects of a push: the dataset's sync rules do not
    /// let this device write them. The rest was merged.
    case refusedObjects([HubRefusedObject])
    /// The file's subscriptions, after an exchange moved one on (its first
    /// pull started, took a page, or ended): their states, for a screen
    /// that shows them.
    case subscriptions([SyncSubscription])
    /// The hub's clock and this device's differ by more than a changeset's
    /// stamps may: pushes or pulls are refused until a clock is set right.
    case clockSkew(hubTime: Date, localTime: Date)
    /// The hub's data was restored from a backup: the file pulls the new
    /// epoch from its start, and pushes again what the hub lost.
    case epochChanged(from: UUID, to: UUID)
    /// An exchange failed. `retryIn` is the delay before the next attempt;
    /// nil when the error ends the run (it is then thrown).
    case failed(any Error, retryIn: Duration?)
}

/// The loop of ``DatabaseSync/run(with:options:)``.
struct HubRunLoop<Hub: SyncHub> {
    let sync: DatabaseSync
    let hub: Hub
    let options: SyncRunOptions
    private var epoch: UUID?

    init(sync: DatabaseSync, hub: Hub, options: SyncRunOptions) {
        self.sync = sync
        self.hub = hub
        self.options = options
    }

    mutating func run() async throws {
        let wakeup = SyncWakeup()
        let feed = sync.database.environment.feed
        let token = feed.add(interval: sync.database.configuration.externalChangeCheckInterval) { _ in
            wakeup.signal(.localCommit)
        }
        defer {
            feed.remove(token)
            wakeup.finish()
        }
        var waiter = wakeup.waiter()
        var backoff = options.initialBackoff
        let events = options.events
        while !Task.isCancelled {
            let skewNoted = SkewNote()
            // Listening before the exchange misses no hub commit after it.
            wakeup.listen(to: hub)
            do {
                // A write made while the exchange runs may have missed its
                // push: only what the file held before the exchange is
                // surely on the hub. After a round that pulled, this costs
                // one more round, which pushes back what was pulled (once,
                // as it would later) and pulls nothing.
                let before = try sync.lastSequenceNumber()
                let report = try await sync.exchange(with: hub, pageSize: options.pageSize) { event in
                    if case .clockSkew = event { skewNoted.set() }
                    events?(event)
                }
                note(report)
                backoff = options.initialBackoff
                guard await waiter.wait(options.pollInterval, localAfter: before, hubAfter: report.hubSeq, sync: sync)
                else { return }
            } catch {
                if Task.isCancelled || error is CancellationError { return }
                guard Self.isRetryable(error) else {
                    events?(.failed(error, retryIn: nil))
                    throw error
                }
                if let refusal = (error as? StrataError)?.hubRefusal, refusal.code == .clockSkew,
                    let hubTime = refusal.hubTime, !skewNoted.isSet
                {
                    events?(.clockSkew(hubTime: hubTime, localTime: Date()))
                }
                let delay = Self.jittered(backoff)
                events?(.failed(error, retryIn: delay))
                backoff = min(backoff * 2, options.maxBackoff)
                do { try await Task.sleep(for: delay) } catch { return }
            }
        }
    }

    private mutating func note(_ report: SyncHubReport) {
        let events = options.events
        let from = report.previousEpoch ?? epoch
        if let from, from != report.epoch { events?(.epochChanged(from: from, to: report.epoch)) }
        epoch = report.epoch
        if !report.refusedFields.isEmpty { events?(.refusedFields(report.refusedFields)) }
        if !report.refusedObjects.isEmpty { events?(.refusedObjects(report.refusedObjects)) }
        events?(.exchanged(report))
    }

    /// Whether an exchange that failed with `error` may succeed later. A
    /// hub's refusal says so itself (``HubRefusal/isRetryable``); a closed
    /// database, a file without sync or a read-only one will not change.
    static func isRetryable(_ error: any Error) -> Bool {
        guard let error = error as? StrataError else { return true }
        if let refusal = error.hubRefusal, error.code == .hubRefused { return refusal.isRetryable }
        return ![.hubRefused, .closed, .invalidConfiguration, .readOnly].contains(error.code)
    }

    /// Half of `backoff`, and a random part of the other half.
    static func jittered(_ backoff: Duration) -> Duration {
        backoff / 2 + backoff / 2 * Double.random(in: 0 ... 1)
    }
}

// @unchecked: `value` is read and written only while holding `lock`.
/// Whether an exchange already told of a clock skew, so that the hub's
/// refusal of the same skew is not told again.
private final class SkewNote: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
