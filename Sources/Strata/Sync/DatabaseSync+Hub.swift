import Foundation

extension DatabaseSync {
    /// Exchanges changes with a sync hub, once: pushes every change the
    /// hub lacks, then pulls every change the file lacks, page by page.
    ///
    /// ```swift
    /// let report = try await db.sync.exchange(with: HTTPHub(url: hubURL, token: token))
    /// print(report.pushedObjects, report.pulledObjects)
    /// ```
    ///
    /// One round:
    /// 1. The hub's session says its epoch and how far it has this file's
    ///    changes (``HubSession/pushCursor``).
    /// 2. Pushes pages of at most `pageSize` objects from there, each from
    ///    where the hub's answer says it now is, until the last page. A
    ///    page the hub finds too large (`bodyTooLarge`, or larger than the
    ///    session's ``HubSession/maxBodyBytes``) is made again with half
    ///    as many objects, down to one.
    /// 3. Pulls the hub's pages after the file's cursor of the epoch and
    ///    applies each (``apply(_:from:)``), until the last page.
    ///
    /// When the hub's data was restored from a backup during the round
    /// (`epochChanged`), the round starts again with a new session: the
    /// file pulls the new epoch from its start and pushes again from what
    /// the restored hub has, so nothing is lost. When the hub refuses a
    /// push because this device's clock is ahead of its own (`clockSkew`),
    /// the round still pulls, then throws that error: the hub's changes
    /// arrive whatever the clock, and the push waits for a clock set right.
    ///
    /// The file's reads and writes run on a thread of their own, as an
    /// async `write` does, never holding a thread of the cooperative pool.
    ///
    /// - Parameters:
    ///   - hub: The hub.
    ///   - pageSize: How many objects a page holds at most (at least 1).
    /// - Returns: What moved each way.
    /// - Throws: ``StrataError``: ``StrataError/Code/hubRefused`` (the
    ///   hub's ``StrataError/hubRefusal`` says why),
    ///   ``StrataError/Code/hubUnavailable``, and the errors of
    ///   ``apply(_:from:)``. What was pushed and applied before the error
    ///   stays: the next exchange goes on from there.
    @discardableResult
    public func exchange(with hub: some SyncHub, pageSize: Int = 5_000) async throws -> SyncHubReport {
        try await exchange(with: hub, pageSize: pageSize, events: nil)
    }

    /// ``exchange(with:pageSize:)``, telling `events` of a clock skew the
    /// session shows (the run loop's progress).
    func exchange(
        with hub: some SyncHub, pageSize: Int, events: (@Sendable (SyncEvent) -> Void)?
    ) async throws -> SyncHubReport {
        precondition(pageSize >= 1, "A page holds at least one object")
        return try await HubRound(sync: self, hub: hub, pageSize: pageSize, events: events).run()
    }

    /// The most this file's clock may differ from a peer's: a changeset
    /// stamped further ahead is refused.
    var maxClockDriftMilliseconds: UInt64 {
        let drift = database.configuration.sync?.maxClockDrift ?? .seconds(300)
        return UInt64(drift.components.seconds) * 1000
            + UInt64(drift.components.attoseconds / 1_000_000_000_000_000)
    }
}

/// What one ``DatabaseSync/exchange(with:pageSize:)`` with a hub moved,
/// and what it changed in the file.
///
/// ``pulledObjects`` counts what the hub sent, which includes this
/// device's own changes coming back: the hub relays every change of the
/// dataset, the device's own too. What the pull changed in the file is
/// ``received``, where a change the file already had counts for nothing.
/// The ``description`` says both:
///
/// ```swift
/// let report = try await db.sync.exchange(with: hub)
/// print(report)  // pushed 2 objects (1 page); pulled 5 objects (1 page): 3 changed, 0 deleted here
/// ```
public struct SyncHubReport: Sendable, Equatable, CustomStringConvertible {
    /// The objects pushed to the hub (each page's entries, tombstones
    /// included).
    public internal(set) var pushedObjects = 0
    /// The pages pushed.
    public internal(set) var pushedPages = 0
    /// The objects the hub sent (each pulled page's entries, tombstones
    /// included), whether or not they changed anything here: this
    /// device's own changes come back once, and count here too. What
    /// changed is in ``received``.
    public internal(set) var pulledObjects = 0
    /// The pages pulled.
    public internal(set) var pulledPages = 0
    /// What applying the pulled pages changed in this file: objects
    /// changed and deleted, fields written, types and fields learned. The
    /// device's own changes coming back count for nothing here.
    public internal(set) var received = SyncApplyReport()
    /// The fields the hub did not merge: the dataset has them with
    /// another type (`schemaConflict`). The rest of those pushes was
    /// merged.
    public internal(set) var refusedFields: [HubRefusedField] = []
    /// The hub's epoch the round ended with.
    public internal(set) var epoch: UUID
    /// The epoch the round began with, when the hub's data was restored
    /// from a backup during the round; nil otherwise.
    public internal(set) var previousEpoch: UUID?
    /// The hub's last commit sequence number, as its last answer said.
    public internal(set) var hubSeq: UInt64
    /// The hub's clock at the round's session, in milliseconds since 1970.
    public internal(set) var hubTimeMilliseconds: UInt64
    /// The page size the pushes ended with: smaller than asked when the
    /// hub found pages too large.
    public internal(set) var pushPageSize: Int

    init(session: HubSession, pageSize: Int) {
        epoch = session.epoch
        hubSeq = session.hubSeq
        hubTimeMilliseconds = session.hubTimeMilliseconds
        pushPageSize = pageSize
    }

    /// Starts the round again with a new session: the hub's epoch may have
    /// changed.
    mutating func begin(_ session: HubSession) {
        if session.epoch != epoch, previousEpoch == nil { previousEpoch = epoch }
        epoch = session.epoch
        hubSeq = max(hubSeq, session.hubSeq)
        hubTimeMilliseconds = session.hubTimeMilliseconds
    }

    /// Whether nothing moved either way. A round that only got this
    /// device's own changes back is not empty; ``received`` is.
    public var isEmpty: Bool { pushedObjects == 0 && pulledObjects == 0 }

    /// What moved and what changed here, for a log: `pushed 2 objects (1
    /// page); pulled 5 objects (1 page): 3 changed, 0 deleted here`.
    public var description: String {
        func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
        var text =
            "pushed \(count(pushedObjects, "object")) (\(count(pushedPages, "page"))); "
            + "pulled \(count(pulledObjects, "object")) (\(count(pulledPages, "page"))): "
            + "\(received.changedObjects) changed, \(received.deletedObjects) deleted here"
        if !received.learnedTypes.isEmpty || !received.learnedFields.isEmpty {
            text +=
                "; learned \(count(received.learnedTypes.count, "type")), \(count(received.learnedFields.count, "field"))"
        }
        if !refusedFields.isEmpty { text += "; the hub refused \(count(refusedFields.count, "field"))" }
        return text
    }
}

/// One exchange with a hub: push, then pull, again after an epoch change.
struct HubRound<Hub: SyncHub> {
    let sync: DatabaseSync
    let hub: Hub
    let pageSize: Int
    let events: (@Sendable (SyncEvent) -> Void)?

    /// How often a round starts again after the epoch changed, before it
    /// gives up (the hub would have to be restored again and again).
    static var epochAttempts: Int { 3 }

    func run() async throws -> SyncHubReport {
        let site = try sync.site
        var session = try await hub.session(site: site)
        var report = SyncHubReport(session: session, pageSize: pageSize)
        noteClock(session)
        var pushSize = pageSize
        var clockError: StrataError?
        for attempt in 1 ... Self.epochAttempts {
            if attempt > 1 {
                session = try await hub.session(site: site)
                report.begin(session)
            }
            do {
                try await push(from: session, pageSize: &pushSize, into: &report)
            } catch let error as StrataError where error.hubRefusal?.code == .clockSkew {
                clockError = error
            }
            do {
                try await pull(epoch: session.epoch, into: &report)
                break
            } catch let error as StrataError where error.hubRefusal?.code == .epochChanged {
                if attempt == Self.epochAttempts { throw error }
            }
        }
        if let clockError { throw clockError }
        return report
    }

    /// Tells of a hub clock further from this device's than a changeset's
    /// stamps may be: the hub refuses pushes, or this file its pages.
    private func noteClock(_ session: HubSession) {
        guard let events else { return }
        let local = Date().milliseconds
        let hub = session.hubTimeMilliseconds
        if max(local, hub) - min(local, hub) > sync.maxClockDriftMilliseconds {
            events(.clockSkew(hubTime: session.hubTime, localTime: Date(milliseconds: local)))
        }
    }

    private func push(from session: HubSession, pageSize: inout Int, into report: inout SyncHubReport) async throws {
        var cursor = session.pushCursor
        try await acknowledge(cursor, epoch: session.epoch)
        while true {
            let changeset = try await off { [cursor, pageSize] in try $0.changes(from: cursor, limit: pageSize) }
            let summary = try changeset.summary()
            guard summary.entryCount > 0 else { return }
            if changeset.data.count > session.maxBodyBytes, pageSize > 1 {
                pageSize /= 2
                report.pushPageSize = pageSize
                continue
            }
            let answer: HubPushAnswer
            do {
                answer = try await hub.push(changeset)
            } catch let error as StrataError {
                guard let refusal = error.hubRefusal, refusal.code == .bodyTooLarge else { throw error }
                guard pageSize > 1 else { throw StrataError.hubBodyTooLarge(refusal, bytes: changeset.data.count) }
                pageSize /= 2
                report.pushPageSize = pageSize
                continue
            }
            report.pushedObjects += summary.entryCount
            report.pushedPages += 1
            report.hubSeq = max(report.hubSeq, answer.hubSeq)
            report.refusedFields += answer.refusedFields
            report.pushPageSize = pageSize
            try await acknowledge(answer.acceptedThrough, epoch: session.epoch)
            // A hub that did not move the cursor would be sent the same
            // page forever: the next round asks its session again.
            guard summary.hasMore, answer.acceptedThrough != cursor else { return }
            cursor = answer.acceptedThrough
        }
    }

    private func pull(epoch: UUID, into report: inout SyncHubReport) async throws {
        let site = SiteID(uuid: epoch)
        var cursor = try await off { try $0.cursor(of: site) }
        while true {
            let changeset = try await hub.pull(from: cursor, epoch: epoch, limit: pageSize)
            let summary = try changeset.summary()
            let (applied, next) = try await off { sync in
                (try sync.apply(changeset, from: site), try sync.cursor(of: site))
            }
            report.received.add(applied)
            report.pulledObjects += summary.entryCount
            report.pulledPages += 1
            guard summary.hasMore, next != cursor else { return }
            cursor = next
        }
    }

    /// Notes how much of this file's changes the hub has, as it said:
    /// ``SyncStatus/Peer/acknowledged`` of the hub's peer entry (its site
    /// is the epoch), for ``DatabaseSync/status()``'s pending counts.
    private func acknowledge(_ hubCursor: SyncCursor, epoch: UUID) async throws {
        guard hubCursor.since > 0 else { return }
        try await off { try $0.acknowledge(hubCursor.since, by: SiteID(uuid: epoch)) }
    }

    /// Runs `work` with the file's sync off the cooperative pool.
    private func off<T: Sendable>(_ work: @escaping @Sendable (DatabaseSync) throws -> T) async throws -> T {
        let sync = self.sync
        return try await sync.database.onOwnThread { try work(sync) }
    }
}
