/// What opening does as a whole, and the errors of a refusal.
extension MigrationPlan {
    /// The error of a migration that would reset stored values with no
    /// code that says so: each property, its old and new type, and the two
    /// ways to proceed.
    static func unconvertedValues(_ steps: [Step], others: [Step], path: String) -> StrataError {
        let lines = steps.map { step in
            let name = step.change.propertyName ?? "?"
            let type = step.change.typeName
            return
                "- \(step.change.description) Every stored value would be reset to the default, \(step.defaultText). Set the new values from the old ones in a migration closure (Configuration.migration) or in a typed step that maps \(step.mapper), or discard them with config.discardValues(of: \"\(name)\", onType: \"\(type)\")."
        }
        return StrataError(
            .migrationRequired,
            "Migrating \(path) would discard stored values that no code converts:\n\(lines.joined(separator: "\n"))\n\(others.isEmpty ? "" : "These changes cannot be migrated either:\n\(others.map { "- \($0)" }.joined(separator: "\n"))\n")Nothing was written.",
            path: path)
    }

    /// What a migration of `steps` at a raised version will also need:
    /// code for each property whose value type changes.
    static func conversionAdvice(_ steps: [Step]) -> String {
        let unconverted = steps.filter(\.lacksConversion)
        guard !unconverted.isEmpty else { return "" }
        let names = unconverted.map { "'\($0.change.typeName).\($0.change.propertyName ?? "?")'" }
        return
            " The migration must also say what becomes of the stored values of \(names.joined(separator: ", ")), whose type changes: set them in a migration closure or in a typed step, or discard them with Configuration.discardValues(of:onType:)."
    }

    /// Which changes a read-only open can live with: none of them needs the
    /// file to change for reads to be right.
    /// In synced mode a property the app does not declare is one a newer
    /// app version added: a writable open keeps it, a read-only one ignores it.
    static func readableWithoutWriting(_ step: Step, mode: DatabaseMode) -> Bool {
        [.typeRemoved, .indexAdded, .indexRemoved, .deleteRuleChanged].contains(step.change.kind)
            || (mode == .synced && step.change.kind == .propertyRemoved)
    }

    static func decide(catalog: Catalog, steps: [Step], settings: MigrationSettings) -> (
        action: Action, error: StrataError?
    ) {
        let path = settings.path
        let version = settings.appSchemaVersion
        let fileVersion = catalog.fileSchemaVersion
        let list = { (steps: [Step]) in steps.map { "- \($0.change.description)" }.joined(separator: "\n") }
        if let problem = configurationProblem(settings) {
            return (.refuse, problem)
        }
        if catalog.mode != settings.mode {
            return (
                .refuse,
                StrataError(
                    .modeMismatch,
                    "\(path) is a \(catalog.mode.rawValue)-mode file, but the configuration opens it in \(settings.mode.rawValue) mode. Set Configuration.mode to .\(catalog.mode.rawValue): a file's mode is chosen when it is created and never changes.",
                    path: path)
            )
        }
        if settings.mode == .local && version < fileVersion {
            return (
                .refuse,
                StrataError(
                    .schemaVersionTooLow,
                    "Schema version \(version) is lower than the file's version \(fileVersion) (\(path)). Open it with version \(fileVersion) or later.",
                    path: path)
            )
        }
        if settings.readOnly {
            // In synced mode the version gates nothing, as in a writable open.
            if version != fileVersion && settings.mode == .local {
                return (
                    .refuse,
                    StrataError(
                        .migrationRequired,
                        "\(path) is at schema version \(fileVersion), but the read-only open asks for version \(version). A read-only open needs the file's exact version, since it cannot migrate; open it once without readOnly.",
                        path: path)
                )
            }
            let needsWrite = steps.filter { !readableWithoutWriting($0, mode: settings.mode) }
            if !needsWrite.isEmpty {
                return (
                    .refuse,
                    StrataError(
                        .migrationRequired,
                        "Opening \(path) read-only needs a schema that the file can serve without changes, but:\n\(list(needsWrite))\nOpen it once without readOnly to apply them.",
                        path: path)
                )
            }
            return (.open, nil)
        }
        let forbidden = steps.filter { $0.handling == .forbidden }
        switch settings.mode {
        case .synced:
            if !forbidden.isEmpty {
                return (
                    .refuse,
                    StrataError(
                        .migrationForbidden,
                        "These changes to the schema of \(path) are not allowed in synced mode, where older app versions still read the data:\n\(forbidden.map { "- \($0.change.description)\($0.change.kind == .typeRemoved ? " \($0.effect)" : "")" }.joined(separator: "\n"))\nKeep existing properties and types as they are, and add new ones instead.",
                        path: path)
                )
            }
        case .local:
            if version > fileVersion {
                if settings.deleteIfMigrationNeeded { return (.deleteAndRecreate, nil) }
                let unconverted = forbidden.filter(\.lacksConversion)
                if !unconverted.isEmpty {
                    return (
                        .refuse,
                        unconvertedValues(unconverted, others: forbidden.filter { !$0.lacksConversion }, path: path)
                    )
                }
                if !forbidden.isEmpty {
                    return (
                        .refuse,
                        StrataError(
                            .migrationForbidden,
                            "These changes to the schema of \(path) cannot be migrated:\n\(forbidden.map { "- \($0)" }.joined(separator: "\n"))\nNothing was written.",
                            path: path)
                    )
                }
                return (.migrate, nil)
            }
            if !forbidden.isEmpty {
                if settings.deleteIfMigrationNeeded { return (.deleteAndRecreate, nil) }
                return (
                    .refuse,
                    StrataError(
                        .migrationRequired,
                        "The schema of \(path) differs from the configured one at the same schema version \(version):\n\(list(steps))\nRaise the schema version to \(version + 1) to migrate the file.\(conversionAdvice(steps))",
                        path: path)
                )
            }
        }
        return (.open, nil)
    }
}
