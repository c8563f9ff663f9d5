import Foundation

extension Database {
    /// Opens an existing sync-enabled file for exchanging changes, with the
    /// schema, schema version and mode its catalog records: for tools that
    /// sync files without the app's models, such as `strata sync`.
    ///
    /// Every type and field the file holds is carried over, the ones its
    /// app does not declare (kept and learned) included: they are stored
    /// and sent on as they are. Changes are stamped with the file's schema
    /// version as the writer's.
    ///
    /// ```swift
    /// let phone = try Database(syncingExisting: "phone.strata")
    /// let laptop = try Database(syncingExisting: "laptop.strata")
    /// let report = try phone.sync.exchange(with: laptop)
    /// ```
    ///
    /// - Parameters:
    ///   - path: The database file.
    ///   - readOnly: Whether to open it without writing, to read its
    ///     status. Default: `false`.
    /// - Throws: ``StrataError``: ``StrataError/Code/fileSystem`` when the
    ///   file does not exist, ``StrataError/Code/invalidConfiguration``
    ///   when sync is not enabled on it, and the errors of
    ///   ``init(inspecting:readOnly:)``.
    public convenience init(syncingExisting path: String, readOnly: Bool = false) throws {
        try self.init(inspecting: path, readOnly: readOnly)
        guard syncHandles != nil else {
            let mode = catalog.mode
            close()
            throw StrataError.syncNotEnabled(path: path, mode: mode)
        }
    }
}

extension StrataError {
    /// A tool asked for the sync of a file that has none.
    static func syncNotEnabled(path: String, mode: DatabaseMode) -> StrataError {
        guard mode == .synced else {
            return .invalidConfiguration(
                path: path, "Sync is not enabled on \(path), a local-mode file: it has no changes to exchange.",
                remedy: "Sync needs a synced-mode file; local-mode files never sync.")
        }
        return .invalidConfiguration(
            path: path, "Sync is not enabled on \(path): it has no changes to exchange.",
            remedy: "Enable it by opening the file once from its app with configuration.sync set to the dataset.")
    }
}

extension DatabaseSync {
    /// The dataset the file belongs to: files of one dataset exchange
    /// changes.
    public var dataset: SiteID {
        get throws { try handles().identity.dataset }
    }

    /// Exchanges changes with `other`, both ways, page by page and round
    /// after round until neither has anything the other lacks, and
    /// reports what each side applied.
    ///
    /// ```swift
    /// try phone.sync.exchange(with: laptop)
    /// ```
    ///
    /// Each round is a hub's (``exchange(with:pageSize:)``), with `other`
    /// as an ``InProcessHub``: this file pushes what `other` lacks, then
    /// pulls what it lacks.
    ///
    /// - Throws: ``StrataError``: ``StrataError/Code/changesetRefused``
    ///   when the two files belong to two datasets (nothing is written) or
    ///   one is a copy of the other; the errors of ``apply(_:)``.
    @discardableResult
    public func exchange(with other: Database) throws -> SyncExchangeReport {
        let remote = other.sync
        let (mine, theirs) = (try dataset, try remote.dataset)
        guard mine == theirs else {
            throw StrataError.changesetRefused(
                path: database.path,
                "\(database.path) belongs to dataset \(mine), and \(other.path) to dataset \(theirs)",
                remedy: "Files of two datasets never exchange changes; sync files of one dataset.")
        }
        let hub = InProcessHub(database: other)
        var report = SyncExchangeReport()
        // A file that applied a peer's changes may hold objects merged from
        // both sides, which the peer has not seen yet: go on until a round
        // moves nothing.
        for _ in 0 ..< 8 {
            var sent = SyncApplyReport()
            let round = try HubRound(sync: self, pageSize: 5_000, events: nil, usesSubscriptions: false).run(
                with: hub, sent: &sent)
            report.received.add(round.received)
            report.sent.add(sent)
            report.rounds += 1
            if round.received.isEmpty && sent.isEmpty { break }
        }
        // The round noted how much of this file's changes `other` has; it
        // notes how much of its changes this file has, for `status()`'s
        // pending counts.
        try remote.acknowledge(try cursor(of: try remote.site).since, by: try site)
        return report
    }

    /// Notes that `peer` has every change of this file up to `seq`.
    /// Starts this file's cursor of `peer` at its sequence number `seq`,
    /// when the file has applied nothing of the peer's log yet: for a file
    /// whose subscriptions' first pulls took what it needs of the peer's
    /// changes up to `seq`.
    func startCursor(of peer: SiteID, at seq: UInt64) throws {
        let handles = try handles()
        try database.write { tx in
            let lmdb = tx.context.lmdb
            var entry = try PeerCursor.entry(lmdb, handles, peer: peer, path: database.path) ?? PeerCursor.Entry()
            guard entry.cursor == .start else { return }
            entry.cursor = SyncCursor(since: seq, after: seq)
            entry.walkedAt = seq
            entry.lastContact = HybridTime.wallClock()
            try PeerCursor.store(entry, lmdb, handles, peer: peer)
        }
    }

    func acknowledge(_ seq: UInt64, by peer: SiteID) throws {
        let handles = try handles()
        try database.write { tx in
            let lmdb = tx.context.lmdb
            var entry = try PeerCursor.entry(lmdb, handles, peer: peer, path: database.path) ?? PeerCursor.Entry()
            guard seq > entry.acknowledged else { return }
            entry.acknowledged = seq
            try PeerCursor.store(entry, lmdb, handles, peer: peer)
        }
    }
}

/// What ``DatabaseSync/exchange(with:)`` moved: what this file
/// applied from the other, and what the other applied from it.
public struct SyncExchangeReport: Sendable, Equatable {
    /// What this file applied from the other.
    public internal(set) var received = SyncApplyReport()
    /// What the other file applied from this one.
    public internal(set) var sent = SyncApplyReport()
    /// The rounds of both ways it took until one moved nothing.
    public internal(set) var rounds = 0

    /// Whether neither file changed.
    public var isEmpty: Bool { received.isEmpty && sent.isEmpty }
}

extension SyncApplyReport {
    /// Whether applying changed nothing and learned nothing.
    public var isEmpty: Bool {
        changedObjects == 0 && deletedObjects == 0 && changedFields == 0 && leftObjects == 0 && learnedTypes.isEmpty
            && learnedFields.isEmpty && skippedFields.isEmpty
    }

    mutating func add(_ other: SyncApplyReport) {
        changedObjects += other.changedObjects
        changedFields += other.changedFields
        deletedObjects += other.deletedObjects
        leftObjects += other.leftObjects
        keptLeavingObjects += other.keptLeavingObjects
        learnedTypes.formUnion(other.learnedTypes)
        learnedFields.formUnion(other.learnedFields)
        skippedFields.formUnion(other.skippedFields)
    }
}

extension DatabaseSync {
    /// What the file knows about its sync: its site and dataset, its clock
    /// and last sequence number, each peer, its objects and tombstones, what
    /// is pending, and the types and fields it keeps without its app
    /// declaring them. Reads every object's clock row: O(objects).
    ///
    /// - Throws: ``StrataError``: ``StrataError/Code/invalidConfiguration``
    ///   when sync is not enabled on the file, ``StrataError/Code/corruptFile``
    ///   for a damaged clock row or peer entry.
    public func status() throws -> SyncStatus {
        try readingCommitted { log, catalog in
            let identity = log.handles.identity
            var status = SyncStatus(
                site: identity.site, dataset: identity.dataset, clock: try log.lastTime(),
                enabledAt: identity.enabledAt, lastSequenceNumber: try log.lastSeq())
            var peers = try self.peers(log)
            for type in catalog.types where !type.isEmbedded {
                try log.openClocks(of: type.id)
                guard let clocks = log.clocks(of: type.id) else { continue }
                try log.lmdb.withCursor(clocks) { cursor in
                    var entry = try cursor.first()
                    while let (_, bytes) = entry {
                        guard let row = ClockRow.decode(bytes) else {
                            throw StrataError.corruptFile(
                                path: log.path, "A clock row of type \(type.name) in \(log.path) is damaged.")
                        }
                        if row.isLive { status.objects += 1 } else { status.tombstones += 1 }
                        if row.latestTime(of: SyncLog.localOrigin) > .zero { status.changedHere += 1 }
                        entry = try cursor.next()
                    }
                }
            }
            for i in peers.indices {
                peers[i].pendingObjects = try log.changedObjectCount(after: peers[i].acknowledged)
            }
            status.peers = peers.sorted { $0.lastContactMilliseconds > $1.lastContactMilliseconds }
            status.pendingObjects = try peers.map(\.pendingObjects).max() ?? log.changedObjectCount(after: 0)
            status.keptTypes = catalog.types.filter { $0.isKept && !$0.isEmbedded }.map(\.name).sorted()
            status.keptFields = catalog.types.filter { !$0.isKept }.flatMap { type in
                type.keptProperties.map {
                    "\(type.name).\($0.property.name): \(FieldDescriptor.descriptor(of: $0.property))"
                }
            }.sorted()
            return status
        }
    }

    /// Every peer entry of the file, without pending counts.
    private func peers(_ log: SyncLog) throws -> [SyncStatus.Peer] {
        var peers: [SyncStatus.Peer] = []
        try log.lmdb.withCursor(log.handles.peers) { cursor in
            var entry = try cursor.first()
            while let (key, _) = entry {
                if let site = SiteID(bytes: key),
                    let entry = try PeerCursor.entry(log.lmdb, log.handles, peer: site, path: log.path)
                {
                    peers.append(
                        SyncStatus.Peer(
                            site: site, cursor: entry.cursor, lastContactMilliseconds: entry.lastContact,
                            acknowledged: entry.acknowledged))
                }
                entry = try cursor.next()
            }
        }
        return peers
    }

    /// Runs `body` in a read transaction with the file's sync log and its
    /// catalog as committed, which may have learned types and fields since
    /// this `Database` was opened. The environment's setup lock is held:
    /// `body` may open a learned type's databases, and named databases are
    /// opened by one transaction of the process at a time.
    func readingCommitted<T>(_ body: (SyncLog, Catalog) throws -> T) throws -> T {
        let handles = try handles()
        let setup = database.environment.setupLock
        setup.lock()
        defer { setup.unlock() }
        return try database.read { tx in
            let lmdb = tx.context.lmdb
            let log = SyncLog(
                lmdb: lmdb, meta: database.store.meta, handles: handles,
                writerVersion: database.configuration.schemaVersion, path: database.path)
            return try body(log, try database.store.catalog(lmdb) ?? database.catalog)
        }
    }
}

extension ClockRow {
    /// The latest time among the stamps of origin `origin`; zero when none
    /// is its.
    func latestTime(of origin: UInt32) -> HybridTime {
        var latest = base.stamp.origin == origin ? base.stamp.time : .zero
        for exception in exceptions where exception.clock.stamp.origin == origin {
            latest = max(latest, exception.clock.stamp.time)
        }
        return latest
    }
}

/// What ``DatabaseSync/status()`` reads from a sync-enabled file.
public struct SyncStatus: Sendable, Equatable {
    /// A peer the file has received changes from.
    public struct Peer: Sendable, Equatable {
        /// The peer's site.
        public var site: SiteID
        /// Where the next changes from the peer start (in the peer's
        /// numbering): what this file applied of them without a gap.
        public var cursor: SyncCursor
        /// When the file last applied changes from the peer, in
        /// milliseconds since 1970 on this machine's clock.
        public var lastContactMilliseconds: UInt64
        /// This file's sequence number up to which the peer has every
        /// change, as the last ``DatabaseSync/exchange(with:)`` between them
        /// found or, for a hub (whose site is its epoch), as the hub's last
        /// answer to ``DatabaseSync/exchange(with:pageSize:)`` said (0 when
        /// they only traded changesets by hand).
        public var acknowledged: UInt64 = 0
        /// The objects whose last change in this file (made here or
        /// received from anyone) is after ``acknowledged``: what the peer
        /// has yet to receive from this file.
        public var pendingObjects = 0

        /// When the file last applied changes from the peer.
        public var lastContact: Date {
            Date(timeIntervalSince1970: Double(lastContactMilliseconds) / 1000)
        }
    }

    /// This file's site: the origin of the changes it makes.
    public var site: SiteID
    /// The dataset: files of one dataset exchange changes.
    public var dataset: SiteID
    /// The file's hybrid logical clock: the last time it issued or saw.
    public var clock: HybridTime
    /// The clock time at which sync was enabled on the file.
    public var enabledAt: HybridTime
    /// The sequence number of the file's last change, made or received.
    public var lastSequenceNumber: UInt64
    /// The peers the file has received changes from, most recent contact
    /// first.
    public var peers: [Peer] = []
    /// Objects alive, with a clock row.
    public var objects = 0
    /// Deleted objects whose clock row is kept, so that the delete wins
    /// over older edits arriving later.
    public var tombstones = 0
    /// Objects (tombstones included) this file changed itself since sync
    /// was enabled on it.
    public var changedHere = 0
    /// The most objects any peer has yet to receive from this file
    /// (``Peer/pendingObjects``, the highest); with no peer, every object
    /// in the change log.
    public var pendingObjects = 0
    /// Types the file keeps without its app declaring them: learned from
    /// peers, or removed by a newer app version.
    public var keptTypes: [String] = []
    /// Fields the file keeps without its app declaring them, as
    /// `Type.name: descriptor` (`Note.tag: string?`).
    public var keptFields: [String] = []

    /// The clock as a date (its milliseconds part).
    public var clockDate: Date {
        Date(timeIntervalSince1970: Double(clock.milliseconds) / 1000)
    }
}
