import ArgumentParser
import Foundation
import Strata

extension StrataCommand {
    struct Compact: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rewrite a database compactly, dropping the bytes of removed properties.",
            discussion: """
                Rewrites every record that still holds values of removed properties (each \
                object keeps its effective schema version), then replaces the file with a copy \
                without free pages (LMDB's copy with compaction). The copy is flushed to disk \
                before it replaces the file, and the folder after, so that a power loss leaves \
                the file whole, as it was or compacted. No other process may have the file open \
                meanwhile. If anything fails, the file is left as it was.
                """
        )

        @OptionGroup var options: FileOptions

        func run() throws {
            try options.requireExisting()
            let sizes = try Database.compact(path: options.file)
            let change =
                sizes.before == 0
                ? "" : String(format: " (%+.1f%%)", Double(sizes.after - sizes.before) * 100 / Double(sizes.before))
            print("Compacted \(options.file): \(sizes.before) bytes before, \(sizes.after) bytes after\(change).")
        }
    }
}
