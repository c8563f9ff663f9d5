import Foundation
import Testing

@testable import Strata

/// Every family of `StrataError` carries its context as fields, and its
/// message is rendered from them; a migration that restates an error keeps
/// that error whole as the cause; the CLI prints the items from the fields.
@Suite(.temporaryFolder) struct ErrorPartsTests {
    let folder = TemporaryFolder.current

    /// A database of `Fixtures.schema` in `mode` with Ada, Charles and
    /// Annabella.
    private func seeded(_ mode: Database.Mode = .local) throws -> Database {
        try Fixtures.seed(folder.path(), mode: mode)
        return try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
    }

    // MARK: Rendering

    @Test func theMessageIsRenderedFromTheParts() {
        var error = StrataError(.invalidValue, summary: "Two things are wrong", path: "/a.strata")
        #expect(error.message == "Two things are wrong")
        error.items = ["one", "two"]
        error.remedy = "Fix them."
        error.nothingWritten = true
        #expect(error.message == "Two things are wrong:\n- one\n- two\nFix them. Nothing was written.")
        error.remedy = nil
        #expect(error.message == "Two things are wrong:\n- one\n- two\nNothing was written.")
        error.phase = .migration
        error.fromVersion = 3
        #expect(error.outcome == "Nothing was written; the file is still at version 3.")
        #expect(error.description == error.message)
    }

    @Test func theLowLevelInitializerKeepsItsMessageWhole() {
        let cause = CocoaError(.fileNoSuchFile)
        let error = StrataError(.fileSystem, "Something went wrong.", path: "/a.strata", cause: cause)
        #expect(error.message == "Something went wrong.")
        #expect(error.summary == "Something went wrong.")
        #expect(error.items.isEmpty && error.remedy == nil && error.outcome == nil)
        #expect(error.cause as? CocoaError == cause)
    }

    // MARK: Objects

    @Test(arguments: Fixtures.modes) func objectNotFoundNamesTypeAndKey(_ mode: Database.Mode) throws {
        let db = try seeded(mode)
        let error = try #require(
            expectStrataError(.objectNotFound) { try db.write { tx in try tx.update("Person", key: 42, ["age": 1]) } })
        #expect(error.typeName == "Person")
        #expect(error.key == "42")
        #expect(error.path == db.path)
        #expect(error.remedy == "Use insert or upsert to create it.")
        #expect(
            error.message
                == "There is no 'Person' with key 42 in \(db.path) to update. Use insert or upsert to create it.")
    }

    @Test(arguments: Fixtures.modes) func duplicatePrimaryKeyNamesTypeAndKey(_ mode: Database.Mode) throws {
        let db = try seeded(mode)
        let error = try #require(
            expectStrataError(.duplicatePrimaryKey) {
                try db.write { tx in _ = try tx.insert("Person", ["id": 2, "firstName": "C", "lastName": "B"]) }
            })
        #expect(error.typeName == "Person")
        #expect(error.key == "2")
        #expect(error.message.hasPrefix(error.summary))
        #expect(error.message.contains("primary key 2 already exists in \(db.path)"))
        #expect(error.message.hasSuffix(try #require(error.remedy)))
    }

    @Test func missingAndInvalidValuesNameTypeAndProperty() throws {
        let db = try seeded()
        let missing = try #require(
            expectStrataError(.missingValue) {
                try db.write { tx in _ = try tx.insert("Person", ["id": 9, "firstName": "A"]) }
            })
        #expect(missing.typeName == "Person" && missing.property == "lastName")
        #expect(missing.nothingWritten)
        #expect(missing.message.contains("Property 'Person.lastName' is required"))
        #expect(missing.message.hasSuffix(" Nothing was written."))

        let invalid = try #require(
            expectStrataError(.invalidValue) { try db.write { tx in try tx.update("Person", key: 1, ["age": "old"]) } })
        #expect(invalid.typeName == "Person" && invalid.property == "age")
        #expect(invalid.message.contains("'Person.age' is int, but \"old\""))
    }

    @Test func unknownNamesListWhatExists() throws {
        let db = try seeded()
        let type = try #require(
            expectStrataError(.unknownObjectType) { _ = try db.read { try $0.objects("Dog").count } })
        #expect(type.typeName == "Dog")
        #expect(type.message.contains("no object type 'Dog'. Its types are: Person."))

        let property = try #require(
            expectStrataError(.unknownProperty) {
                try db.write { tx in try tx.update("Person", key: 1, ["nick": "A"]) }
            })
        #expect(property.typeName == "Person" && property.property == "nick")
        #expect(property.message.contains("has no property 'nick'"))
    }

    @Test func aTooLargeKeyNamesTheType() throws {
        let schema = Schema([ObjectSchema("Tag", primaryKey: "name") { Property("name", .string) }])
        let db = try Database(configuration: Fixtures.configuration(folder.path(), schema: schema))
        let name = String(repeating: "x", count: 600)
        let error = try #require(
            expectStrataError(.keyTooLarge) { try db.write { tx in _ = try tx.insert("Tag", ["name": .string(name)]) } }
        )
        #expect(error.typeName == "Tag")
        #expect(error.remedy == "Use a shorter key.")
        #expect(error.message.hasSuffix("Use a shorter key. Nothing was written."))
    }

    @Test func aDeniedDeleteListsTheLinkingObjectsAsItems() throws {
        let path = folder.path()
        try RelationshipFixtures.seed(path)
        let db = try Database(configuration: Fixtures.configuration(path, schema: RelationshipFixtures.schema))
        let vetKey = try db.read { tx in try #require(try tx.objects("Vet").first()?.primaryKey) }
        let error = try #require(
            expectStrataError(.deleteDenied) { try db.write { tx in _ = try tx.delete("Vet", key: vetKey) } })
        #expect(error.typeName == "Vet")
        #expect(error.key == "\(vetKey)")
        #expect(error.items == ["'Dog' \"Rex\" (through 'Dog.vet', delete rule deny)"])
        #expect(error.message.contains("under a deny rule:\n- 'Dog' \"Rex\" (through 'Dog.vet', delete rule deny)\n"))
        #expect(error.message.hasSuffix("\nUnlink or delete them first. Nothing was written."))

        let all = try #require(expectStrataError(.deleteDenied) { try db.write { tx in try tx.deleteAll("Vet") } })
        #expect(all.typeName == "Vet" && all.key == nil)
        #expect(all.items.count == 1)
    }

    @Test func aDamagedRecordNamesTypeAndKey() {
        let error = StrataError.corruptRecord(typeName: "Person", key: "7", problem: "a bad tag", offset: 3, path: "/p")
        #expect(error.code == .corruptFile)
        #expect(error.typeName == "Person" && error.key == "7" && error.path == "/p")
        #expect(
            error.message
                == "The record of 'Person' with key 7 in /p is damaged: a bad tag at byte 3. Restore the file from a backup."
        )
    }

    // MARK: Schemas and versions

    @Test func anInvalidSchemaListsItsProblemsAsItems() throws {
        let schema = Schema([ObjectSchema("Person", primaryKey: "nope") { Property("id", .int) }])
        let error = try #require(
            expectStrataError(.invalidSchema) {
                _ = try Database(configuration: Fixtures.configuration(folder.path(), schema: schema))
            })
        #expect(error.items.count == 1)
        #expect(error.message == "The schema for \(folder.path()) is invalid:\n- \(error.items[0])")
    }

    @Test func aChangedSchemaAtTheSameVersionCarriesVersionsItemsAndRemedy() throws {
        try Fixtures.seed(folder.path())
        let schema = Schema([
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("firstName", .string)
            }
        ])
        let error = try #require(
            expectStrataError(.migrationRequired) {
                _ = try Database(configuration: Fixtures.configuration(folder.path(), schema: schema))
            })
        #expect(error.fromVersion == 1 && error.toVersion == 1)
        #expect(error.items.count == 3, "\(error.items)")
        #expect(error.remedy?.hasPrefix("Raise the schema version to 2") == true)
        for item in error.items {
            #expect(error.message.contains("\n- \(item)\n") || error.message.contains("\n- \(item)"))
        }
    }

    @Test func aLowerVersionCarriesBothVersions() throws {
        try Fixtures.seed(folder.path(), version: 3)
        let error = try #require(
            expectStrataError(.schemaVersionTooLow) {
                _ = try Database(configuration: Fixtures.configuration(folder.path(), version: 2))
            })
        #expect(error.fromVersion == 3 && error.toVersion == 2)
        #expect(error.remedy == "Open it with version 3 or later.")
        #expect(
            error.message
                == "Schema version 2 is lower than the file's version 3 (\(folder.path())). Open it with version 3 or later."
        )
    }

    @Test func aMissingFileSaysSoAndWhatToDo() {
        let path = folder.path("absent.strata")
        let error = expectStrataError(.fileSystem) { _ = try Database.verify(path: path) }
        #expect(error?.path == path)
        #expect(error?.message == "\(path) does not exist. Check the path.")
    }

    /// The message of an error without a list: the summary, the remedy,
    /// then the outcome.
    private func expectRenderedInOrder(_ error: StrataError?, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let error else { return }
        #expect(error.items.isEmpty, sourceLocation: sourceLocation)
        let parts = [error.summary, error.remedy, error.outcome].compactMap { $0 }
        #expect(error.message == parts.joined(separator: " "), sourceLocation: sourceLocation)
    }

    @Test func fileStateErrorsNameThePathAndWhatToDo() throws {
        let db = try seeded()
        db.close()
        let closed = expectStrataError(.closed) { _ = try db.read { try $0.objects("Person").count } }
        #expect(closed?.path == db.path && closed?.remedy == "Open it again to use it.")
        expectRenderedInOrder(closed)

        var readOnly = Fixtures.configuration(folder.path())
        readOnly.readOnly = true
        let reader = try Database(configuration: readOnly)
        let write = expectStrataError(.readOnly) { try reader.write { tx in try tx.deleteAll("Person") } }
        #expect(write?.path == reader.path && write?.remedy == "Open it without readOnly to write.")
        expectRenderedInOrder(write)
        reader.close()

        var synced = Fixtures.configuration(folder.path(), mode: .synced)
        let mode = expectStrataError(.modeMismatch) { _ = try Database(configuration: synced) }
        #expect(mode?.remedy?.hasPrefix("Set Configuration.mode to .local") == true)
        expectRenderedInOrder(mode)

        synced.deleteIfMigrationNeeded = true
        let options = expectStrataError(.invalidConfiguration) { _ = try Database(configuration: synced) }
        #expect(options?.path == folder.path() && options?.remedy == "Turn it off.")
        expectRenderedInOrder(options)

        let empty = folder.path("empty.strata")
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        let notStrata = expectStrataError(.notAStrataFile) {
            _ = try Database(configuration: Fixtures.configuration(empty))
        }
        #expect(notStrata?.path == empty)
        #expect(notStrata?.summary == "\(empty) is not a Strata database: it is an empty file.")
        expectRenderedInOrder(notStrata)
    }

    // MARK: Migrations

    final class Marker: Error, @unchecked Sendable {}

    /// Version 1 seeded, opened at version 2 (with `fullName`) running
    /// `migration`; returns the refusal.
    private func refusal(_ code: StrataError.Code, _ migration: @escaping MigrationBlock) throws -> StrataError {
        try Fixtures.seed(folder.path())
        let schema = Schema([
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("fullName", .string)
            }
        ])
        var config = Fixtures.configuration(folder.path(), version: 2, schema: schema)
        config.migration = migration
        let error = try #require(expectStrataError(code) { _ = try Database(configuration: config) })
        #expect(error.phase == .migration)
        #expect(error.fromVersion == 1 && error.toVersion == 2)
        #expect(error.path == folder.path())
        #expect(error.message.hasSuffix("Nothing was written; the file is still at version 1."))
        return error
    }

    @Test func aForeignErrorIsTheCauseItself() throws {
        let marker = Marker()
        let error = try refusal(.migrationFailed) { _, _ in throw marker }
        #expect((error.cause as? Marker) === marker)
        #expect(!error.restatesCause)
    }

    @Test func aRestatedStrataErrorIsKeptWholeAsTheCause() throws {
        let error = try refusal(.unknownProperty) { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { _, new in new?["nickname"] = .string("x") }
        }
        let inner = try #require(error.cause as? StrataError)
        #expect(inner.code == .unknownProperty)
        #expect(inner.typeName == "Person" && inner.property == "nickname")
        #expect(inner.phase == nil)
        #expect(error.restatesCause)
        #expect(error.operation == "on the 'Person' object 1")
        #expect(error.typeName == "Person")
        #expect(
            error.message.hasPrefix(
                "The migration of \(folder.path()) from schema version 1 to 2 failed on the 'Person' object 1: "))
        #expect(error.message.contains(inner.summary))
    }

    @Test func aStrataErrorOfYourOwnIsKeptWholeToo() throws {
        let mine = StrataError(.invalidValue, "The import file is out of date.", path: "/import.csv")
        let error = try refusal(.invalidValue) { _, _ in throw mine }
        let inner = try #require(error.cause as? StrataError)
        #expect(inner.summary == mine.summary && inner.path == "/import.csv" && inner.phase == nil)
        #expect(error.message.contains("The import file is out of date."))
    }

    @Test func aRefusedCreateKeepsTheDuplicateAsItsCause() throws {
        let error = try refusal(.duplicatePrimaryKey) { migration, _ in
            _ = try migration.create("Person", value: ["id": 1, "fullName": "Ada King"])
        }
        let inner = try #require(error.cause as? StrataError)
        #expect(inner.code == .duplicatePrimaryKey && inner.typeName == "Person" && inner.key == "1")
        #expect(!error.restatesCause)
        #expect(error.operation == "migration.create(\"Person\", value: ...)")
        #expect(!error.message.contains("upsert"), "the advice of a plain insert does not work in a migration")
    }

    @Test func aBrokenRuleNamesTheCall() throws {
        let error = try refusal(.migrationFailed) { migration, _ in
            try migration.deleteData(forType: "Person")
        }
        #expect(error.operation == "migration.deleteData(forType: \"Person\")")
        #expect(
            error.message.hasPrefix(
                "migration.deleteData(forType: \"Person\") in the migration of \(folder.path()) from schema version 1 to 2: "
            ))
        #expect(error.cause == nil)
    }

    // MARK: The command line

    @Test func theCommandLinePrintsTheItemsFromTheFields() throws {
        let path = folder.path()
        try Fixtures.seed(path)
        let snapshot = folder.path("snapshot.json")
        let schema = Schema([
            ObjectSchema("Person", primaryKey: "nope") {
                Property("id", .int)
                Property("id", .string)
            }
        ])
        try StrataBinary.writeSnapshot(schema, version: 1, to: snapshot)
        let error = try #require(
            expectStrataError(.invalidSchema) { _ = try SchemaSnapshot(contentsOf: URL(fileURLWithPath: snapshot)) })
        #expect(error.items.count == 2)
        let result = try StrataBinary.run(["plan", path, "--schema", snapshot])
        let line = StrataBinary.expectOneLineError(result, containing: [])
        #expect(line == "\(snapshot): \(error.summary): \(error.items.joined(separator: "; "))")
    }
}
