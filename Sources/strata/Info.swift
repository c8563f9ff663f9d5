import ArgumentParser
import Foundation
import Strata

extension StrataCommand {
    struct Info: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a database's versions, mode, types, object counts and size.",
            discussion: """
                For each type: its object count, and how many objects sit at each effective \
                schema version (the version under which each was last written). A type marked \
                "kept" is left out of the file's current schema; its objects stay in the file. \
                Then, when the file has link properties, how many links each holds (a list that \
                links to one object twice counts once), read from the size of its backlinks \
                table. Reads every record's header, so it takes time in proportion to the objects.
                """
        )

        @OptionGroup var options: FileOptions

        func run() throws {
            let db = try options.open()
            defer { db.close() }
            let statistics = try db.statistics()
            print(statistics.path)
            print("Format version: \(statistics.formatVersion)")
            print("Schema version: \(statistics.schemaVersion)")
            print("Mode: \(statistics.mode.rawValue)")
            print("Types: \(statistics.types.count)")
            let rows = statistics.types.map { type in
                let versions = type.objectsBySchemaVersion.sorted { $0.key < $1.key }.map {
                    "version \($0.key): \($0.value)"
                }
                return [
                    type.name, "\(type.objectCount) \(type.objectCount == 1 ? "object" : "objects")",
                    versions.isEmpty ? "" : "(\(versions.joined(separator: ", ")))",
                    type.isKept ? "kept: not in the schema" : "",
                ]
            }
            let table = TextTable(measuring: rows)
            for row in rows { print(table.line(row, indent: "  ")) }
            let schema = db.schema
            let links = statistics.types.flatMap { type in
                type.linkCounts.sorted { $0.key < $1.key }.map { name, count in
                    let property = schema[type.name]?[property: name]
                    let kind = property?.type == .list ? "list of links" : "link"
                    return [
                        "\(type.name).\(name)", "(\(kind) to \(property?.target ?? "?"))",
                        "\(count) \(count == 1 ? "link" : "links")",
                    ]
                }
            }
            if !links.isEmpty {
                print("Links:")
                let linkTable = TextTable(measuring: links)
                for row in links { print(linkTable.line(row, indent: "  ")) }
            }
            print("File size: \(statistics.fileSize) bytes, \(statistics.usedSize) used")
        }
    }
}
