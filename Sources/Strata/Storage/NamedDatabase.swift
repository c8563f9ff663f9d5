/// A named database of the file, with the flags it is created with.
///
/// Declared by whoever owns the file layout rather than guessed at the call
/// site: LMDB does not check that a database is opened with the flags it was
/// created with, and a duplicate-key index opened without them would replace
/// entries instead of adding them.
struct NamedDatabase: Hashable, Sendable {
    let name: String
    /// Whether the database keeps several sorted values per key (`MDB_DUPSORT`).
    let duplicateKeys: Bool
}
