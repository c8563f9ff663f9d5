/// The errors about the changes sync exchanges: changesets that do not
/// decode. Each family's message is written here, once.
extension StrataError {
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
