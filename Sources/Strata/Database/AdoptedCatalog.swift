import Foundation

// @unchecked: `generation` and `current` are only read and written while holding `lock`.
/// The catalog a ``Database`` works with and the generation it is at:
/// the ones it opened, or later ones that only learned kept types and
/// fields from a peer (``Catalog/learnsOnly(since:)``).
///
/// Every change of the catalog raises the file's generation, sync's
/// learning included. Learning changes nothing an open `Database` reads,
/// so instead of refusing its next transaction with `.schemaChanged`, the
/// `Database` adopts the learned catalog, whichever `Database` or process
/// applied the changes.
final class AdoptedCatalog: @unchecked Sendable {
    /// The catalog the database was opened with: its tables and schema
    /// are this catalog's.
    let opened: Catalog
    private let lock = NSLock()
    private var generation: UInt64
    private var current: Catalog

    init(_ catalog: Catalog, generation: UInt64) {
        opened = catalog
        current = catalog
        self.generation = generation
    }

    /// The catalog as of the last transaction that checked it: the opened
    /// one, with what the file learned since.
    var catalog: Catalog { lock.withLock { current } }

    /// Whether the file's catalog at `fileGeneration` is the one adopted
    /// (the fast path of every transaction).
    func isCurrent(_ fileGeneration: UInt64) -> Bool { lock.withLock { generation == fileGeneration } }

    /// Checks the file's catalog `stored`, at `fileGeneration`, which is
    /// not the adopted one: adopts it when it only learned since the
    /// opened one, and returns false for any other change (a migration, a
    /// type added or removed by another app version, sync enabled). A
    /// transaction that began before an adopted change sees an older
    /// generation: it is checked the same way, and adopted only when newer.
    func adopt(_ stored: Catalog, at fileGeneration: UInt64) -> Bool {
        guard stored.learnsOnly(since: opened) else { return false }
        lock.withLock {
            if fileGeneration > generation {
                generation = fileGeneration
                current = stored
            }
        }
        return true
    }
}
