/// An observed query's values in the query's order, and what a commit's
/// edits do to their positions.
///
/// This is the part of ``QueryEvaluator`` that does not depend on the
/// model type. It is not generic, so it is compiled for its concrete types
/// inside Strata; as part of the evaluator, which is generic over the
/// app's model (another module), the same code ran unspecialized, through
/// value witnesses and metadata lookups for every tuple and optional.
///
/// An update changes the tree in place when no element still holds it,
/// and otherwise copies one root-to-leaf path: the positions before the
/// change are read before the tree changes, not from a copy kept for the
/// purpose (a copy that forced a path copy on every commit).
struct ObservedResults {
    /// The values, by result key.
    private(set) var tree = RankedTree<ResultKey, ResultBox>()
    /// Each value's sort value by key, when the order is by a property.
    private var sortValues: [[UInt8]: Value] = [:]
    /// The query plan's result order.
    let order: QueryOrder

    init(order: QueryOrder) {
        self.order = order
    }

    /// The values `entries`, which are in result-key order.
    init(order: QueryOrder, sorted entries: [(key: ResultKey, value: ResultBox)]) {
        self.order = order
        tree = RankedTree(sorted: entries)
        if order.position != nil {
            sortValues.reserveCapacity(entries.count)
            for entry in entries { sortValues[entry.key.key] = entry.key.value! }
        }
    }

    /// The result key of the object stored under `key`, with `value` its
    /// sort value (nil in primary-key order).
    func resultKey(value: Value?, key: [UInt8]) -> ResultKey {
        ResultKey(value: value, key: key, order: order)
    }

    /// The entry of the object stored under `key`, when it is among the
    /// values. O(log n).
    func entry(forKey key: [UInt8]) -> (key: ResultKey, value: ResultBox)? {
        let resultKey: ResultKey
        if order.position != nil {
            guard let value = sortValues[key] else { return nil }
            resultKey = self.resultKey(value: value, key: key)
        } else {
            resultKey = self.resultKey(value: nil, key: key)
        }
        guard let box = tree.value(forKey: resultKey) else { return nil }
        return (resultKey, box)
    }

    /// Applies `edit`. O(k log n) for k edited values.
    ///
    /// - Returns: The positions of the change, settled (see
    ///   ``settle(_:_:_:_:)``).
    mutating func apply(_ edit: ResultsEdit) -> ResultsDiff {
        var diff = ResultsDiff()
        if edit.removed.isEmpty && edit.added.isEmpty {
            // Values changed in place (the common one-object update): no
            // position moves, so one descent per value finds its position
            // and replaces it.
            diff.modifications.reserveCapacity(edit.modified.count)
            for entry in edit.modified {
                let position = tree.insert(entry.value, forKey: entry.new).position
                if let value = entry.new.value { sortValues[entry.new.key] = value }
                diff.modifications.append((position, position, entry.new.key))
            }
            Self.settle(edit.moved, &diff.deletions, &diff.insertions, &diff.modifications)
            return diff
        }
        diff.deletions.reserveCapacity(edit.removed.count)
        for old in edit.removed { diff.deletions.append((tree.rank(of: old).position, old.key)) }
        var modifiedBefore: [Int] = []
        modifiedBefore.reserveCapacity(edit.modified.count)
        for entry in edit.modified { modifiedBefore.append(tree.rank(of: entry.old).position) }
        let sorted = order.position != nil
        for old in edit.removed {
            tree.remove(forKey: old)
            if sorted { sortValues[old.key] = nil }
        }
        for entry in edit.added {
            tree.insert(entry.value, forKey: entry.key)
            if let value = entry.key.value { sortValues[entry.key.key] = value }
        }
        for entry in edit.modified {
            tree.insert(entry.value, forKey: entry.new)
            if let value = entry.new.value { sortValues[entry.new.key] = value }
        }
        diff.insertions.reserveCapacity(edit.added.count)
        for entry in edit.added { diff.insertions.append((tree.rank(of: entry.key).position, entry.key.key)) }
        diff.modifications.reserveCapacity(edit.modified.count)
        for (entry, before) in zip(edit.modified, modifiedBefore) {
            diff.modifications.append((tree.rank(of: entry.new).position, before, entry.new.key))
        }
        Self.settle(edit.moved, &diff.deletions, &diff.insertions, &diff.modifications)
        return diff
    }

    /// Replaces the values by `fresh`, the query's values run again, in
    /// result-key order. O(n).
    ///
    /// - Parameters:
    ///   - touched: The keys whose values are compared for modifications
    ///     (all when nil).
    ///   - sameValues: Whether two boxes hold the same stored values.
    /// - Returns: How the values differ, or nil when they do not (the
    ///   values are then left as they were).
    mutating func replace(
        with fresh: [(key: ResultKey, value: ResultBox)], touched: Set<[UInt8]>?,
        sameValues: (ResultBox, ResultBox) -> Bool
    ) -> ResultsDiff? {
        var before: [[UInt8]: (position: Int, key: ResultKey, value: ResultBox)] = [:]
        before.reserveCapacity(tree.count)
        var offset = 0
        for entry in tree {
            before[entry.key.key] = (offset, entry.key, entry.value)
            offset += 1
        }
        var diff = ResultsDiff()
        var moved: [[UInt8]] = []
        for (offset, entry) in fresh.enumerated() {
            guard let old = before.removeValue(forKey: entry.key.key) else {
                diff.insertions.append((offset, entry.key.key))
                continue
            }
            if old.key != entry.key {
                diff.deletions.append((old.position, old.key.key))
                diff.insertions.append((offset, entry.key.key))
                moved.append(entry.key.key)
            } else if touched?.contains(entry.key.key) ?? true, !sameValues(old.value, entry.value) {
                diff.modifications.append((offset, old.position, entry.key.key))
            }
        }
        for old in before.values { diff.deletions.append((old.position, old.key.key)) }
        Self.settle(moved, &diff.deletions, &diff.insertions, &diff.modifications)
        guard !diff.isEmpty else { return nil }
        self = ObservedResults(order: order, sorted: fresh)
        return diff
    }

    /// Sorts `found`, a query's walk, by result key, unless it is sorted
    /// already: the walk's order is the result keys' order, except where an
    /// index and a full comparison disagree (a cut key).
    static func inResultKeyOrder(_ found: inout [(key: ResultKey, value: ResultBox)]) {
        var index = 1
        while index < found.count {
            guard found[index - 1].key < found[index].key else {
                found.sort { $0.key < $1.key }
                return
            }
            index += 1
        }
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
        if deletions.count > 1 { deletions.sort { $0.position < $1.position } }
        if insertions.count > 1 { insertions.sort { $0.position < $1.position } }
        if modifications.count > 1 { modifications.sort { $0.position < $1.position } }
    }
}

/// What a commit did to an observed query's values, by result key: the
/// input of ``ObservedResults/apply(_:)``.
struct ResultsEdit {
    /// Values that left the results (or moved: also in ``added``).
    var removed: [ResultKey] = []
    /// Values that entered the results (or moved: also in ``removed``).
    var added: [(key: ResultKey, value: ResultBox)] = []
    /// Values that kept their result key and whose stored values changed.
    var modified: [(old: ResultKey, new: ResultKey, value: ResultBox)] = []
    /// The keys of the values whose result key changed.
    var moved: [[UInt8]] = []

    var isEmpty: Bool { removed.isEmpty && added.isEmpty && modified.isEmpty }

    /// Notes what happened to the object stored under `key`: its entry
    /// before (nil when it was not among the values) and after (nil when
    /// it no longer is). `sameValues` tells whether two boxes hold the same
    /// stored values; it is asked only when the result key stayed.
    mutating func note(
        key: [UInt8], old: (key: ResultKey, value: ResultBox)?, new: (key: ResultKey, value: ResultBox)?,
        sameValues: (ResultBox, ResultBox) -> Bool
    ) {
        switch (old, new) {
        case (nil, nil):
            return
        case (let old?, nil):
            removed.append(old.key)
        case (nil, let new?):
            added.append(new)
        case (let old?, let new?):
            if old.key == new.key {
                if !sameValues(old.value, new.value) { modified.append((old.key, new.key, new.value)) }
            } else {
                removed.append(old.key)
                added.append(new)
                moved.append(key)
            }
        }
    }
}

/// The positions of a change to an observed query's values, each list
/// sorted ascending: deletions in the previous values, insertions and
/// modifications in the new ones (with each modification's previous
/// position), and the stored key of each.
struct ResultsDiff {
    var deletions: [(position: Int, key: [UInt8])] = []
    var insertions: [(position: Int, key: [UInt8])] = []
    var modifications: [(position: Int, before: Int, key: [UInt8])] = []

    var isEmpty: Bool { deletions.isEmpty && insertions.isEmpty && modifications.isEmpty }

    // Plain loops: these run for every element, and `map` over tuple
    // arrays with a key path cost more than the lists they build.
    var deletionPositions: [Int] { Self.column(deletions.count) { deletions[$0].position } }
    var insertionPositions: [Int] { Self.column(insertions.count) { insertions[$0].position } }
    var modificationPositions: [Int] { Self.column(modifications.count) { modifications[$0].position } }
    var modificationPositionsBefore: [Int] { Self.column(modifications.count) { modifications[$0].before } }
    var deletedKeys: [[UInt8]] { Self.column(deletions.count) { deletions[$0].key } }
    var insertedKeys: [[UInt8]] { Self.column(insertions.count) { insertions[$0].key } }
    var modifiedKeys: [[UInt8]] { Self.column(modifications.count) { modifications[$0].key } }

    @inline(__always)
    private static func column<T>(_ count: Int, _ element: (Int) -> T) -> [T] {
        var column: [T] = []
        if count == 0 { return column }
        column.reserveCapacity(count)
        for index in 0 ..< count { column.append(element(index)) }
        return column
    }
}
