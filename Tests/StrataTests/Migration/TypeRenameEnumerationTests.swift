import Foundation
import Testing

@testable import Strata

/// Enumerating a type by its old name in the migration that renames it:
/// after `renameType` the old name walks the renamed type, with both
/// sides; before it, the walk sees a removed type, so a `renameType` that
/// follows is refused with the order to use instead.
@Suite(.temporaryFolder) struct TypeRenameEnumerationTests {
    let folder = TemporaryFolder.current

    static let human = Schema([
        ObjectSchema("Human", primaryKey: "id") {
            Property("id", .int)
            Property("firstName", .string)
            Property("lastName", .string)
            Property("age", .int, default: 0, indexed: true)
            Property("email", .string, optional: true)
        }
    ])

    /// Version 1 holds three `Person`s; version 2 calls the type `Human`.
    private func version2(_ migration: @escaping MigrationBlock) throws -> Database.Configuration {
        try Fixtures.seed(folder.path())
        var config = Fixtures.configuration(folder.path(), version: 2, schema: Self.human)
        config.migration = migration
        return config
    }

    @Test(arguments: ["Person", "Human"])
    func afterTheRenameEitherNameWalksTheRenamedType(name: String) throws {
        let config = try version2 { migration, _ in
            try migration.renameType(from: "Person", to: "Human")
            try migration.enumerateObjects(ofType: name) { old, new in
                new!["age"] = .int(old!["age"].int! + 1)
            }
        }
        let db = try Database(configuration: config)
        let ages = try db.read { tx in try tx.objects("Human").map { $0["age"].int! } }
        #expect(ages == [37, 80, 41])
        #expect(try db.verify() == [])
    }

    @Test func aRenameAfterWalkingTheOldNameAsRemovedIsRefusedNamingTheOrder() throws {
        let config = try version2 { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { _, new in #expect(new == nil) }
            try migration.renameType(from: "Person", to: "Human")
        }
        let error = try #require(expectStrataError(.migrationFailed) { _ = try Database(configuration: config) })
        #expect(error.message.contains("Call renameType first"), "\(error.message)")
        #expect(error.message.contains("\"Human\""), "\(error.message)")
        #expect(try Database(configuration: Fixtures.configuration(folder.path())).fileSchemaVersion == 1)
    }
}
