import Foundation

/// One exchange with a hub: push every change the hub lacks, then pull
/// every change the file lacks, page by page, again from a new session
/// after the hub's epoch changed.
///
/// The round does the file's side itself (reading pages to push, applying
/// pulled ones, noting what the hub acknowledged) and asks its driver
/// for the hub's: each step returns the next ``Request``, and the driver
/// hands the hub's answer to ``next(_:)``. One round, two drivers:
/// ``run(with:)`` asks a ``SyncHub``, asynchronously
/// (``DatabaseSync/exchange(with:pageSize:)``); ``run(with:sent:)`` asks
/// an ``InProcessHub`` over another file of the process, synchronously
/// (``DatabaseSync/exchange(with:)``, peer to peer).
struct HubRound: Sendable {
    /// What the round asks of the hub next.
    enum Request: Sendable {
        /// ``SyncHub/session(site:)`` for the file's site.
        case session(SiteID)
        /// ``SyncHub/push(_:)``.
        case push(Changeset)
        /// ``SyncHub/pull(from:epoch:limit:subscriptions:)``, with the
        /// round's page size.
        case pull(SyncCursor, epoch: UUID, subscriptions: [SyncSubscription])
        /// ``SyncHub/firstPull(_:upto:after:epoch:limit:)``, with the round's
        /// page size.
        case firstPull(SyncSubscription, upto: UInt64, after: Data, epoch: UUID)
        /// ``SyncHub/catchUp(since:after:epoch:limit:subscriptions:)``, with the round's
        /// page size.
        case catchUp(since: UInt64, after: UInt64, epoch: UUID, subscriptions: [SyncSubscription])
        /// Nothing: the round is over.
        case finished(SyncHubReport)
    }

    /// The hub's answer to a ``Request``.
    enum Answer: Sendable {
        case session(HubSession)
        case pushed(HubPushAnswer)
        /// The hub refused a push: the round goes on after a page too large
        /// (smaller) or a clock skew (to the pull), and throws the rest.
        case pushRefused(StrataError)
        /// A page of a pull, or of a catch-up.
        case pulled(Changeset)
        /// A page of a subscription's first pull.
        case firstPulled(Changeset)
        /// The hub refused a pull: after an epoch change, or tombstones
        /// compacted past the file's cursor, the round starts again; the
        /// rest it throws.
        case pullRefused(StrataError)
    }

    /// How often a round starts again after the epoch changed, before it
    /// gives up (the hub would have to be restored again and again).
    static var epochAttempts: Int { 3 }

    let sync: DatabaseSync
    let site: SiteID
    /// How many objects a pulled page holds at most.
    let pageSize: Int
    let events: (@Sendable (SyncEvent) -> Void)?
    private var report: SyncHubReport?
    private var session: HubSession?
    private var attempt = 0
    /// How many objects a pushed page holds at most: halved while the hub
    /// finds pages too large.
    private var pushSize: Int
    private var cursor = SyncCursor(since: 0, after: 0)
    /// The page being pushed and its summary.
    private var pushing: (changeset: Changeset, summary: Changeset.Summary)?
    private var clockError: StrataError?
    /// Whether the round pulls by the file's subscriptions: not when the
    /// hub is another file (``InProcessHub``), which exchanges everything.
    private let usesSubscriptions: Bool
    /// The file's subscriptions, as the round last read them.
    private var subscriptions: [SyncSubscription] = []
    /// The subscription whose first pull is under way.
    private var firstPulling: UUID?
    /// The catch-up walk under way: the file's cursor of the hub it began
    /// from, how far it is, and every live object the hub sent.
    private var walk: (since: UInt64, after: UInt64, present: Set<ObjectName>)?

    init(
        sync: DatabaseSync, pageSize: Int, events: (@Sendable (SyncEvent) -> Void)?, usesSubscriptions: Bool = true
    ) throws {
        precondition(pageSize >= 1, "A page holds at least one object")
        self.sync = sync
        self.usesSubscriptions = usesSubscriptions
        site = try sync.site
        self.pageSize = pageSize
        pushSize = pageSize
        self.events = events
    }

    /// The first request: the hub's session.
    var start: Request { .session(site) }

    /// Takes the hub's answer to the last request, does the file's part,
    /// and returns the next request.
    mutating func next(_ answer: Answer) throws -> Request {
        switch answer {
        case .session(let session):
            attempt += 1
            if report == nil {
                report = SyncHubReport(session: session, pageSize: pageSize)
                noteClock(session)
            } else {
                report!.begin(session)
            }
            self.session = session
            cursor = session.pushCursor
            try acknowledge(cursor)
            // Tombstones this file lacks are gone from the hub: learn what
            // the hub deleted before pushing, so that edits of those
            // objects do not bring them back.
            let since = try sync.cursor(of: session.epochSite).since
            if since < session.compactedSeq {
                walk = (since, 0, [])
                return .catchUp(
                    since: since, after: 0, epoch: session.epoch,
                    subscriptions: usesSubscriptions ? try sync.subscriptions() : [])
            }
            return try nextPush()
        case .pushed(let answer):
            let summary = pushing!.summary
            pushing = nil
            report!.pushedObjects += summary.entryCount
            report!.pushedPages += 1
            report!.hubSeq = max(report!.hubSeq, answer.hubSeq)
            report!.refusedFields += answer.refusedFields
            report!.refusedObjects += answer.refusedObjects
            report!.pushPageSize = pushSize
            try acknowledge(answer.acceptedThrough)
            // A hub that did not move the cursor would be sent the same
            // page forever: the next round asks its session again.
            guard summary.hasMore, answer.acceptedThrough != cursor else { return try startPull() }
            cursor = answer.acceptedThrough
            return try nextPush()
        case .pushRefused(let error):
            let page = pushing!
            pushing = nil
            if let refusal = error.hubRefusal, refusal.code == .bodyTooLarge {
                guard pushSize > 1 else { throw StrataError.hubBodyTooLarge(refusal, bytes: page.changeset.data.count) }
                halvePushSize()
                return try nextPush()
            }
            guard error.hubRefusal?.code == .clockSkew else { throw error }
            clockError = error
            return try startPull()
        case .pulled(let changeset) where walk != nil:
            return try caughtUp(changeset)
        case .pulled(let changeset):
            let summary = try changeset.summary()
            let epochSite = SiteID(uuid: session!.epoch)
            report!.received.add(try sync.apply(changeset, from: epochSite))
            report!.pulledObjects += summary.entryCount
            report!.pulledPages += 1
            let next = try sync.cursor(of: epochSite)
            guard summary.hasMore, next != cursor else {
                if let clockError { throw clockError }
                return .finished(report!)
            }
            cursor = next
            return .pull(cursor, epoch: session!.epoch, subscriptions: subscriptions)
        case .firstPulled(let changeset):
            let content = try ChangesetCodec.decode(changeset.data)
            let epochSite = SiteID(uuid: session!.epoch)
            guard content.sender == epochSite else {
                throw StrataError.changesetRefused(
                    path: sync.database.path, "it was made by site \(content.sender), not by the hub's epoch",
                    remedy: "Check what the transport's firstPull returns.")
            }
            report!.received.add(try sync.apply(content: content, movingCursor: false))
            report!.pulledObjects += content.entries.count
            report!.pulledPages += 1
            let id = firstPulling!
            let last = content.entries.last.map { Data(ChangesetCodec.valueBytes($0.key)) }
            let (count, hasMore) = (content.entries.count, content.hasMore)
            subscriptions = try sync.updateSubscriptions { list in
                guard let index = list.firstIndex(where: { $0.id == id }), var firstPull = list[index].firstPull else {
                    return list
                }
                firstPull.objects += count
                if let last { firstPull.after = last }
                list[index].firstPull = firstPull
                list[index].state = hasMore && last != nil ? .pulling(objects: firstPull.objects) : .complete
                return list
            }
            events?(.subscriptions(subscriptions))
            return try nextFirstPull()
        case .pullRefused(let error):
            let code = error.hubRefusal?.code
            guard code == .epochChanged || code == .cursorCompacted, attempt < Self.epochAttempts else { throw error }
            walk = nil
            return .session(site)
        }
    }

    /// Applies a page of the catch-up walk; after its last, deletes here
    /// what the hub no longer has (before applying that page: a walk cut
    /// short leaves the cursor below the compacted tombstones, and the
    /// next round walks again), then pushes as usual.
    private mutating func caughtUp(_ changeset: Changeset) throws -> Request {
        let content = try ChangesetCodec.decode(changeset.data)
        let epochSite = SiteID(uuid: session!.epoch)
        guard content.sender == epochSite else {
            throw StrataError.changesetRefused(
                path: sync.database.path, "it was made by site \(content.sender), not by the hub's epoch \(epochSite)",
                remedy: "Check what the hub's transport relays.")
        }
        for entry in content.entries where entry.causalLength % 2 == 1 {
            walk!.present.insert(
                ObjectName(type: content.types[entry.type].name, key: ChangesetCodec.valueBytes(entry.key)))
        }
        report!.pulledObjects += content.entries.count
        report!.pulledPages += 1
        if content.hasMore, content.toSeq > walk!.after {
            report!.received.add(try sync.apply(changeset, from: epochSite))
            walk!.after = content.toSeq
            return .catchUp(
                since: walk!.since, after: walk!.after, epoch: session!.epoch,
                subscriptions: usesSubscriptions ? try sync.subscriptions() : [])
        }
        let (removed, kept, applied) = try sync.removeAbsent(
            walk!.present, hub: epochSite, acknowledged: session!.pushCursor.since,
            time: HybridTime(milliseconds: session!.hubTimeMilliseconds, counter: 0),
            subscriptions: usesSubscriptions ? try sync.subscriptions() : [])
        report!.received.add(applied)
        report!.received.add(try sync.apply(changeset, from: epochSite))
        report!.catchUp = SyncCatchUp(
            since: walk!.since, compactedSeq: session!.compactedSeq, removedObjects: removed, keptObjects: kept)
        walk = nil
        return try nextPush()
    }

    /// The next page to push from ``cursor``; the pull once there is none.
    private mutating func nextPush() throws -> Request {
        while true {
            let changeset = try sync.changes(from: cursor, limit: pushSize)
            let summary = try changeset.summary()
            guard summary.entryCount > 0 else { return try startPull() }
            guard changeset.data.count <= session!.maxBodyBytes || pushSize == 1 else {
                halvePushSize()
                continue
            }
            pushing = (changeset, summary)
            return .push(changeset)
        }
    }

    private mutating func halvePushSize() {
        pushSize /= 2
        report!.pushPageSize = pushSize
    }

    /// The pull of the session's epoch, from the file's cursor of it:
    /// after the first pulls of the subscriptions that lack their objects.
    private mutating func startPull() throws -> Request {
        cursor = try sync.cursor(of: SiteID(uuid: session!.epoch))
        guard usesSubscriptions else { return .pull(cursor, epoch: session!.epoch, subscriptions: []) }
        // A subscription's first pull takes the objects changed up to where
        // the file's cursor is now; the pulls take those changed after it.
        // A file that never pulled from the hub takes its subscriptions'
        // objects up to the hub's last commit by their first pulls, which
        // read an index, and then starts its cursor there: its pulls never
        // walk the dataset's history.
        let fresh = cursor == .start
        let (epoch, upto) = (session!.epoch, fresh ? session!.hubSeq : cursor.after)
        subscriptions = try sync.subscriptions()
        // A write only when a first pull starts.
        guard subscriptions.contains(where: { $0.state != .complete && $0.firstPull?.epoch != epoch }) else {
            return try nextFirstPull()
        }
        subscriptions = try sync.updateSubscriptions { list in
            for index in list.indices where list[index].state != .complete {
                if list[index].firstPull?.epoch != epoch {
                    list[index].firstPull = SyncSubscription.FirstPull(
                        epoch: epoch, upto: upto, after: Data(), objects: 0)
                    list[index].state = .pulling(objects: 0)
                }
            }
            return list
        }
        events?(.subscriptions(subscriptions))
        return try nextFirstPull()
    }

    /// The next page of a subscription's first pull; the pull once none
    /// lacks its objects.
    private mutating func nextFirstPull() throws -> Request {
        guard let next = subscriptions.first(where: { $0.state != .complete }), let firstPull = next.firstPull else {
            firstPulling = nil
            // Every subscription took its objects up to one commit of the
            // hub, and the file had nothing of it before: its cursor starts
            // at that commit.
            let epoch = session!.epoch
            if cursor == .start, let first = subscriptions.first?.firstPull, first.epoch == epoch, first.upto > 0,
                subscriptions.allSatisfy({ $0.firstPull?.epoch == epoch && $0.firstPull?.upto == first.upto })
            {
                try sync.startCursor(of: SiteID(uuid: epoch), at: first.upto)
                cursor = try sync.cursor(of: SiteID(uuid: epoch))
            }
            return .pull(cursor, epoch: epoch, subscriptions: subscriptions)
        }
        firstPulling = next.id
        return .firstPull(next, upto: firstPull.upto, after: firstPull.after, epoch: firstPull.epoch)
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

    /// Notes how much of this file's changes the hub has, as it said:
    /// ``SyncStatus/Peer/acknowledged`` of the hub's peer entry (its site
    /// is the epoch), for ``DatabaseSync/status()``'s pending counts.
    private func acknowledge(_ hubCursor: SyncCursor) throws {
        guard hubCursor.since > 0 else { return }
        try sync.acknowledge(hubCursor.since, by: SiteID(uuid: session!.epoch))
    }
}

extension HubRound {
    /// Runs the round with `hub`, the file's part off the cooperative pool
    /// (as an async `write` runs), never holding a thread of it.
    func run(with hub: some SyncHub) async throws -> SyncHubReport {
        var round = self
        var request = round.start
        while true {
            if case .finished(let report) = request { return report }
            let answer = try await Self.ask(hub, request, limit: pageSize)
            let current = round
            (round, request) = try await sync.database.onOwnThread {
                var round = current
                let request = try round.next(answer)
                return (round, request)
            }
        }
    }

    /// `hub`'s answer to `request` (not ``Request/finished(_:)``): its
    /// refusals of a push or a pull are answers the round reads.
    private static func ask(_ hub: some SyncHub, _ request: Request, limit: Int) async throws -> Answer {
        switch request {
        case .session(let site): return .session(try await hub.session(site: site))
        case .push(let changeset):
            do { return .pushed(try await hub.push(changeset)) } catch let error as StrataError {
                return .pushRefused(error)
            }
        case .pull(let cursor, let epoch, let subscriptions):
            do {
                return .pulled(
                    try await hub.pull(from: cursor, epoch: epoch, limit: limit, subscriptions: subscriptions))
            } catch let error as StrataError {
                return .pullRefused(error)
            }
        case .firstPull(let subscription, let upto, let after, let epoch):
            do {
                return .firstPulled(
                    try await hub.firstPull(subscription, upto: upto, after: after, epoch: epoch, limit: limit))
            } catch let error as StrataError {
                return .pullRefused(error)
            }
        case .catchUp(let since, let after, let epoch, let subscriptions):
            do {
                return .pulled(
                    try await hub.catchUp(
                        since: since, after: after, epoch: epoch, limit: limit, subscriptions: subscriptions))
            } catch let error as StrataError {
                return .pullRefused(error)
            }
        case .finished: preconditionFailure("A finished round asks nothing")
        }
    }

    /// Runs the round with `hub`'s file on this thread: one round of
    /// ``DatabaseSync/exchange(with:)``. `sent` sums what the pushes
    /// changed in the hub's file. The file refuses nothing the round goes
    /// on after (a page too large, a clock, an epoch): its errors end the
    /// round as they are.
    func run(with hub: InProcessHub, sent: inout SyncApplyReport) throws -> SyncHubReport {
        var round = self
        var request = round.start
        while true {
            switch request {
            case .session(let site):
                request = try round.next(.session(try hub.session(of: site)))
            case .push(let changeset):
                let (answer, applied) = try hub.merge(changeset)
                sent.add(applied)
                request = try round.next(.pushed(answer))
            case .pull(let cursor, let epoch, _):
                request = try round.next(.pulled(try hub.changes(from: cursor, epoch: epoch, limit: pageSize)))
            case .firstPull:
                preconditionFailure("A round with another file asks for no subscription's objects")
            case .catchUp:
                // A file as the hub reports no compacted tombstones.
                preconditionFailure("A file as the hub is never asked to catch up")
            case .finished(let report):
                return report
            }
        }
    }
}
