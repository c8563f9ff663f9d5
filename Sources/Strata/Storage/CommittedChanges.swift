/// What one write transaction changed, as the commit feed publishes it:
/// the keys written (inserted, replaced or updated) or deleted in each
/// kind of object, and the kinds emptied at once.
///
/// Storage knows no object types: the layer above names each kind by its
/// number (the catalog's type id) and reads the keys back by it. Observers
/// read the objects it names again to learn what happened to each.
struct CommittedChanges: Sendable {
    /// The keys written or deleted, by kind of object.
    private(set) var keys: [UInt32: Set<[UInt8]>] = [:]
    /// Kinds whose every object was deleted at once (`deleteAll`, a
    /// migration emptying a table).
    private(set) var emptied: Set<UInt32> = []

    /// Whether the transaction wrote and deleted nothing.
    var isEmpty: Bool { keys.isEmpty && emptied.isEmpty }

    /// Notes that the object of kind `kind` with `key` was written or deleted.
    mutating func wrote(_ kind: UInt32, key: UnsafeRawBufferPointer) {
        keys[kind, default: []].insert(Array(key))
    }

    /// Notes that every object of kind `kind` was deleted.
    mutating func emptied(_ kind: UInt32) {
        emptied.insert(kind)
    }

    /// Adds another transaction's changes.
    mutating func formUnion(_ other: CommittedChanges) {
        keys.merge(other.keys) { $0.union($1) }
        emptied.formUnion(other.emptied)
    }
}
