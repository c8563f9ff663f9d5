import Foundation
import Testing

@testable import Strata

/// What a failed migration tells the caller: its own error back as the
/// cause, and messages that name the step, the type, the object and advice
/// that works inside a migration. The file is left as it was each time.
@Suite(.temporaryFolder) struct MigrationErrorTests {
    let folder = TemporaryFolder.current

    struct ImportError: Error, Equatable {
        let line: Int
    }

    static let personV2 = Schema([
        ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("fullName", .string)
            Property("age", .int, default: 0, indexed: true)
            Property("email", .string, optional: true)
        }
    ])

    /// Version 1 with Ada (1), Charles (2) and Annabella (3); the
    /// configuration of version 2 with `migration`.
    private func version2(_ migration: @escaping MigrationBlock) throws -> Database.Configuration {
        try Fixtures.seed(folder.path())
        var config = Fixtures.configuration(folder.path(), version: 2, schema: Self.personV2)
        config.migration = migration
        return config
    }

    /// Opening fails with `code`, and the file is still at version 1 with
    /// its three people.
    private func expectRefused(
        _ config: Database.Configuration, _ code: StrataError.Code,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> StrataError {
        let error = try #require(
            expectStrataError(code, sourceLocation: sourceLocation) { _ = try Database(configuration: config) })
        #expect(error.message.contains(folder.path()), "\(error.message)", sourceLocation: sourceLocation)
        #expect(error.message.contains("Nothing was written"), "\(error.message)", sourceLocation: sourceLocation)
        let reopened = try Database(configuration: Fixtures.configuration(folder.path()))
        #expect(reopened.fileSchemaVersion == 1, sourceLocation: sourceLocation)
        #expect(try Fixtures.people(reopened).count == 3, sourceLocation: sourceLocation)
        return error
    }

    @Test func anErrorThrownOnAnObjectIsTheCauseAndTheMessageNamesTheObject() throws {
        let config = try version2 { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { old, new in
                if old?["id"].int == 2 { throw ImportError(line: 7) }
                new?["fullName"] = .string("x")
            }
        }
        let error = try expectRefused(config, .migrationFailed)
        #expect(error.cause as? ImportError == ImportError(line: 7))
        #expect(error.message.contains("'Person' object 2"), "\(error.message)")
        #expect(error.message.contains("from schema version 1 to 2"), "\(error.message)")
        #expect(error.message.contains("ImportError(line: 7)"), "\(error.message)")
    }

    @Test func anErrorThrownOutsideAnEnumerationIsTheCause() throws {
        let config = try version2 { _, _ in throw ImportError(line: 1) }
        let error = try expectRefused(config, .migrationFailed)
        do {
            throw error
        } catch let caught as StrataError where caught.cause is ImportError {
            #expect(caught.message.contains("from schema version 1 to 2"))
        } catch {
            Issue.record("The cause is not reachable as ImportError: \(error)")
        }
    }

    @Test func aDuplicateCreatedInAMigrationGivesAdviceThatWorksThere() throws {
        let config = try version2 { migration, _ in
            try migration.create("Person", value: ["id": 3, "fullName": "Ada King"])
        }
        let error = try expectRefused(config, .duplicatePrimaryKey)
        #expect(error.message.contains("migration.create(\"Person\""), "\(error.message)")
        #expect(error.message.contains("primary key 3"), "\(error.message)")
        #expect(error.message.contains("enumerateObjects(ofType: \"Person\")"), "\(error.message)")
        #expect(!error.message.contains("upsert"), "\(error.message)")
    }

    @Test func anUnknownPropertySetOnNewNamesTheMigrationAndTheObject() throws {
        let config = try version2 { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { _, new in
                new?["nickname"] = .string("x")
            }
        }
        let error = try expectRefused(config, .unknownProperty)
        #expect(error.message.contains("migration of"), "\(error.message)")
        #expect(error.message.contains("'Person' object 1"), "\(error.message)")
        #expect(error.message.contains("nickname"), "\(error.message)")
    }

    @Test func anInvalidValueSetOnNewNamesTheMigrationAndTheObject() throws {
        let config = try version2 { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { _, new in
                new?["age"] = .string("old")
            }
        }
        let error = try expectRefused(config, .invalidValue)
        #expect(error.message.contains("from schema version 1 to 2"), "\(error.message)")
        #expect(error.message.contains("'Person' object 1"), "\(error.message)")
    }

    @Test func aLaterEnumerationSkipsTheObjectsAnEarlierOneDeleted() throws {
        let seen = Locked<[[Int64]]>([])
        let config = try version2 { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { old, new in
                if old!["id"].int == 2 { migration.delete(new!) } else { new!["fullName"] = .string("kept") }
            }
            var ids: [Int64] = []
            // Realm-style code force-unwraps `new`: it must not see Charles again.
            try migration.enumerateObjects(ofType: "Person") { old, new in
                ids.append(old!["id"].int!)
                new!["age"] = .int(1)
            }
            seen.withLock { $0.append(ids) }
        }
        let db = try Database(configuration: config)
        #expect(seen.withLock { $0 } == [[1, 3]])
        #expect(try db.read { tx in try tx.objects("Person").map { $0["id"].int! } } == [1, 3])
        #expect(try db.read { tx in try tx.objects("Person").where("age", equals: 1).count } == 2)
    }
}

/// A value behind a lock, for closures that must be `Sendable`.
// @unchecked: `value` is only read and written while holding `lock`.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&value) } }
}
