import ArgumentParser
import Foundation
import Strata

extension StrataCommand {
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check that a database is sound.",
            discussion: """
                First checks the structure of the file's LMDB pages, reading them without LMDB, \
                so that a damaged page is reported instead of crashing the command. Then checks \
                that the catalog is consistent, that every record and key decodes (every list \
                element by the list's element type, every embedded object by its embedded \
                type's properties), that every object has its index entries, that every index \
                entry names an object with that value, that every link names an object that \
                exists and that the backlinks tables hold exactly the links the records hold. \
                Prints "OK: ..." and exits with 0 when the file is sound; \
                otherwise lists each problem on standard output and exits non-zero.
                """
        )

        @OptionGroup var options: FileOptions

        func run() throws {
            try options.requireExisting()
            // LMDB trusts every page it reads: a damaged one could crash the
            // process, so the structure is checked before LMDB opens the file.
            try Database.verifyStructure(path: options.file)
            let db = try options.open()
            defer { db.close() }
            let problems = try db.verify()
            guard problems.isEmpty else {
                for problem in problems { print("- " + problem) }
                throw CommandFailure(
                    "\(options.file) has \(problems.count == 1 ? "a problem" : "\(problems.count) problems") (listed above)."
                )
            }
            let counts = try db.read { tx in try tx.typeNames.map { try tx.objects($0).count } }
            let types = counts.count == 1 ? "1 type" : "\(counts.count) types"
            let objects = counts.reduce(0, +) == 1 ? "1 object" : "\(counts.reduce(0, +)) objects"
            let hasLinks = db.schema.objectSchemas.contains { type in
                type.properties.contains { $0.type == .link || $0.elementType == .link }
            }
            print(
                "OK: \(options.file): \(types), \(objects); the catalog is consistent, every record decodes and every index matches its table"
                    + (hasLinks ? "; every link resolves and every backlink matches a link." : ".")
            )
        }
    }
}
