import Foundation
import Testing

@testable import Strata

/// `deleteAll` applies the delete rules as one plan over every object it
/// deletes: links between those objects never refuse, and a deny reached
/// through a cascade refuses before anything is deleted.
@Suite(.temporaryFolder) struct DeleteAllRulesTests {
    let folder = TemporaryFolder.current

    func open(_ mode: Database.Mode, friendsRule: DeleteRule, tagRule: DeleteRule) throws -> Database {
        let schema = Schema([
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property.list("friends", linksTo: "Person", onDelete: friendsRule)
            },
            ObjectSchema("Dog", primaryKey: "name") {
                Property("name", .string)
                Property.link("owner", to: "Person", onDelete: .cascade)
            },
            ObjectSchema("Tag", primaryKey: "id") {
                Property("id", .int)
                Property.link("dog", to: "Dog", onDelete: tagRule)
            },
        ])
        return try Database(configuration: Fixtures.configuration(folder.path(), schema: schema, mode: mode))
    }

    @Test(arguments: Fixtures.modes)
    func denyLinksAmongTheDeletedObjectsDoNotRefuse(mode: Database.Mode) throws {
        let db = try open(mode, friendsRule: .deny, tagRule: .nullify)
        try db.write { tx throws in
            try tx.insert("Person", ["id": 1])
            try tx.insert("Person", ["id": 2, "friends": [1]])
            try tx.update("Person", key: 1, ["friends": [2]])
            try tx.insert("Dog", ["name": "Rex", "owner": 1])
            try tx.insert("Tag", ["id": 7, "dog": .link("Rex")])
        }
        try db.write { tx throws in try tx.deleteAll("Person") }
        try db.read { tx throws in
            #expect(try tx.objects("Person").count == 0)
            // The cascade took the dog; the tag's nullify link let go of it.
            #expect(try tx.objects("Dog").count == 0)
            #expect(try tx.object("Tag", key: 7)?["dog"] == .null)
        }
        let problems = try db.verify()
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test(arguments: Fixtures.modes)
    func aDenyReachedThroughACascadeRefusesBeforeAnythingIsDeleted(mode: Database.Mode) throws {
        let db = try open(mode, friendsRule: .nullify, tagRule: .deny)
        try db.write { tx throws in
            try tx.insert("Person", ["id": 1])
            try tx.insert("Person", ["id": 2])
            // Only the last person's dog is tagged: a walk that deleted in
            // key order would have deleted person 1 before the refusal.
            try tx.insert("Dog", ["name": "Rex", "owner": 2])
            try tx.insert("Tag", ["id": 7, "dog": .link("Rex")])
        }
        try db.write { tx throws in
            let error = try #require(throws: StrataError.self) { try tx.deleteAll("Person") }
            #expect(error.code == .deleteDenied)
            #expect(error.message.contains("'Tag' 7 (through 'Tag.dog', delete rule deny)"))
            // Refused before anything was deleted, even inside the transaction.
            #expect(try tx.objects("Person").count == 2)
            #expect(try tx.object("Dog", key: "Rex") != nil)
        }
        let problems = try db.verify()
        #expect(problems.isEmpty, "\(problems)")
    }
}
