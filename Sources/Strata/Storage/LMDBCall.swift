import CLMDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns an LMDB return code into a ``StrataError`` that names the call
/// that failed and the file it failed on. Every `mdb_*` call whose failure
/// is an error goes through here.
@inline(__always)
func check(_ rc: Int32, _ call: StaticString, path: String) throws {
    guard rc == MDB_SUCCESS else { throw lmdbError(rc, call, path: path) }
}

func lmdbError(_ rc: Int32, _ call: StaticString, path: String) -> StrataError {
    let code = LMDBResultCode(rawValue: rc)
    let (kind, advice): (StrataError.Code, String)
    switch code {
    case .noSpace:
        (kind, advice) = (.storage, "The disk is full; free some space and try again. Nothing was written.")
    case .corrupted, .pageNotFound, .panic:
        (kind, advice) = (.corruptFile, "The file is damaged; restore it from a backup.")
    case .invalid:
        (kind, advice) = (.notAStrataFile, "The file is not a Strata database.")
    case .versionMismatch, .incompatible:
        (kind, advice) = (.notAStrataFile, "The file was not written by a compatible LMDB.")
    case .readersFull:
        (kind, advice) = (.storage, "Too many threads or processes are reading at once; finish some read transactions.")
    case .transactionFull:
        (kind, advice) = (.storage, "The transaction changed too many pages at once; split it into smaller transactions.")
    case .dbsFull:
        (kind, advice) = (.storage, "The file has more object types and indexes than Strata can open (4096 named databases).")
    case .badValueSize:
        (kind, advice) = (.storage, "A key or value has a size LMDB does not accept; keys are at most 511 bytes.")
    case LMDBResultCode(rawValue: EIO):
        // LMDB reports a write that only partly fit on the disk as EIO.
        (kind, advice) = (.storage, Environment.diskIsFull(path) ? "The disk is full; free some space and try again. Nothing was written." : "The disk reported an error; check it, then try again. Nothing was written.")
    case LMDBResultCode(rawValue: ENOMEM):
        (kind, advice) = (.storage, "The system is out of memory or address space; free some and try again.")
    case LMDBResultCode(rawValue: EISDIR), LMDBResultCode(rawValue: EACCES), LMDBResultCode(rawValue: EROFS):
        (kind, advice) = (.fileSystem, "Check the path and its permissions.")
    default:
        (kind, advice) = (.storage, "")
    }
    var message = "\(call) failed on \(path): \(code)."
    if !advice.isEmpty { message += " " + advice }
    return StrataError(kind, message, path: path, lmdbCode: code)
}
