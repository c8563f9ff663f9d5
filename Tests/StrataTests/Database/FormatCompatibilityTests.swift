import Foundation
import Testing

@testable import Strata

/// Files written by earlier versions of Strata open and migrate unchanged.
///
/// `Fixtures/format1-*.strata` were written by Strata as of November 2026
/// (file format 1), before the architecture rework: the local file at
/// schema version 2 after a closure migration (a retired property, a kept
/// type, automatic ids, an index emptied and listed for deletion), the
/// synced file at version 2 with a kept property. Both were written before
/// relationships (links, lists, embedded objects) existed, and open
/// unchanged after them.
///
/// `Fixtures/format1-relationships.strata` was written after relationships
/// came (November 2026) by ``writeTheRelationshipsFixture()``, from
/// ``RelationshipFixtures/seed(_:mode:)``; run that test with
/// `STRATA_WRITE_FIXTURES=1` to write it again, which only a deliberate
/// change of the file format should need.
@Suite struct FormatCompatibilityTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// A writable copy of a fixture in the test's folder.
    private func copy(_ name: String, into folder: TemporaryFolder) throws -> String {
        let path = folder.path(name)
        try FileManager.default.copyItem(atPath: Self.fixtures.appendingPathComponent(name).path, toPath: path)
        return path
    }

    static let localV2 = Schema([
        ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("fullName", .string)
            Property("age", .int, default: 0, indexed: true)
            Property("nickname", .string, default: "none")
        },
        ObjectSchema("Note", primaryKey: nil) {
            Property("text", .string)
            Property("created", .date)
            Property("flag", .bool, default: false)
            Property("blob", .data, optional: true)
        },
    ])

    @Test func aLocalFileOfFormat1OpensAsItIs() throws {
        let folder = try TemporaryFolder()
        let path = try copy("format1-local.strata", into: folder)
        #expect(
            try Database.migrationPlan(for: .init(path: path, schemaVersion: 2, schema: Self.localV2)).action == .open)
        let db = try Database(configuration: .init(path: path, schemaVersion: 2, schema: Self.localV2))
        let people = try db.read { tx in
            try tx.objects("Person").map { [$0["fullName"].string!, "\($0["age"].int!)", $0["nickname"].string!] }
        }
        #expect(
            people == [["Ada Lovelace", "36", "none"], ["Alan Turing", "41", "none"], ["Grace Hopper", "0", "none"]])
        #expect(try db.read { tx in try tx.objects("Person").where("age", equals: 41).map { $0["id"].int! } } == [2])
        let notes = try db.read { tx in try tx.objects("Note").map { $0["text"].string! } }
        #expect(notes == ["first", "second", "third", "fourth"])
        #expect(try db.read { tx in try tx.objects("Note").whereSchemaVersion(1 ... 1).count } == 3)
        // The automatic id sequence continues where the file left it.
        let id = try db.write { tx in try tx.insert("Note", ["text": "fifth", "created": .date(Date())]) }
        #expect(id == .int(5))
        #expect(try db.verify() == [])
        let stats = try db.statistics()
        #expect(stats.types.map(\.name) == ["Note", "Person", "Tag"])
        #expect(stats.types.first { $0.name == "Tag" }?.isKept == true)
    }

    @Test func aLocalFileOfFormat1MigratesToTheNextVersion() throws {
        let folder = try TemporaryFolder()
        let path = try copy("format1-local.strata", into: folder)
        var v3 = Self.localV2.objectSchemas
        v3[0] = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("fullName", .string)
            Property("age", .int, default: 0, indexed: true)
            Property("nickname", .string, default: "none")
            Property("email", .string, optional: true)
        }
        var config = Database.Configuration(path: path, schemaVersion: 3, schema: Schema(v3))
        config.migration = { migration, oldVersion in
            #expect(oldVersion == 2)
            try migration.enumerateObjects(ofType: "Person") { old, new in
                new?["nickname"] = .string(String(old!["fullName"].string!.prefix(3)))
            }
            try migration.deleteData(forType: "Tag")
        }
        let db = try Database(configuration: config)
        let rows = try db.read { tx in try tx.objects("Person").map { "\($0["nickname"].string!) \($0["email"])" } }
        #expect(rows == ["Ada null", "Ala null", "Gra null"])
        #expect(try db.read { tx in try tx.objects("Person").where("age", equals: 36).count } == 1)
        #expect(try db.verify() == [])
        #expect(try db.statistics().types.map(\.name) == ["Note", "Person"])
    }

    static let syncedV1 = Schema([
        ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property("color", .string, optional: true)
        }
    ])

    static let syncedV2 = Schema([
        ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property("size", .int, default: 3, indexed: true)
        }
    ])

    @Test func aSyncedFileOfFormat1OpensForOlderAndNewerApps() throws {
        let folder = try TemporaryFolder()
        let path = try copy("format1-synced.strata", into: folder)
        var newer = Database.Configuration(path: path, schemaVersion: 2, schema: Self.syncedV2)
        newer.mode = .synced
        do {
            let db = try Database(configuration: newer)
            #expect(try db.read { tx in try tx.objects("Item").map { $0["size"].int! } } == [3, 3, 5])
            #expect(
                try db.read { tx in try tx.objects("Item").where("size", equals: 5).map { $0["name"].string! } } == [
                    "bowl"
                ])
            #expect(try db.verify() == [])
            db.close()
        }
        var older = Database.Configuration(path: path, schemaVersion: 1, schema: Self.syncedV1)
        older.mode = .synced
        let db = try Database(configuration: older)
        let colors = try db.read { tx in try tx.objects("Item").map { $0["color"] } }
        #expect(colors == [.string("blue"), .null, .null])
    }

    // MARK: Files from before relationships

    @Test func aFileFromBeforeRelationshipsOpensReadOnlyUnchanged() throws {
        let folder = try TemporaryFolder()
        let path = try copy("format1-local.strata", into: folder)
        let bytes = try RawFile.contents(path)
        var config = Database.Configuration(path: path, schemaVersion: 2, schema: Self.localV2)
        config.readOnly = true
        do {
            let db = try Database(configuration: config)
            defer { db.close() }
            let people = try db.read { tx throws in try tx.objects("Person").map { $0["fullName"].string! } }
            #expect(people == ["Ada Lovelace", "Alan Turing", "Grace Hopper"])
            #expect(try db.read { tx throws in try tx.objects("Note").count } == 4)
            #expect(try db.verify() == [])
            #expect(try db.statistics().types.allSatisfy(\.linkCounts.isEmpty))
        }
        #expect(try Database.verify(path: path) == [])
        #expect(try RawFile.contents(path) == bytes, "a read-only open changed the file")
    }

    /// Version 2's schema with, at version 3, a list of strings, an
    /// embedded object (of a new embedded type) and a list of them.
    static let localV3WithEmbedded = Schema([
        ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("fullName", .string)
            Property("age", .int, default: 0, indexed: true)
            Property("nickname", .string, default: "none")
            Property.list("aliases", of: .string)
            Property.embedded("address", "Address")
            Property.list("homes", embedded: "Address")
        },
        localV2.objectSchemas[1],
        ObjectSchema("Address", embedded: true) {
            Property("street", .string)
            Property("city", .string, default: "Leeds")
        },
    ])

    @Test func addingListsAndEmbeddedObjectsToAFileFromBeforeThemIsAutomaticAndRewritesNoRecord() throws {
        let folder = try TemporaryFolder()
        let path = try copy("format1-local.strata", into: folder)
        let config = Database.Configuration(path: path, schemaVersion: 3, schema: Self.localV3WithEmbedded)
        let plan = try Database.migrationPlan(for: config)
        #expect(plan.action == .migrate && !plan.runsMigrationClosure, "\(plan)")
        #expect(plan.steps.count == 4 && plan.steps.allSatisfy { $0.handling == .automatic }, "\(plan)")
        let db = try Database(configuration: config)
        #expect(Instrumentation.recordWritesOfLastOpen(path) == 0)
        #expect(db.fileSchemaVersion == 3)
        let people = try db.read { tx throws in try tx.objects("Person").map(\.values) }
        #expect(people.map { $0["fullName"] } == ["Ada Lovelace", "Alan Turing", "Grace Hopper"])
        for person in people {
            #expect(person["aliases"] == .list([]))
            #expect(person["address"] == .null)
            #expect(person["homes"] == .list([]))
        }
        // Every record still carries the version it was written under.
        #expect(try db.read { tx throws in try tx.objects("Person").whereSchemaVersion(3 ... 3).count } == 0)
        #expect(try db.verify() == [])
        // The new properties work on the old objects.
        try db.write { tx throws in
            try tx.update(
                "Person", key: 1,
                ["aliases": ["Ada"], "address": ["street": "St James's Square"], "homes": [["street": "Ockham"]]])
        }
        let ada = try #require(try db.read { tx throws in try tx.object("Person", key: 1)?.values })
        #expect(ada["address"] == .object(["street": "St James's Square", "city": "Leeds"]))
        #expect(ada["homes"] == .list([.object(["street": "Ockham", "city": "Leeds"])]))
        #expect(try db.verify() == [])
    }

    /// Adding link properties to a type that already has a table is
    /// automatic: the migration creates their backlinks tables, empty, and
    /// rewrites no record.
    @Test(arguments: ["format1-local.strata", "format1-synced.strata"])
    func addingALinkToAFileFromBeforeRelationshipsIsAutomaticAndRewritesNoRecord(_ fixture: String) throws {
        let folder = try TemporaryFolder()
        let path = try copy(fixture, into: folder)
        let local = fixture.contains("local")
        var schema = local ? Self.localV2 : Self.syncedV2
        let type = local ? "Person" : "Item"
        schema.objectSchemas[0].properties += [
            Property.link("mentor", to: type), Property.list("peers", linksTo: type, onDelete: .deny),
        ]
        var config = Database.Configuration(path: path, schemaVersion: 3, schema: schema)
        config.mode = local ? .local : .synced
        let db = try Database(configuration: config)
        #expect(Instrumentation.recordWritesOfLastOpen(path) == 0)
        #expect(try db.read { tx throws in try tx.objects(type).map { $0["mentor"] } } == [.null, .null, .null])
        try db.write { tx throws in try tx.update(type, key: 1, ["mentor": .link(2), "peers": [.link(3)]]) }
        #expect(try db.read { tx throws in try tx.objects(type, linkingTo: 2, through: "mentor").count } == 1)
        #expect(throws: StrataError.self) { try db.write { tx throws in try tx.delete(type, key: 3) } }
        #expect(try db.verify() == [])
    }

    /// A new type with a link gets its backlinks table with its table.
    @Test func addingATypeWithALinkToAFileFromBeforeRelationshipsOpens() throws {
        let folder = try TemporaryFolder()
        let path = try copy("format1-local.strata", into: folder)
        var schema = Self.localV2
        schema.objectSchemas.append(
            ObjectSchema("Badge", primaryKey: "name") {
                Property("name", .string)
                Property.link("holder", to: "Person", onDelete: .cascade)
            })
        let db = try Database(configuration: .init(path: path, schemaVersion: 2, schema: schema))
        try db.write { tx throws in try tx.insert("Badge", ["name": "first", "holder": .link(1)]) }
        try db.write { tx throws in _ = try tx.delete("Person", key: 1) }
        #expect(try db.read { tx throws in try tx.objects("Badge").count } == 0)
        #expect(try db.verify() == [])
    }

    // MARK: A file with relationships

    @Test func aFileWithRelationshipsReadsBackExactly() throws {
        let folder = try TemporaryFolder()
        let path = try copy("format1-relationships.strata", into: folder)
        #expect(try Database.verify(path: path) == [])
        let config = Fixtures.configuration(path, schema: RelationshipFixtures.schema)
        #expect(try Database.migrationPlan(for: config).action == .open)
        let db = try Database(configuration: config)
        #expect(try RelationshipFixtures.contents(db) == RelationshipFixtures.seeded)
        try db.read { tx throws in
            #expect(try tx.objects("Dog", linkingTo: 1, through: "owner").map { $0["name"] } == ["Fido", "Rex"])
            #expect(try tx.objects("Dog", linkingTo: 1, through: "vet").map { $0["name"] } == ["Rex"])
            #expect(try tx.objects("Person", linkingTo: 1, through: "friends").map { $0["id"] } == [2])
            #expect(try tx.objects("Person", linkingTo: 2, through: "friends").map { $0["id"] } == [1])
        }
        let statistics = try db.statistics()
        #expect(statistics.types.map(\.name) == ["Dog", "Person", "Vet"])
        #expect(statistics.types.map(\.linkCounts) == [["owner": 2, "vet": 1], ["friends": 2], [:]])
        // The delete rules the catalog records still apply.
        #expect(throws: StrataError.self) { try db.write { tx throws in try tx.delete("Vet", key: 1) } }
        try db.write { tx throws in #expect(try tx.delete("Person", key: 1)) }
        #expect(try db.read { tx throws in try tx.objects("Dog").map { $0["name"] } } == ["Stray"])
        #expect(try db.read { tx throws in try tx.object("Person", key: 2)?["friends"] } == .list([]))
        #expect(try db.verify() == [])
    }

    /// Strata writes today, byte for byte, what the fixture holds: the same
    /// catalog, records, backlinks and counters. A change to how links,
    /// lists or embedded objects are encoded fails here first.
    @Test func theSameObjectsAreWrittenAsTheRelationshipsFixtureHoldsThem() throws {
        let folder = try TemporaryFolder()
        let fixture = try copy("format1-relationships.strata", into: folder)
        let fresh = folder.path("fresh.strata")
        try RelationshipFixtures.seed(fresh)
        let stored = try FileVerifier.verify(fixture)
        let written = try FileVerifier.verify(fresh)
        #expect(stored.problems.isEmpty && written.problems.isEmpty, "\(stored.problems) \(written.problems)")
        #expect(stored.catalog == written.catalog)
        #expect(stored.digests.keys.sorted() == written.digests.keys.sorted())
        for name in stored.digests.keys.sorted() where name != FileLayout.meta.name {
            #expect(stored.digests[name] == written.digests[name], "\(name)")
        }
        #expect(stored.digests.keys.contains { $0.contains(".l") }, "the fixture has backlinks tables")
    }

    /// Writes `Fixtures/format1-relationships.strata` from
    /// ``RelationshipFixtures/seed(_:mode:)``. Runs only with
    /// `STRATA_WRITE_FIXTURES=1`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["STRATA_WRITE_FIXTURES"] != nil))
    func writeTheRelationshipsFixture() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("format1-relationships.strata")
        try RelationshipFixtures.seed(path)
        _ = try Database.compact(path: path)
        let target = Self.fixtures.appendingPathComponent("format1-relationships.strata").path
        try? FileManager.default.removeItem(atPath: target)
        try FileManager.default.copyItem(atPath: path, toPath: target)
    }
}
