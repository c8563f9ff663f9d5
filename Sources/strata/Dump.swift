import ArgumentParser
import Foundation
import Strata

extension StrataCommand {
    struct Dump: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the objects of one type, as a table or as JSON lines.",
            discussion: """
                Objects come in primary-key order. The table has one column per property and \
                a last column, _schemaVersion, with each object's effective schema version (the \
                version under which it was last written). Cells are written as in JSON (strings \
                quoted), except data, which shows its size; columns are as wide as the first \
                1000 rows need.

                With --json, each object is one line of JSON: its properties by name, then \
                "_schemaVersion". Values are plain JSON: strings, numbers, true/false and null; \
                data is a base64 string, a date an ISO-8601 string in UTC with milliseconds \
                (2024-05-01T12:00:00.000Z), a UUID its string, a double that is NaN or \
                infinite the string "NaN", "Infinity" or "-Infinity", and a decimal the string \
                of its exact digits ("12.5"). A link names its target \
                type and key, {"link":{"type":"Person","key":1}}; a list is an array; an \
                embedded object is a nested object with its type's properties.
                """
        )

        @OptionGroup var options: FileOptions

        @Option(help: "The object type whose objects to print.")
        var type: String

        @Flag(help: "Print one JSON object per line instead of a table.")
        var json = false

        @Option(help: "Print at most this many objects (default: all).")
        var limit: Int?

        static let measuredRows = 1000

        func validate() throws {
            if let limit, limit < 0 { throw ValidationError("--limit must be zero or more.") }
        }

        func run() throws {
            let db = try options.open()
            defer { db.close() }
            // Types the file keeps without its schema naming them are dumped too.
            if let embedded = db.schema[type], embedded.isEmbedded {
                let owners = db.schema.objectSchemas.filter { owner in
                    !owner.isEmbedded
                        && owner.properties.contains {
                            $0.target == type && $0.elementType != .link && $0.type != .link
                        }
                }.map(\.name)
                throw CommandFailure(
                    "'\(type)' is an embedded type of \(options.file): its objects are stored inside the objects that hold them\(owners.isEmpty ? "" : " (\(owners.joined(separator: ", ")))"). Dump those types instead."
                )
            }
            guard let objectSchema = try db.read({ tx in try? tx.objectSchema(type) }) else {
                let types = try db.read { tx in tx.typeNames }
                throw CommandFailure(
                    "\(options.file) has no object type '\(type)'. Its types are: \(types.joined(separator: ", ")).")
            }
            let properties = objectSchema.properties
            let names = properties.map(\.name)
            let schema = db.schema
            try db.read { tx in
                let objects = try tx.objects(type)
                let limit = self.limit ?? Int.max
                var printed = 0
                var table: TextTable?
                var pending: [[String]] = []
                // Stops the walk once `limit` objects are out.
                _ = try objects.first { object in
                    guard printed < limit else { return true }
                    printed += 1
                    let values = try names.map { try object.value($0) }
                    if json {
                        let fields =
                            zip(properties, values).map { "\($0.name.jsonQuoted):\($1.json(as: $0, in: schema))" } + [
                                "\"_schemaVersion\":\(object.schemaVersion)"
                            ]
                        print("{" + fields.joined(separator: ",") + "}")
                    } else {
                        let row =
                            zip(properties, values).map { $1.cell(as: $0, in: schema) } + [String(object.schemaVersion)]
                        if let table {
                            print(table.line(row))
                        } else {
                            pending.append(row)
                            if pending.count == Dump.measuredRows { table = printTable(header: names, pending) }
                        }
                    }
                    return printed == limit
                }
                guard !json else { return }
                if table == nil { table = printTable(header: names, pending) }
                let total = try objects.count
                print(
                    printed == total
                        ? "(\(total) \(total == 1 ? "object" : "objects"))" : "(\(printed) of \(total) objects)")
            }
        }

        /// Prints the header and the rows read so far; returns the table
        /// that later rows are printed with.
        private func printTable(header names: [String], _ rows: [[String]]) -> TextTable {
            let header = names + ["_schemaVersion"]
            var table = TextTable(measuring: rows)
            table.measure(header)
            print(table.line(header))
            print(table.line(table.widths.map { String(repeating: "-", count: $0) }))
            for row in rows { print(table.line(row)) }
            return table
        }
    }
}
