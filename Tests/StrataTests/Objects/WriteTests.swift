import Foundation
import Testing

@testable import Strata

@Suite(.temporaryFolder) struct WriteTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    static let schema = Schema([
        Fixtures.person,
        ObjectSchema("Note") {
            Property("text", .string)
            Property("priority", .int, default: 1, indexed: true)
        },
        ObjectSchema("Tag", primaryKey: "name") {
            Property("name", .string)
            Property("uses", .int, default: 0)
        },
    ])

    struct Failure: Error {}

    /// A database holding Ada (1), Charles (2) and Annabella (3).
    static func seeded(_ folder: TemporaryFolder, readOnly: Bool = false, mode: Database.Mode) throws -> Database {
        let config = Fixtures.configuration(folder.path(), schema: schema, mode: mode)
        let db = try Database(configuration: config)
        try db.write { tx in
            try tx.insert("Person", Fixtures.person(1, "Ada", "Lovelace", age: 36, email: "ada@example.org"))
            try tx.insert("Person", Fixtures.person(2, "Charles", "Babbage", age: 79))
            try tx.insert("Person", Fixtures.person(3, "Annabella", "Lovelace", age: 40))
        }
        return db
    }

    /// Every Person's values, in primary-key order.
    static func people(_ db: Database) throws -> [[String: Value]] {
        try db.read { tx in try tx.objects("Person").map(\.values) }
    }

    static func ids(_ collection: ObjectCollection) throws -> [Int64] {
        try collection.map { $0["id"].int ?? -1 }
    }

    // MARK: Rejected writes

    @Test(arguments: Fixtures.modes) func insertWithDuplicatePrimaryKeyThrowsAndKeepsTheFirstObject(
        _ mode: Database.Mode
    ) throws {
        let db = try Self.seeded(folder, mode: mode)
        let before = try Self.people(db)
        let error = expectStrataError(.duplicatePrimaryKey) {
            try db.write { tx in _ = try tx.insert("Person", Fixtures.person(2, "Impostor", "Nobody", age: 1)) }
        }
        #expect(error?.message.contains("'Person'") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("primary key 2") == true, "\(error?.message ?? "")")
        #expect(try Self.people(db) == before)
        #expect(try db.read { try $0.objects("Person").where("age", equals: 1).count } == 0)
    }

    /// The three ways to write given values to an existing or new Person.
    enum Write: String, CaseIterable, Sendable {
        case insert, upsert, update

        /// Applies `changes` to Person 4 (insert) or Person 1 (upsert, update).
        func apply(_ changes: [String: Value], _ tx: WriteTransaction) throws {
            switch self {
            case .insert: try tx.insert("Person", Fixtures.person(4).merging(changes) { $1 })
            case .upsert: try tx.upsert("Person", Fixtures.person(1).merging(changes) { $1 })
            case .update: try tx.update("Person", key: 1, changes)
            }
        }
    }

    /// Runs a write that must fail with `code`, and checks that nothing changed.
    @discardableResult
    func expectRejected(
        _ code: StrataError.Code, _ write: Write, _ changes: [String: Value], mode: Database.Mode,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> String {
        let db = try Self.seeded(folder, mode: mode)
        let before = try Self.people(db)
        let error = expectStrataError(code, sourceLocation: sourceLocation) {
            try db.write { tx in try write.apply(changes, tx) }
        }
        #expect(try Self.people(db) == before, "\(write) wrote something", sourceLocation: sourceLocation)
        return error?.message ?? ""
    }

    @Test(arguments: Write.allCases, Fixtures.modes)
    func unknownPropertyIsRejected(_ write: Write, _ mode: Database.Mode) throws {
        let message = try expectRejected(.unknownProperty, write, ["nickname": "Ada"], mode: mode)
        #expect(message.contains("'Person'"), "\(message)")
        #expect(message.contains("'nickname'"), "\(message)")
    }

    @Test(arguments: Write.allCases, Fixtures.modes)
    func valueOfWrongTypeIsRejected(_ write: Write, _ mode: Database.Mode) throws {
        let message = try expectRejected(.invalidValue, write, ["age": "thirty"], mode: mode)
        #expect(message.contains("'Person.age'"), "\(message)")
    }

    @Test(arguments: Write.allCases, Fixtures.modes)
    func nullForRequiredPropertyIsRejected(_ write: Write, _ mode: Database.Mode) throws {
        let message = try expectRejected(.invalidValue, write, ["firstName": nil], mode: mode)
        #expect(message.contains("'Person.firstName'"), "\(message)")
        #expect(message.contains("null"), "\(message)")
    }

    @Test(arguments: [Write.insert, .upsert], Fixtures.modes)
    func missingRequiredPropertyWithoutDefaultIsRejected(_ write: Write, _ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        let before = try Self.people(db)
        let error = expectStrataError(.missingValue) {
            try db.write { tx in
                let values: [String: Value] = ["id": 1, "lastName": "Lovelace"]
                _ =
                    try write == .insert
                    ? tx.insert("Person", values.merging(["id": 4]) { $1 }) : tx.upsert("Person", values)
            }
        }
        #expect(error?.message.contains("'Person.firstName'") == true, "\(error?.message ?? "")")
        #expect(try Self.people(db) == before)
    }

    @Test(arguments: Fixtures.modes) func caughtErrorsInsideAWriteKeepOnlyTheGoodWrites(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        let ada = try Self.people(db)[0]
        let bad: [(StrataError.Code, (WriteTransaction) throws -> Void)] = [
            (.duplicatePrimaryKey, { _ = try $0.insert("Person", Fixtures.person(1, "Impostor", age: 99)) }),
            (.invalidValue, { _ = try $0.insert("Person", Fixtures.person(5).merging(["age": "old"]) { $1 }) }),
            (.unknownProperty, { try $0.update("Person", key: 1, ["age": 99, "nickname": "A"]) }),
            (
                .invalidValue,
                { _ = try $0.upsert("Person", Fixtures.person(1, age: 99).merging(["firstName": nil]) { $1 }) }
            ),
            (.objectNotFound, { try $0.update("Person", key: 99, ["age": 99]) }),
            (.invalidValue, { try $0.update("Person", key: 1, ["id": 6, "age": 99]) }),
            (.missingValue, { _ = try $0.insert("Person", ["id": 7, "lastName": "Nobody", "age": 99]) }),
        ]
        try db.write { tx in
            try tx.insert("Person", Fixtures.person(4, "Grace", "Hopper", age: 85))
            for (code, write) in bad {
                expectStrataError(code) { try write(tx) }
            }
            try tx.insert("Person", Fixtures.person(8, "Alan", "Turing", age: 41))
        }
        try db.read { tx throws in
            #expect(try Self.ids(tx.objects("Person")) == [1, 2, 3, 4, 8])
            #expect(try tx.object("Person", key: 1)?.values == ada)
            #expect(try tx.objects("Person").where("age", equals: 99).count == 0)
            #expect(try tx.objects("Person").where("age", equals: 85).map { $0["firstName"] } == ["Grace"])
        }
    }

    @Test(arguments: Fixtures.modes) func rethrownErrorInsideAWriteCommitsNothing(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        let before = try Self.people(db)
        expectStrataError(.duplicatePrimaryKey) {
            try db.write { tx in
                try tx.insert("Person", Fixtures.person(4, "Grace", "Hopper", age: 85))
                try tx.update("Person", key: 2, ["age": 80])
                try tx.insert("Person", Fixtures.person(1))
            }
        }
        #expect(try Self.people(db) == before)
    }

    @Test(arguments: Fixtures.modes) func errorThrownByTheWriteClosureRollsBackEverything(_ mode: Database.Mode) throws
    {
        let db = try Self.seeded(folder, mode: mode)
        let before = try Self.people(db)
        #expect(throws: Failure.self) {
            try db.write { tx in
                try tx.insert("Person", Fixtures.person(4, "Grace", "Hopper", age: 85))
                try tx.upsert("Person", Fixtures.person(1, "Ada", "King", age: 37))
                try tx.update("Person", key: 2, ["age": 80])
                try tx.delete("Person", key: 3)
                try tx.insert("Note", ["text": "kept?"])
                throw Failure()
            }
        }
        #expect(try Self.people(db) == before)
        try db.read { tx throws in
            #expect(try tx.objects("Note").count == 0)
            #expect(try Self.ids(tx.objects("Person").where("age", equals: 85)) == [])
            #expect(try Self.ids(tx.objects("Person").where("age", equals: 36)) == [1])
        }
        // The automatic id handed out in the rolled-back write is free again.
        #expect(try db.write { try $0.insert("Note", ["text": "first"]) } == 1)
    }

    @Test(arguments: Fixtures.modes) func writeOnReadOnlyDatabaseThrowsReadOnly(_ mode: Database.Mode) throws {
        let before: [[String: Value]]
        do {
            before = try Self.people(Self.seeded(folder, mode: mode))
        }
        var config = Fixtures.configuration(folder.path(), schema: Self.schema, mode: mode)
        config.readOnly = true
        let db = try Database(configuration: config)
        let error = expectStrataError(.readOnly) {
            try db.write { tx in _ = try tx.insert("Person", Fixtures.person(4)) }
        }
        #expect(error?.message.contains(folder.path()) == true)
        #expect(try Self.people(db) == before)
    }

    // MARK: Upsert, update, delete

    @Test(arguments: Fixtures.modes) func upsertInsertsThenReplacesEveryProperty(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        let key = try db.write {
            try $0.upsert("Person", Fixtures.person(4, "Grace", "Hopper", age: 85, email: "grace@example.org"))
        }
        #expect(key == 4)
        #expect(
            try db.read { try $0.object("Person", key: 4)?.values }
                == Fixtures.person(4, "Grace", "Hopper", age: 85, email: "grace@example.org"))
        try db.write { tx in _ = try tx.upsert("Person", ["id": 4, "firstName": "G.", "lastName": "Hopper"]) }
        try db.read { tx throws in
            // Omitted properties go back to their defaults: age 0, email null.
            #expect(
                try tx.object("Person", key: 4)?.values == [
                    "id": 4, "firstName": "G.", "lastName": "Hopper", "age": 0, "email": nil,
                ])
            #expect(try tx.objects("Person").count == 4)
        }
    }

    @Test(arguments: Fixtures.modes) func updateChangesOnlyTheGivenProperties(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        let before = try Self.people(db)
        try db.write { tx in
            try tx.update("Person", key: 1, ["age": 37, "email": nil])
            try tx.update("Person", key: 2, ["id": 2, "lastName": "B."])
            try tx.update("Person", key: 3, [:])
        }
        let after = try Self.people(db)
        #expect(after[0] == before[0].merging(["age": 37, "email": nil]) { $1 })
        #expect(after[1] == before[1].merging(["lastName": "B."]) { $1 })
        #expect(after[2] == before[2])
    }

    @Test(arguments: Fixtures.modes) func updateOfMissingObjectThrowsObjectNotFound(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        let error = expectStrataError(.objectNotFound) {
            try db.write { tx in try tx.update("Person", key: 42, ["age": 1]) }
        }
        #expect(error?.message.contains("'Person'") == true)
        #expect(error?.message.contains("42") == true)
        #expect(try db.read { try $0.objects("Person").count } == 3)
    }

    @Test(arguments: Fixtures.modes) func updateCannotChangeThePrimaryKey(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        let before = try Self.people(db)
        let error = expectStrataError(.invalidValue) {
            try db.write { tx in try tx.update("Person", key: 1, ["id": 10]) }
        }
        #expect(error?.message.contains("'Person.id'") == true, "\(error?.message ?? "")")
        #expect(try Self.people(db) == before)
    }

    @Test(arguments: Fixtures.modes) func updateOnTypeWithoutPrimaryKeyChangesThatObject(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        let id = try db.write { try $0.insert("Note", ["text": "draft", "priority": 2]) }
        try db.write { tx in try tx.update("Note", key: id, ["text": "final"]) }
        let notes = try db.read { tx in try tx.objects("Note").map { [$0.primaryKey: $0.values] } }
        #expect(notes == [[id: ["text": "final", "priority": 2]]])
    }

    @Test(arguments: Fixtures.modes) func updateRejectsAPrimaryKeyThatDiffersOnlyInUnicodeNormalization(
        _ mode: Database.Mode
    ) throws {
        let db = try Self.seeded(folder, mode: mode)
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        try db.write { tx in _ = try tx.insert("Tag", ["name": .string(composed), "uses": 1]) }
        // Swift's == calls the two strings equal, but as keys they are different bytes.
        expectStrataError(.invalidValue) {
            try db.write { tx in try tx.update("Tag", key: .string(composed), ["name": .string(decomposed), "uses": 2])
            }
        }
        try db.read { tx throws in
            let keys = try tx.objects("Tag").map { Array(($0.primaryKey.string ?? "").utf8) }
            #expect(keys == [Array(composed.utf8)])
            #expect(try tx.object("Tag", key: .string(composed))?["uses"] == 1)
        }
    }

    @Test(arguments: Fixtures.modes) func deleteReturnsTrueThenFalse(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        let (first, second, missing) = try db.write { tx in
            (try tx.delete("Person", key: 2), try tx.delete("Person", key: 2), try tx.delete("Person", key: 99))
        }
        #expect(first)
        #expect(!second)
        #expect(!missing)
        try db.read { tx throws in
            #expect(try tx.object("Person", key: 2) == nil)
            #expect(try Self.ids(tx.objects("Person")) == [1, 3])
        }
    }

    @Test(arguments: Fixtures.modes) func deleteAllEmptiesOnlyThatType(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        try db.write { tx in
            try tx.insert("Note", ["text": "keep me"])
            try tx.deleteAll("Person")
        }
        try db.read { tx throws in
            #expect(try tx.objects("Person").count == 0)
            #expect(try tx.objects("Person").isEmpty)
            #expect(try tx.objects("Person").where("age", equals: 36).count == 0)
            #expect(try tx.objects("Note").count == 1)
            #expect(tx.typeNames == ["Note", "Person", "Tag"])
        }
        try db.write { tx in _ = try tx.insert("Person", Fixtures.person(1, "Ada")) }
        #expect(try db.read { try $0.objects("Person").map { $0["firstName"] } } == ["Ada"])
    }

    // MARK: Reading

    @Test(arguments: Fixtures.modes) func lookupWithKeyOfWrongTypeThrowsInvalidValue(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        try db.read { tx throws in
            expectStrataError(.invalidValue) { _ = try tx.object("Person", key: "1") }
            expectStrataError(.invalidValue) { _ = try tx.object("Person", key: 1.5) }
            expectStrataError(.invalidValue) { _ = try tx.object("Person", key: nil) }
            expectStrataError(.invalidValue) { _ = try tx.object("Tag", key: 1) }
            expectStrataError(.invalidValue) { _ = try tx.object("Note", key: "1") }
            expectStrataError(.invalidValue) { _ = try tx.object("Note", key: 0) }
            #expect(try tx.object("Person", key: 1)?["firstName"] == "Ada")
        }
    }

    @Test(arguments: Fixtures.modes) func unknownTypeNameThrowsAndListsTheKnownTypes(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        let error = expectStrataError(.unknownObjectType) { _ = try db.read { try $0.objects("Pet") } }
        #expect(error?.message.contains("'Pet'") == true)
        #expect(error?.message.contains("Note, Person, Tag") == true, "\(error?.message ?? "")")
        expectStrataError(.unknownObjectType) { _ = try db.read { try $0.object("Pet", key: 1) } }
        expectStrataError(.unknownObjectType) { try db.write { tx in _ = try tx.insert("Pet", ["id": 1]) } }
        expectStrataError(.unknownObjectType) { try db.write { tx in _ = try tx.upsert("Pet", ["id": 1]) } }
        expectStrataError(.unknownObjectType) { try db.write { tx in try tx.update("Pet", key: 1, [:]) } }
        expectStrataError(.unknownObjectType) { try db.write { tx in _ = try tx.delete("Pet", key: 1) } }
        expectStrataError(.unknownObjectType) { try db.write { tx in try tx.deleteAll("Pet") } }
    }

    @Test(arguments: Fixtures.modes) func whereOnUnindexedPropertyAndPrimaryKeyReturnsTheMatchingObjects(
        _ mode: Database.Mode
    ) throws {
        let db = try Self.seeded(folder, mode: mode)
        try db.read { tx throws in
            let people = try tx.objects("Person")
            #expect(try Self.ids(people.where("lastName", equals: "Lovelace")) == [1, 3])
            #expect(try Self.ids(people.where("lastName", equals: "Hopper")) == [])
            #expect(try Self.ids(people.where("email", equals: nil)) == [2, 3])
            #expect(try Self.ids(people.where("id", equals: 2)) == [2])
            #expect(try Self.ids(people.where("id", equals: 99)) == [])
            #expect(try Self.ids(people.where("lastName", equals: "Lovelace").where("firstName", equals: "Ada")) == [1])
            #expect(try Self.ids(people.where("id", equals: 3).where("lastName", equals: "Babbage")) == [])
            #expect(try people.where("lastName", equals: "Lovelace").count == 2)
            expectStrataError(.invalidValue) { _ = try people.where("age", equals: "old").count }
            expectStrataError(.unknownProperty) { _ = try people.where("nickname", equals: "A").count }
        }
    }

    @Test(arguments: Fixtures.modes) func collectionOperationsBehaveAsDocumented(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        try db.write { tx in _ = try tx.insert("Person", Fixtures.person(4, "Grace", "Hopper", age: 85)) }
        try db.read { tx throws in
            let people = try tx.objects("Person")
            #expect(people.typeName == "Person")
            #expect(try people.count == 4)
            #expect(try !people.isEmpty)
            #expect(try people.map { $0["firstName"] } == ["Ada", "Charles", "Annabella", "Grace"])
            #expect(try people.first()?["id"] == 1)
            #expect(try people.first { $0["age"].int! > 39 }?["id"] == 2)
            #expect(try people.first { $0["age"].int! > 100 } == nil)
            #expect(try people.contains { $0["lastName"] == "Hopper" })
            #expect(try !people.contains { $0["lastName"] == "Turing" })

            var visited: [Int64] = []
            try people.forEach { visited.append($0["id"].int!) }
            #expect(visited == [1, 2, 3, 4])

            var evaluated = 0
            let old = people.filter {
                evaluated += 1
                return $0["age"].int! >= 40
            }
            #expect(evaluated == 0, "filter must be lazy")
            #expect(try old.count == 3)
            #expect(try Self.ids(old) == [2, 3, 4])
            #expect(try Self.ids(old.filter { $0["lastName"] != "Babbage" }) == [3, 4])
            #expect(try old.first()?["id"] == 2)
            #expect(try old.filter { _ in false }.isEmpty)
            #expect(try old.filter { _ in false }.first() == nil)
            #expect(try old.filter { _ in false }.count == 0)
            #expect(throws: Failure.self) { try people.filter { _ in throw Failure() }.count }
            #expect(try tx.objects("Note").isEmpty)
            #expect(try tx.objects("Note").count == 0)
        }
    }
}
