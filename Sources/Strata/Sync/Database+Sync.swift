import Foundation

extension Database {
    /// Sync: the changes this file made or received, exchanged with other
    /// files of its dataset. Needs a file with sync enabled
    /// (``Configuration/sync``); every call on another file throws.
    ///
    /// ```swift
    /// try await phone.sync.exchange(with: laptop)
    /// ```
    public var sync: DatabaseSync { DatabaseSync(database: self) }
}

/// The sync side of a ``Database``: what it changed, what it received,
/// and the exchange of both with other files of its dataset.
public struct DatabaseSync: Sendable {
    let database: Database

    /// Whether sync is enabled on the file.
    public var isEnabled: Bool { database.syncHandles != nil }

    /// This file's site: the origin of the changes it makes.
    public var site: SiteID {
        get throws { try handles().identity.site }
    }

    /// The sequence number of the last change this file made or received
    /// from a peer.
    public func lastSequenceNumber() throws -> UInt64 {
        let handles = try handles()
        return try database.read { tx in
            try SyncLog(
                lmdb: tx.context.lmdb, meta: database.store.meta, handles: handles,
                writerVersion: database.configuration.schemaVersion, path: database.path
            ).lastSeq()
        }
    }

    /// The changes this file holds after sequence number `since`, as a
    /// changeset to carry to a peer of its dataset (by any means: it is
    /// plain bytes). One entry per object, its current state: a change
    /// made twice is sent once. At most `limit` objects; when there are
    /// more, the changeset's summary says `hasMore`, and the next page
    /// starts past its end (``changes(from:limit:)``, with the cursor the
    /// peer has after applying it). A transaction that changed more than
    /// `limit` objects comes in several pages.
    ///
    /// - Parameters:
    ///   - since: The last sequence number the peer has (0: everything).
    ///   - limit: How many objects at most (at least 1).
    public func changes(since: UInt64 = 0, limit: Int = 5_000) throws -> Changeset {
        try changes(from: SyncCursor(since: since, after: since), limit: limit)
    }

    /// The next page of changes for a peer whose cursor of this file is
    /// `cursor` (``cursor(of:)`` on the peer's side): at most `limit` of
    /// the objects changed past the cursor's walk, with the fields changed
    /// after `cursor.since`.
    ///
    /// - Throws: ``StrataError/Code/invalidValue`` for a cursor whose
    ///   ``SyncCursor/afterKey`` no change-log key can be (not one a
    ///   ``cursor(of:)`` returned).
    public func changes(from cursor: SyncCursor, limit: Int = 5_000) throws -> Changeset {
        guard LogPosition.isValidKey(length: cursor.afterKey.count) else {
            throw StrataError.invalidValue(
                "The cursor \(cursor) has an afterKey of \(cursor.afterKey.count) bytes, which no change-log key has.",
                remedy: "Pass a cursor as the peer's sync.cursor(of:) returned it.", path: database.path)
        }
        return Changeset(
            data: ChangesetCodec.encode(try content(since: cursor.since, after: cursor.position, limit: limit)))
    }

    /// Applies a changeset made by another file of the dataset
    /// (``changes(since:limit:)``), in one write transaction that also
    /// moves this file's cursor of the sender: all of it, or nothing when
    /// it is refused. Applying one twice, out of order or after later ones
    /// changes nothing more: the result depends only on which changes
    /// arrived.
    ///
    /// - Throws: ``StrataError``: ``StrataError/Code/invalidChangeset``
    ///   for damaged bytes, ``StrataError/Code/changesetRefused`` for
    ///   another dataset, this file's own site (a copied file), a clock too
    ///   far ahead, or a type whose primary key differs here.
    @discardableResult
    public func apply(_ changeset: Changeset) throws -> SyncApplyReport {
        try apply(content: try ChangesetCodec.decode(changeset.data))
    }

    /// Applies a changeset that the peer `peer` made, as ``apply(_:)``
    /// does: for a caller that knows where its bytes come from (a peer's
    /// connection) and wants a changeset of any other site refused.
    ///
    /// - Throws: what ``apply(_:)`` throws, and
    ///   ``StrataError/Code/changesetRefused`` when the changeset names
    ///   another sender.
    @discardableResult
    public func apply(_ changeset: Changeset, from peer: SiteID) throws -> SyncApplyReport {
        let content = try ChangesetCodec.decode(changeset.data)
        guard content.sender == peer else {
            throw StrataError.changesetRefused(
                path: database.path, "it was made by site \(content.sender), not by \(peer) that it came from",
                remedy: "Check what the connection to \(peer) relays; apply a relayed changeset with apply(_:).")
        }
        return try apply(content: content)
    }

    /// The changes this file holds past the position `after` (or after
    /// sequence number `since`): one entry per object, with at most
    /// `limit` objects.
    func content(since: UInt64, after: LogPosition? = nil, limit: Int = 5_000) throws -> ChangesetContent {
        let complete = LogPosition(seq: since)
        return try content(since: since, walkingFrom: max(complete, after ?? complete), limit: limit)
    }

    /// The objects whose last change is past `position`, at most `limit`,
    /// each with the fields changed after `since`: a position below `since`
    /// lists objects with none (a catch-up's inventory).
    func content(since: UInt64, walkingFrom position: LogPosition, limit: Int) throws -> ChangesetContent {
        try readingCommitted { log, catalog in
            var tables = Dictionary(database.tables.values.map { ($0.type.id, $0) }, uniquingKeysWith: { a, _ in a })
            for type in catalog.types where type.isKept && !type.isEmbedded && tables[type.id] == nil {
                tables[type.id] = try log.keptTable(type, in: catalog, create: false)
            }
            var builder = ChangesetBuilder(
                log: log, catalog: catalog, tables: tables, writerVersion: database.configuration.schemaVersion)
            return try builder.build(since: since, after: position, limit: limit)
        }
    }

    /// Applies a peer's changes in one write transaction, with the peer's
    /// cursor (unless `movingCursor` is false: a subscription's first
    /// pull, which is not a page of the peer's log): all of it or, when it
    /// is refused, nothing.
    @discardableResult
    func apply(content: ChangesetContent, movingCursor: Bool = true) throws -> SyncApplyReport {
        let handles = try handles()
        let path = database.path
        guard content.dataset == handles.identity.dataset else {
            throw StrataError.changesetRefused(
                path: path,
                "it belongs to dataset \(content.dataset), and this file to dataset \(handles.identity.dataset)",
                remedy: "Exchange changes only between files of one dataset.")
        }
        guard content.sender != handles.identity.site else {
            throw StrataError.changesetRefused(
                path: path,
                "it comes from site \(content.sender), which is this file's own: the file was copied, and the copy still has the original's identity",
                remedy:
                    "Close the copy and give it an identity of its own with Database.resetSyncIdentity(at:) before it exchanges changes."
            )
        }
        let drift = database.configuration.sync?.maxClockDrift ?? .seconds(300)
        let driftMilliseconds =
            UInt64(drift.components.seconds) * 1000 + UInt64(drift.components.attoseconds / 1_000_000_000_000_000)
        let now = HybridTime.wallClock()
        let latest = content.latestTime
        if latest.milliseconds > now + driftMilliseconds {
            throw StrataError.changesetRefused(
                path: path,
                "it holds a change stamped \(latest.milliseconds - now) ms ahead of this machine's clock, more than the allowed drift of \(driftMilliseconds) ms",
                remedy: "Check the clock of the device that made it (site \(content.sender)).")
        }
        // A type this app does not declare opens named databases.
        let learnsTypes = content.types.contains { database.tables[$0.name] == nil }
        let setup = database.environment.setupLock
        if learnsTypes { setup.lock() }
        defer { if learnsTypes { setup.unlock() } }
        return try database.write { tx in
            let engine = tx.context.engine
            guard let recorder = engine.sync else {
                preconditionFailure("A sync-enabled file's transaction has no sync recorder")
            }
            let merger = try ChangeMerger(
                engine: engine, recorder: recorder, store: database.store, tables: database.tables)
            try merger.apply(content)
            if movingCursor { try PeerCursor.advance(recorder.log, content) }
            return merger.report
        }
    }

    /// Where the next changes from `peer` start: what this file applied
    /// of them without a gap. Pass it to the peer's
    /// ``changes(from:limit:)``.
    public func cursor(of peer: SiteID) throws -> SyncCursor {
        let handles = try handles()
        return try database.read { tx in
            try PeerCursor.entry(tx.context.lmdb, handles, peer: peer, path: database.path)?.cursor ?? .start
        }
    }

    func handles() throws -> SyncHandles {
        guard let handles = database.syncHandles else {
            throw StrataError.invalidConfiguration(
                path: database.path, "Sync is not enabled on \(database.path).",
                remedy: "Open it in synced mode with configuration.sync set; the first such open enables sync.")
        }
        return handles
    }
}
