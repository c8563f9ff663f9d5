import ArgumentParser
import Foundation
import Strata

extension StrataCommand {
    /// `strata schema`; not named `Schema`, which would hide the library's type.
    struct ShowSchema: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "schema",
            abstract: "Print a database's schema, as text or as a JSON schema snapshot.",
            discussion: """
                The text form shows one block per object type: its primary key, then each \
                property with its type and whether it is optional, its default, and whether it \
                is indexed. A link shows its target type and delete rule, link(Person), a list \
                its elements, list(string) or list(link(Dog)), and an embedded property its \
                type, embedded(Address); embedded types say so instead of naming a key. With --json it prints the snapshot that SchemaSnapshot(jsonData:) and \
                `strata plan --schema` read: keep one per shipped schema version in your repository.
                """
        )

        @OptionGroup var options: FileOptions

        @Flag(help: "Print the schema as a JSON schema snapshot at the file's schema version.")
        var json = false

        func run() throws {
            let db = try options.open()
            defer { db.close() }
            if json {
                print(
                    String(
                        decoding: SchemaSnapshot(schemaVersion: db.fileSchemaVersion, schema: db.schema).jsonData(),
                        as: UTF8.self))
                return
            }
            let types = db.schema.objectSchemas.sorted { $0.name < $1.name }
            print(
                "Schema version \(db.fileSchemaVersion), \(db.configuration.mode.rawValue) mode, \(types.count) \(types.count == 1 ? "type" : "types")"
            )
            for type in types {
                print("")
                print(
                    type.name
                        + (type.isEmbedded
                            ? " (embedded)"
                            : type.primaryKey.map { " (primary key: \($0))" } ?? " (no primary key: automatic ids)"))
                let rows = type.properties.map { property in
                    var traits: [String] = []
                    if property.name == type.primaryKey { traits.append("primary key") }
                    if property.isOptional { traits.append("optional") }
                    if let value = property.defaultValue { traits.append("default \(value)") }
                    if property.isIndexed { traits.append("indexed") }
                    if property.type == .link || property.elementType == .link {
                        traits.append("on delete: \(property.deleteRule)")
                    }
                    return [property.name, Self.shape(property), traits.joined(separator: ", ")]
                }
                let table = TextTable(measuring: rows)
                for row in rows { print(table.line(row, indent: "  ")) }
            }
        }

        /// A property's type as the schema text shows it: `int`,
        /// `link(Person)`, `list(string)`, `list(link(Dog))`, `embedded(Address)`.
        static func shape(_ property: Property) -> String {
            let target = property.target ?? "?"
            switch property.type {
            case .link, .embedded: return "\(property.type.rawValue)(\(target))"
            case .list:
                switch property.elementType {
                case .link?, .embedded?: return "list(\(property.elementType!.rawValue)(\(target)))"
                case let element?: return "list(\(element.rawValue))"
                case nil: return "list(?)"
                }
            default: return property.type.rawValue
            }
        }
    }
}
