/// Evaluates an observed query: keeps its values in an ``ObservedResults``
/// in the query's order and updates them from the keys a commit wrote.
///
/// Without a limit, a commit whose changes are known costs O(k log n) for
/// k written objects of the type: each is read once, tested against the
/// query and moved in the tree. A query with a limit, a type emptied at
/// once, or commits whose changes are unknown (another process's) run the
/// query again and compare keys: O(n) for n values.
///
/// Only reading an object depends on the element type (a model, or a
/// dynamic object whose stored values are handed over); the rest is
/// ``ObservedResults``, compiled for concrete types inside Strata.
struct QueryEvaluator<Element: QueryElement>: ObservationEvaluator
where Element.Observed: Sendable, Element.ObservedKey: Sendable {
    /// Every object of the observed type, in a transaction.
    let objects: @Sendable (ReadTransaction) throws -> ObjectQuery<Element>
    let build: @Sendable (ObjectQuery<Element>) -> ObjectQuery<Element>
    private var results = ObservedResults(order: QueryOrder(position: nil, ascending: true))
    private var type: TypeID?
    /// What `build` made of the type's objects at the last evaluation that
    /// ran it (its plan and filters): reused while the type's table is the
    /// one it was made for, since building a query costs about as much as
    /// updating its values. Two properties rather than an optional tuple,
    /// whose metadata generic code looks up on every use.
    private var describedPlan: QueryPlan?
    private var describedPredicates: [(Element) throws -> Bool] = []

    init(
        objects: @escaping @Sendable (ReadTransaction) throws -> ObjectQuery<Element>,
        _ build: @escaping @Sendable (ObjectQuery<Element>) -> ObjectQuery<Element>
    ) {
        self.objects = objects
        self.build = build
    }

    private mutating func query(_ transaction: ReadTransaction) throws -> ObjectQuery<Element> {
        var objects = try self.objects(transaction)
        if let describedPlan, describedPlan.table === objects.table {
            objects.plan = describedPlan
            objects.predicates = describedPredicates
            return objects
        }
        let query = build(objects)
        describedPlan = query.plan
        describedPredicates = query.predicates
        return query
    }

    mutating func initial(in transaction: ReadTransaction) throws -> (QueryChange<Element>, TypeID) {
        let query = try query(transaction)
        let order = try query.observedOrder()
        type = query.observedTypeID
        results = ObservedResults(order: order, sorted: try values(of: query, order: order))
        let change = QueryChange<Element>(
            results: QueryResults(tree: results.tree), isInitial: true, deletions: [], insertions: [],
            modifications: [], modificationsInPrevious: [], deletedKeys: [], insertedKeys: [], modifiedKeys: [],
            transactionID: transaction.context.lmdb.id)
        return (change, query.observedTypeID)
    }

    mutating func update(in transaction: ReadTransaction, changes: CommittedChanges?) throws -> QueryChange<Element>? {
        let query = try query(transaction)
        guard let type, query.observedTypeID == type else {
            throw StrataError.observedTypeReplaced(query.observedTypeName, path: transaction.context.path)
        }
        guard let changes, !changes.wasEmptied(type) else {
            return try rerun(query, touched: nil)
        }
        guard let written = changes.keys(of: type), !written.isEmpty else { return nil }
        if query.isLimited { return try rerun(query, touched: written) }
        return try apply(written, query, transaction)
    }

    /// The query's values with their result keys, in order.
    ///
    /// The plan's executor walks with boxes, a concrete type, so that it
    /// runs as compiled for them: walking with the app's model (generic
    /// here, its module being another) looked up the metadata of the
    /// executor's tuples of it twice per object (about 1,000
    /// instructions). The box's type is named once, outside the walk: named
    /// in it, its metadata was looked up for each object.
    private func values(of query: ObjectQuery<Element>, order: QueryOrder) throws -> [(
        key: ResultKey, value: ResultBox
    )] {
        var found: [(key: ResultKey, value: ResultBox)] = []
        let box = TypedBox<Element.Observed>.self
        try query.inObservedOrder().walkObserved(orderValues: true) { key, observed, orderValue in
            found.append((ResultKey(value: orderValue, key: Array(key), order: order), box.init(observed)))
        }
        ObservedResults.inResultKeyOrder(&found)
        return found
    }

    /// Applies the writes of `written` keys, one object each.
    private mutating func apply(_ written: Set<[UInt8]>, _ query: ObjectQuery<Element>, _ transaction: ReadTransaction)
        throws -> QueryChange<Element>?
    {
        var edit = ResultsEdit()
        let order = results.order
        for key in written {
            let old = results.entry(forKey: key)
            var new: (key: ResultKey, value: ResultBox)?
            if let match = try query.matchingObject(key: key, order: order) {
                new = (results.resultKey(value: match.orderValue, key: key), TypedBox(match.observed))
            }
            edit.note(key: key, old: old, new: new) { Self.sameStoredValues($0, $1, query) }
        }
        guard !edit.isEmpty else { return nil }
        let diff = results.apply(edit)
        return try change(diff, query, transactionID: transaction.context.lmdb.id)
    }

    /// Runs the query again and compares keys with the previous values.
    /// Only the values of `touched` keys are compared for modifications
    /// (all when nil).
    private mutating func rerun(_ query: ObjectQuery<Element>, touched: Set<[UInt8]>?) throws -> QueryChange<Element>? {
        let fresh = try values(of: query, order: results.order)
        guard
            let diff = results.replace(
                with: fresh, touched: touched, sameValues: { Self.sameStoredValues($0, $1, query) })
        else { return nil }
        return try change(diff, query, transactionID: query.snapshotID)
    }

    /// The element for `diff`, with the current values.
    private func change(_ diff: ResultsDiff, _ query: ObjectQuery<Element>, transactionID: Int) throws
        -> QueryChange<Element>
    {
        QueryChange<Element>(
            results: QueryResults(tree: results.tree), isInitial: false, deletions: diff.deletionPositions,
            insertions: diff.insertionPositions, modifications: diff.modificationPositions,
            modificationsInPrevious: diff.modificationPositionsBefore,
            deletedKeys: try typedKeys(diff.deletedKeys, query), insertedKeys: try typedKeys(diff.insertedKeys, query),
            modifiedKeys: try typedKeys(diff.modifiedKeys, query), transactionID: transactionID)
    }

    /// The typed primary keys of stored `keys`.
    private func typedKeys(_ keys: [[UInt8]], _ query: ObjectQuery<Element>) throws -> [Element.ObservedKey] {
        var typed: [Element.ObservedKey] = []
        if keys.isEmpty { return typed }
        typed.reserveCapacity(keys.count)
        for key in keys { typed.append(try query.observedKey(key)) }
        return typed
    }

    static func sameStoredValues(_ a: ResultBox, _ b: ResultBox, _ query: ObjectQuery<Element>) -> Bool {
        let x = query.storedValues(of: TypedBox<Element.Observed>.model(of: a))
        let y = query.storedValues(of: TypedBox<Element.Observed>.model(of: b))
        return x.count == y.count && zip(x, y).allSatisfy { $0.isStored(identicallyTo: $1) }
    }
}
