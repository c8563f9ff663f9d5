import ArgumentParser
import Foundation
import Strata

extension StrataCommand {
    struct Demo: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Tell the migration, relationship and sync stories on sample databases.",
            discussion: """
                Creates a file at schema version 1 with sample people, reopens it at version 2 \
                (firstName + lastName become fullName, a new property gets its default) and shows \
                the objects before and after, with the migration's progress (a bar redrawn in \
                place when standard output is a terminal, a few plain lines otherwise); observes the \
                three oldest people while writing, printing each element's positions; then shows \
                what synced mode refuses; follows links and delete rules; and ends with two devices \
                at app versions 1 and 2 syncing, the older keeping the field it does not declare \
                until its app is upgraded. Try --objects 1000000 to watch a long migration.
                """
        )

        @Option(
            help: "Where to create the database file and keep it (default: a temporary folder, removed at the end).")
        var path: String?

        @Option(help: "How many generated people to add beside the named ones.")
        var objects: Int = 1000

        func validate() throws {
            guard objects >= 0 else { throw ValidationError("--objects must be zero or more.") }
            if let path {
                for file in [path] + Demo.companions(of: path) where FileManager.default.fileExists(atPath: file) {
                    throw ValidationError(
                        "\(file) already exists; the demo creates new files (\(path) and, beside it, \(Demo.companions(of: path).joined(separator: " and "))). Choose another path."
                    )
                }
            }
        }

        func run() throws {
            // Without --path the demo's files are scratch: the folder goes
            // when the demo ends, whatever it ends with.
            let scratch = path == nil ? try Demo.temporaryFolder() : nil
            defer {
                if let scratch {
                    try? FileManager.default.removeItem(atPath: scratch)
                    print("\nRemoved \(scratch) and the demo's files in it (pass --path FILE to keep them).")
                }
            }
            let file = path ?? scratch! + "/people.strata"
            var config = Demo.configuration(file, version: DemoModels.AppV1.self)
            print("Creating \(file) (schema version 1, the model PersonV1)")
            try populate(Database(configuration: config))
            print("\nReopening \(file)")
            try report(Database(configuration: config))

            print(
                "\nThe next app version (schema version 2, the model PersonV2): firstName + lastName become fullName in a typed step, and a new property 'status' defaults to \"active\"."
            )
            config = Demo.configuration(
                file, version: DemoModels.AppV2.self, versions: [DemoModels.AppV1.self], steps: [DemoModels.fullNames])
            let plan = try Database.migrationPlan(for: config)
            print("Plan: \(plan)")
            print("\nBefore:")
            try printPeople(Database(configuration: Demo.configuration(file, version: DemoModels.AppV1.self)))
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
            let reopened = try Database(configuration: config)
            try observationStory(reopened)
            reopened.close()

            print("\nOpening the same file in synced mode:")
            var synced = config
            synced.mode = .synced
            synced.migrations = []
            synced.progress = nil
            showRefusal { _ = try Database(configuration: synced) }
            try syncedStory(besides: file)
            try relationshipStory(besides: file)
            let devices = Demo.companions(of: file)
            try syncStory(phonePath: devices[2], tabletPath: devices[3])
        }

        /// Projects, tasks and the people they are assigned to: links,
        /// a backlink query, and the delete rules at work.
        func relationshipStory(besides file: String) throws {
            let path = Demo.companions(of: file)[1]
            print("\nRelationships (\(path)): a Task links to its Project (cascade) and to a Person (nullify).")
            var config = Database.Configuration(
                path: path, models: [DemoModels.PersonV2.self, DemoModels.Project.self, DemoModels.Task.self])
            config.durability = .noSync
            let db = try Database(configuration: config)
            defer { db.close() }
            try db.write { tx in
                try tx.insert(DemoModels.PersonV2(id: 1, fullName: "Ada Lovelace", age: 36))
                try tx.insert(DemoModels.PersonV2(id: 2, fullName: "Grace Hopper", age: 85))
                try tx.insert(DemoModels.Project(id: 1, name: "Engine"))
                try tx.insert(DemoModels.Project(id: 2, name: "Compiler"))
                let tasks = [
                    (1, "Design the mill", 1, 1), (2, "Punch the cards", 1, 1), (3, "Write the first linker", 2, 2),
                    (4, "Find the moth", 2, 2), (5, "Review the notes", 1, 2),
                ]
                for (id, title, project, person) in tasks {
                    try tx.insert(
                        DemoModels.Task(id: id, title: title, project: Link(project), assignee: Link(person)))
                }
            }
            func show(_ title: String) throws {
                try db.read { tx in
                    let lines = try tx.objects(DemoModels.Task.self).map { task in
                        let project = try task.project.flatMap { try tx.object($0) }?.name ?? "none"
                        let person = try task.assignee.flatMap { try tx.object($0) }?.fullName ?? "unassigned"
                        return "    \(task.title) (\(project), \(person))"
                    }
                    print("  \(title):\n\(lines.joined(separator: "\n"))")
                }
            }
            try show("Tasks, with their project and assignee followed through the links")
            let grace = try db.read { tx in
                try tx.objects(DemoModels.Task.self, linkingTo: 2, through: \.assignee).map(\.title)
            }
            print("  Grace's tasks, from the backlinks index: \(grace.joined(separator: ", "))")
            try db.write { tx in _ = try tx.delete(DemoModels.Project.self, primaryKey: 2) }
            try show("After deleting the Compiler project (cascade: its tasks go too)")
            try db.write { tx in _ = try tx.delete(DemoModels.PersonV2.self, primaryKey: 2) }
            try show("After deleting Grace Hopper (nullify: her task stays, unassigned)")
            print("  verify: \(try db.verify().isEmpty ? "no problems" : "problems found")")
        }

        /// The configuration of one app version, writing without waiting
        /// for the disk (a demo has nothing to lose).
        static func configuration(
            _ file: String, version: any VersionedSchema.Type, versions: [any VersionedSchema.Type] = [],
            steps: [MigrationStep] = [], mode: Database.Mode = .local
        ) -> Database.Configuration {
            var config = Database.Configuration(path: file, schema: version, versions: versions, migrations: steps)
            config.mode = mode
            return config
        }

        /// A synced-mode copy of the sample: typed steps and a destructive
        /// change are refused with every change listed; an additive change
        /// opens, and the older app still reads what the newer one wrote.
        func syncedStory(besides file: String) throws {
            let syncedFile = Demo.companions(of: file)[0]
            print("\nA synced-mode file with the same people (\(syncedFile)), shared with older app versions:")
            let v1 = Demo.configuration(syncedFile, version: DemoModels.AppV1.self, mode: .synced)
            try populate(Database(configuration: v1), quietly: true)
            print("Opening it with schema version 2 and its typed step:")
            showRefusal {
                _ = try Database(
                    configuration: Demo.configuration(
                        syncedFile, version: DemoModels.AppV2.self, versions: [DemoModels.AppV1.self],
                        steps: [DemoModels.fullNames], mode: .synced))
            }
            var destructive = Database.Configuration(
                path: syncedFile, schemaVersion: 2,
                schema: Schema([
                    ObjectSchema("Person", primaryKey: "firstName") {
                        Property("id", .int)
                        Property("firstName", .string)
                        Property("lastName", .string)
                        Property("age", .string, default: "unknown", indexed: true)
                        Property("email", .string)
                    }
                ]))
            destructive.mode = .synced
            print(
                "\nOpening it with a destructive schema version 2 (new primary key, age as a string, email required):")
            showRefusal { _ = try Database(configuration: destructive) }
            var additive = Database.Configuration(
                path: syncedFile, schemaVersion: 2, models: [DemoModels.PersonSyncedV2.self])
            additive.mode = .synced
            print(
                "\nOpening it with an additive schema version 2 (the model PersonSyncedV2: lastName left out, status added):"
            )
            let db = try Database(configuration: additive)
            let katherineID = try db.write { tx in
                try tx.insert(
                    DemoModels.PersonSyncedV2(
                        id: try tx.objects(DemoModels.PersonSyncedV2.self).count + 1, firstName: "Katherine", age: 33))
            }
            print("Opened. lastName stays in the file for older app versions; new objects store it empty.")
            db.close()
            let older = try Database(configuration: v1)
            try older.read { tx in
                if let katherine = try tx.object(DemoModels.PersonV1.self, primaryKey: katherineID),
                    let written = try tx.object("Person", key: Value(katherineID)),
                    let ada = try tx.object(DemoModels.PersonV1.self, primaryKey: 1)
                {
                    print(
                        "The version-1 app still opens it: Ada's lastName is \"\(ada.lastName)\", Katherine's (written by version 2) is \"\(katherine.lastName)\" at effective version \(written.schemaVersion)."
                    )
                }
            }
        }

        /// Observes the three oldest people while the app writes: the
        /// first element, then one per commit that changes them, with the
        /// positions a list view would animate.
        func observationStory(_ db: Database) throws {
            print("\nObserving the three oldest people while writing (db.observe … .subscribe):")
            let delivered = DispatchSemaphore(value: 0)
            let failed: @Sendable (any Error) -> Void = { print("  observation failed: \($0)") }
            let token = db.observe(DemoModels.PersonV2.self) { $0.sorted(by: \.age, ascending: false).limit(3) }
                .subscribe(onError: failed) { change in
                    let people = change.results.map { "\($0.fullName) (\($0.age))" }.joined(separator: ", ")
                    if change.isInitial {
                        print("  first element: \(people)")
                    } else {
                        print(
                            "  after a commit: \(people); deletions \(change.deletions), insertions \(change.insertions), modifications \(change.modifications)"
                        )
                    }
                    delivered.signal()
                }
            defer { token.cancel() }
            func waitForElement() throws {
                guard delivered.wait(timeout: .now() + 10) == .success else {
                    throw ValidationError("The observation did not deliver within 10 seconds.")
                }
            }
            try waitForElement()
            let (youngest, oldest) = try db.read { tx in
                let people = try tx.objects(DemoModels.PersonV2.self).sorted(by: \.age)
                return (try people.first(), try people.sorted(by: \.age, ascending: false).first())
            }
            print("  writing: a person aged 120")
            try db.write { tx in try tx.insert(DemoModels.PersonV2(id: -1, fullName: "Jeanne Calment", age: 120)) }
            try waitForElement()
            print(
                "  writing: the youngest person's status (outside the three: no element), then a birthday of the next oldest"
            )
            if var person = youngest {
                person.status = "archived"
                try db.write { tx in try tx.update(person) }
            }
            if var person = oldest {
                person.age += 1
                try db.write { tx in try tx.update(person) }
            }
            try waitForElement()
            print("  writing: everything put back in one commit")
            try db.write { tx in
                _ = try tx.delete(DemoModels.PersonV2.self, primaryKey: -1)
                if let youngest { try tx.update(youngest) }
                if let oldest { try tx.update(oldest) }
            }
            try waitForElement()
        }

        func showRefusal(_ open: () throws -> Void) {
            do {
                try open()
                print("Opened: unexpected.")
            } catch let error as StrataError {
                print("Refused (\(error.code)), the file is untouched:")
                print(StrataCommand.lines(of: error).map { "  " + $0 }.joined(separator: "\n"))
            } catch {
                print("Failed: \(error)")
            }
        }

        /// The first three people, as the version the database was opened
        /// with reads them, each with its effective schema version.
        func printPeople(_ db: Database) throws {
            defer { db.close() }
            try db.read { tx in
                let lines: [(id: Int, text: String)]
                if tx.appSchemaVersion == 1 {
                    lines = try tx.objects(DemoModels.PersonV1.self).limit(3).map {
                        (
                            $0.id,
                            "Person(id: \($0.id), firstName: \"\($0.firstName)\", lastName: \"\($0.lastName)\", age: \($0.age))"
                        )
                    }
                } else {
                    lines = try tx.objects(DemoModels.PersonV2.self).limit(3).map {
                        (
                            $0.id,
                            "Person(id: \($0.id), fullName: \"\($0.fullName)\", age: \($0.age), status: \"\($0.status)\")"
                        )
                    }
                }
                for (id, text) in lines {
                    let version = try tx.object("Person", key: Value(id))?.schemaVersion ?? 0
                    print("  \(text) at effective schema version \(version)")
                }
            }
        }

        /// The files the demo writes beside `file`: the synced-mode copy,
        /// the relationships story's, then the sync story's two devices.
        static func companions(of file: String) -> [String] {
            let stem = URL(fileURLWithPath: file).deletingPathExtension().path
            return [stem + "-synced.strata", stem + "-tasks.strata", stem + "-phone.strata", stem + "-tablet.strata"]
        }

        /// A new folder for the demo's files, in the system's temporary
        /// folder (`TMPDIR`).
        static func temporaryFolder() throws -> String {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "strata-demo-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return folder.path
        }

        func populate(_ db: Database, quietly: Bool = false) throws {
            defer { db.close() }
            let named: [(String, String, Int, String?)] = [
                ("Ada", "Lovelace", 36, "ada@example.org"),
                ("Charles", "Babbage", 79, nil),
                ("Grace", "Hopper", 85, "grace@example.org"),
                ("Alan", "Turing", 41, nil),
                ("Margaret", "Hamilton", 17, "margaret@example.org"),
            ]
            // Seven and eleven names: both prime to the 90 ages, so people
            // of one age have different names.
            let firstNames = ["Kim", "Sam", "Alex", "Robin", "Jo", "Max", "Noor"]
            let lastNames = [
                "Ng", "Okafor", "Silva", "Novak", "Larsen", "Haddad", "Kowalski", "Tanaka", "Mensah",
                "Rossi", "Ivanova",
            ]
            let start = Date()
            try db.write { tx in
                for (i, person) in named.enumerated() {
                    try tx.insert(
                        DemoModels.PersonV1(
                            id: i + 1, firstName: person.0, lastName: person.1, age: person.2, email: person.3))
                }
                for i in 0 ..< objects {
                    let id = named.count + i + 1
                    try tx.insert(
                        DemoModels.PersonV1(
                            id: id, firstName: firstNames[i % firstNames.count],
                            lastName: lastNames[i % lastNames.count], age: id % 90))
                }
            }
            if !quietly {
                print("Wrote \(named.count + objects) people in one transaction (\(milliseconds(since: start)) ms)")
            }
        }

        func report(_ db: Database) throws {
            defer { db.close() }
            try db.read { tx in
                let people = try tx.objects(DemoModels.PersonV1.self)
                print("File schema version \(db.fileSchemaVersion); \(try people.count) people")
                if let ada = try tx.object(DemoModels.PersonV1.self, primaryKey: 1) {
                    let version = try tx.object("Person", key: 1)?.schemaVersion ?? 0
                    print(
                        "Lookup by primary key 1: \(ada.firstName) \(ada.lastName), written at schema version \(version)"
                    )
                }
                let adults = try people.where(\.age, in: 18...).count
                print("Range query through the age index (age >= 18): \(adults) adults")
                let aged41 = try people.where(\.age, equals: 41).map { "\($0.firstName) \($0.lastName)" }
                print("Index lookup (age == 41): \(aged41.count) people, first: \(aged41.first ?? "none")")
                let oldest = try people.sorted(by: \.age, ascending: false).limit(3).map {
                    "\($0.firstName) \($0.lastName) (\($0.age))"
                }
                print("Sorted through the index, oldest first: \(oldest.joined(separator: ", "))")
                let withEmail = try people.filter { $0.email != nil }.map { $0.email ?? "" }
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
