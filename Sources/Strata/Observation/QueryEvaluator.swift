/// Evaluates an observed query: keeps its values in a ``RankedTree`` in
/// the query's order and updates it from the keys a commit wrote.
///
/// Without a limit, a commit whose changes are known costs O(k log n) for
/// k written objects of the type: each is read once, tested against the
/// query and moved in the tree. A query with a limit, a type emptied at
/// once, or commits whose changes are unknown (another process's) run the
/// query again and compare keys: O(n) for n values.
struct QueryEvaluator<M: Model & Sendable>: ObservationEvaluator where M.Key: Sendable {
    let build: @Sendable (ModelQuery<M>) -> ModelQuery<M>
    private var results = RankedTree<ResultKey, ResultBox>()
    /// Each value's sort value by key, when the order is by a property.
    private var sortValues: [[UInt8]: Value] = [:]
    /// The query plan's result order.
    private var order = QueryOrder(position: nil, ascending: true)
    private var type: TypeID?

    init(_ build: @escaping @Sendable (ModelQuery<M>) -> ModelQuery<M>) {
        self.build = build
    }

    private func query(_ transaction: ReadTransaction) throws -> ModelQuery<M> {
        build(try transaction.objects(M.self))
    }

    mutating func initial(in transaction: ReadTransaction) throws -> (QueryChange<M>, TypeID) {
        let query = try query(transaction)
        order = try query.observedOrder()
        type = query.observedTypeID
        results = RankedTree(sorted: try values(of: query))
        if order.position != nil {
            sortValues = Dictionary(uniqueKeysWithValues: results.map { ($0.key.key, $0.key.value!) })
        }
        let change = QueryChange<M>(
            results: QueryResults(tree: results), isInitial: true, deletions: [], insertions: [], modifications: [],
            modificationsInPrevious: [], deletedKeys: [], insertedKeys: [], modifiedKeys: [],
            transactionID: transaction.context.lmdb.id)
        return (change, query.observedTypeID)
    }

    mutating func update(in transaction: ReadTransaction, changes: CommittedChanges?) throws -> QueryChange<M>? {
        let query = try query(transaction)
        guard let type, query.observedTypeID == type else {
            throw StrataError.observedTypeReplaced("\(M.self)", path: transaction.context.path)
        }
        guard let changes, !changes.wasEmptied(type) else {
            return try rerun(query, touched: nil)
        }
        guard let written = changes.keys(of: type), !written.isEmpty else { return nil }
        if query.isLimited { return try rerun(query, touched: written) }
        return try apply(written, query, transaction)
    }

    /// The query's values with their result keys, in order.
    private func values(of query: ModelQuery<M>) throws -> [(key: ResultKey, value: ResultBox)] {
        var found: [(key: ResultKey, value: ResultBox)] = []
        let ascending = order.ascending
        try query.inObservedOrder().iterateWithKeys { model, key, value in
            found.append((ResultKey(value: value, key: Array(key), ascending: ascending), TypedBox(model)))
            return true
        }
        // The walk's order is the result keys' order, except where an index
        // and a full comparison disagree (a cut key): sort only then.
        // (An index loop: `zip(found, found.dropFirst())` is generic code
        // that, unspecialized, costs a tuple-metadata lookup per pair.)
        var ordered = true
        var index = 1
        while ordered && index < found.count {
            ordered = found[index - 1].key < found[index].key
            index += 1
        }
        if !ordered { found.sort { $0.key < $1.key } }
        return found
    }

    /// Applies the writes of `written` keys, one object each.
    private mutating func apply(_ written: Set<[UInt8]>, _ query: ModelQuery<M>, _ transaction: ReadTransaction)
        throws -> QueryChange<M>?
    {
        var removed: [(old: ResultKey, position: Int)] = []
        var added: [(new: ResultKey, model: ResultBox)] = []
        var modified: [(old: ResultKey, new: ResultKey, model: ResultBox)] = []
        var moved: [[UInt8]] = []
        for key in written {
            let oldKey: ResultKey? =
                if order.position != nil {
                    sortValues[key].map { ResultKey(value: $0, key: key, ascending: order.ascending) }
                } else {
                    ResultKey(value: nil, key: key, ascending: order.ascending)
                }
            let old = oldKey.flatMap { oldKey in results.value(forKey: oldKey).map { (oldKey, $0) } }
            let new = try query.matchingObject(key: key, order: order).map {
                (ResultKey(value: $0.orderValue, key: key, ascending: order.ascending), TypedBox($0.model) as ResultBox)
            }
            switch (old, new) {
            case (nil, nil):
                continue
            case (let old?, nil):
                removed.append((old.0, 0))
            case (nil, let new?):
                added.append(new)
            case (let old?, let new?):
                if old.0 == new.0 {
                    if !Self.sameStoredValues(old.1, new.1, query) { modified.append((old.0, new.0, new.1)) }
                } else {
                    removed.append((old.0, 0))
                    added.append(new)
                    moved.append(key)
                }
            }
        }
        guard !removed.isEmpty || !added.isEmpty || !modified.isEmpty else { return nil }
        let previous = results
        var deletions = removed.map { (position: previous.rank(of: $0.old).position, key: $0.old.key) }
        let modifiedBefore = modified.map { previous.rank(of: $0.old).position }
        for entry in removed {
            results.remove(forKey: entry.old)
            if order.position != nil { sortValues[entry.old.key] = nil }
        }
        for entry in added + modified.map({ ($0.new, $0.model) }) {
            results.insert(entry.model, forKey: entry.new)
            if let value = entry.new.value { sortValues[entry.new.key] = value }
        }
        var insertions = added.map { (position: results.rank(of: $0.new).position, key: $0.new.key) }
        var modifications = zip(modified, modifiedBefore).map {
            (position: results.rank(of: $0.0.new).position, before: $0.1, key: $0.0.new.key)
        }
        Self.settle(moved, &deletions, &insertions, &modifications)
        return QueryChange<M>(
            results: QueryResults(tree: results), isInitial: false, deletions: deletions.map(\.position),
            insertions: insertions.map(\.position), modifications: modifications.map(\.position),
            modificationsInPrevious: modifications.map(\.before),
            deletedKeys: try deletions.map { try query.typedKey($0.key) },
            insertedKeys: try insertions.map { try query.typedKey($0.key) },
            modifiedKeys: try modifications.map { try query.typedKey($0.key) },
            transactionID: transaction.context.lmdb.id)
    }

    /// Runs the query again and compares keys with the previous values.
    /// Only the values of `touched` keys are compared for modifications
    /// (all when nil).
    private mutating func rerun(_ query: ModelQuery<M>, touched: Set<[UInt8]>?) throws -> QueryChange<M>? {
        let fresh = try values(of: query)
        var before: [[UInt8]: (position: Int, key: ResultKey, model: ResultBox)] = [:]
        before.reserveCapacity(results.count)
        for (offset, entry) in results.enumerated() { before[entry.key.key] = (offset, entry.key, entry.value) }
        var deletions: [(position: Int, key: [UInt8])] = []
        var insertions: [(position: Int, key: [UInt8])] = []
        var modifications: [(position: Int, before: Int, key: [UInt8])] = []
        var moved: [[UInt8]] = []
        for (offset, entry) in fresh.enumerated() {
            guard let old = before.removeValue(forKey: entry.key.key) else {
                insertions.append((offset, entry.key.key))
                continue
            }
            if old.key != entry.key {
                deletions.append((old.position, old.key.key))
                insertions.append((offset, entry.key.key))
                moved.append(entry.key.key)
            } else if touched.map({ $0.contains(entry.key.key) }) ?? true,
                !Self.sameStoredValues(old.model, entry.value, query)
            {
                modifications.append((offset, old.position, entry.key.key))
            }
        }
        deletions += before.values.map { ($0.position, $0.key.key) }
        Self.settle(moved, &deletions, &insertions, &modifications)
        guard !deletions.isEmpty || !insertions.isEmpty || !modifications.isEmpty else { return nil }
        results = RankedTree(sorted: fresh)
        if order.position != nil {
            sortValues = Dictionary(uniqueKeysWithValues: fresh.map { ($0.key.key, $0.key.value!) })
        }
        return QueryChange<M>(
            results: QueryResults(tree: results), isInitial: false, deletions: deletions.map(\.position),
            insertions: insertions.map(\.position), modifications: modifications.map(\.position),
            modificationsInPrevious: modifications.map(\.before),
            deletedKeys: try deletions.map { try query.typedKey($0.key) },
            insertedKeys: try insertions.map { try query.typedKey($0.key) },
            modifiedKeys: try modifications.map { try query.typedKey($0.key) },
            transactionID: query.snapshotID)
    }

    /// Sorts the position lists, and reports a value whose sort property
    /// changed as a modification when it kept its place among the values
    /// that stayed: when it is the commit's only such value and has as
    /// many staying values before it as it had. (With several, they are
    /// deletions and insertions: each is correct, if not the fewest.)
    static func settle(
        _ moved: [[UInt8]], _ deletions: inout [(position: Int, key: [UInt8])],
        _ insertions: inout [(position: Int, key: [UInt8])],
        _ modifications: inout [(position: Int, before: Int, key: [UInt8])]
    ) {
        if moved.count == 1, let key = moved.first,
            let deleted = deletions.firstIndex(where: { $0.key == key }),
            let inserted = insertions.firstIndex(where: { $0.key == key })
        {
            let before = deletions[deleted].position
            let after = insertions[inserted].position
            let leftBefore = deletions.count { $0.position < before }
            let arrivedBefore = insertions.count { $0.position < after }
            if before - leftBefore == after - arrivedBefore {
                deletions.remove(at: deleted)
                insertions.remove(at: inserted)
                modifications.append((after, before, key))
            }
        }
        deletions.sort { $0.position < $1.position }
        insertions.sort { $0.position < $1.position }
        modifications.sort { $0.position < $1.position }
    }

    static func sameStoredValues(_ a: ResultBox, _ b: ResultBox, _ query: ModelQuery<M>) -> Bool {
        let x = query.storedValues(of: TypedBox<M>.model(of: a))
        let y = query.storedValues(of: TypedBox<M>.model(of: b))
        return x.count == y.count && zip(x, y).allSatisfy { $0.isStored(identicallyTo: $1) }
    }
}
