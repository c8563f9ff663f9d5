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
        try await HubRound(sync: self, pageSize: pageSize, events: events).run(with: hub)
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
    /// The objects the hub did not merge: the dataset's sync rules do not
    /// let this device write them (`outsideRules`). The rest of those
    /// pushes was merged; this file keeps its version of them.
    public internal(set) var refusedObjects: [HubRefusedObject] = []
    /// Set when the hub had compacted tombstones past this file's cursor
    /// (the device was offline longer than the hub's retention): the round
    /// caught up and deleted here what the hub no longer has. Nothing of
    /// this file's own changes was lost; its pushes merged as usual.
    public internal(set) var catchUp: SyncCatchUp?
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
        if received.leftObjects > 0 {
            text +=
                "; \(count(received.leftObjects, "object")) left this device's view and \(received.leftObjects == 1 ? "was" : "were") removed here"
        }
        if !refusedFields.isEmpty { text += "; the hub refused \(count(refusedFields.count, "field"))" }
        if !refusedObjects.isEmpty {
            text += "; the hub's rules refused \(count(refusedObjects.count, "object"))"
        }
        if let catchUp {
            text += "; caught up past compacted tombstones: \(count(catchUp.removedObjects, "object")) removed here"
        }
        return text
    }
}
