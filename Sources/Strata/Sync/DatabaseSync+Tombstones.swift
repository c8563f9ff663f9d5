extension DatabaseSync {
    /// Drops the tombstones every peer this file knows has acknowledged:
    /// the clock rows of deleted objects whose delete is at or below the
    /// lowest ``SyncStatus/Peer/acknowledged`` of the file's peer entries
    /// (nothing while it knows no peer). Such a peer has the delete, and
    /// none of them can send the object's older life back. Returns how
    /// many it dropped.
    ///
    /// Call it now and then, after exchanges: it reads every clock row
    /// (O(objects)), in one write transaction. A peer the file has never
    /// met (a new device, or a file restored from an older copy) may still
    /// send the deleted object, which then lives again here: peers that
    /// come and go should exchange through a hub, whose compaction knows
    /// its devices (docs/Hub.md, "Compaction"). A peer that no longer
    /// syncs holds every later tombstone back, as long as its entry stays.
    ///
    /// - Throws: ``StrataError``: ``StrataError/Code/invalidConfiguration``
    ///   when sync is not enabled on the file,
    ///   ``StrataError/Code/corruptFile`` for a damaged clock row or peer
    ///   entry.
    @discardableResult
    public func dropAcknowledgedTombstones() throws -> Int {
        _ = try handles()
        return try database.write { tx in
            let engine = tx.context.engine
            guard let recorder = engine.sync else {
                preconditionFailure("A sync-enabled file's transaction has no sync recorder")
            }
            let log = recorder.log
            let through = try Self.acknowledgedByAllPeers(log)
            guard through > 0 else { return 0 }
            let catalog = try database.store.catalog(log.lmdb) ?? database.catalog
            return try log.dropTombstones(through: through, types: catalog.types.filter { !$0.isEmbedded }.map(\.id))
        }
    }

    /// The lowest sequence number of this file that every peer in its
    /// peer entries has acknowledged; 0 when it knows no peer.
    static func acknowledgedByAllPeers(_ log: SyncLog) throws -> UInt64 {
        var lowest: UInt64?
        let (lmdb, handles, path) = (log.lmdb, log.handles, log.path)
        try lmdb.withCursor(handles.peers) { cursor in
            var entry = try cursor.first()
            while let (key, _) = entry {
                if let site = SiteID(bytes: key),
                    let peer = try PeerCursor.entry(lmdb, handles, peer: site, path: path)
                {
                    lowest = min(lowest ?? .max, peer.acknowledged)
                }
                entry = try cursor.next()
            }
        }
        return lowest ?? 0
    }
}
