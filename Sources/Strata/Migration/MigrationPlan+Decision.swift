/// What opening does as a whole, and the errors of a refusal.
extension MigrationPlan {
    /// The error of a migration that would reset stored values with no
    /// code that says so: each property, its old and new type, and the two
    /// ways to proceed.
    static func unconvertedValues(_ steps: [Step], others: [Step], path: String, from: UInt64, to: UInt64)
        -> StrataError
    {
        let lines = steps.map { step in
            let name = step.change.propertyName ?? "?"
            let type = step.change.typeName
            return
                "\(step.change.description) Every stored value would be reset to the default, \(step.defaultText). Set the new values from the old ones in a migration closure (Configuration.migration) or in a typed step that maps \(step.mapper), or discard them with config.discardValues(of: \"\(name)\", onType: \"\(type)\")."
        }
        return .migrationRequired(
            path: path, "Migrating \(path) would discard stored values that no code converts",
            items: lines + others.map { "\($0) This change cannot be migrated either." }, nothingWritten: true,
            from: from, to: to)
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
        let list = { (steps: [Step]) in steps.map(\.change.description) }
        if let problem = configurationProblem(settings) {
            return (.refuse, problem)
        }
        if catalog.mode != settings.mode {
            return (
                .refuse,
                StrataError.modeMismatch(
                    path: path, fileMode: catalog.mode.rawValue, configured: settings.mode.rawValue)
            )
        }
        if settings.mode == .local && version < fileVersion {
            return (
                .refuse,
                StrataError.schemaVersionTooLow(path: path, version: version, fileVersion: fileVersion)
            )
        }
        if settings.readOnly {
            // In synced mode the version gates nothing, as in a writable open.
            if version != fileVersion && settings.mode == .local {
                return (
                    .refuse,
                    StrataError.migrationRequired(
                        path: path,
                        "\(path) is at schema version \(fileVersion), but the read-only open asks for version \(version).",
                        remedy:
                            "A read-only open needs the file's exact version, since it cannot migrate; open it once without readOnly.",
                        from: fileVersion, to: version)
                )
            }
            let needsWrite = steps.filter { !readableWithoutWriting($0, mode: settings.mode) }
            if !needsWrite.isEmpty {
                return (
                    .refuse,
                    StrataError.migrationRequired(
                        path: path,
                        "Opening \(path) read-only needs a schema that the file can serve without changes, but",
                        items: list(needsWrite), remedy: "Open it once without readOnly to apply them.",
                        from: fileVersion, to: version)
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
                    StrataError.migrationForbidden(
                        path: path,
                        "These changes to the schema of \(path) are not allowed in synced mode, where older app versions still read the data",
                        items: forbidden.map {
                            "\($0.change.description)\($0.change.kind == .typeRemoved ? " \($0.effect)" : "")"
                        }, remedy: "Keep existing properties and types as they are, and add new ones instead.",
                        from: fileVersion, to: version)
                )
            }
        case .local:
            if version > fileVersion {
                if settings.deleteIfMigrationNeeded { return (.deleteAndRecreate, nil) }
                let unconverted = forbidden.filter(\.lacksConversion)
                if !unconverted.isEmpty {
                    return (
                        .refuse,
                        unconvertedValues(
                            unconverted, others: forbidden.filter { !$0.lacksConversion }, path: path,
                            from: fileVersion, to: version)
                    )
                }
                if !forbidden.isEmpty {
                    return (
                        .refuse,
                        StrataError.migrationForbidden(
                            path: path, "These changes to the schema of \(path) cannot be migrated",
                            items: forbidden.map { "\($0)" }, nothingWritten: true, from: fileVersion, to: version)
                    )
                }
                return (.migrate, nil)
            }
            if !forbidden.isEmpty {
                if settings.deleteIfMigrationNeeded { return (.deleteAndRecreate, nil) }
                return (
                    .refuse,
                    StrataError.migrationRequired(
                        path: path,
                        "The schema of \(path) differs from the configured one at the same schema version \(version)",
                        items: list(steps),
                        remedy:
                            "Raise the schema version to \(version + 1) to migrate the file.\(conversionAdvice(steps))",
                        from: fileVersion, to: version)
                )
            }
        }
        return (.open, nil)
    }
}
