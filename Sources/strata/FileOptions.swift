import ArgumentParser
import Foundation
import Strata

/// The database file every inspecting subcommand takes.
struct FileOptions: ParsableArguments {
    @Argument(
        help: "The Strata database file (its lock file, FILE-lock, sits beside it).",
        completion: .file(extensions: ["strata"]))
    var file: String

    /// Throws the error opening would give, before a command that would
    /// otherwise treat a missing file as a new one.
    func requireExisting() throws {
        guard FileManager.default.fileExists(atPath: file) else {
            throw StrataError.fileMissing(path: file)
        }
    }

    /// Opens the file read-only with the schema, version and mode it records.
    func open() throws -> Database {
        try Database(inspecting: file)
    }
}
