import CLMDB
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Throws a ``StrataError`` that names the call that failed and the file it
/// failed on, unless `rc` is `MDB_SUCCESS`. Every `mdb_*` call whose failure
/// is an error goes through here.
///
/// LMDB refuses every further write in a transaction that ran out of map
/// space, so a call made in `transaction` marks it before throwing: the
/// caller must grow the map and start over even if the error is caught and
/// ignored on the way up.
///
/// `path` and `context` are autoclosures so that a successful call, the hot
/// path, does not pay for building them.
@inline(__always)
func check(
    _ rc: Int32, _ call: StaticString, path: @autoclosure () -> String,
    in transaction: LMDBTransaction? = nil, context: @autoclosure () -> LMDBCallContext? = nil
) throws {
    guard rc != MDB_SUCCESS else { return }
    if rc == MDB_MAP_FULL { transaction?.noteRanOutOfMapSpace() }
    throw lmdbError(rc, call, path: path(), context: context())
}

/// Throws a ``StrataError`` that names the system call that failed and the
/// file it failed on, unless `result` is other than -1; the code is the
/// call's `errno`, read before anything else can change it. Every system
/// call of `Storage` whose failure is an error goes through here, and on
/// to ``lmdbError(_:_:path:context:)``, since LMDB's codes are `errno`
/// values too.
@inline(__always)
@discardableResult
func checkSystemCall<Result: BinaryInteger>(
    _ result: Result, _ call: StaticString, path: @autoclosure () -> String,
    context: @autoclosure () -> LMDBCallContext? = nil
) throws -> Result {
    guard result == -1 else { return result }
    let code = errno
    throw lmdbError(code, call, path: path(), context: context())
}

/// What Strata was doing when an LMDB call failed, where that changes what
/// the failure means to the user.
enum LMDBCallContext {
    /// Opening the data file: a missing folder or a foreign file is the
    /// user's to fix, not a storage failure.
    case openingFile
    /// Growing the memory map; LMDB unmaps the file before it fails.
    case growingMap(from: Int, to: Int)
    /// Opening a named database, whose flags must match what Strata declares.
    case openingNamedDatabase(String)
    /// Reserving the disk space of a new lock file, before LMDB maps it.
    case reservingLockFile
    /// Writing the compacted copy of the file to `copy` and flushing it to
    /// disk; the file itself is left as it was.
    case writingCopy(copy: String)
    /// Renaming the flushed copy at `copy` over the file.
    case replacingFile(copy: String)
    /// Flushing the folder that holds the file, after the copy took its place.
    case syncingFolder(String)
}

/// The one place that turns an LMDB return code into a ``StrataError``:
/// its ``StrataError/Code`` and the advice that says what to do.
func lmdbError(_ rc: Int32, _ call: StaticString, path: String, context: LMDBCallContext? = nil) -> StrataError {
    let code = LMDBResultCode(rawValue: rc)
    switch (context, code) {
    case (.openingFile, LMDBResultCode(rawValue: ENOENT)), (.openingFile, LMDBResultCode(rawValue: EACCES)),
        (.openingFile, LMDBResultCode(rawValue: EROFS)), (.openingFile, LMDBResultCode(rawValue: ENOTDIR)),
        (.openingFile, LMDBResultCode(rawValue: EISDIR)):
        return .fileSystem(
            path: path, "Cannot open \(path): \(String(cString: strerror(rc))).",
            remedy: "Check that the folder exists and is writable.", lmdbCode: code)
    case (.openingFile, .invalid), (.openingFile, .versionMismatch):
        return .notAStrataFile(
            path: path, because: "it is not an LMDB file of a supported version", lmdbCode: code)
    case (.growingMap(let from, let to), _):
        return .storage(
            path: path, "Could not grow the memory map of \(path) from \(from) to \(to) bytes: \(code).",
            remedy:
                "Nothing was written and the file is intact; free memory or address space, then release every Database for this file and open it again.",
            lmdbCode: code)
    case (.reservingLockFile, .noSpace):
        var error = StrataError.storage(
            path: path, "Cannot create \(path): the disk is full (there is no room for its lock file).",
            remedy: "Free some space and try again.", lmdbCode: code)
        error.nothingWritten = true
        return error
    case (.writingCopy(let copy), _):
        return .copyNotWritten(path: path, copy: copy, call: "\(call)", lmdbCode: code)
    case (.replacingFile(let copy), _):
        return .fileNotReplaced(path: path, copy: copy, call: "\(call)", lmdbCode: code)
    case (.syncingFolder(let folder), _):
        return .folderNotSynced(path: path, folder: folder, call: "\(call)", lmdbCode: code)
    case (.openingNamedDatabase(let name), .incompatible):
        return .corruptFile(
            path: path,
            "The named database '\(name)' in \(path) has unexpected flags; the file was not written by this version of Strata.",
            remedy: nil, lmdbCode: code)
    default:
        break
    }
    let (kind, advice): (StrataError.Code, String)
    switch code {
    case .noSpace:
        (kind, advice) = (.storage, diskFullAdvice)
    case .corrupted, .pageNotFound, .panic:
        (kind, advice) = (.corruptFile, "The file is damaged; restore it from a backup.")
    case .invalid:
        (kind, advice) = (.notAStrataFile, "The file is not a Strata database.")
    case .versionMismatch, .incompatible:
        (kind, advice) = (.notAStrataFile, "The file was not written by a compatible LMDB.")
    case .readersFull:
        (kind, advice) = (.storage, "Too many threads or processes are reading at once; finish some read transactions.")
    case .transactionFull:
        (kind, advice) = (
            .storage, "The transaction changed too many pages at once; split it into smaller transactions."
        )
    case .dbsFull:
        (kind, advice) = (
            .storage, "The file has more object types and indexes than Strata can open (4096 named databases)."
        )
    case .badValueSize:
        (kind, advice) = (.storage, "A key or value has a size LMDB does not accept; keys are at most 511 bytes.")
    case LMDBResultCode(rawValue: EIO):
        // LMDB reports a write that only partly fit on the disk as EIO.
        (kind, advice) = (
            .storage,
            diskIsFull(path)
                ? diskFullAdvice
                : "The disk reported an error; check it, then try again. Nothing was written."
        )
    case LMDBResultCode(rawValue: ENOMEM):
        (kind, advice) = (.storage, "The system is out of memory or address space; free some and try again.")
    case LMDBResultCode(rawValue: EISDIR), LMDBResultCode(rawValue: EACCES), LMDBResultCode(rawValue: EROFS):
        (kind, advice) = (.fileSystem, "Check the path and its permissions.")
    default:
        (kind, advice) = (.storage, "")
    }
    return .lmdbFailure(kind, call: "\(call)", path: path, lmdbCode: code, remedy: advice.isEmpty ? nil : advice)
}

/// What a write that found the disk full says to do.
private let diskFullAdvice = "The disk is full; free some space and try again. Nothing was written."

/// Whether the file system holding `path` has (almost) no free space left.
private func diskIsFull(_ path: String) -> Bool {
    var info = statvfs()
    let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
    guard statvfs(folder, &info) == 0 else { return false }
    return UInt64(info.f_bavail) * UInt64(info.f_frsize) < 64 * 1024
}
