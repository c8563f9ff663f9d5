import Foundation
import Testing
@testable import Strata

/// Schemas and helpers shared by the migration suites.
enum Migrations {
    static let personV1 = Fixtures.person

    /// Version 2 of Person: firstName + lastName become fullName.
    static let personV2 = ObjectSchema("Person", primaryKey: "id") {
        Property("id", .int)
        Property("fullName", .string)
        Property("age", .int, default: 0, indexed: true)
        Property("email", .string, optional: true)
    }

    static func configuration(_ path: String, version: UInt64, _ objectSchemas: [ObjectSchema], mode: Database.Mode = .local,
                              migration: Database.MigrationBlock? = nil) -> Database.Configuration {
        var config = Fixtures.configuration(path, version: version, schema: Schema(objectSchemas))
        config.mode = mode
        config.migration = migration
        return config
    }

    /// Writes `count` people at version 1 (ids 1...count).
    static func seedPeople(_ path: String, count: Int, mode: Database.Mode = .local) throws {
        let db = try Database(configuration: configuration(path, version: 1, [personV1], mode: mode))
        try db.write { tx in
            for id in 1 ... Int64(count) {
                try tx.insert("Person", Fixtures.person(id, "First\(id)", "Last\(id)", age: id % 90, email: id % 3 == 0 ? "p\(id)@example.org" : nil))
            }
        }
        db.close()
    }

    /// Every object of every type of the database, with its effective
    /// schema version, in key order: what "the file is as it was" compares.
    static func everything(_ db: Database) throws -> [String: [[String: Value]]] {
        try db.read { tx throws in
            var result: [String: [[String: Value]]] = [:]
            for type in tx.typeNames {
                result[type] = try tx.objects(type).map { object in
                    var values = object.values
                    values["__schemaVersion"] = .int(Int64(object.schemaVersion))
                    return values
                }
            }
            return result
        }
    }

    static func everything(opening configuration: Database.Configuration) throws -> [String: [[String: Value]]] {
        let db = try Database(configuration: configuration)
        defer { db.close() }
        return try everything(db)
    }

    /// What a failed migration must leave as it was: every object with its
    /// effective schema version, and the contents of every named database
    /// (records, indexes, catalog, generation, schema snapshots), of a file
    /// the verifier finds sound.
    struct FileState: Equatable {
        var objects: [String: [[String: Value]]]
        var databases: [String: FileVerifier.Digest]
    }

    static func state(opening configuration: Database.Configuration, sourceLocation: SourceLocation = #_sourceLocation) throws -> FileState {
        let verifier = try expectFileVerified(configuration.path, sourceLocation: sourceLocation)
        return FileState(objects: try everything(opening: configuration), databases: verifier.digests)
    }
}

/// Collects values handed to @Sendable callbacks.
final class Recorder<T: Sendable>: @unchecked Sendable {
    // @unchecked: `items` is only touched while holding `lock`.
    private let lock = NSLock()
    private var items: [T] = []
    func append(_ item: T) { lock.withLock { items.append(item) } }
    var all: [T] { lock.withLock { items } }
}

@Suite struct MigrationTests {
    // MARK: firstName + lastName → fullName

    @Test func fullNameMigrationCombinesOldValuesAndDropsTheOldProperties() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Migrations.seedPeople(path, count: 500)
        let calls = Recorder<UInt64>()
        let config = Migrations.configuration(path, version: 2, [Migrations.personV2]) { migration, oldVersion in
            calls.append(oldVersion)
            #expect(migration.oldSchema == Schema([Migrations.personV1]))
            #expect(migration.newSchema == Schema([Migrations.personV2]))
            try migration.enumerateObjects(ofType: "Person") { old, new in
                let old = try #require(old)
                new?["fullName"] = .string("\(old["firstName"].string!) \(old["lastName"].string!)")
            }
        }
        let db = try Database(configuration: config)
        #expect(calls.all == [1])
        #expect(db.schemaVersion == 2)
        #expect(db.migrationRecordWrites == 500)
        try db.read { tx throws in
            let people = try tx.objects("Person").map(\.values)
            #expect(people.count == 500)
            for (offset, person) in people.enumerated() {
                let id = Int64(offset + 1)
                #expect(person == ["id": .int(id), "fullName": .string("First\(id) Last\(id)"), "age": .int(id % 90),
                                   "email": id % 3 == 0 ? .string("p\(id)@example.org") : .null])
            }
            #expect(try tx.objects("Person").whereSchemaVersion(2...).count == 500)
            // The index still answers, through the rebuilt index.
            #expect(try tx.objects("Person").where("age", equals: 41).map { $0["id"].int! } == [41, 131, 221, 311, 401, 491])
            let ada = try #require(try tx.object("Person", key: 7))
            expectStrataError(.unknownProperty) { _ = try ada.value("firstName") }
        }
        db.close()
        // Reopening at version 2 runs nothing; version 1 is refused.
        let reopened = try Database(configuration: config)
        #expect(calls.all == [1])
        #expect(reopened.migrationRecordWrites == 0)
        reopened.close()
        expectStrataError(.schemaVersionTooLow) {
            _ = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.personV1]))
        }
    }

    @Test func oldObjectsAreReadOnlyViewsOfTheOldSchemaAndNewObjectsStartFromTheNewOne() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Migrations.seedPeople(path, count: 3)
        let seen = Recorder<String>()
        _ = try Database(configuration: Migrations.configuration(path, version: 2, [Migrations.personV2]) { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { old, new in
                let old = try #require(old), new = try #require(new)
                // The old side has the old properties and not the new ones.
                #expect(old["firstName"].string != nil)
                expectStrataError(.unknownProperty) { _ = try old.value("fullName") }
                // The new side carries kept values and defaults, not removed ones.
                #expect(new["age"] == old["age"])
                #expect(new["fullName"] == .string(""))
                expectStrataError(.unknownProperty) { _ = try new.value("firstName") }
                new["fullName"] = "x"
                seen.append("\(old["id"].int!):\(new["fullName"].string!):\(old.schemaVersion)")
            }
        })
        #expect(seen.all == ["1:x:1", "2:x:1", "3:x:1"])
    }

    // MARK: Type change with a new defaulted property

    static let bookV1 = ObjectSchema("Book", primaryKey: "id") {
        Property("id", .int)
        Property("year", .string)
    }
    static let bookV2 = ObjectSchema("Book", primaryKey: "id") {
        Property("id", .int)
        Property("year", .int)
        Property("hometown", .string, default: "N/A")
    }

    @Test func yearStringBecomesIntWhileANewPropertyGetsItsDefault() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let v1 = try Database(configuration: Migrations.configuration(path, version: 1, [Self.bookV1]))
        try v1.write { tx in
            try tx.insert("Book", ["id": 1, "year": "1843"])
            try tx.insert("Book", ["id": 2, "year": "unknown"])
            try tx.insert("Book", ["id": 3, "year": "1936"])
        }
        v1.close()
        let db = try Database(configuration: Migrations.configuration(path, version: 2, [Self.bookV2]) { migration, _ in
            try migration.enumerateObjects(ofType: "Book") { old, new in
                // Before the closure sets it, the new int starts at its default.
                #expect(new?["year"] == .int(0))
                if let year = Int64(old!["year"].string!) { new?["year"] = .int(year) }
            }
        })
        let books = try db.read { tx in try tx.objects("Book").map(\.values) }
        #expect(books == [
            ["id": 1, "year": 1843, "hometown": "N/A"],
            ["id": 2, "year": 0, "hometown": "N/A"],
            ["id": 3, "year": 1936, "hometown": "N/A"],
        ])
        // A type change rewrites the whole table, closure or not.
        #expect(db.migrationRecordWrites == 3)
        #expect(try db.read { tx in try tx.objects("Book").map(\.schemaVersion) } == [2, 2, 2])
    }

    @Test func typeChangeWithoutAClosureStartsEveryValueAtTheDefault() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let v1 = try Database(configuration: Migrations.configuration(path, version: 1, [Self.bookV1]))
        try v1.write { tx in try tx.insert("Book", ["id": 1, "year": "1843"]) }
        v1.close()
        let db = try Database(configuration: Migrations.configuration(path, version: 2, [Self.bookV2]))
        #expect(try db.read { tx in try tx.object("Book", key: 1)?.values } == ["id": 1, "year": 0, "hometown": "N/A"])
    }

    // MARK: Renames

    static func item(_ name: String) -> ObjectSchema {
        ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property(name, .string, optional: true)
        }
    }

    @Test func renameChainedAcrossThreeVersionsKeepsValuesWithoutRewriting() throws {
        let migration: Database.MigrationBlock = { migration, oldVersion in
            if oldVersion < 2 { try migration.renameProperty(onType: "Item", from: "a", to: "b") }
            if oldVersion < 3 { try migration.renameProperty(onType: "Item", from: "b", to: "c") }
        }
        for start in [UInt64(1), 2] {
            let folder = try TemporaryFolder()
            let path = folder.path()
            let first = try Database(configuration: Migrations.configuration(path, version: 1, [Self.item("a")]))
            try first.write { tx in
                try tx.insert("Item", ["id": 1, "a": "one"])
                try tx.insert("Item", ["id": 2, "a": nil])
            }
            first.close()
            if start == 2 {
                // The version-2 app knew only the first rename.
                let second = try Database(configuration: Migrations.configuration(path, version: 2, [Self.item("b")]) { migration, oldVersion in
                    if oldVersion < 2 { try migration.renameProperty(onType: "Item", from: "a", to: "b") }
                })
                #expect(try second.read { tx in try tx.object("Item", key: 1)?["b"] } == "one")
                second.close()
            }
            let db = try Database(configuration: Migrations.configuration(path, version: 3, [Self.item("c")], migration: migration))
            #expect(db.migrationRecordWrites == 0)
            #expect(try db.read { tx in try tx.objects("Item").map(\.values) } == [["id": 1, "c": "one"], ["id": 2, "c": nil]])
            #expect(try db.read { tx in try tx.objects("Item").map(\.schemaVersion) } == [1, 1])
        }
    }

    @Test func renameRefusesWhatRealmRefuses() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let v1 = ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property("a", .string)
            Property("n", .int)
        }
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [v1]))
        try first.write { tx in try tx.insert("Item", ["id": 1, "a": "one", "n": 5]) }
        first.close()
        let v2 = ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property("a", .string)
            Property("b", .string)
            Property("m", .string)
        }
        let cases: [(String, Database.MigrationBlock)] = [
            ("is still in the new schema", { m, _ in try m.renameProperty(onType: "Item", from: "a", to: "b") }),
            ("had no property 'zzz'", { m, _ in try m.renameProperty(onType: "Item", from: "zzz", to: "b") }),
            ("a rename keeps the type", { m, _ in try m.renameProperty(onType: "Item", from: "n", to: "m") }),
            ("neither the old nor the new schema has a type 'Nope'", { m, _ in try m.renameProperty(onType: "Nope", from: "n", to: "m") }),
            ("no later rename moves it on", { m, _ in try m.renameProperty(onType: "Item", from: "n", to: "elsewhere") }),
            ("inside enumerateObjects", { m, _ in
                try m.enumerateObjects(ofType: "Item") { _, _ in try m.renameProperty(onType: "Item", from: "a", to: "b") }
            }),
        ]
        let before = try Migrations.state(opening: Migrations.configuration(path, version: 1, [v1]))
        for (expected, block) in cases {
            let error = expectStrataError(.migrationFailed) {
                _ = try Database(configuration: Migrations.configuration(path, version: 2, [v2], migration: block))
            }
            #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("Nothing was written") == true)
        }
        #expect(try Migrations.state(opening: Migrations.configuration(path, version: 1, [v1])) == before)
    }

    @Test func aRenameAfterAnEnumerationMovesTheValuesIntoTheRewrittenObjects() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Migrations.seedPeople(path, count: 30)
        let v2 = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("fullName", .string)
            Property("age", .int, default: 0, indexed: true)
            Property("contact", .string, optional: true)
        }
        // A closure written version by version: version 2 rewrote every
        // object, version 3 renamed email to contact.
        let db = try Database(configuration: Migrations.configuration(path, version: 3, [v2, Self.note]) { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { old, new in
                if old!["id"].int! % 2 == 0 { new?["fullName"] = .string(old!["firstName"].string! + " " + old!["lastName"].string!) }
            }
            try migration.create("Person", value: ["id": 100, "fullName": "Created", "contact": "made@example.org"])
            try migration.renameProperty(onType: "Person", from: "email", to: "contact")
        })
        try db.read { tx throws in
            for id in Int64(1) ... 30 {
                let person = try #require(try tx.object("Person", key: .int(id)))
                #expect(person["contact"] == (id % 3 == 0 ? .string("p\(id)@example.org") : .null), "\(id)")
                #expect(person["fullName"] == (id % 2 == 0 ? .string("First\(id) Last\(id)") : ""), "\(id)")
            }
            #expect(try tx.object("Person", key: 100)?["contact"] == "made@example.org")
            #expect(try tx.objects("Person").where("age", equals: 12).map(\.primaryKey) == [12])
        }
        #expect(try db.verify() == [])
    }

    @Test func renameTypeKeepsObjectsAndIdsWithoutRewriting() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let dog = ObjectSchema("Dog") { Property("name", .string, indexed: true) }
        let hound = ObjectSchema("Hound") { Property("name", .string, indexed: true) }
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [dog]))
        try first.write { tx in
            try tx.insert("Dog", ["name": "Rex"])
            try tx.insert("Dog", ["name": "Fido"])
        }
        first.close()
        let db = try Database(configuration: Migrations.configuration(path, version: 2, [hound]) { migration, _ in
            try migration.renameType(from: "Dog", to: "Hound")
        })
        #expect(db.migrationRecordWrites == 0)
        try db.read { tx throws in
            #expect(tx.typeNames == ["Hound"])
            #expect(try tx.objects("Hound").map { $0["name"] } == ["Rex", "Fido"])
            #expect(try tx.objects("Hound").where("name", equals: "Fido").map(\.primaryKey) == [2])
        }
        // The automatic ids go on from where Dog left them.
        #expect(try db.write { tx in try tx.insert("Hound", ["name": "Bo"]) } == 3)
    }

    // MARK: Optionality

    @Test func optionalBecomingRequiredTurnsNullsIntoTheDefaultUnlessTheClosureSetsThem() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let v1 = ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property("note", .string, optional: true, indexed: true)
        }
        let v2 = ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property("note", .string, default: "none", indexed: true)
        }
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [v1]))
        try first.write { tx in
            try tx.insert("Item", ["id": 1, "note": "kept"])
            try tx.insert("Item", ["id": 2, "note": nil])
            try tx.insert("Item", ["id": 3, "note": nil])
        }
        first.close()
        let db = try Database(configuration: Migrations.configuration(path, version: 2, [v2]) { migration, _ in
            try migration.enumerateObjects(ofType: "Item") { old, new in
                if old?["id"] == 3 { new?["note"] = "set by the closure" }
            }
        })
        try db.read { tx throws in
            #expect(try tx.objects("Item").map { $0["note"] } == ["kept", "none", "set by the closure"])
            #expect(try tx.objects("Item").where("note", equals: "none").map(\.primaryKey) == [2])
            #expect(try tx.objects("Item").where("note", equals: .null).count == 0)
        }
    }

    // MARK: Types added and removed

    static let note = ObjectSchema("Note") { Property("text", .string) }

    @Test(arguments: [Database.Mode.local, .synced])
    func addingATypeIsAutomaticAtTheSameVersion(_ mode: Database.Mode) throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Migrations.seedPeople(path, count: 3, mode: mode)
        let db = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.personV1, Self.note], mode: mode))
        #expect(db.openingPlan.action == .updateCatalog)
        #expect(db.migrationRecordWrites == 0)
        try db.write { tx in try tx.insert("Note", ["text": "hello"]) }
        #expect(try db.read { tx in try tx.objects("Note").count } == 1)
        #expect(try db.read { tx in try tx.objects("Person").count } == 3)
    }

    @Test func aRemovedTypeIsKeptUntilDeleteDataRemovesIt() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.personV1, Self.note]))
        try first.write { tx in
            try tx.insert("Person", Fixtures.person(1))
            try tx.insert("Note", ["text": "remember"])
        }
        first.close()
        // Version 2 drops Note from the schema: its data stays, ignored.
        let second = try Database(configuration: Migrations.configuration(path, version: 2, [Migrations.personV1]))
        #expect(second.migrationRecordWrites == 0)
        #expect(try second.read { tx in tx.typeNames } == ["Person"])
        expectStrataError(.unknownObjectType) { try second.read { tx in _ = try tx.objects("Note") } }
        second.close()
        // Version 3 names it again: the objects come back.
        let third = try Database(configuration: Migrations.configuration(path, version: 3, [Migrations.personV1, Self.note]))
        #expect(try third.read { tx in try tx.objects("Note").map { $0["text"] } } == ["remember"])
        third.close()
        // Version 4 drops it and deletes its data in the migration.
        let deleted = Recorder<Bool>()
        let fourth = try Database(configuration: Migrations.configuration(path, version: 4, [Migrations.personV1]) { migration, _ in
            try migration.enumerateObjects(ofType: "Note") { old, new in
                #expect(old?["text"] == "remember")
                #expect(new == nil)
            }
            deleted.append(try migration.deleteData(forType: "Note"))
            deleted.append(try migration.deleteData(forType: "Note"))
            try migration.enumerateObjects(ofType: "Note") { _, _ in Issue.record("deleted data was enumerated") }
        })
        #expect(deleted.all == [true, false])
        fourth.close()
        let fifth = try Database(configuration: Migrations.configuration(path, version: 5, [Migrations.personV1, Self.note]))
        #expect(try fifth.read { tx in try tx.objects("Note").count } == 0)
        #expect(try fifth.read { tx in try tx.objects("Person").count } == 1)
    }

    @Test func aTypeNamedAgainIsComparedWithWhatItsKeptObjectsStore() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.personV1, Self.note]))
        try first.write { tx in try tx.insert("Note", ["text": "kept"]) }
        first.close()
        _ = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.personV1]))
        let numbered = ObjectSchema("Note") { Property("text", .int) }
        // At the same version, naming it again with another property type is
        // a change that needs a migration, not a new type.
        let error = expectStrataError(.migrationRequired) {
            _ = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.personV1, numbered]))
        }
        #expect(error?.message.contains("- Property 'Note.text' has been changed from 'string' to 'int'.") == true, "\(error?.message ?? "")")
        let plan = try Database.migrationPlan(for: Migrations.configuration(path, version: 1, [Migrations.personV1, Self.note]))
        #expect(plan.action == .updateCatalog)
        #expect(plan.steps.map(\.description) == ["Object type 'Note' has been added. Its objects, kept in the file since the type was removed, come back. (automatic)"])
        let db = try Database(configuration: Migrations.configuration(path, version: 2, [Migrations.personV1, numbered]) { migration, _ in
            try migration.enumerateObjects(ofType: "Note") { old, new in
                new?["text"] = .int(Int64(old!["text"].string!.count))
            }
        })
        #expect(try db.read { tx in try tx.objects("Note").map { $0["text"] } } == [4])
    }

    // MARK: Primary keys

    static let accountV1 = ObjectSchema("Account", primaryKey: "id") {
        Property("id", .int)
        Property("email", .string)
    }
    static let accountV2 = ObjectSchema("Account", primaryKey: "email") {
        Property("id", .int)
        Property("email", .string)
    }

    @Test func primaryKeyChangeReKeysEveryObject() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [Self.accountV1]))
        try first.write { tx in
            try tx.insert("Account", ["id": 1, "email": "b@example.org"])
            try tx.insert("Account", ["id": 2, "email": "a@example.org"])
        }
        first.close()
        let db = try Database(configuration: Migrations.configuration(path, version: 2, [Self.accountV2]))
        #expect(db.migrationRecordWrites == 2)
        try db.read { tx throws in
            #expect(try tx.objects("Account").map(\.primaryKey) == ["a@example.org", "b@example.org"])
            #expect(try tx.object("Account", key: "b@example.org")?["id"] == 1)
        }
    }

    @Test func primaryKeyChangeThatProducesDuplicatesFailsAndWritesNothing() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [Self.accountV1]))
        try first.write { tx in
            try tx.insert("Account", ["id": 1, "email": "same@example.org"])
            try tx.insert("Account", ["id": 2, "email": "other@example.org"])
            try tx.insert("Account", ["id": 3, "email": "same@example.org"])
        }
        first.close()
        let old = Migrations.configuration(path, version: 1, [Self.accountV1])
        let before = try Migrations.state(opening: old)
        let error = expectStrataError(.duplicatePrimaryKey) {
            _ = try Database(configuration: Migrations.configuration(path, version: 2, [Self.accountV2]))
        }
        #expect(error?.message.contains("same@example.org") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("Nothing was written") == true)
        #expect(try Migrations.state(opening: old) == before)
        // The closure can fix the values.
        let db = try Database(configuration: Migrations.configuration(path, version: 2, [Self.accountV2]) { migration, _ in
            try migration.enumerateObjects(ofType: "Account") { old, new in
                if old?["id"] == 3 { new?["email"] = "third@example.org" }
            }
        })
        #expect(try db.read { tx in try tx.objects("Account").map { $0["id"] } } == [2, 1, 3])
    }

    @Test func changingAPrimaryKeyValueWithoutAPrimaryKeyChangeIsRefused() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Migrations.seedPeople(path, count: 2)
        let old = Migrations.configuration(path, version: 1, [Migrations.personV1])
        let before = try Migrations.state(opening: old)
        let error = expectStrataError(.migrationFailed) {
            _ = try Database(configuration: Migrations.configuration(path, version: 2, [Migrations.personV1]) { migration, _ in
                try migration.enumerateObjects(ofType: "Person") { _, new in new?["id"] = .int(new!["id"].int! + 100) }
            })
        }
        #expect(error?.message.contains("changed the primary key") == true, "\(error?.message ?? "")")
        #expect(try Migrations.state(opening: old) == before)
    }

    // MARK: Effective schema version

    static let issueV5 = ObjectSchema("Issue", primaryKey: "id") {
        Property("id", .int)
        Property("title", .string)
    }
    static let issueV6 = ObjectSchema("Issue", primaryKey: "id") {
        Property("id", .int)
        Property("title", .string)
        Property("costImpact", .double, default: 0)
    }

    @Test func existingObjectsKeepTheirEffectiveVersionUntilSavedAgain() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        let v5 = try Database(configuration: Migrations.configuration(path, version: 5, [Self.issueV5]))
        try v5.write { tx in
            for id in 1 ... 4 { try tx.insert("Issue", ["id": .int(Int64(id)), "title": .string("Issue \(id)")]) }
        }
        v5.close()
        let v6 = try Database(configuration: Migrations.configuration(path, version: 6, [Self.issueV6]))
        #expect(v6.migrationRecordWrites == 0)
        try v6.read { tx throws in
            #expect(try tx.objects("Issue").map(\.schemaVersion) == [5, 5, 5, 5])
            #expect(try tx.objects("Issue").map { $0["costImpact"] } == [0.0, 0.0, 0.0, 0.0])
        }
        try v6.write { tx in try tx.update("Issue", key: 2, ["costImpact": 2.5]) }
        try v6.read { tx throws in
            #expect(try tx.objects("Issue").map(\.schemaVersion) == [5, 6, 5, 5])
            #expect(try tx.objects("Issue").whereSchemaVersion(..<6).map(\.primaryKey) == [1, 3, 4])
            #expect(try tx.objects("Issue").whereSchemaVersion(6...).map(\.primaryKey) == [2])
            #expect(try tx.objects("Issue").whereSchemaVersion(7...).count == 0)
        }
    }

    // MARK: Version jumps

    @Test func jumpingFromVersionOneToFourRunsTheClosureOnce() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Migrations.seedPeople(path, count: 10)
        let v4 = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property("age", .int, default: 0, indexed: true)
            Property("email", .string, optional: true)
            Property("nickname", .string, default: "-")
        }
        let calls = Recorder<UInt64>()
        let db = try Database(configuration: Migrations.configuration(path, version: 4, [v4]) { migration, oldVersion in
            calls.append(oldVersion)
            #expect(migration.oldSchemaVersion == 1 && migration.newSchemaVersion == 4)
            if oldVersion < 2 {
                try migration.enumerateObjects(ofType: "Person") { old, new in
                    new?["name"] = .string("\(old!["firstName"].string!) \(old!["lastName"].string!)")
                }
            }
            if oldVersion < 4 {
                try migration.enumerateObjects(ofType: "Person") { _, new in
                    // The second walk starts from what the first one wrote.
                    new?["name"] = .string(new!["name"].string!.uppercased())
                }
            }
        })
        #expect(calls.all == [1])
        #expect(try db.read { tx in try tx.object("Person", key: 4)?.values } == ["id": 4, "name": "FIRST4 LAST4", "age": 4, "email": nil, "nickname": "-"])
    }

    // MARK: Failures leave the file as it was

    struct Halfway: Error {}

    @Test(arguments: [false, true])
    func aClosureThatThrowsHalfwayLeavesEveryObjectAsItWas(_ afterCreating: Bool) throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Migrations.seedPeople(path, count: 100_000)
        let old = Migrations.configuration(path, version: 1, [Migrations.personV1])
        let before = try Migrations.state(opening: old)
        let error = expectStrataError(.migrationFailed) {
            _ = try Database(configuration: Migrations.configuration(path, version: 2, [Migrations.personV2, Self.note]) { migration, _ in
                if afterCreating { try migration.create("Note", value: ["text": "made in the migration"]) }
                var seen = 0
                try migration.enumerateObjects(ofType: "Person") { old, new in
                    seen += 1
                    if seen == 50_000 { throw Halfway() }
                    new?["fullName"] = .string(old!["firstName"].string!)
                }
            })
        }
        #expect(error?.message.contains("Halfway") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("still at version 1") == true)
        #expect(try Migrations.state(opening: old) == before)
    }

    @Test func anInvalidValueSetByTheClosureFailsTheMigration() throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Migrations.seedPeople(path, count: 5)
        let old = Migrations.configuration(path, version: 1, [Migrations.personV1])
        let before = try Migrations.state(opening: old)
        let cases: [(StrataError.Code, String, Database.MigrationBlock)] = [
            (.invalidValue, "'Person.fullName' (string) to null", { m, _ in try m.enumerateObjects(ofType: "Person") { _, new in new?["fullName"] = .null } }),
            (.invalidValue, "'Person.fullName' (string) to 42", { m, _ in try m.enumerateObjects(ofType: "Person") { _, new in new?["fullName"] = 42 } }),
            (.unknownProperty, "has no property 'nope'", { m, _ in try m.enumerateObjects(ofType: "Person") { _, new in new?["nope"] = "x" } }),
            (.missingValue, "'Person.fullName' is required", { m, _ in try m.create("Person", value: ["id": 1000]) }),
        ]
        for (code, text, block) in cases {
            let error = expectStrataError(code) {
                _ = try Database(configuration: Migrations.configuration(path, version: 2, [Migrations.personV2], migration: block))
            }
            #expect(error?.message.contains(text) == true, "\(error?.message ?? "")")
        }
        #expect(try Migrations.state(opening: old) == before)
    }

    /// How a migration that changed much of the file fails.
    enum LateFailure: String, CaseIterable, Sendable {
        /// The closure throws once it has done everything else.
        case closureThrows
        /// A rename chain left open, found after the closure returned.
        case renameLeftOpen
        /// Two accounts with one new primary key, found when the type is
        /// rewritten after the closure returned.
        case duplicateKey
    }

    static let dog = ObjectSchema("Dog") { Property("name", .string, indexed: true) }
    static let hound = ObjectSchema("Hound") {
        Property("name", .string, indexed: true)
        Property("isGood", .bool, default: true)
    }
    static let tag = ObjectSchema("Tag", primaryKey: "name") {
        Property("name", .string)
        Property("uses", .int, default: 0, indexed: true)
    }
    /// Version 2 of Person: fullName replaces firstName and lastName, and
    /// the index moves from age to fullName.
    static let personReindexed = ObjectSchema("Person", primaryKey: "id") {
        Property("id", .int)
        Property("fullName", .string, indexed: true)
        Property("age", .int, default: 0)
        Property("email", .string, optional: true)
    }

    @Test(arguments: LateFailure.allCases)
    func aFailedMigrationLeavesNoTraceOfTheTypesIndexesAndRenamesItMade(_ failure: LateFailure) throws {
        let folder = try TemporaryFolder()
        let path = folder.path()
        try Migrations.seedPeople(path, count: 2_000)
        let old = Migrations.configuration(path, version: 1, [Migrations.personV1, Self.dog, Self.note, Self.accountV1])
        try { () throws in
            let db = try Database(configuration: old)
            defer { db.close() }
            try db.write { tx in
                for i in 0 ..< 50 { try tx.insert("Dog", ["name": .string("Rex\(i % 7)")]) }
                for i in 0 ..< 10 { try tx.insert("Note", ["text": .string("note \(i)")]) }
                for id in 1 ... 20 as ClosedRange<Int64> {
                    let shared = failure == .duplicateKey && id == 20
                    try tx.insert("Account", ["id": .int(id), "email": .string(shared ? "a1@example.org" : "a\(id)@example.org")])
                }
            }
        }()
        let before = try Migrations.state(opening: old)
        func migration(failing: LateFailure?) -> Database.Configuration {
            Migrations.configuration(path, version: 2, [Self.personReindexed, Self.hound, Self.tag, Self.accountV2]) { migration, _ in
                try migration.renameType(from: "Dog", to: "Hound")
                if failing == .renameLeftOpen { try migration.renameProperty(onType: "Person", from: "lastName", to: "surname") }
                try migration.enumerateObjects(ofType: "Person") { old, new in
                    new?["fullName"] = .string(old!["firstName"].string! + " " + old!["lastName"].string!)
                }
                try migration.enumerateObjects(ofType: "Note") { old, _ in
                    try migration.create("Tag", value: ["name": old!["text"], "uses": 1])
                }
                _ = try migration.deleteData(forType: "Note")
                if failing == .closureThrows { throw Halfway() }
            }
        }
        let expected: StrataError.Code = switch failure {
        case .closureThrows, .renameLeftOpen: .migrationFailed
        case .duplicateKey: .duplicatePrimaryKey
        }
        expectStrataError(expected) { _ = try Database(configuration: migration(failing: failure)) }
        #expect(try Migrations.state(opening: old) == before)
        // Without the failure, the same migration changes every one of those databases.
        guard failure != .duplicateKey else { return }
        let migrated = try Database(configuration: migration(failing: nil))
        migrated.close()
        let after = try expectFileVerified(path)
        let changed = Set(after.digests.keys).union(before.databases.keys).filter { after.digests[$0] != before.databases[$0] }
        #expect(changed.isSuperset(of: ["__strata.meta", "__strata.t1", "__strata.t1.i4", "__strata.t3", "__strata.t4"]), "\(changed.sorted())")
        #expect(after.objectCounts == ["Person": 2_000, "Hound": 50, "Tag": 10, "Account": 20])
    }
}
