import Foundation

extension DatabaseSync {
    /// Adds a subscription: from the next exchange with a hub, the file
    /// syncs the objects `query` selects (within what the hub's sync rules
    /// let it read), and no longer everything, when it had no subscription
    /// before. The next exchange pulls the objects it selects that the file
    /// lacks, in pages, and an exchange that stops resumes where it was.
    /// Kept in the file: it holds after the app restarts.
    ///
    /// ```swift
    /// try db.sync.subscribe("work notes") { tx in
    ///     try tx.objects(Note.self).filter(#Predicate { $0.folder == "work" })
    /// }
    /// try db.sync.subscribe { tx in try tx.objects(Label.self) }   // every label
    /// ```
    ///
    /// The hub evaluates the query in SQL, so it may hold only tests of
    /// whether a top-level field holds one of some values (`==`, `!=`,
    /// `contains` on a captured array, `where(_:equals:)`,
    /// `where(_:in:)`) or lies in a range (`<`, `<=`, `>`, `>=` on a
    /// number, date, string, data or UUID; not the primary key), combined
    /// with `&&`, `||` and `!`, on fields the hub's rules list as fields to
    /// subscribe by (docs/Hub.md, "Subscriptions").
    ///
    /// - Throws: ``StrataError/Code/invalidValue`` for a query with
    ///   anything else (a closure filter, part of a string, a sort, a
    ///   limit, a field inside an embedded object), before anything is
    ///   kept.
    @discardableResult
    public func subscribe<Element>(
        _ name: String? = nil, to query: @Sendable (ReadTransaction) throws -> ObjectQuery<Element>
    ) throws -> SyncSubscription {
        _ = try handles()
        let path = database.path
        let subscription = try database.read { tx in
            let built = try query(tx)
            let filter = try SyncFilter(
                plan: built.plan, hasClosureFilters: !built.predicates.isEmpty, path: path)
            return SyncSubscription(name: name, typeName: built.typeName, filter: filter)
        }
        try updateSubscriptions { $0.append(subscription) }
        return subscription
    }

    /// The file's subscriptions, in the order they were added, with their
    /// states. Empty: the file syncs everything it may read.
    public func subscriptions() throws -> [SyncSubscription] {
        _ = try handles()
        return try database.read { tx in try Self.subscriptions(tx.context.lmdb, database) }
    }

    /// Removes the subscription `id`: the exchanges after it no longer
    /// bring what only it selected, and the objects only it selected leave
    /// the file, in the same transaction, without a delete for any peer to
    /// hear of (they stay on the hub and on other devices). An object that
    /// holds a change of this file the hub has not acknowledged yet stays
    /// until it is sent; one that another subscription selects stays. When
    /// it was the file's last subscription, the file syncs everything again
    /// and nothing leaves. Returns whether the file had it.
    @discardableResult
    public func unsubscribe(_ id: SyncSubscription.ID) throws -> Bool {
        let handles = try handles()
        return try database.write { tx in
            let lmdb = tx.context.lmdb
            var list = try Self.subscriptions(lmdb, database)
            guard let index = list.firstIndex(where: { $0.id == id }) else { return false }
            let removed = list.remove(at: index)
            try Self.store(list, lmdb, database)
            guard !list.isEmpty else { return true }
            try evict(selectedOnlyBy: removed, remaining: list, tx, handles)
            return true
        }
    }

    /// Removes from the file, in `tx`, the objects `removed` selects that
    /// none of `remaining` does, as objects that left the file's view
    /// (``ChangeEntry/leavesView``): deleted without a delete rule and
    /// their tombstones dropped at once, except those that hold a change
    /// of this file its peers have not acknowledged.
    private func evict(
        selectedOnlyBy removed: SyncSubscription, remaining: [SyncSubscription], _ tx: WriteTransaction,
        _ handles: SyncHandles
    ) throws {
        let others = remaining.filter { $0.typeName == removed.typeName }.map(\.filter)
        guard !others.contains(.everything), let table = database.tables[removed.typeName],
            let keyField = table.primaryKey
        else { return }
        let engine = tx.context.engine
        guard let recorder = engine.sync else {
            preconditionFailure("A sync-enabled file's transaction has no sync recorder")
        }
        let time = try recorder.log.lastTime()
        var entries: [ChangeEntry] = []
        for object in try tx.objects(removed.typeName).array() {
            guard removed.filter.matches({ object[$0] }), !others.contains(where: { $0.matches { object[$0] } })
            else { continue }
            entries.append(.leaving(type: 0, key: object[keyField.name], stamp: WireStamp(time: time, origin: 0)))
        }
        guard !entries.isEmpty else { return }
        let merger = try ChangeMerger(
            engine: engine, recorder: recorder, store: database.store, tables: database.tables)
        try merger.apply(
            ChangesetContent(
                dataset: handles.identity.dataset, sender: handles.identity.site, writerSchemaVersion: 0,
                senderTime: time, fromSeq: 0, toSeq: 0, hasMore: true, types: [WireType(table.type)],
                fields: [], origins: [handles.identity.site], entries: entries))
    }

    /// Keeps `list` as the file's subscriptions (none: the key removed).
    static func store(_ list: [SyncSubscription], _ lmdb: LMDBTransaction, _ database: Database) throws {
        let meta = database.store.meta
        if list.isEmpty {
            _ = try lmdb.delete(meta, FileLayout.MetaKey.syncSubscriptions)
        } else {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            _ = try lmdb.put(meta, FileLayout.MetaKey.syncSubscriptions, Array(try encoder.encode(list)))
        }
    }

    /// Changes the kept subscriptions in one write transaction.
    @discardableResult
    func updateSubscriptions<T: Sendable>(_ change: @Sendable (inout [SyncSubscription]) throws -> T) throws -> T {
        _ = try handles()
        return try database.write { tx in
            let lmdb = tx.context.lmdb
            var list = try Self.subscriptions(lmdb, database)
            let result = try change(&list)
            try Self.store(list, lmdb, database)
            return result
        }
    }

    static func subscriptions(_ lmdb: LMDBTransaction, _ database: Database) throws -> [SyncSubscription] {
        guard let bytes = try lmdb.get(database.store.meta, FileLayout.MetaKey.syncSubscriptions) else { return [] }
        do {
            return try JSONDecoder().decode([SyncSubscription].self, from: Data(bytes))
        } catch {
            throw StrataError.corruptFile(
                path: database.path, "The sync subscriptions kept in \(database.path) are damaged: \(error).")
        }
    }
}
