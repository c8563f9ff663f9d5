/// The errors about a file as a whole: where it is, whether it is a Strata
/// database, whether it is intact, and the state of the process's hold on
/// it. Each family's message is written here, once.
extension StrataError {
    /// What to do about damage that only a backup repairs.
    static let restoreFromBackup = "Restore the file from a backup."

    /// What a refused open of something that is not a Strata file says.
    static let leftAsItIs = "Check the path; Strata leaves the file as it is."

    /// A path that names no file.
    ///
    /// - Parameters:
    ///   - path: The path.
    ///   - readOnly: Whether a read-only open asked for it, which never
    ///     creates the file.
    public static func fileMissing(path: String, readOnly: Bool = false) -> StrataError {
        StrataError(
            .fileSystem, summary: "\(path) does not exist.",
            remedy: readOnly ? "A database opened read-only must already exist; check the path." : "Check the path.",
            path: path)
    }

    /// A file that cannot be read at all: `reason` is what the system said;
    /// `what` names a file that is not a database ("schema snapshot").
    static func unreadableFile(path: String, reason: String, what: String? = nil) -> StrataError {
        let summary = what.map { "Cannot read the \($0) \(path): \(reason)" } ?? "\(path) cannot be read: \(reason)."
        return StrataError(.fileSystem, summary: summary, path: path)
    }

    /// A file that a tool would create, but that exists already; `role` is
    /// what the tool writes ("a fixture").
    ///
    /// - Parameters:
    ///   - path: The path.
    ///   - role: What the new file would have been, with its article.
    public static func fileExists(path: String, role: String) -> StrataError {
        StrataError(
            .fileSystem, summary: "\(path) already exists; \(role) writes a new file.",
            remedy: "Choose a path where no file is.", path: path)
    }

    /// A file operation that failed or cannot be done now: `problem` says
    /// what, `remedy` what to do.
    static func fileSystem(
        path: String, _ problem: String, remedy: String? = nil, lmdbCode: LMDBResultCode? = nil
    ) -> StrataError {
        StrataError(.fileSystem, summary: problem, remedy: remedy, path: path, lmdbCode: lmdbCode)
    }

    /// A file that exists but is not a Strata database; `reason` says why
    /// ("it is empty").
    static func notAStrataFile(
        path: String, because reason: String, remedy: String = leftAsItIs, lmdbCode: LMDBResultCode? = nil
    ) -> StrataError {
        StrataError(
            .notAStrataFile, summary: "\(path) is not a Strata database: \(reason).", remedy: remedy, path: path,
            lmdbCode: lmdbCode)
    }

    /// A damaged file: `damage` is the sentence that says what is damaged
    /// and where; the type, property and key it names are set as fields.
    static func corruptFile(
        path: String, _ damage: String, typeName: String? = nil, property: String? = nil, key: String? = nil,
        remedy: String? = restoreFromBackup, lmdbCode: LMDBResultCode? = nil
    ) -> StrataError {
        StrataError(
            .corruptFile, summary: damage, remedy: remedy, path: path, typeName: typeName, property: property,
            key: key, lmdbCode: lmdbCode)
    }

    /// A file whose structure is damaged: `problem` says where and how (a
    /// page, a meta page).
    static func damagedFile(path: String, problem: String) -> StrataError {
        corruptFile(path: path, "\(path) is damaged: \(problem).", remedy: "Restore it from a backup.")
    }

    /// A record of `typeName` that does not decode: `problem` and the byte
    /// it was found at.
    static func corruptRecord(typeName: String, key: String, problem: String, offset: Int, path: String)
        -> StrataError
    {
        corruptFile(
            path: path,
            "The record of '\(typeName)' with key \(key) in \(path) is damaged: \(problem) at byte \(offset).",
            typeName: typeName, key: key)
    }

    /// The automatic-id counter of `typeName`, damaged as `problem` says.
    static func corruptCounter(typeName: String, path: String, problem: String) -> StrataError {
        corruptFile(
            path: path, "The automatic-id counter of '\(typeName)' in \(path) is \(problem).", typeName: typeName)
    }

    /// One of the LMDB databases a type keeps in the file.
    enum TablePart {
        case records, index, backlinks

        /// "The index on 'Person.name'", "The records of 'Person'".
        func subject(_ typeName: String, _ property: String?) -> String {
            let owner = property.map { "'\(typeName).\($0)'" } ?? "'\(typeName)'"
            return self == .index ? "The index on \(owner)" : "The \(self) of \(owner)"
        }

        /// The verb's ending for the part: one index, many records.
        var isPlural: Bool { self != .index }
    }

    /// One of the LMDB databases of a type is missing from the file.
    static func missingDatabase(_ part: TablePart, typeName: String, property: String? = nil, path: String)
        -> StrataError
    {
        corruptFile(
            path: path,
            "\(part.subject(typeName, property)) \(part.isPlural ? "are" : "is") missing from \(path); the file is damaged.",
            typeName: typeName, property: property)
    }

    /// An index entry or a backlink of `typeName.property` that names no
    /// object.
    static func danglingEntry(_ part: TablePart, typeName: String, property: String, path: String) -> StrataError {
        corruptFile(
            path: path,
            "\(part.subject(typeName, property)) in \(path) \(part.isPlural ? "name" : "names") an object that does not exist; the file is damaged.",
            typeName: typeName, property: property,
            remedy: "Restore it from a backup, or run compact, which rebuilds every index and backlink.")
    }

    /// An LMDB call (`call`) that failed with `lmdbCode`, of the `code`
    /// family that result code belongs to.
    static func lmdbFailure(_ code: Code, call: String, path: String, lmdbCode: LMDBResultCode, remedy: String?)
        -> StrataError
    {
        StrataError(
            code, summary: "\(call) failed on \(path): \(lmdbCode).", remedy: remedy, path: path, lmdbCode: lmdbCode)
    }

    /// The compacted copy of the file at `path` could not be written to
    /// `copy` or flushed to disk: `call` failed with `lmdbCode`. The copy
    /// is removed and the file left as it was.
    static func copyNotWritten(path: String, copy: String, call: String, lmdbCode: LMDBResultCode) -> StrataError {
        StrataError(
            .fileSystem,
            summary: "Could not write the compacted copy of \(path) to \(copy): \(call) failed: \(lmdbCode).",
            remedy:
                "\(path) is as it was and the copy is removed; check the disk's free space and health, then compact again.",
            path: path, lmdbCode: lmdbCode)
    }

    /// The compacted copy at `copy` could not be renamed over the file at
    /// `path`: `call` failed with `lmdbCode`. The copy is removed and the
    /// file left as it was.
    static func fileNotReplaced(path: String, copy: String, call: String, lmdbCode: LMDBResultCode) -> StrataError {
        StrataError(
            .fileSystem,
            summary: "Could not replace \(path) with its compacted copy \(copy): \(call) failed: \(lmdbCode).",
            remedy: "\(path) is as it was and the copy is removed.", path: path, lmdbCode: lmdbCode)
    }

    /// The compacted copy took the place of the file at `path`, but the
    /// folder that records it could not be flushed to disk: `call` failed
    /// with `lmdbCode`.
    static func folderNotSynced(path: String, folder: String, call: String, lmdbCode: LMDBResultCode) -> StrataError {
        StrataError(
            .fileSystem,
            summary:
                "\(path) now holds its compacted copy, with the same objects, but its folder \(folder) could not be flushed to disk: \(call) failed: \(lmdbCode).",
            remedy:
                "Check the disk. Until the system writes the folder, a power loss can bring back the file as it was before compact, without the writes made since.",
            path: path, lmdbCode: lmdbCode)
    }

    /// The file was written by a newer Strata, with a format this one
    /// cannot read.
    static func unsupportedFormat(path: String, format: UInt32, supported: UInt32) -> StrataError {
        StrataError(
            .unsupportedFormatVersion,
            summary:
                "\(path) uses Strata file format \(format), newer than the format \(supported) this version of Strata reads.",
            remedy: "Update Strata to open it.", path: path)
    }

    /// A use of a file after its `Database` was closed; `to` is what the
    /// caller should do again ("use it", "observe it").
    static func closed(path: String, to action: String = "use it") -> StrataError {
        StrataError(.closed, summary: "\(path) was closed.", remedy: "Open it again to \(action).", path: path)
    }

    /// A write on a database opened read-only.
    static func readOnly(path: String) -> StrataError {
        StrataError(
            .readOnly, summary: "\(path) was opened read-only.", remedy: "Open it without readOnly to write.",
            path: path)
    }

    /// A file that another `Database` of this process holds in a way that
    /// forbids what was asked: `conflict` says how, `remedy` what to do.
    static func fileInUse(_ code: Code, path: String, _ conflict: String, remedy: String) -> StrataError {
        StrataError(code, summary: "\(path) \(conflict).", remedy: remedy, path: path)
    }

    /// A failure of LMDB or of the memory map that is not about the
    /// file's content: `problem` says what, `remedy` what to do.
    static func storage(path: String, _ problem: String, remedy: String? = nil, lmdbCode: LMDBResultCode? = nil)
        -> StrataError
    {
        StrataError(.storage, summary: problem, remedy: remedy, path: path, lmdbCode: lmdbCode)
    }

    /// The schema of the file changed under this `Database` (another one
    /// or another process migrated it).
    static func schemaChanged(path: String, openedAt: UInt64, now: UInt64?) -> StrataError {
        StrataError(
            .schemaChanged,
            summary:
                "The schema of \(path) was changed by another Database or process after this one was opened (at schema version \(openedAt))\(now.map { ", and it is now at schema version \($0)" } ?? "").",
            remedy: "Open the file again.", path: path, fromVersion: openedAt, toVersion: now)
    }

    /// The type an observation watches (`observed`, the model's name) was
    /// replaced by a migration while it was observed.
    static func observedTypeReplaced(_ observed: String, path: String) -> StrataError {
        StrataError(
            .schemaChanged, summary: "The type observed as \(observed) in \(path) was replaced while it was observed.",
            remedy: "Observe it again.", path: path, typeName: observed)
    }
}
