import Foundation
import Testing

@testable import Strata

/// A migration that fails, at any point, leaves the file exactly as it was.
@Suite(.temporaryFolder) struct MigrationFailureTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    struct Halfway: Error {}

    @Test(arguments: [false, true])
    func aClosureThatThrowsHalfwayLeavesEveryObjectAsItWas(_ afterCreating: Bool) throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 100_000)
        let old = Migrations.configuration(path, version: 1, [Migrations.personV1])
        let before = try Migrations.state(opening: old)
        let error = expectStrataError(.migrationFailed) {
            _ = try Database(
                configuration: Migrations.configuration(path, version: 2, [Migrations.personV2, Migrations.note]) {
                    migration, _ in
                    if afterCreating { try migration.create("Note", value: ["text": "made in the migration"]) }
                    var seen = 0
                    try migration.enumerateObjects(ofType: "Person") { old, new in
                        seen += 1
                        if seen == 50_000 { throw Halfway() }
                        new?["fullName"] = .string(old!["firstName"].string!)
                    }
                })
        }
        #expect(error?.message.contains("Halfway") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("still at version 1") == true)
        #expect(try Migrations.state(opening: old) == before)
    }

    @Test func anInvalidValueSetByTheClosureFailsTheMigration() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 5)
        let old = Migrations.configuration(path, version: 1, [Migrations.personV1])
        let before = try Migrations.state(opening: old)
        let cases: [(StrataError.Code, String, Database.MigrationBlock)] = [
            (
                .invalidValue, "'Person.fullName' (string) to null",
                { m, _ in try m.enumerateObjects(ofType: "Person") { _, new in new?["fullName"] = .null } }
            ),
            (
                .invalidValue, "'Person.fullName' (string) to 42",
                { m, _ in try m.enumerateObjects(ofType: "Person") { _, new in new?["fullName"] = 42 } }
            ),
            (
                .unknownProperty, "has no property 'nope'",
                { m, _ in try m.enumerateObjects(ofType: "Person") { _, new in new?["nope"] = "x" } }
            ),
            (.missingValue, "'Person.fullName' is required", { m, _ in try m.create("Person", value: ["id": 1000]) }),
        ]
        for (code, text, block) in cases {
            let error = expectStrataError(code) {
                _ = try Database(
                    configuration: Migrations.configuration(path, version: 2, [Migrations.personV2], migration: block))
            }
            #expect(error?.message.contains(text) == true, "\(error?.message ?? "")")
        }
        #expect(try Migrations.state(opening: old) == before)
    }

    /// How a migration that changed much of the file fails.
    enum LateFailure: String, CaseIterable, Sendable {
        /// The closure throws once it has done everything else.
        case closureThrows
        /// A rename chain left open, found after the closure returned.
        case renameLeftOpen
        /// Two accounts with one new primary key, found when the type is
        /// rewritten after the closure returned.
        case duplicateKey
    }

    static let dog = ObjectSchema("Dog") { Property("name", .string, indexed: true) }
    static let hound = ObjectSchema("Hound") {
        Property("name", .string, indexed: true)
        Property("isGood", .bool, default: true)
    }
    static let tag = ObjectSchema("Tag", primaryKey: "name") {
        Property("name", .string)
        Property("uses", .int, default: 0, indexed: true)
    }
    /// Version 2 of Person: fullName replaces firstName and lastName, and
    /// the index moves from age to fullName.
    static let personReindexed = ObjectSchema("Person", primaryKey: "id") {
        Property("id", .int)
        Property("fullName", .string, indexed: true)
        Property("age", .int, default: 0)
        Property("email", .string, optional: true)
    }

    @Test(arguments: LateFailure.allCases)
    func aFailedMigrationLeavesNoTraceOfTheTypesIndexesAndRenamesItMade(_ failure: LateFailure) throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 2_000)
        let old = Migrations.configuration(
            path, version: 1, [Migrations.personV1, Self.dog, Migrations.note, Migrations.accountV1])
        try { () throws in
            let db = try Database(configuration: old)
            defer { db.close() }
            try db.write { tx in
                for i in 0 ..< 50 { try tx.insert("Dog", ["name": .string("Rex\(i % 7)")]) }
                for i in 0 ..< 10 { try tx.insert("Note", ["text": .string("note \(i)")]) }
                for id in 1 ... 20 as ClosedRange<Int64> {
                    let shared = failure == .duplicateKey && id == 20
                    try tx.insert(
                        "Account", ["id": .int(id), "email": .string(shared ? "a1@example.org" : "a\(id)@example.org")])
                }
            }
        }()
        let before = try Migrations.state(opening: old)
        func migration(failing: LateFailure?) -> Database.Configuration {
            Migrations.configuration(
                path, version: 2, [Self.personReindexed, Self.hound, Self.tag, Migrations.accountV2]
            ) { migration, _ in
                try migration.renameType(from: "Dog", to: "Hound")
                if failing == .renameLeftOpen {
                    try migration.renameProperty(onType: "Person", from: "lastName", to: "surname")
                }
                try migration.enumerateObjects(ofType: "Person") { old, new in
                    new?["fullName"] = .string(old!["firstName"].string! + " " + old!["lastName"].string!)
                }
                try migration.enumerateObjects(ofType: "Note") { old, _ in
                    try migration.create("Tag", value: ["name": old!["text"], "uses": 1])
                }
                _ = try migration.deleteData(forType: "Note")
                if failing == .closureThrows { throw Halfway() }
            }
        }
        let expected: StrataError.Code =
            switch failure {
            case .closureThrows, .renameLeftOpen: .migrationFailed
            case .duplicateKey: .duplicatePrimaryKey
            }
        expectStrataError(expected) { _ = try Database(configuration: migration(failing: failure)) }
        #expect(try Migrations.state(opening: old) == before)
        // Without the failure, the same migration changes every one of those databases.
        guard failure != .duplicateKey else { return }
        let migrated = try Database(configuration: migration(failing: nil))
        migrated.close()
        let after = try expectFileVerified(path)
        let changed = Set(after.digests.keys).union(before.databases.keys).filter {
            after.digests[$0] != before.databases[$0]
        }
        #expect(
            changed.isSuperset(of: ["__strata.meta", "__strata.t1", "__strata.t1.i4", "__strata.t3", "__strata.t4"]),
            "\(changed.sorted())")
        #expect(after.objectCounts == ["Person": 2_000, "Hound": 50, "Tag": 10, "Account": 20])
    }
}
