import Foundation
import Testing

@testable import Strata

/// A value that a write or a lookup must refuse, on the database
/// `InvalidValueTests.seeded` makes.
typealias InvalidValueCase = Refusal<WriteTransaction>

extension Refusal where Subject == WriteTransaction {
    static var all: [InvalidValueCase] {
        [
            .init("unknown property", .unknownProperty, "Object type 'Person' has no property 'nickname'") { tx in
                try tx.insert("Person", Fixtures.person(9).merging(["nickname": "x"]) { $1 })
            },
            .init(
                "required property without a default left out", .missingValue,
                "Property 'Person.firstName' is required and has no default, but no value was given"
            ) { tx in
                try tx.insert("Person", ["id": 9, "lastName": "L"])
            },
            .init("null primary key", .invalidValue, "Property 'Person.id' is required (int) but null was given") {
                tx in
                try tx.insert("Person", Fixtures.person(9).merging(["id": nil]) { $1 })
            },
            .init(
                "primary key of another type", .invalidValue,
                "Property 'Person.id' is int, but \"9\" of type string was given"
            ) { tx in
                try tx.insert("Person", Fixtures.person(9).merging(["id": "9"]) { $1 })
            },
            .init("string primary key over 511 bytes", .keyTooLarge, "encodes to 601 bytes; LMDB allows at most 511") {
                tx in
                try tx.insert("Tag", ["name": .string(String(repeating: "t", count: 600))])
            },
            .init("an existing primary key inserted again", .duplicatePrimaryKey, "with primary key 1 already exists") {
                tx in
                try tx.insert("Person", Fixtures.person(1))
            },
            .init(
                "primary key changed by an update", .invalidValue,
                "The primary key 'Person.id' cannot be changed by an update"
            ) { tx in
                try tx.update("Person", key: 1, ["id": 2])
            },
            .init(
                "primary key of another type in an update", .invalidValue,
                "The primary key 'Person.id' is int, but \"2\" was given"
            ) { tx in
                try tx.update("Person", key: 1, ["id": "2"])
            },
            .init("update of an object that does not exist", .objectNotFound, "There is no 'Person' with key 42") {
                tx in
                try tx.update("Person", key: 42, ["age": 1])
            },
            .init(
                "lookup key of another type", .invalidValue, "The primary key 'Person.id' is int, but \"1\" was given"
            ) { tx in
                _ = try tx.object("Person", key: "1")
            },
            .init(
                "automatic id 0", .invalidValue,
                "'Note' has no primary key; its objects are identified by positive integer ids, but 0 was given"
            ) { tx in
                _ = try tx.object("Note", key: 0)
            },
            .init("negative automatic id in a delete", .invalidValue, "positive integer ids, but -1 was given") { tx in
                _ = try tx.delete("Note", key: -1)
            },
            // Its message leaves the file out: see whereWithAValueOfAnotherTypeNamesTheFile.
            .init(
                "where with a value of another type", .invalidValue,
                "Property 'Person.age' is int; it cannot equal \"old\"", namesTheFile: false
            ) { tx in
                _ = try tx.objects("Person").where("age", equals: "old").count
            },
            .init("where on an unknown property", .unknownProperty, "Object type 'Person' has no property 'height'") {
                tx in
                _ = try tx.objects("Person").where("height", equals: 1).count
            },
            .init(
                "unknown object type", .unknownObjectType,
                "has no object type 'Pet'. Its types are: Every, Note, Person, Tag"
            ) { tx in
                try tx.insert("Pet", ["name": "Rex"])
            },
        ]
    }
}

/// Every invalid value is refused with a message that names the type, the
/// property, the value and the file, and writes nothing.
@Suite(.temporaryFolder) struct InvalidValueTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    /// One required and one optional property of every type.
    static let every = ObjectSchema(
        "Every", primaryKey: "id",
        properties: [Property("id", .int)]
            + PropertyType.primitives.flatMap { type in
                [
                    Property("\(type)", type, default: type.emptyValue),
                    Property("\(type)Optional", type, optional: true),
                ]
            })
    static let schema = Schema([
        Fixtures.person, ObjectSchema("Note") { Property("text", .string) },
        ObjectSchema("Tag", primaryKey: "name") { Property("name", .string) }, every,
    ])

    static func seeded(_ folder: TemporaryFolder, mode: Database.Mode) throws -> Database {
        let db = try Database(configuration: Fixtures.configuration(folder.path(), schema: schema, mode: mode))
        try db.write { tx in
            try tx.insert("Person", Fixtures.person(1, "Ada", "Lovelace", age: 36))
            try tx.insert("Note", ["text": "first"])
            try tx.insert("Tag", ["name": "red"])
            try tx.insert("Every", ["id": 1])
        }
        return db
    }

    /// Every object of every type.
    static func contents(_ db: Database) throws -> [String: [[String: Value]]] {
        try Migrations.everything(db)
    }

    @Test(arguments: InvalidValueCase.all, Fixtures.modes)
    func anInvalidValueIsRefusedWithItsMessage(_ invalid: InvalidValueCase, _ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        let before = try Self.contents(db)
        let error = expectStrataError(invalid.code) { try db.write { tx in try invalid.act(tx) } }
        #expect(error?.message.contains(invalid.fragment) == true, "\(error?.message ?? "")")
        #expect(error?.path == db.path)
        if invalid.namesTheFile { #expect(error?.message.contains(db.path) == true, "\(error?.message ?? "")") }
        #expect(try Self.contents(db) == before)
    }

    @Test(arguments: Fixtures.modes)
    func whereWithAValueOfAnotherTypeNamesTheFile(_ mode: Database.Mode) throws {
        let db = try Self.seeded(folder, mode: mode)
        let error = expectStrataError(.invalidValue) {
            _ = try db.read { tx in try tx.objects("Person").where("age", equals: "old").count }
        }
        #expect(error?.message.contains(db.path) == true, "\(error?.message ?? "")")
    }

    enum Write: String, CaseIterable {
        case insert, upsert, update
    }

    /// Each property of every type, required and optional, given a value of
    /// every type and null, by insert, upsert and update: refused with the
    /// exact sentence unless the value fits (an integer fits a double).
    @Test(arguments: Fixtures.modes) func aValueOfAnotherTypeIsRefusedForEveryPropertyTypeAndEveryWrite(
        _ mode: Database.Mode
    ) throws {
        let db = try Self.seeded(folder, mode: mode)
        let path = db.path
        var refused = 0
        var accepted = 0
        for property in Self.every.properties where property.name != "id" {
            let expected = property.isOptional ? "\(property.type)?" : "\(property.type)"
            for value in Fixtures.valueOfEachType + [.null] {
                let fits = value.coerced(to: property.type).fits(property.type, optional: property.isOptional)
                for write in Write.allCases {
                    let before = try Self.contents(db)
                    let label = "\(write) of \(value) into \(expected) '\(property.name)'"
                    do {
                        try db.write { tx in
                            switch write {
                            case .insert: try tx.insert("Every", ["id": 2, property.name: value])
                            case .upsert: try tx.upsert("Every", ["id": 1, property.name: value])
                            case .update: try tx.update("Every", key: 1, [property.name: value])
                            }
                        }
                        #expect(fits, "\(label) was accepted")
                        let stored = try db.read { tx in
                            try tx.object("Every", key: write == .insert ? 2 : 1)?[property.name]
                        }
                        #expect(
                            stored.map { $0.isStored(identicallyTo: value.coerced(to: property.type)) } == true,
                            "\(label) reads back \(stored.map { "\($0)" } ?? "nothing")")
                        try db.write { tx in
                            _ = try tx.delete("Every", key: 2)
                            try tx.upsert("Every", ["id": 1])
                        }
                        accepted += 1
                    } catch let error as StrataError {
                        refused += 1
                        #expect(!fits, "\(label) was refused: \(error.message)")
                        #expect(error.code == .invalidValue, "\(label): \(error.code)")
                        let sentence =
                            value.isNull
                            ? "Property 'Every.\(property.name)' is required (\(expected)) but null was given (in \(path)). Nothing was written."
                            : "Property 'Every.\(property.name)' is \(expected), but \(value) of type \(value.propertyType!) was given (in \(path)). Nothing was written."
                        #expect(error.message == sentence, "\(label)")
                        #expect(try Self.contents(db) == before, "\(label) wrote something")
                    }
                }
            }
        }
        // 8 types × 2 × 9 values × 3 writes; fits: the value's own type, an
        // int into a double or a decimal, a double into a decimal, null
        // into an optional.
        #expect(accepted == (8 + 3) * 2 * 3 + 8 * 3, "\(accepted) accepted")
        #expect(refused == 8 * 2 * 9 * 3 - accepted, "\(refused) refused")
    }
}
