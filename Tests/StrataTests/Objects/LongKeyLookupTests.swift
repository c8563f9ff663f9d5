import Foundation
import Testing

@testable import Strata

@Model(name: "Keyed") struct KeyedItem: Equatable {
    @PrimaryKey var key: String
    @Indexed var tag = ""
}

@Model(name: "KeyedRef") struct KeyedRef {
    @PrimaryKey var id: Int
    var target: Link<KeyedItem>?
}

/// A key too long to store names no object: reading, deleting, querying
/// and following links by it answer as for any absent key; writing it
/// still throws `.keyTooLarge`.
@Suite(.temporaryFolder) struct LongKeyLookupTests {
    let folder = TemporaryFolder.current

    /// The longest string key a file stores: 510 UTF-8 bytes, a 511-byte
    /// key (docs/FileFormat.md), in either mode.
    static let longestKey = 510

    func open(_ mode: Database.Mode) throws -> Database {
        var config = Database.Configuration(path: folder.path(), models: [KeyedItem.self, KeyedRef.self])
        config.durability = .noSync
        config.mode = mode
        return try Database(configuration: config)
    }

    @Test(arguments: Fixtures.modes)
    func aKeyTooLongToStoreIsAnAbsentKey(mode: Database.Mode) throws {
        let db = try open(mode)
        let longest = String(repeating: "k", count: Self.longestKey)
        let tooLong = [longest + "k", String(repeating: "k", count: 511), String(repeating: "é", count: 300)]
        try db.write { tx in
            try tx.insert(KeyedItem(key: "a", tag: "t"))
            try tx.insert(KeyedItem(key: longest, tag: longest))
            try tx.insert(KeyedRef(id: 1, target: Link("a")))
        }
        // `throws`: the closure's only `try`s are inside `#expect`.
        try db.write { (tx) throws in
            for key in tooLong {
                #expect(try tx.object("Keyed", key: .string(key)) == nil)
                #expect(try tx.object(KeyedItem.self, primaryKey: key) == nil)
                #expect(try tx.schemaVersion(of: KeyedItem.self, primaryKey: key) == nil)
                #expect(try tx.objects(KeyedItem.self).where(\.key, equals: key).count == 0)
                #expect(try tx.objects(KeyedItem.self).where(\.key, in: [key, "a"]).map(\.key) == ["a"])
                #expect(try tx.objects("Keyed").where("key", equals: .string(key)).count == 0)
                #expect(try tx.objects(KeyedItem.self).where(\.tag, equals: key).count == 0)
                #expect(try tx.objects(KeyedRef.self, linkingTo: key, through: \.target).count == 0)
                #expect(try tx.objects("KeyedRef", linkingTo: .string(key), through: "target").count == 0)
                #expect(try !tx.delete("Keyed", key: .string(key)))
                #expect(try !tx.delete(KeyedItem.self, primaryKey: key))
                #expect(try !tx.delete(KeyedItem(key: key)))
            }
            // The longest storable key is found.
            #expect(try tx.object(KeyedItem.self, primaryKey: longest)?.tag == longest)
            #expect(try tx.objects(KeyedItem.self).where(\.key, in: longest...).map(\.key) == [longest])
            #expect(try tx.objects(KeyedItem.self).where(\.key, in: ..<(longest + "k")).count == 2)
            #expect(try tx.objects(KeyedItem.self).where(\.key, in: (longest + "k")...).count == 0)
            #expect(try tx.objects(KeyedItem.self).where(\.key, in: "b" ... (longest + "k")).map(\.key) == [longest])
        }
        // Writes of such a key still throw, and write nothing.
        for key in tooLong {
            _ = expectStrataError(.keyTooLarge) { _ = try db.write { tx in try tx.insert(KeyedItem(key: key)) } }
            _ = expectStrataError(.keyTooLarge) { _ = try db.write { tx in try tx.upsert(KeyedItem(key: key)) } }
            _ = expectStrataError(.keyTooLarge) {
                try db.write { tx in _ = try tx.insert("Keyed", ["key": .string(key)]) }
            }
            _ = expectStrataError(.keyTooLarge) {
                try db.write { tx in try tx.update("Keyed", key: .string(key), ["tag": "x"]) }
            }
        }
        let count = try db.read { tx in try tx.objects(KeyedItem.self).count }
        #expect(count == 2)
    }

    @Test(arguments: Fixtures.modes)
    func observingAnObjectByAKeyTooLongToStoreSeesNone(mode: Database.Mode) async throws {
        let db = try open(mode)
        try await withTimeout {
            var iterator = db.observe(KeyedItem.self, primaryKey: String(repeating: "k", count: 600))
                .makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(first.object == nil)
        }
    }
}
