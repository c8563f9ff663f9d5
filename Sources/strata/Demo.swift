import ArgumentParser
import Foundation
import Strata

extension StrataCommand {
    struct Demo: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Tell the migration story on a sample database.",
            discussion: """
                Creates a file at schema version 1 with sample people, reopens it at version 2 \
                (firstName + lastName become fullName, a new property gets its default) and shows \
                the objects before and after, with the migration's progress (a bar redrawn in \
                place when standard output is a terminal, a few plain lines otherwise); then shows \
                what synced mode refuses. Try --objects 1000000 to watch a long migration.
                """
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
            var config = Database.Configuration(path: file, schemaVersion: 1, schema: Demo.schema)
            print("Creating \(file) (schema version 1)")
            try populate(Database(configuration: config))
            print("\nReopening \(file)")
            try report(Database(configuration: config))

            print(
                "\nThe next app version (schema version 2): firstName + lastName become fullName, and a new property 'status' defaults to \"active\"."
            )
            config.schemaVersion = 2
            config.schema = Demo.schemaV2
            config.migration = Demo.migrationV2
            let plan = try Database.migrationPlan(for: config)
            print("Plan: \(plan)")
            print("\nBefore:")
            try printPeople(
                Database(configuration: Database.Configuration(path: file, schemaVersion: 1, schema: Demo.schema)))
            let progress = ProgressReporter()
            config.progress = { progress.report($0) }
            let start = Date()
            let migrated: Database
            do {
                defer { progress.finish() }
                migrated = try Database(configuration: config)
            }
            print("Migrated to schema version \(migrated.fileSchemaVersion) in \(milliseconds(since: start)) ms.")
            print("\nAfter:")
            try printPeople(migrated)
            migrated.close()

            print("\nOpening the same file in synced mode:")
            var synced = config
            synced.mode = .synced
            synced.migration = nil
            synced.progress = nil
            showRefusal { _ = try Database(configuration: synced) }
            try syncedStory(besides: file)
        }

        /// A synced-mode copy of the sample: an additive change opens, a
        /// destructive one is refused with every change listed.
        func syncedStory(besides file: String) throws {
            let syncedFile = URL(fileURLWithPath: file).deletingPathExtension().path + "-synced.strata"
            print("\nA synced-mode file with the same people (\(syncedFile)), shared with older app versions:")
            var config = Database.Configuration(path: syncedFile, schemaVersion: 1, schema: Demo.schema)
            config.mode = .synced
            try populate(Database(configuration: config), quietly: true)
            config.schemaVersion = 2
            config.schema = Demo.schemaV2
            config.migration = Demo.migrationV2
            print("Opening it with schema version 2 and its migration closure:")
            showRefusal { _ = try Database(configuration: config) }
            config.migration = nil
            config.schema = Schema([
                ObjectSchema("Person", primaryKey: "firstName") {
                    Property("id", .int)
                    Property("firstName", .string)
                    Property("lastName", .string)
                    Property("age", .string, default: "unknown", indexed: true)
                    Property("email", .string)
                }
            ])
            print(
                "\nOpening it with a destructive schema version 2 (new primary key, age as a string, email required):")
            showRefusal { _ = try Database(configuration: config) }
            config.schema = Schema([
                ObjectSchema("Person", primaryKey: "id") {
                    Property("id", .int)
                    Property("firstName", .string)
                    Property("age", .int, default: 0, indexed: true)
                    Property("email", .string, optional: true)
                    Property("status", .string, default: "active")
                }
            ])
            print("\nOpening it with an additive schema version 2 (lastName left out, status added):")
            let db = try Database(configuration: config)
            let katherineID = try db.write { tx in
                let id = Value.int(Int64(try tx.objects("Person").count + 1))
                try tx.insert("Person", ["id": id, "firstName": "Katherine", "age": 33])
                return id
            }
            print("Opened. lastName stays in the file for older app versions; new objects store it empty.")
            db.close()
            let older = try Database(
                configuration: {
                    var old = config
                    old.schemaVersion = 1
                    old.schema = Demo.schema
                    return old
                }())
            try older.read { tx in
                if let katherine = try tx.object("Person", key: katherineID), let ada = try tx.object("Person", key: 1)
                {
                    print(
                        "The version-1 app still opens it: Ada's lastName is \"\(ada["lastName"].string!)\", Katherine's (written by version 2) is \"\(katherine["lastName"].string!)\" at effective version \(katherine.schemaVersion)."
                    )
                }
            }
        }

        func showRefusal(_ open: () throws -> Void) {
            do {
                try open()
                print("Opened: unexpected.")
            } catch let error as StrataError {
                print("Refused (\(error.code)), the file is untouched:")
                print(error.message.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            } catch {
                print("Failed: \(error)")
            }
        }

        static let schemaV2 = Schema([
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("fullName", .string)
                Property("age", .int, default: 0, indexed: true)
                Property("email", .string, optional: true)
                Property("status", .string, default: "active")
            }
        ])

        static let migrationV2: Database.MigrationBlock = { migration, oldVersion in
            if oldVersion < 2 {
                try migration.enumerateObjects(ofType: "Person") { old, new in
                    guard let old, let new else { return }
                    new["fullName"] = .string("\(old["firstName"].string ?? "") \(old["lastName"].string ?? "")")
                }
            }
        }

        func printPeople(_ db: Database) throws {
            defer { db.close() }
            try db.read { tx in
                let names =
                    tx.appSchemaVersion == 1
                    ? ["id", "firstName", "lastName", "age"] : ["id", "fullName", "age", "status"]
                for person in try tx.objects("Person").map({ $0 }).prefix(3) {
                    let fields = names.map { "\($0): \(person[$0])" }.joined(separator: ", ")
                    print("  Person(\(fields)) at effective schema version \(person.schemaVersion)")
                }
            }
        }

        static let schema = Schema([
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("firstName", .string)
                Property("lastName", .string)
                Property("age", .int, default: 0, indexed: true)
                Property("email", .string, optional: true)
            }
        ])

        static func temporaryFile() throws -> String {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "strata-demo-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return folder.appendingPathComponent("people.strata").path
        }

        func populate(_ db: Database, quietly: Bool = false) throws {
            defer { db.close() }
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
                    try tx.insert(
                        "Person",
                        [
                            "id": .int(Int64(i + 1)), "firstName": .string(person.0), "lastName": .string(person.1),
                            "age": .int(person.2), "email": person.3.map(Value.string) ?? .null,
                        ])
                }
                for i in 0 ..< objects {
                    let id = Int64(named.count + i + 1)
                    try tx.insert(
                        "Person",
                        [
                            "id": .int(id), "firstName": .string(firstNames[i % firstNames.count]),
                            "lastName": .string(lastNames[i % lastNames.count]), "age": .int(id % 90),
                        ])
                }
            }
            if !quietly {
                print("Wrote \(named.count + objects) people in one transaction (\(milliseconds(since: start)) ms)")
            }
        }

        func report(_ db: Database) throws {
            defer { db.close() }
            try db.read { tx in
                let people = try tx.objects("Person")
                print("File schema version \(db.fileSchemaVersion); \(try people.count) people")
                if let ada = try tx.object("Person", key: 1) {
                    print(
                        "Lookup by primary key 1: \(ada["firstName"].string!) \(ada["lastName"].string!), written at schema version \(ada.schemaVersion)"
                    )
                }
                let adults = try people.filter { $0["age"].int! >= 18 }.count
                print("Query (filter age >= 18): \(adults) adults")
                let aged41 = try people.where("age", equals: 41).map {
                    "\($0["firstName"].string!) \($0["lastName"].string!)"
                }
                print("Index lookup (age == 41): \(aged41.count) people, first: \(aged41.first ?? "none")")
                let withEmail = try people.filter { !$0["email"].isNull }.map { $0["email"].string! }
                print("People with an email: \(withEmail.joined(separator: ", "))")
            }
            let size = try db.fileSize
            print("File: \(size.total) bytes, \(size.used) in use")
        }
    }
}

func milliseconds(since start: Date) -> String {
    String(format: "%.1f", Date().timeIntervalSince(start) * 1000)
}
