/// The values of an observed query at one commit, in the query's order:
/// model values, or for a query of dynamic objects each object's stored
/// values by property name (``QueryElement/Observed``).
///
/// A `QueryResults` is an immutable value: it stays as it was when later
/// commits change the data, and it shares its storage with the results
/// before and after it, so that an element costs memory for what changed,
/// not for every value. Reading a value by position costs O(log n), a
/// handful of steps even for millions of values; iterating costs O(1) per
/// value.
public struct QueryResults<Item: QueryElement>: RandomAccessCollection, Sendable
where Item.Observed: Sendable {
    let tree: RankedTree<ResultKey, ResultBox>

    public var startIndex: Int { 0 }
    public var endIndex: Int { tree.count }

    /// The value at `position`. O(log n).
    public subscript(position: Int) -> Item.Observed {
        TypedBox<Item.Observed>.model(of: tree[position].value)
    }

    /// Iterates in order, without a search per value.
    public func makeIterator() -> Iterator { Iterator(base: tree.makeIterator()) }

    /// Iterates the values in order.
    public struct Iterator: IteratorProtocol {
        var base: RankedTree<ResultKey, ResultBox>.Iterator

        public mutating func next() -> Item.Observed? {
            base.next().map { TypedBox<Item.Observed>.model(of: $0.value) }
        }
    }
}

/// One element of a ``QueryObservation``: the query's values after a
/// commit, and how they differ from the previous element's.
///
/// The first element (``isInitial``) holds the values when the observation
/// began, with every change list empty. Each later one follows one or more
/// commits that changed the values (several when they came faster than the
/// consumer took them; the lists then describe all of them together).
///
/// The position lists follow the batch-update conventions of table and
/// collection views, as Realm's do: apply ``deletions`` (positions in the
/// previous results), then ``insertions`` (positions in these results),
/// and reload ``modifications``. Each list is sorted ascending. A value
/// whose sort property changed so that it moved among the others is a
/// deletion and an insertion, not a modification; one that kept its place
/// is a modification (when several values of one element changed their
/// sort property, each of them is a deletion and an insertion).
///
/// ```swift
/// for try await change in db.observe(Person.self, { $0.sorted(by: \.name) }) {
///     if change.isInitial { tableView.reloadData(); continue }
///     tableView.performBatchUpdates {
///         tableView.deleteRows(at: change.deletions.map { IndexPath(row: $0, section: 0) }, with: .automatic)
///         tableView.insertRows(at: change.insertions.map { IndexPath(row: $0, section: 0) }, with: .automatic)
///         tableView.reloadRows(at: change.modificationsInPrevious.map { IndexPath(row: $0, section: 0) }, with: .automatic)
///     }
/// }
/// ```
public struct QueryChange<Element: QueryElement>: Sendable
where Element.Observed: Sendable, Element.ObservedKey: Sendable {
    /// The values after the commit.
    public let results: QueryResults<Element>
    /// Whether this is the first element: the values when observing began.
    public let isInitial: Bool
    /// Positions, in the previous element's results, of the values that are
    /// no longer in the results (deleted, changed so that they no longer
    /// match, or moved).
    public let deletions: [Int]
    /// Positions, in ``results``, of the values that were not in the
    /// previous results (inserted, changed so that they match, or moved).
    public let insertions: [Int]
    /// Positions, in ``results``, of the values whose stored properties
    /// changed while they kept their place.
    public let modifications: [Int]
    /// The positions of the same values as ``modifications``, in the
    /// previous element's results, in the same order: what UIKit's
    /// `reloadRows` wants inside `performBatchUpdates`.
    public let modificationsInPrevious: [Int]
    /// The primary keys of the values at ``deletions``, in the same order.
    public let deletedKeys: [Element.ObservedKey]
    /// The primary keys of the values at ``insertions``, in the same order.
    public let insertedKeys: [Element.ObservedKey]
    /// The primary keys of the values at ``modifications``, in the same order.
    public let modifiedKeys: [Element.ObservedKey]
    /// The LMDB transaction id of the snapshot the results were read from.
    let transactionID: Int
}

/// One element of an ``ObjectObservation``: the object after a commit,
/// and what happened to it.
public struct ObjectChange<M: Model & Sendable>: Sendable {
    /// What happened to the object.
    public enum Kind: Sendable, Equatable {
        /// The first element: the object when observing began (nil when
        /// there was none).
        case initial
        /// The object did not exist in the previous element and does now.
        case inserted
        /// Stored properties of the object changed: see
        /// ``ObjectChange/changedProperties``.
        case modified
        /// The object was deleted; ``ObjectChange/object`` is nil.
        case deleted
    }

    /// What happened.
    public let kind: Kind
    /// The object now, or nil when there is none.
    public let object: M?
    /// For ``Kind/modified``, the stored names of the properties whose
    /// values changed, in the model's order; otherwise empty.
    public let changedProperties: [String]
    /// The LMDB transaction id of the snapshot the object was read from.
    let transactionID: Int
}
