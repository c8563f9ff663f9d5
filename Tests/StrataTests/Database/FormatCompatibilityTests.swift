import Foundation
import Testing

@testable import Strata

/// Files written by earlier versions of Strata open and migrate unchanged.
///
/// `Fixtures/format1-*.strata` were written by Strata as of November 2026
/// (file format 1), before the architecture rework: the local file at
/// schema version 2 after a closure migration (a retired property, a kept
/// type, automatic ids, an index emptied and listed for deletion), the
/// synced file at version 2 with a kept property.
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
}
