import ArgumentParser
import Foundation
import Strata

extension StrataCommand {
    struct Sync: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Exchange changes between two sync-enabled files of one dataset.",
            discussion: """
                Opens each file with the schema its own catalog records, so that every type and \
                field either holds is carried over, the ones its app does not declare included. \
                Then each applies what the other has that it lacks, round after round until a \
                round moves nothing, and prints what moved each way and what each file learned. \
                Both files must have sync enabled (by their app, with configuration.sync) and \
                belong to one dataset; nothing is written otherwise.
                """
        )

        @Argument(help: "The first sync-enabled database file.", completion: .file(extensions: ["strata"]))
        var fileA: String

        @Argument(help: "The second, of the same dataset.", completion: .file(extensions: ["strata"]))
        var fileB: String

        func validate() throws {
            let (a, b) = (URL(fileURLWithPath: fileA), URL(fileURLWithPath: fileB))
            if a.standardizedFileURL.resolvingSymlinksInPath() == b.standardizedFileURL.resolvingSymlinksInPath() {
                throw ValidationError("\(fileA) and \(fileB) are the same file; give two files of one dataset.")
            }
        }

        func run() throws {
            let a = try Database(syncingExisting: fileA)
            defer { a.close() }
            let b = try Database(syncingExisting: fileB)
            defer { b.close() }
            let report = try a.sync.exchange(with: b)
            print("Synced \(fileA) and \(fileB) (dataset \(try a.sync.dataset))")
            for line in Sync.lines(report, a: fileA, b: fileB) { print(line) }
        }

        /// What moved each way and what each side learned, as indented
        /// lines; a round count when it took more than the usual two.
        static func lines(_ report: SyncExchangeReport, a: String, b: String, indent: String = "  ") -> [String] {
            var lines = [
                indent + "\(a) → \(b): " + moved(report.sent),
                indent + "\(b) → \(a): " + moved(report.received),
            ]
            for (file, applied) in [(b, report.sent), (a, report.received)] {
                // A learned type's fields are learned with it.
                let fields = applied.learnedFields.filter { field in
                    !applied.learnedTypes.contains { field.hasPrefix($0 + ".") }
                }
                let learned =
                    applied.learnedTypes.sorted().map { "type \($0)" } + fields.sorted().map { "field \($0)" }
                if !learned.isEmpty {
                    lines.append(indent + "\(file) learned \(learned.joined(separator: ", ")) (kept, sent on)")
                }
                let skipped = applied.skippedFields.sorted()
                if !skipped.isEmpty {
                    lines.append(indent + "\(file) did not store \(skipped.joined(separator: ", "))")
                }
            }
            // Two rounds are the rule: the second finds nothing new.
            if report.rounds > 2 { lines.append(indent + "\(report.rounds) rounds, the last moving nothing") }
            return lines
        }

        /// "2 objects inserted or changed (5 fields), 1 deleted", or "nothing new".
        static func moved(_ applied: SyncApplyReport) -> String {
            guard applied.changedObjects > 0 || applied.deletedObjects > 0 else { return "nothing new" }
            var parts: [String] = []
            if applied.changedObjects > 0 {
                parts.append(
                    "\(plural(applied.changedObjects, "object")) inserted or changed (\(plural(applied.changedFields, "field")))"
                )
            }
            if applied.deletedObjects > 0 { parts.append("\(applied.deletedObjects) deleted") }
            return parts.joined(separator: ", ")
        }
    }
}

/// "1 object", "2 objects": a count and its noun.
func plural(_ n: Int, _ noun: String) -> String {
    "\(n) \(noun)\(n == 1 ? "" : "s")"
}
