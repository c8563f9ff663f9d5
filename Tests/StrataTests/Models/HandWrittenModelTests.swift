import Foundation
import Testing

@testable import Strata

@Suite(.temporaryFolder) struct HandWrittenModelTests {
    let folder = TemporaryFolder.current

    func open(_ mode: Database.Mode) throws -> Database {
        var config = Database.Configuration(path: folder.path(), models: [HandPerson.self, HandNote.self])
        config.durability = .noSync
        config.mode = mode
        return try Database(configuration: config)
    }

    @Test(arguments: Fixtures.modes)
    func insertedValuesReadBackTypedAndDynamic(mode: Database.Mode) throws {
        let db = try open(mode)
        let ada = HandPerson(id: 1, firstName: "Ada", lastName: "Lovelace", age: 36, email: "ada@example.org")
        let charles = HandPerson(id: 2, firstName: "Charles", lastName: "Babbage", age: 79)
        try db.write { tx in
            #expect(try tx.insert(ada) == 1)
            try tx.insert(charles)
        }
        try db.read { tx throws in
            #expect(try tx.object(HandPerson.self, primaryKey: 1) == ada)
            #expect(try tx.object(HandPerson.self, primaryKey: 3) == nil)
            #expect(try tx.objects(HandPerson.self).array() == [ada, charles])
            #expect(try tx.objects(HandPerson.self).count == 2)
            let dynamic = try #require(try tx.object("Person", key: 2))
            #expect(dynamic["lastName"] == "Babbage")
            #expect(dynamic["email"] == .null)
            #expect(try tx.objects("Person").where("age", equals: 79).map { $0["id"] } == [2])
        }
    }

    @Test(arguments: Fixtures.modes)
    func upsertUpdateAndDeleteKeepIndexesRight(mode: Database.Mode) throws {
        let db = try open(mode)
        var ada = HandPerson(id: 1, firstName: "Ada", lastName: "Lovelace", age: 36)
        try db.write { tx in try tx.insert(ada) }
        ada.age = 37
        try db.write { tx in try tx.update(ada) }
        try db.read { tx throws in
            #expect(try tx.objects("Person").where("age", equals: 36).count == 0)
            #expect(try tx.objects("Person").where("age", equals: 37).count == 1)
        }
        let error = expectStrataError(.objectNotFound) {
            try db.write { tx in try tx.update(HandPerson(id: 9, firstName: "No", lastName: "One")) }
        }
        #expect(error?.message.contains("no 'Person' with key 9") == true)
        try db.write { tx in
            try tx.upsert(HandPerson(id: 2, firstName: "Charles", lastName: "Babbage", age: 79))
            #expect(try tx.delete(ada))
            #expect(try !tx.delete(HandPerson.self, primaryKey: 1))
        }
        try db.read { tx throws in
            #expect(try tx.objects(HandPerson.self).map(\.id) == [2])
            #expect(try tx.objects("Person").where("age", equals: 37).count == 0)
        }
    }

    @Test(arguments: Fixtures.modes)
    func modelsWithoutPrimaryKeyGetAutomaticIDs(mode: Database.Mode) throws {
        let db = try open(mode)
        let ids = try db.write { tx in
            [try tx.insert(HandNote(text: "a")), try tx.insert(HandNote(text: "b", priority: 3))]
        }
        #expect(ids == [1, 2])
        try db.read { tx throws in
            #expect(try tx.object(HandNote.self, primaryKey: 2) == HandNote(text: "b", priority: 3))
        }
        expectStrataError(.invalidValue) {
            try db.write { tx in try tx.update(HandNote(text: "c")) }
        }
    }

    @Test func storedValueThatDoesNotFitTheModelIsAnErrorNamingTheObject() throws {
        // The file's Person has a string age: a model reading it as Int fails.
        let schema = Schema([
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("firstName", .string)
                Property("lastName", .string)
                Property("age", .string)
                Property("email", .string, optional: true)
            }
        ])
        let db = try Database(configuration: Fixtures.configuration(folder.path(), schema: schema))
        try db.write { tx in try tx.insert("Person", ["id": 7, "firstName": "A", "lastName": "B", "age": "old"]) }
        let error = expectStrataError(.invalidSchema) {
            try db.read { tx in _ = try tx.object(HandPerson.self, primaryKey: 7) }
        }
        #expect(error?.message.contains("'Person.age' is int in the model HandPerson, but string in the file") == true)
    }
}
