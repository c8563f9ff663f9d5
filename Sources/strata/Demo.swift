import ArgumentParser
import Foundation
import Strata

extension StrataCommand {
    struct Demo: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a sample database, write people into it, query them and reopen the file."
        )

        @Option(help: "Where to create the database file (default: a new temporary folder).")
        var path: String?

        @Option(help: "How many generated people to add beside the named ones.")
        var objects: Int = 1000

        func validate() throws {
            guard objects >= 0 else { throw ValidationError("--objects must be zero or more.") }
            if let path, FileManager.default.fileExists(atPath: path) {
                throw ValidationError("\(path) already exists; the demo creates a new file. Choose another path.")
            }
        }

        func run() throws {
            let file = try path ?? Demo.temporaryFile()
            let config = Database.Configuration(path: file, schemaVersion: 1, schema: Demo.schema)
            print("Creating \(file) (schema version 1)")
            try populate(Database(configuration: config))
            print("\nReopening \(file)")
            try report(Database(configuration: config))
            print("\nReopening \(file) with a changed schema (version 2: firstName + lastName -> fullName)")
            showRefusal(file)
        }

        /// Opens the file with the next app version's schema, which this
        /// version of Strata refuses with an error that lists every change.
        func showRefusal(_ file: String) {
            let next = Schema([
                ObjectSchema("Person", primaryKey: "id") {
                    Property("id", .int)
                    Property("fullName", .string)
                    Property("age", .int, default: 0, indexed: true)
                    Property("email", .string, optional: true)
                },
            ])
            do {
                _ = try Database(configuration: Database.Configuration(path: file, schemaVersion: 2, schema: next))
                print("Opened: unexpected, the schema changed.")
            } catch let error as StrataError {
                print("Refused (\(error.code)), the file is untouched:")
                print(error.message.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            } catch {
                print("Failed: \(error)")
            }
        }

        static let schema = Schema([
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("firstName", .string)
                Property("lastName", .string)
                Property("age", .int, default: 0, indexed: true)
                Property("email", .string, optional: true)
            },
        ])

        static func temporaryFile() throws -> String {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-demo-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return folder.appendingPathComponent("people.strata").path
        }

        func populate(_ db: Database) throws {
            let named: [(String, String, Int64, String?)] = [
                ("Ada", "Lovelace", 36, "ada@example.org"),
                ("Charles", "Babbage", 79, nil),
                ("Grace", "Hopper", 85, "grace@example.org"),
                ("Alan", "Turing", 41, nil),
                ("Margaret", "Hamilton", 17, "margaret@example.org"),
            ]
            let firstNames = ["Kim", "Sam", "Alex", "Robin", "Jo", "Max"]
            let lastNames = ["Ng", "Okafor", "Silva", "Novak", "Larsen"]
            let start = Date()
            try db.write { tx in
                for (i, person) in named.enumerated() {
                    try tx.insert("Person", ["id": .int(Int64(i + 1)), "firstName": .string(person.0), "lastName": .string(person.1),
                                             "age": .int(person.2), "email": person.3.map(Value.string) ?? .null])
                }
                for i in 0 ..< objects {
                    let id = Int64(named.count + i + 1)
                    try tx.insert("Person", ["id": .int(id), "firstName": .string(firstNames[i % firstNames.count]),
                                             "lastName": .string(lastNames[i % lastNames.count]), "age": .int(id % 90)])
                }
            }
            let elapsed = Date().timeIntervalSince(start)
            print("Wrote \(named.count + objects) people in one transaction (\(String(format: "%.1f", elapsed * 1000)) ms)")
        }

        func report(_ db: Database) throws {
            try db.read { tx in
                let people = try tx.objects("Person")
                print("File schema version \(tx.schemaVersion); \(try people.count) people")
                if let ada = try tx.object("Person", key: 1) {
                    print("Lookup by primary key 1: \(ada["firstName"].string!) \(ada["lastName"].string!), written at schema version \(ada.schemaVersion)")
                }
                let adults = try people.filter { $0["age"].int! >= 18 }.count
                print("Query (filter age >= 18): \(adults) adults")
                let aged41 = try people.where("age", equals: 41).map { "\($0["firstName"].string!) \($0["lastName"].string!)" }
                print("Index lookup (age == 41): \(aged41.count) people, first: \(aged41.first ?? "none")")
                let withEmail = try people.filter { !$0["email"].isNull }.map { $0["email"].string! }
                print("People with an email: \(withEmail.joined(separator: ", "))")
            }
            let size = try db.fileSize
            print("File: \(size.total) bytes, \(size.used) in use")
        }
    }
}
