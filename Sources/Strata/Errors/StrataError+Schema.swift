/// The errors of schemas, configurations and migrations: a schema that
/// breaks a rule, a file whose schema or version does not match, a change
/// that cannot be made, a migration that failed. Each family's message is
/// written here, once.
extension StrataError {
    /// A schema that breaks rules, each problem an item. `path` is the
    /// file it was configured for; `snapshotVersion` the version of the
    /// snapshot it was read from.
    static func invalidSchema(_ problems: [String], path: String? = nil, snapshotVersion: UInt64? = nil)
        -> StrataError
    {
        let subject =
            if let path { "The schema for \(path)" } else if let snapshotVersion {
                "The schema in this snapshot (schema version \(snapshotVersion))"
            } else { "The schema" }
        return StrataError(
            .invalidSchema, summary: "\(subject) is invalid", items: problems, path: path,
            toVersion: snapshotVersion)
    }

    /// Bytes that are not a schema snapshot; `reason` says why.
    static func notASnapshot(_ reason: String) -> StrataError {
        StrataError(
            .invalidSchema, summary: "This is not a Strata schema snapshot: \(reason).",
            remedy: "Write snapshots with SchemaSnapshot.jsonData() or `strata schema FILE --json`.", path: nil)
    }

    /// A model that does not match the object type it is stored as.
    static func modelMismatch(model: String, typeName: String, mismatches: [String], path: String) -> StrataError {
        StrataError(
            .invalidSchema, summary: "The model \(model) does not match the object type '\(typeName)' of \(path)",
            items: mismatches,
            remedy:
                "Open the file with a configuration that lists this model, or read it with the model of the file's schema version.",
            path: path, typeName: typeName)
    }

    /// A release of typed models (`release`) whose models do not describe
    /// the schema the file stores at `version`; `changes` lead from the
    /// models to the file.
    static func releaseMismatch(release: String, version: UInt64, changes: [String], path: String) -> StrataError {
        StrataError(
            .invalidSchema,
            summary:
                "\(release) declares schema version \(version), but \(path), stored at that version, has another schema. From what \(release)'s models declare to what the file stores",
            items: changes,
            remedy:
                "Make the models of \(release) describe the schema that version shipped (`strata schema \(path)` prints the file's).",
            nothingWritten: true, path: path, fromVersion: version, toVersion: version)
    }

    /// A configuration whose schema or version needs a migration that this
    /// open cannot run; `items` are the changes, `remedy` the way out.
    static func migrationRequired(
        path: String, _ problem: String, items: [String] = [], remedy: String? = nil, nothingWritten: Bool = false,
        from: UInt64?, to: UInt64?
    ) -> StrataError {
        StrataError(
            .migrationRequired, summary: problem, items: items, remedy: remedy, nothingWritten: nothingWritten,
            path: path, fromVersion: from, toVersion: to)
    }

    /// A change the file's mode or the migration rules forbid; `items`
    /// are the changes.
    static func migrationForbidden(
        path: String, _ problem: String, items: [String] = [], remedy: String? = nil, nothingWritten: Bool = false,
        from: UInt64? = nil, to: UInt64? = nil
    ) -> StrataError {
        StrataError(
            .migrationForbidden, summary: problem, items: items, remedy: remedy, nothingWritten: nothingWritten,
            path: path, fromVersion: from, toVersion: to)
    }

    /// A file created in one mode, opened in the other.
    static func modeMismatch(path: String, fileMode: String, configured: String) -> StrataError {
        StrataError(
            .modeMismatch,
            summary: "\(path) is a \(fileMode)-mode file, but the configuration opens it in \(configured) mode.",
            remedy:
                "Set Configuration.mode to .\(fileMode): a file's mode is chosen when it is created and never changes.",
            path: path)
    }

    /// A configured schema version below the file's.
    static func schemaVersionTooLow(path: String, version: UInt64, fileVersion: UInt64) -> StrataError {
        StrataError(
            .schemaVersionTooLow,
            summary: "Schema version \(version) is lower than the file's version \(fileVersion) (\(path)).",
            remedy: "Open it with version \(fileVersion) or later.", path: path, fromVersion: fileVersion,
            toVersion: version)
    }

    /// Configuration options that cannot be combined.
    static func invalidConfiguration(path: String, _ problem: String, remedy: String) -> StrataError {
        StrataError(.invalidConfiguration, summary: problem, remedy: remedy, path: path)
    }

    /// "from schema version 1 to 3": the step a migration error is about.
    static func migrationStep(from: UInt64, to: UInt64) -> String {
        "from schema version \(from) to \(to)"
    }

    /// An error raised by a running migration of `path` from `from` to
    /// `to`: its message names the step, and ends saying that the file is
    /// still at `from`. `summary` is written with ``migrationStep(from:to:)``.
    static func inMigration(
        _ code: Code, path: String, from: UInt64, to: UInt64, summary: String, items: [String] = [],
        remedy: String? = nil, operation: String? = nil, typeName: String? = nil, key: String? = nil,
        lmdbCode: LMDBResultCode? = nil, cause: (any Error)? = nil
    ) -> StrataError {
        StrataError(
            code, summary: summary, items: items, remedy: remedy, nothingWritten: true, path: path,
            typeName: typeName, key: key, fromVersion: from, toVersion: to, phase: .migration, operation: operation,
            lmdbCode: lmdbCode, cause: cause)
    }

    /// A call of the ``Migration`` API (`call`, as the closure wrote it)
    /// that broke a rule: `problem` says which and what to do.
    static func migrationRefused(
        _ code: Code, call: String, problem: String, path: String, from: UInt64, to: UInt64,
        cause: (any Error)? = nil
    ) -> StrataError {
        inMigration(
            code, path: path, from: from, to: to,
            summary: "\(call) in the migration of \(path) \(migrationStep(from: from, to: to)): \(problem)",
            operation: call, cause: cause)
    }

    /// An error thrown while migrating (`place`: on an object, in a call),
    /// restated with the step and kept whole as the cause. A `StrataError`
    /// keeps its code and is repeated after the summary; any other error is
    /// the closure's own, code ``Code/migrationFailed``.
    static func migrationFailed(
        _ error: any Error, place: String, advice: String?, path: String, from: UInt64, to: UInt64
    ) -> StrataError {
        let step = migrationStep(from: from, to: to)
        guard let strata = error as? StrataError else {
            return inMigration(
                .migrationFailed, path: path, from: from, to: to,
                summary: "The migration closure threw an error \(place) in the migration of \(path) \(step): \(error).",
                operation: place, cause: error)
        }
        var restated = inMigration(
            strata.code, path: path, from: from, to: to, summary: "The migration of \(path) \(step) failed \(place):",
            remedy: advice, operation: place, typeName: strata.typeName, key: strata.key, lmdbCode: strata.lmdbCode,
            cause: strata)
        restated.restatesCause = true
        return restated
    }
}
