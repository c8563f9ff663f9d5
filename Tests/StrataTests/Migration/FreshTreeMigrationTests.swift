import Foundation
import Logging
import Testing

@testable import Strata

/// A walk that rewrites every record of a type writes them into a fresh
/// tree (the records database emptied, each record appended in key order):
/// what the closure sees and what the file holds after it are those of a
/// rewrite in place.
@Suite(.temporaryFolder) struct FreshTreeMigrationTests {
    let folder = TemporaryFolder.current

    /// The configuration of the fullName migration, `body` called on every
    /// object after fullName is set, logging into `messages`.
    private func fullName(
        _ path: String, messages: Recorder<String>,
        _ body: @escaping @Sendable (Migration, DynamicObject, MutableObject) throws -> Void = { _, _, _ in }
    ) -> Database.Configuration {
        var config = Migrations.configuration(path, version: 2, [Migrations.personV2]) { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { old, new in
                let old = try #require(old)
                let new = try #require(new)
                new["fullName"] = .string("\(old["firstName"].string!) \(old["lastName"].string!)")
                try body(migration, old, new)
            }
        }
        var logger = Logger(label: "test") { _ in RecordingLogHandler(messages: messages) }
        logger.logLevel = .debug
        config.logger = logger
        return config
    }

    private func walkedIntoAFreshTree(_ messages: Recorder<String>) -> Bool {
        messages.all.contains { $0.hasPrefix("debug Walked 'Person'") && $0.hasSuffix(", written into a fresh tree") }
    }

    @Test func aRewriteOfEveryObjectWritesAFreshTreeThatHoldsEveryObjectInKeyOrder() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 3000)
        let messages = Recorder<String>()
        let db = try Database(configuration: fullName(path, messages: messages))
        #expect(walkedIntoAFreshTree(messages), "\(messages.all)")
        let people = try db.read { tx in try tx.objects("Person").map(\.values) }
        #expect(people.map { $0["id"]!.int! } == Array(1 ... 3000))
        #expect(people.allSatisfy { $0["fullName"] == .string("First\($0["id"]!.int!) Last\($0["id"]!.int!)") })
        #expect(try db.read { tx in try tx.objects("Person").where("age", equals: 41).count } == 33)
        #expect(try db.verify().isEmpty)
    }

    @Test func objectsTheClosureDeletesAreNotWrittenAgain() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 600)
        let messages = Recorder<String>()
        let db = try Database(
            configuration: fullName(path, messages: messages) { migration, old, new in
                if old["id"].int! % 4 == 0 { migration.delete(new) }
            })
        #expect(walkedIntoAFreshTree(messages), "\(messages.all)")
        let ids = try db.read { tx in try tx.objects("Person").map { $0["id"].int! } }
        #expect(ids == (1 ... 600).filter { $0 % 4 != 0 })
        #expect(try db.verify().isEmpty)
    }

    /// An object created in the walked type sees every stored object, as
    /// in a rewrite in place: a key that an object not walked yet has is a
    /// duplicate, a new key in the middle of the walk's range is written,
    /// and the objects after it are still migrated.
    @Test func anObjectCreatedInTheWalkedTypeSeesTheObjectsNotWalkedYet() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 400)
        let refused = Recorder<StrataError.Code>()
        let messages = Recorder<String>()
        let db = try Database(
            configuration: fullName(path, messages: messages) { migration, old, _ in
                guard old["id"].int! == 10 else { return }
                do {
                    _ = try migration.create("Person", value: ["id": 250, "fullName": "Taken", "age": 1])
                } catch let error as StrataError {
                    refused.append(error.code)
                }
                _ = try migration.create("Person", value: ["id": 100_000, "fullName": "New", "age": 2])
            })
        #expect(refused.all == [.duplicatePrimaryKey])
        let people = try db.read { tx in try tx.objects("Person").map(\.values) }
        #expect(people.map { $0["id"]!.int! } == Array(1 ... 400) + [100_000])
        #expect(people.first { $0["id"] == 250 }?["fullName"] == "First250 Last250")
        #expect(people.first { $0["id"] == 400 }?["fullName"] == "First400 Last400")
        #expect(people.last?["fullName"] == "New")
        #expect(try db.verify().isEmpty)
    }

    /// An object created before the walk is in the table and not in the
    /// snapshot: the walk then rewrites the table in place, and loses
    /// nothing.
    @Test func aWalkAfterWritesOutsideWalksRewritesInPlace() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 50)
        let messages = Recorder<String>()
        var config = fullName(path, messages: messages)
        let walk = config.migration!
        config.migration = { migration, version in
            _ = try migration.create("Person", value: ["id": 1000, "fullName": "Early", "age": 3])
            try walk(migration, version)
        }
        let db = try Database(configuration: config)
        #expect(!walkedIntoAFreshTree(messages), "\(messages.all)")
        let people = try db.read { tx in try tx.objects("Person").map(\.values) }
        #expect(people.count == 51)
        #expect(people.last?["fullName"] == "Early")
        #expect(people.first?["fullName"] == "First1 Last1")
        #expect(try db.verify().isEmpty)
    }
}
