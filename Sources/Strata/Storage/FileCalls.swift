import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The system calls with which `Storage` writes a file beside LMDB's own
/// (the compacted copy that replaces a data file) and makes it durable.
/// Each goes through ``checkSystemCall(_:_:path:context:)``: `file` is
/// the database file the work is for, which the error names, and
/// `context` says what the call was part of.
enum FileCalls {
    /// Creates a new file at `path` for writing, with the permissions of the
    /// file at `modelPath` (`0644` if it cannot be read), and returns its
    /// descriptor. Fails if a file is already there.
    static func create(_ path: String, permissionsOf modelPath: String, for file: String, context: LMDBCallContext)
        throws -> Int32
    {
        var model = stat()
        let permissions = stat(modelPath, &model) == 0 ? model.st_mode & 0o777 : 0o644
        return try checkSystemCall(
            open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, permissions), "open", path: file, context: context)
    }

    /// Flushes the file open as `descriptor`, its data and the metadata that
    /// reads it (its size), to the disk: `fsync`.
    static func flush(_ descriptor: Int32, for file: String, context: LMDBCallContext) throws {
        try checkSystemCall(fsync(descriptor), "fsync", path: file, context: context)
    }

    /// Closes `descriptor`, which some file systems use to report a failed
    /// write of the file's data.
    static func closeFile(_ descriptor: Int32, for file: String, context: LMDBCallContext) throws {
        try checkSystemCall(close(descriptor), "close", path: file, context: context)
    }

    /// Closes `descriptor`, if it is still open, and removes the file at
    /// `path`: what a failed write leaves is not kept.
    static func discard(_ descriptor: Int32?, _ path: String) {
        if let descriptor { _ = close(descriptor) }
        unlink(path)
    }

    /// Renames `path` to `target`, replacing the file there in one step: a
    /// reader of `target` finds the old file or the new one, never neither.
    /// On failure `path` is removed.
    static func move(_ path: String, over target: String, for file: String) throws {
        do {
            try checkSystemCall(rename(path, target), "rename", path: file, context: .replacingFile(copy: path))
        } catch {
            unlink(path)
            throw error
        }
    }

    /// Flushes the folder that holds `path` to the disk, so that a rename or
    /// a new name in it survives a power loss: a name is an entry of its
    /// folder, which the file's own `fsync` does not write.
    static func flushFolder(of path: String, for file: String) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let context = LMDBCallContext.syncingFolder(folder)
        let descriptor = try checkSystemCall(
            open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC), "open", path: file, context: context)
        defer { _ = close(descriptor) }
        try checkSystemCall(fsync(descriptor), "fsync", path: file, context: context)
    }
}
