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
            let through = try log.acknowledgedByAllPeers()
            guard through > 0 else { return 0 }
            let catalog = try database.store.catalog(log.lmdb) ?? database.catalog
            return try log.dropTombstones(through: through, types: catalog.types.filter { !$0.isEmbedded }.map(\.id))
        }
    }
}
