extension StrataError {
    /// A changeset that `path` will not apply, `reason` completing "The
    /// changeset was refused: …". Nothing of it was applied.
    static func changesetRefused(path: String, _ reason: String, remedy: String?) -> StrataError {
        StrataError(
            .changesetRefused, summary: "A changeset was refused by \(path): \(reason). Nothing of it was applied.",
            remedy: remedy, nothingWritten: true, path: path)
    }
}
