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

    /// Account keyed by id, then (version 2) by email.
    static let accountV1 = ObjectSchema("Account", primaryKey: "id") {
        Property("id", .int)
        Property("email", .string)
    }
    static let accountV2 = ObjectSchema("Account", primaryKey: "email") {
        Property("id", .int)
        Property("email", .string)
    }

    /// A type that migrations add or keep beside Person.
    static let note = ObjectSchema("Note") { Property("text", .string) }

    static func configuration(
        _ path: String, version: UInt64, _ objectSchemas: [ObjectSchema], mode: Database.Mode = .local,
        migration: Database.MigrationBlock? = nil
    ) -> Database.Configuration {
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
                try tx.insert(
                    "Person",
                    Fixtures.person(
                        id, "First\(id)", "Last\(id)", age: id % 90, email: id % 3 == 0 ? "p\(id)@example.org" : nil))
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

    static func state(opening configuration: Database.Configuration, sourceLocation: SourceLocation = #_sourceLocation)
        throws -> FileState
    {
        let verifier = try expectFileVerified(configuration.path, sourceLocation: sourceLocation)
        return FileState(objects: try everything(opening: configuration), databases: verifier.digests)
    }
}
