/// What one transaction's index writes reuse (``TableEngine/indexScratch``):
/// the keys of one write, and a cursor per index database.
final class IndexScratch {
    /// The index keys one write removes, read from the stored record before
    /// it is replaced (``TableEngine/indexMoves(_:before:after:)``), and
    /// per indexed field where each ends.
    let old = ByteWriter(capacity: 128)
    let ends = ByteWriter(capacity: 64)
    /// The index key one write adds.
    let new = ByteWriter(capacity: 64)
    /// The cursors kept on the index databases written, in raw memory: as
    /// a stored `var`, each look-up paid an exclusivity check.
    private let cursors: UnsafeMutablePointer<[(index: DatabaseHandle, cursor: LMDBCursor)]>

    init() {
        cursors = .allocate(capacity: 1)
        cursors.initialize(to: [])
    }

    deinit {
        cursors.deinitialize(count: 1)
        cursors.deallocate()
    }

    /// A cursor on the index database `index` that stays open until the
    /// transaction ends, where the last write through it left it: index
    /// entries written one after another mostly fall on the page it is at,
    /// which LMDB then finds without a search from the tree's root.
    @inline(__always)
    func cursor(_ index: DatabaseHandle, in lmdb: LMDBTransaction) throws -> LMDBCursor {
        for kept in cursors.pointee where kept.index == index { return kept.cursor }
        let cursor = try lmdb.keptCursor(index)
        cursors.pointee.append((index, cursor))
        return cursor
    }
}
