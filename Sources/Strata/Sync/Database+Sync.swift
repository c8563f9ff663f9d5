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
    /// made twice is sent once. At most about `limit` objects; when there
    /// are more, the changeset's summary says `hasMore`, and the next
    /// page starts after its `toSeq`.
    ///
    /// - Parameters:
    ///   - since: The last sequence number the peer has (0: everything).
    ///   - limit: About how many objects at most (a page ends with a
    ///     transaction).
    public func changes(since: UInt64 = 0, limit: Int = 5_000) throws -> Changeset {
        Changeset(data: ChangesetCodec.encode(try content(since: since, limit: limit)))
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

    /// The changes this file holds after sequence number `since`: one
    /// entry per object, with at most about `limit` objects (a page ends
    /// with a transaction).
    func content(since: UInt64, limit: Int = 5_000) throws -> ChangesetContent {
        try readingCommitted { log, catalog in
            let lmdb = log.lmdb
            var tables = Dictionary(database.tables.values.map { ($0.type.id, $0) }, uniquingKeysWith: { a, _ in a })
            for type in catalog.types where type.isKept && !type.isEmbedded && tables[type.id] == nil {
                guard try lmdb.openDatabase(type.recordsDatabase, create: false) != nil else { continue }
                tables[type.id] = try ObjectTable.open(
                    type, lmdb, create: false, withIndexes: false, related: catalog.types, path: database.path,
                    preservesUnknownFields: true)
                try log.openClocks(of: type.id)
            }
            var builder = ChangesetBuilder(
                log: log, catalog: catalog, tables: tables, writerVersion: database.configuration.schemaVersion)
            return try builder.build(since: since, limit: limit)
        }
    }

    /// Applies a peer's changes in one write transaction, with the peer's
    /// cursor: all of it or, when it is refused, nothing.
    @discardableResult
    func apply(content: ChangesetContent) throws -> SyncApplyReport {
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
                remedy: "Call sync.resetIdentity() on the copy before it exchanges changes.")
        }
        let drift = database.configuration.sync?.maxClockDrift ?? .seconds(300)
        let driftMilliseconds =
            UInt64(drift.components.seconds) * 1000 + UInt64(drift.components.attoseconds / 1_000_000_000_000_000)
        let now = HybridTime.wallClock()
        let latest = ([content.senderTime] + content.entries.flatMap { [$0.stamp.time] + $0.fields.map(\.stamp.time) })
            .max()
        if let latest, latest.milliseconds > now + driftMilliseconds {
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
            guard let recorder = engine.subscribers.lazy.compactMap({ $0 as? SyncRecorder }).first else {
                preconditionFailure("A sync-enabled file's transaction has no sync recorder")
            }
            let merger = try ChangeMerger(
                engine: engine, recorder: recorder, store: database.store, tables: database.tables)
            try merger.apply(content)
            try PeerCursor.advance(recorder.log, peer: content.sender, from: content.fromSeq, to: content.toSeq)
            return merger.report
        }
    }

    /// The sequence number of `peer`'s changes this file has applied
    /// without a gap: where the next changes from it start.
    public func cursor(of peer: SiteID) throws -> UInt64 {
        let handles = try handles()
        return try database.read { tx in
            try PeerCursor.read(tx.context.lmdb, handles, peer: peer, path: database.path)?.received ?? 0
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

/// What a file keeps about each peer (`__strata.sync.peers`, by the
/// peer's site id): the sequence number of its changes applied without a
/// gap, and when it was last heard from.
enum PeerCursor {
    static func read(_ lmdb: LMDBTransaction, _ handles: SyncHandles, peer: SiteID, path: String) throws -> (
        received: UInt64, lastContact: UInt64
    )? {
        guard let bytes = try lmdb.get(handles.peers, peer.bytes) else { return nil }
        guard bytes.count == 16 else {
            throw StrataError.corruptFile(path: path, "The sync peer entry of \(peer) in \(path) is damaged.")
        }
        return (
            UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)),
            UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        )
    }

    /// Moves the cursor of `peer` to `to` when the changes `from`…`to`
    /// follow what was applied (a page out of order leaves it).
    static func advance(_ log: SyncLog, peer: SiteID, from: UInt64, to: UInt64) throws {
        let current = try read(log.lmdb, log.handles, peer: peer, path: log.path)?.received ?? 0
        let received = from <= current ? max(current, to) : current
        _ = try log.lmdb.put(
            log.handles.peers, peer.bytes,
            FileLayout.counterBytes(received) + FileLayout.counterBytes(HybridTime.wallClock()))
    }
}
