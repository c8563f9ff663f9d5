/// The errors about the changes sync exchanges: changesets that do not
/// decode, keys a change log cannot name. Each family's message is
/// written here, once.
extension StrataError {
    /// The primary key of an object a sync-enabled file writes is longer
    /// than its change log can name: a log key is 12 bytes and the
    /// object's record key, and LMDB allows 511 in all.
    static func syncKeyTooLarge(size: Int, limit: Int, path: String) -> StrataError {
        StrataError(
            .keyTooLarge,
            summary:
                "A primary key of \(size) bytes is too long for a sync-enabled file, whose change log names an object by its key after 12 bytes of its own: at most \(limit) (in \(path)).",
            remedy: "Use a shorter key.", nothingWritten: true, path: path)
    }

    /// What a refused changeset leaves behind, and what to do about it.
    static let changesetRemedy = "Nothing of it is applied; ask the sender for it again."

    /// A changeset whose bytes are damaged or are not what Strata writes:
    /// `problem` says which part is wrong ("the checksum does not match"),
    /// `offset` where the damage was found.
    ///
    /// - Parameters:
    ///   - problem: The part that is wrong and how, as a clause.
    ///   - offset: The byte offset, from the changeset's first byte.
    ///   - remedy: What to do, when it is not to ask for it again.
    static func invalidChangeset(_ problem: String, offset: Int, remedy: String = changesetRemedy) -> StrataError {
        StrataError(
            .invalidChangeset, summary: "The changeset is refused at byte \(offset): \(problem).", remedy: remedy,
            path: nil, offset: offset)
    }
}
