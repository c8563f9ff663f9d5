import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A result code returned by an LMDB function.
///
/// LMDB reports failures as `Int32` codes: its own (negative, `MDB_*`) and
/// the system's `errno` values (`ENOSPC`, `EACCES`, ...). Strata keeps the
/// code it saw in ``StrataError/lmdbCode``.
public struct LMDBResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The raw `Int32` code.
    public let rawValue: Int32

    /// Wraps a raw LMDB or `errno` code.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Key/data pair already exists. The corresponding C constant is `MDB_KEYEXIST`.
    public static let keyExists = LMDBResultCode(rawValue: MDB_KEYEXIST)
    /// Key/data pair not found. The corresponding C constant is `MDB_NOTFOUND`.
    public static let notFound = LMDBResultCode(rawValue: MDB_NOTFOUND)
    /// A requested page was not found. The corresponding C constant is `MDB_PAGE_NOTFOUND`.
    public static let pageNotFound = LMDBResultCode(rawValue: MDB_PAGE_NOTFOUND)
    /// A page has an invalid type. The corresponding C constant is `MDB_CORRUPTED`.
    public static let corrupted = LMDBResultCode(rawValue: MDB_CORRUPTED)
    /// The environment had a fatal error. The corresponding C constant is `MDB_PANIC`.
    public static let panic = LMDBResultCode(rawValue: MDB_PANIC)
    /// The file was written by an incompatible LMDB version. The corresponding C constant is `MDB_VERSION_MISMATCH`.
    public static let versionMismatch = LMDBResultCode(rawValue: MDB_VERSION_MISMATCH)
    /// The file is not an LMDB file. The corresponding C constant is `MDB_INVALID`.
    public static let invalid = LMDBResultCode(rawValue: MDB_INVALID)
    /// The memory map is full. The corresponding C constant is `MDB_MAP_FULL`.
    public static let mapFull = LMDBResultCode(rawValue: MDB_MAP_FULL)
    /// Too many named databases. The corresponding C constant is `MDB_DBS_FULL`.
    public static let dbsFull = LMDBResultCode(rawValue: MDB_DBS_FULL)
    /// Too many concurrent readers. The corresponding C constant is `MDB_READERS_FULL`.
    public static let readersFull = LMDBResultCode(rawValue: MDB_READERS_FULL)
    /// A transaction touched too many pages. The corresponding C constant is `MDB_TXN_FULL`.
    public static let transactionFull = LMDBResultCode(rawValue: MDB_TXN_FULL)
    /// Another process grew the map beyond this one's size. The corresponding C constant is `MDB_MAP_RESIZED`.
    public static let mapResized = LMDBResultCode(rawValue: MDB_MAP_RESIZED)
    /// The operation is incompatible with the database. The corresponding C constant is `MDB_INCOMPATIBLE`.
    public static let incompatible = LMDBResultCode(rawValue: MDB_INCOMPATIBLE)
    /// A key or value has an unsupported size. The corresponding C constant is `MDB_BAD_VALSIZE`.
    public static let badValueSize = LMDBResultCode(rawValue: MDB_BAD_VALSIZE)
    /// No space left on the device. The corresponding C constant is `ENOSPC`.
    public static let noSpace = LMDBResultCode(rawValue: ENOSPC)

    /// LMDB's own description of the code, followed by its number.
    public var description: String {
        String(cString: mdb_strerror(rawValue)) + " (\(rawValue))"
    }
}
