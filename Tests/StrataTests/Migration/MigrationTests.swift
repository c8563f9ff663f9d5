import Foundation
import Testing

@testable import Strata

@Suite(.temporaryFolder) struct MigrationTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    // MARK: firstName + lastName → fullName

    @Test func fullNameMigrationCombinesOldValuesAndDropsTheOldProperties() throws {
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
        #expect(db.fileSchemaVersion == 2)
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 500)
        try db.read { tx throws in
            let people = try tx.objects("Person").map(\.values)
            #expect(people.count == 500)
            for (offset, person) in people.enumerated() {
                let id = Int64(offset + 1)
                #expect(
                    person == [
                        "id": .int(id), "fullName": .string("First\(id) Last\(id)"), "age": .int(id % 90),
                        "email": id % 3 == 0 ? .string("p\(id)@example.org") : .null,
                    ])
            }
            #expect(try tx.objects("Person").whereSchemaVersion(2...).count == 500)
            // The index still answers, through the rebuilt index.
            #expect(
                try tx.objects("Person").where("age", equals: 41).map { $0["id"].int! } == [
                    41, 131, 221, 311, 401, 491,
                ])
            let ada = try #require(try tx.object("Person", key: 7))
            expectStrataError(.unknownProperty) { _ = try ada.value("firstName") }
        }
        db.close()
        // Reopening at version 2 runs nothing; version 1 is refused.
        let reopened = try Database(configuration: config)
        #expect(calls.all == [1])
        #expect(Instrumentation.recordWritesOfLastOpen(reopened.path) == 0)
        reopened.close()
        expectStrataError(.schemaVersionTooLow) {
            _ = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.personV1]))
        }
    }

    @Test func oldObjectsAreReadOnlyViewsOfTheOldSchemaAndNewObjectsStartFromTheNewOne() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 3)
        let seen = Recorder<String>()
        _ = try Database(
            configuration: Migrations.configuration(path, version: 2, [Migrations.personV2]) { migration, _ in
                try migration.enumerateObjects(ofType: "Person") { old, new in
                    let old = try #require(old)
                    let new = try #require(new)
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

    /// Books 1, 2, … with `years` as their string years, at version 1.
    private func seedBooks(_ path: String, years: [String]) throws {
        let db = try Database(configuration: Migrations.configuration(path, version: 1, [Self.bookV1]))
        defer { db.close() }
        try db.write { tx in
            for (offset, year) in years.enumerated() {
                try tx.insert("Book", ["id": .int(Int64(offset + 1)), "year": .string(year)])
            }
        }
    }

    @Test func yearStringBecomesIntWhileANewPropertyGetsItsDefault() throws {
        let path = folder.path()
        try seedBooks(path, years: ["1843", "unknown", "1936"])
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [Self.bookV2]) { migration, _ in
                try migration.enumerateObjects(ofType: "Book") { old, new in
                    // Before the closure sets it, the new int starts at its default.
                    #expect(new?["year"] == .int(0))
                    if let year = Int64(old!["year"].string!) { new?["year"] = .int(year) }
                }
            })
        let books = try db.read { tx in try tx.objects("Book").map(\.values) }
        #expect(
            books == [
                ["id": 1, "year": 1843, "hometown": "N/A"],
                ["id": 2, "year": 0, "hometown": "N/A"],
                ["id": 3, "year": 1936, "hometown": "N/A"],
            ])
        // A type change rewrites the whole table, closure or not.
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 3)
        #expect(try db.read { tx in try tx.objects("Book").map(\.schemaVersion) } == [2, 2, 2])
    }

    @Test func aTypeChangeNoCodeConvertsIsRefusedAndTheFileIsAsItWas() throws {
        let path = folder.path()
        try seedBooks(path, years: ["1843"])
        let before = try Migrations.state(opening: Migrations.configuration(path, version: 1, [Self.bookV1]))
        // At the old version the message already says what the migration will need.
        let sameVersion = #expect(throws: StrataError.self) {
            try Database(configuration: Migrations.configuration(path, version: 1, [Self.bookV2]))
        }
        #expect(sameVersion?.code == .migrationRequired)
        #expect(sameVersion?.message.contains("Raise the schema version to 2") == true)
        #expect(sameVersion?.message.contains("discardValues(of:onType:)") == true)
        let config = Migrations.configuration(path, version: 2, [Self.bookV2])
        let plan = try Database.migrationPlan(for: config)
        #expect(plan.action == .refuse)
        #expect(plan.steps.first { $0.change.kind == .propertyTypeChanged }?.handling == .forbidden)
        let error = #expect(throws: StrataError.self) { try Database(configuration: config) }
        #expect(error?.code == .migrationRequired)
        let message = error?.message ?? ""
        #expect(message.contains("'Book.year' has been changed from 'string' to 'int'"))
        #expect(message.contains("reset to the default, 0"))
        #expect(message.contains("migration closure") && message.contains("typed step that maps 'Book'"))
        #expect(message.contains("config.discardValues(of: \"year\", onType: \"Book\")"))
        #expect(message.contains("Nothing was written."))
        #expect(plan.error?.message == error?.message)
        #expect(try Migrations.state(opening: Migrations.configuration(path, version: 1, [Self.bookV1])) == before)
    }

    @Test func discardingTheValuesOfATypeChangeStartsEveryValueAtTheDefault() throws {
        let path = folder.path()
        try seedBooks(path, years: ["1843"])
        var config = Migrations.configuration(path, version: 2, [Self.bookV2])
        config.discardValues(of: "year", onType: "Book")
        let plan = try Database.migrationPlan(for: config)
        #expect(plan.action == .migrate)
        #expect(
            plan.steps.first { $0.change.kind == .propertyTypeChanged }?.effect
                == "Its stored values are discarded (Configuration.discardValues): every object reads the default, 0; the type's records are rewritten."
        )
        let db = try Database(configuration: config)
        #expect(try db.read { tx in try tx.object("Book", key: 1)?.values } == ["id": 1, "year": 0, "hometown": "N/A"])
    }

    @Test func aClosureThatLeavesAChangedTypeUnsetCountsAsTheChoice() throws {
        let path = folder.path()
        try seedBooks(path, years: ["1843", "unknown"])
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [Self.bookV2]) { migration, _ in
                try migration.enumerateObjects(ofType: "Book") { old, new in
                    if let year = Int(old?["year"].string ?? "") { new?["year"] = .int(Int64(year)) }
                }
            })
        #expect(try db.read { tx in try tx.objects("Book").map { $0["year"] } } == [1843, 0])
    }

    // MARK: Optionality

    @Test func optionalBecomingRequiredTurnsNullsIntoTheDefaultUnlessTheClosureSetsThem() throws {
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
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [v2]) { migration, _ in
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

    @Test(arguments: Fixtures.modes)
    func addingATypeIsAutomaticAtTheSameVersion(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 3, mode: mode)
        let db = try Database(
            configuration: Migrations.configuration(
                path, version: 1, [Migrations.personV1, Migrations.note], mode: mode))
        #expect(db.openingPlan.action == .updateCatalog)
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 0)
        try db.write { tx in try tx.insert("Note", ["text": "hello"]) }
        #expect(try db.read { tx in try tx.objects("Note").count } == 1)
        #expect(try db.read { tx in try tx.objects("Person").count } == 3)
    }

    @Test func aRemovedTypeIsKeptUntilDeleteDataRemovesIt() throws {
        let path = folder.path()
        let first = try Database(
            configuration: Migrations.configuration(path, version: 1, [Migrations.personV1, Migrations.note]))
        try first.write { tx in
            try tx.insert("Person", Fixtures.person(1))
            try tx.insert("Note", ["text": "remember"])
        }
        first.close()
        // Version 2 drops Note from the schema: its data stays, ignored.
        let second = try Database(configuration: Migrations.configuration(path, version: 2, [Migrations.personV1]))
        #expect(Instrumentation.recordWritesOfLastOpen(second.path) == 0)
        #expect(try second.read { tx in tx.typeNames } == ["Person"])
        expectStrataError(.unknownObjectType) { try second.read { tx in _ = try tx.objects("Note") } }
        second.close()
        // Version 3 names it again: the objects come back.
        let third = try Database(
            configuration: Migrations.configuration(path, version: 3, [Migrations.personV1, Migrations.note]))
        #expect(try third.read { tx in try tx.objects("Note").map { $0["text"] } } == ["remember"])
        third.close()
        // Version 4 drops it and deletes its data in the migration.
        let deleted = Recorder<Bool>()
        let fourth = try Database(
            configuration: Migrations.configuration(path, version: 4, [Migrations.personV1]) { migration, _ in
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
        let fifth = try Database(
            configuration: Migrations.configuration(path, version: 5, [Migrations.personV1, Migrations.note]))
        #expect(try fifth.read { tx in try tx.objects("Note").count } == 0)
        #expect(try fifth.read { tx in try tx.objects("Person").count } == 1)
    }

    @Test func aTypeNamedAgainIsComparedWithWhatItsKeptObjectsStore() throws {
        let path = folder.path()
        let first = try Database(
            configuration: Migrations.configuration(path, version: 1, [Migrations.personV1, Migrations.note]))
        try first.write { tx in try tx.insert("Note", ["text": "kept"]) }
        first.close()
        _ = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.personV1]))
        let numbered = ObjectSchema("Note") { Property("text", .int) }
        // At the same version, naming it again with another property type is
        // a change that needs a migration, not a new type.
        let error = expectStrataError(.migrationRequired) {
            _ = try Database(
                configuration: Migrations.configuration(path, version: 1, [Migrations.personV1, numbered]))
        }
        #expect(
            error?.message.contains("- Property 'Note.text' has been changed from 'string' to 'int'.") == true,
            "\(error?.message ?? "")")
        let plan = try Database.migrationPlan(
            for: Migrations.configuration(path, version: 1, [Migrations.personV1, Migrations.note]))
        #expect(plan.action == .updateCatalog)
        #expect(
            plan.steps.map(\.description) == [
                "Object type 'Note' has been added. Its objects, kept in the file since the type was removed, come back. (automatic)"
            ])
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [Migrations.personV1, numbered]) { migration, _ in
                try migration.enumerateObjects(ofType: "Note") { old, new in
                    new?["text"] = .int(Int64(old!["text"].string!.count))
                }
            })
        #expect(try db.read { tx in try tx.objects("Note").map { $0["text"] } } == [4])
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

    @Test(arguments: Fixtures.modes) func existingObjectsKeepTheirEffectiveVersionUntilSavedAgain(_ mode: Database.Mode)
        throws
    {
        let path = folder.path()
        let v5 = try Database(configuration: Migrations.configuration(path, version: 5, [Self.issueV5], mode: mode))
        try v5.write { tx in
            for id in 1 ... 4 { try tx.insert("Issue", ["id": .int(Int64(id)), "title": .string("Issue \(id)")]) }
        }
        v5.close()
        let v6 = try Database(configuration: Migrations.configuration(path, version: 6, [Self.issueV6], mode: mode))
        #expect(Instrumentation.recordWritesOfLastOpen(v6.path) == 0)
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
        let db = try Database(
            configuration: Migrations.configuration(path, version: 4, [v4]) { migration, oldVersion in
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
        #expect(
            try db.read { tx in try tx.object("Person", key: 4)?.values } == [
                "id": 4, "name": "FIRST4 LAST4", "age": 4, "email": nil, "nickname": "-",
            ])
    }
}
