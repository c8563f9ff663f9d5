import Foundation
import Testing

@testable import Strata

/// In synced mode an older app version writes objects whose properties a
/// newer version declares and it does not: a replaced record keeps the
/// stored state of each such property (a value stays, an absent field
/// stays absent, so the newer app still reads its default); a new object
/// stores the empty value.
@Suite(.temporaryFolder) struct SyncedWriteTests {
    let folder = TemporaryFolder.current

    static let v1 = Schema([
        ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
        }
    ])

    static let v2 = Schema([
        ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property("color", .string, default: "red", indexed: true)
        }
    ])

    private func open(_ version: UInt64) throws -> Database {
        try Database(
            configuration: Fixtures.configuration(
                folder.path(), version: version,
                schema: version == 1 ? Self.v1 : Self.v2, mode: .synced))
    }

    /// Item 1 written at version 1 (no color field), item 2 at version 2
    /// with a color; then the version 2 app reads them.
    private func seed() throws {
        do {
            let db = try open(1)
            try db.write { tx in try tx.insert("Item", ["id": 1, "name": "cup"]) }
        }
        do {
            let db = try open(2)
            #expect(try colors(db) == ["red"])
            try db.write { tx in try tx.insert("Item", ["id": 2, "name": "plate", "color": "blue"]) }
        }
    }

    private func colors(_ db: Database) throws -> [String] {
        try db.read { tx in try tx.objects("Item").map { $0["color"].string! } }
    }

    enum Write: String, CaseIterable {
        case update, upsert
    }

    @Test(arguments: Write.allCases)
    func anOlderAppsWriteKeepsTheNewerAppsDefaultAndValues(write: Write) throws {
        try seed()
        do {
            let older = try open(1)
            try older.write { tx in
                for (id, name) in [(1, "mug"), (2, "dish")] {
                    switch write {
                    case .update: try tx.update("Item", key: .int(Int64(id)), ["name": .string(name)])
                    case .upsert: try tx.upsert("Item", ["id": .int(Int64(id)), "name": .string(name)])
                    }
                }
            }
        }
        let newer = try open(2)
        #expect(try colors(newer) == ["red", "blue"])
        #expect(try newer.read { tx in try tx.objects("Item").map { $0["name"].string! } } == ["mug", "dish"])
        #expect(try newer.read { tx in try tx.objects("Item").where("color", equals: "red").count } == 1)
        #expect(try newer.verify() == [])
    }

    @Test func aNewObjectOfAnOlderAppStoresTheEmptyValue() throws {
        try seed()
        do {
            let older = try open(1)
            try older.write { tx in try tx.insert("Item", ["id": 3, "name": "bowl"]) }
        }
        #expect(try colors(open(2)) == ["red", "blue", ""])
    }

    /// A read-only open follows the rules of a synced open: an older app
    /// version reads a file a newer one wrote, ignoring what it does not
    /// declare, and writes nothing.
    @Test func anOlderAppOpensTheNewerFileReadOnly() throws {
        try seed()
        let before = try RawFile.contents(folder.path())
        var config = Fixtures.configuration(folder.path(), version: 1, schema: Self.v1, mode: .synced)
        config.readOnly = true
        let plan = try Database.migrationPlan(for: config)
        #expect(plan.action == .open, "\(plan)")
        do {
            let db = try Database(configuration: config)
            #expect(try db.read { tx in try tx.objects("Item").map { $0["name"].string! } } == ["cup", "plate"])
            // Nothing is written, so the file's schema is what reads it: a
            // dynamic object shows the newer app's property too.
            #expect(
                try db.read { tx in try tx.object("Item", key: 2)?.values } == [
                    "id": 2, "name": "plate", "color": "blue",
                ])
            #expect(throws: StrataError.self) {
                try db.write { tx in try tx.insert("Item", ["id": 3, "name": "bowl"]) }
            }
        }
        #expect(try RawFile.contents(folder.path()) == before)
        // A newer schema than the file's still needs a writable open, once.
        let v3 = Schema([
            ObjectSchema("Item", primaryKey: "id") {
                Property("id", .int)
                Property("name", .string)
                Property("color", .string, default: "red", indexed: true)
                Property("size", .int, default: 1)
            }
        ])
        var newer = Fixtures.configuration(folder.path(), version: 3, schema: v3, mode: .synced)
        newer.readOnly = true
        let error = #expect(throws: StrataError.self) { try Database(configuration: newer) }
        #expect(error?.code == .migrationRequired)
        #expect(error?.message.contains("'Item.size' has been added") == true, "\(error?.message ?? "")")
    }
}
