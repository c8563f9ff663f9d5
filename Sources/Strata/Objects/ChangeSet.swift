/// What one write transaction changed, by type: the keys of the objects it
/// wrote (inserted, replaced or updated) or deleted, and the types it
/// emptied. A write transaction records one only while someone observes
/// the file (``CommitFeed/isWatched``); observers read the objects it
/// names again to learn what happened to each.
struct ChangeSet: Sendable {
    /// The keys of the objects written or deleted, by type.
    private(set) var keys: [TypeID: Set<[UInt8]>] = [:]
    /// Types whose every object was deleted at once (`deleteAll`, a
    /// migration emptying a table).
    private(set) var emptied: Set<TypeID> = []

    /// Whether the transaction wrote and deleted nothing.
    var isEmpty: Bool { keys.isEmpty && emptied.isEmpty }

    /// Whether the transaction wrote or deleted anything of `type`.
    func touches(_ type: TypeID) -> Bool {
        emptied.contains(type) || keys[type] != nil
    }

    /// Adds another transaction's changes.
    mutating func formUnion(_ other: ChangeSet) {
        keys.merge(other.keys) { $0.union($1) }
        emptied.formUnion(other.emptied)
    }
}

/// Records a ``ChangeSet`` while a write transaction runs.
final class ChangeRecorder {
    private(set) var changes = ChangeSet()

    /// An object of `type` with `key` was written or deleted.
    func wrote(_ type: TypeID, key: UnsafeRawBufferPointer) {
        changes.wrote(type, key: key)
    }

    /// Every object of `type` was deleted.
    func emptied(_ type: TypeID) {
        changes.emptied(type)
    }
}

extension ChangeSet {
    fileprivate mutating func wrote(_ type: TypeID, key: UnsafeRawBufferPointer) {
        keys[type, default: []].insert(Array(key))
    }

    fileprivate mutating func emptied(_ type: TypeID) {
        emptied.insert(type)
    }
}
