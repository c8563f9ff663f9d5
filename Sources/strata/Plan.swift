import ArgumentParser
import Foundation
import Strata

extension StrataCommand {
    struct Plan: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Tell what opening a database with a schema snapshot would do, without writing.",
            discussion: """
                Prints what opening FILE with the snapshot's schema at --version would do: a \
                summary line (open as it is, apply automatic changes, migrate, or refused), then \
                each schema change with what happens to the data and how it is handled \
                (automatic, migrationClosure, forbidden). The plan assumes the app passes no \
                migration closure unless --with-closure says it does. A change of a property's \
                value type needs code that converts its values, or --discard-values for it, as \
                Configuration.discardValues(of:onType:) declares in the app. Exits with 0 when \
                opening would succeed, and non-zero when it would be refused.

                Write a snapshot with `strata schema FILE --json` or SchemaSnapshot.jsonData().
                """
        )

        @OptionGroup var options: FileOptions

        @Option(
            name: .customLong("schema"),
            help: ArgumentHelp(
                "A JSON schema snapshot: the schema the app would open the file with.", valueName: "snapshot"),
            completion: .file(extensions: ["json"]))
        var snapshotPath: String

        @Option(help: "The schema version the app would open the file with (default: the snapshot's).")
        var version: UInt64?

        @Flag(
            help:
                "Open in synced mode instead of local mode (a file's mode never changes, so the other mode is refused)."
        )
        var synced = false

        @Flag(help: "Plan as if the app passes a migration closure (Configuration.migration).")
        var withClosure = false

        @Option(
            name: .customLong("discard-values"),
            help: ArgumentHelp(
                "A property whose value type changes and whose stored values the app discards (Configuration.discardValues); repeat for several.",
                valueName: "Type.property"))
        var discardedValues: [String] = []

        func validate() throws {
            for entry in discardedValues where entry.split(separator: ".").count != 2 {
                throw ValidationError("--discard-values takes Type.property, e.g. Task.priority; got '\(entry)'.")
            }
        }

        func run() throws {
            try options.requireExisting()
            let snapshot = try Plan.readSnapshot(snapshotPath)
            var configuration = Database.Configuration(
                path: options.file, schemaVersion: version ?? snapshot.schemaVersion, schema: snapshot.schema)
            configuration.mode = synced ? .synced : .local
            if withClosure { configuration.migration = { _, _ in } }
            for entry in discardedValues {
                let parts = entry.split(separator: ".").map(String.init)
                configuration.discardValues(of: parts[1], onType: parts[0])
            }
            let plan = try Database.migrationPlan(for: configuration)
            print(plan)
            if synced {
                for warning in Plan.syncWarnings(snapshot.schema) { print("Warning: \(warning)") }
            }
            if let error = plan.error {
                // The whole refusal is printed above, with the plan.
                throw CommandFailure(
                    error.items.isEmpty ? StrataCommand.oneLine(error) : "\(error.summary) (listed above).")
            }
        }

        /// What a synced schema's delete rules mean once devices sync
        /// (docs/Sync.md, "Links and delete rules"): one sentence per link
        /// whose rule is `cascade` or `deny`.
        static func syncWarnings(_ schema: Schema) -> [String] {
            schema.objectSchemas.flatMap { type in
                type.properties.compactMap { property -> String? in
                    guard property.type == .link || property.elementType == .link else { return nil }
                    let link = "\(type.name).\(property.name)"
                    switch property.deleteRule {
                    case .cascade:
                        return
                            "\(link) cascades: a device's delete is sent as the objects it deleted then; an object another device linked meanwhile survives, its link null."
                    case .deny:
                        return
                            "\(link) denies deletes on this device only: no device can refuse another device's offline delete, which sync applies."
                    default:
                        return nil
                    }
                }
            }
        }

        /// Reads a snapshot; every error names the file.
        static func readSnapshot(_ path: String) throws -> SchemaSnapshot {
            do {
                return try SchemaSnapshot(contentsOf: URL(fileURLWithPath: path))
            } catch var error as StrataError where error.code == .invalidSchema {
                error.summary = "\(path): \(error.summary)"
                error.path = path
                throw error
            }
        }
    }
}
