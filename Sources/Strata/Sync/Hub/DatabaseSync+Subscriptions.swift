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
    /// `where(_:in:)`), combined with `&&`, `||` and `!`, on fields the
    /// hub's rules list as fields to subscribe by (docs/Hub.md,
    /// "Subscriptions").
    ///
    /// - Throws: ``StrataError/Code/invalidValue`` for a query with
    ///   anything else (a range, a closure filter, a sort, a limit, a field
    ///   inside an embedded object), before anything is kept.
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
    /// bring what only it selected. Returns whether the file had it.
    ///
    /// Objects it selected stay in the file until they change on the hub
    /// (see docs/Hub.md, "Subscriptions", for what this version does not
    /// remove).
    @discardableResult
    public func unsubscribe(_ id: SyncSubscription.ID) throws -> Bool {
        try updateSubscriptions { list in
            let before = list.count
            list.removeAll { $0.id == id }
            return list.count < before
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
            let meta = database.store.meta
            if list.isEmpty {
                _ = try lmdb.delete(meta, FileLayout.MetaKey.syncSubscriptions)
            } else {
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                _ = try lmdb.put(meta, FileLayout.MetaKey.syncSubscriptions, Array(try encoder.encode(list)))
            }
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
