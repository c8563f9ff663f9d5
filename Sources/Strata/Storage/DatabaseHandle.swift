import CLMDB

/// An open named database (LMDB's `MDB_dbi`) of an environment.
///
/// A struct rather than the bare `UInt32` LMDB uses, so that a handle cannot
/// be mixed up with the other `UInt32`s of Strata (type ids, property ids).
/// Only `Storage` reads ``rawValue``.
struct DatabaseHandle: Hashable, Sendable {
    let rawValue: MDB_dbi
}
