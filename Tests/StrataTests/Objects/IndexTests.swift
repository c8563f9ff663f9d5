import Foundation
import Testing

@testable import Strata

@Suite(.temporaryFolder) struct IndexTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    /// Six items sharing some tags, ranks and notes.
    static let seed: [[String: Value]] = [
        Items.item(1, "red", rank: 1, note: "a"),
        Items.item(2, "blue", rank: 2),
        Items.item(3, "red", rank: 1, flag: true, note: "b"),
        Items.item(4, "green", rank: .min, note: "a"),
        Items.item(5, "red", rank: .max, flag: true),
        Items.item(6, "blue", rank: -1, note: ""),
    ]

    /// Values that no seeded object holds, to prove lookups find nothing for them.
    static let absentValues: [Value] = [
        "purple", 12345, .date(Date(timeIntervalSinceReferenceDate: 1)), .uuid(UUID()), nil,
    ]

    /// Checks, for every indexed property of every type, that an indexed
    /// `where(_:equals:)` returns exactly the objects (in the same order) that a
    /// brute-force `filter` over all objects returns, for every value an object
    /// holds and for `probes`; and that each index has one entry per object.
    func expectIndexesMatchScan(
        _ db: Database, probes: [Value] = absentValues,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        try db.read { tx throws in
            for objectSchema in db.schema.objectSchemas {
                let type = objectSchema.name
                let all = try tx.objects(type)
                let count = try all.count
                let table = try tx.context.table(type)
                for property in objectSchema.properties
                where property.isIndexed && property.name != objectSchema.primaryKey {
                    let name = property.name
                    let field = table.indexedFields.first { $0.name == name }
                    let index = try #require(
                        field?.index, "\(type).\(name) has no index", sourceLocation: sourceLocation)
                    let entries = try tx.context.lmdb.entryCount(index)
                    #expect(
                        entries == count, "index on \(type).\(name) has \(entries) entries for \(count) objects",
                        sourceLocation: sourceLocation)
                    let held = try all.map { $0[name] }
                    // Distinct by stored bytes, the equality Strata uses (a
                    // Set would merge canonically equivalent strings).
                    var values: [Value] = []
                    for value in held + probes.filter({ $0.fits(property.type, optional: true) })
                    where !values.contains(where: { $0.isStored(identicallyTo: value) }) {
                        values.append(value)
                    }
                    for value in values {
                        let indexed = try all.where(name, equals: value).map(\.primaryKey)
                        let scanned = try all.filter { $0[name].isStored(identicallyTo: value) }.map(\.primaryKey)
                        #expect(indexed == scanned, "\(type).\(name) == \(value)", sourceLocation: sourceLocation)
                    }
                }
            }
        }
    }

    /// Seeds a new file, runs `body`, checks every index, then checks every
    /// index again after releasing the database and reopening the file.
    func withIndexedFile(
        seed: [[String: Value]] = seed, probes: [Value] = absentValues, mode: Database.Mode,
        sourceLocation: SourceLocation = #_sourceLocation, _ body: (Database) throws -> Void
    ) throws {
        let config = Fixtures.configuration(folder.path(), schema: Items.schema, mode: mode)
        do {
            let db = try Database(configuration: config)
            try db.write { tx in for item in seed { try tx.insert("Item", item) } }
            try body(db)
            try expectIndexesMatchScan(db, probes: probes, sourceLocation: sourceLocation)
        }
        try expectIndexesMatchScan(Database(configuration: config), probes: probes, sourceLocation: sourceLocation)
    }

    /// The ids of the Items whose `property` equals `value`, through the index.
    func ids(_ db: Database, _ property: String, _ value: Value) throws -> [Int64] {
        try db.read { tx in try tx.objects("Item").where(property, equals: value).map { $0["id"].int ?? -1 } }
    }

    // MARK: Writes

    @Test(arguments: Fixtures.modes) func insertAddsAnEntryForEveryIndexedProperty(_ mode: Database.Mode) throws {
        try withIndexedFile(mode: mode) { db throws in
            #expect(try ids(db, "tag", "red") == [1, 3, 5])
            #expect(try ids(db, "rank", .int(.min)) == [4])
            #expect(try ids(db, "flag", true) == [3, 5])
            #expect(try ids(db, "note", "a") == [1, 4])
            #expect(try ids(db, "note", "") == [6])
        }
    }

    @Test(arguments: Fixtures.modes) func updateOfIndexedValueMovesItsEntry(_ mode: Database.Mode) throws {
        try withIndexedFile(mode: mode) { db throws in
            try db.write { tx throws in
                try tx.update("Item", key: 1, ["tag": "blue", "rank": 7])
                try tx.update("Item", key: 5, ["flag": false, "note": "z"])
            }
            #expect(try ids(db, "tag", "red") == [3, 5])
            #expect(try ids(db, "tag", "blue") == [1, 2, 6])
            #expect(try ids(db, "rank", 7) == [1])
            #expect(try ids(db, "flag", true) == [3])
            #expect(try ids(db, "note", "z") == [5])
        }
    }

    @Test(arguments: Fixtures.modes) func updateOfUnindexedValueKeepsEntries(_ mode: Database.Mode) throws {
        try withIndexedFile(mode: mode) { db throws in
            try db.write { tx throws in
                try tx.update("Item", key: 2, ["plain": "changed"])
                try tx.update("Item", key: 3, ["plain": "changed", "tag": "red", "note": "b"])
            }
            #expect(try ids(db, "tag", "blue") == [2, 6])
            #expect(try ids(db, "tag", "red") == [1, 3, 5])
            #expect(try ids(db, "note", "b") == [3])
        }
    }

    @Test(arguments: Fixtures.modes) func upsertReplacingValuesMovesEntries(_ mode: Database.Mode) throws {
        try withIndexedFile(mode: mode) { db throws in
            // Omitted properties go back to their defaults, in the index too.
            try db.write { tx in _ = try tx.upsert("Item", ["id": 3, "tag": "green"]) }
            #expect(try ids(db, "tag", "green") == [3, 4])
            #expect(try ids(db, "tag", "red") == [1, 5])
            #expect(try ids(db, "flag", true) == [5])
            #expect(try ids(db, "rank", 0) == [3])
            #expect(try ids(db, "note", nil) == [2, 3, 5])
        }
    }

    @Test(arguments: Fixtures.modes) func upsertWithEqualValuesLeavesEntriesAsTheyWere(_ mode: Database.Mode) throws {
        try withIndexedFile(mode: mode) { db throws in
            try db.write { tx throws in
                _ = try tx.upsert("Item", Self.seed[0])
                _ = try tx.upsert("Item", Self.seed[0].merging(["plain": "only this"]) { $1 })
            }
            #expect(try ids(db, "tag", "red") == [1, 3, 5])
            #expect(try ids(db, "note", "a") == [1, 4])
        }
    }

    @Test(arguments: Fixtures.modes) func upsertOfNewObjectAddsEntries(_ mode: Database.Mode) throws {
        try withIndexedFile(mode: mode) { db throws in
            try db.write { tx in _ = try tx.upsert("Item", Items.item(7, "red", note: "a")) }
            #expect(try ids(db, "tag", "red") == [1, 3, 5, 7])
            #expect(try ids(db, "note", "a") == [1, 4, 7])
        }
    }

    @Test(arguments: Fixtures.modes) func deleteRemovesItsEntries(_ mode: Database.Mode) throws {
        try withIndexedFile(mode: mode) { db throws in
            try db.write { tx throws in
                #expect(try tx.delete("Item", key: 3))
                #expect(try tx.delete("Item", key: 4))
                #expect(try !tx.delete("Item", key: 4))
            }
            #expect(try ids(db, "tag", "red") == [1, 5])
            #expect(try ids(db, "tag", "green") == [])
            #expect(try ids(db, "rank", .int(.min)) == [])
            #expect(try ids(db, "note", "a") == [1])
        }
    }

    @Test(arguments: Fixtures.modes) func deleteAllEmptiesEveryIndexOfTheType(_ mode: Database.Mode) throws {
        try withIndexedFile(mode: mode) { db throws in
            try db.write { tx throws in
                _ = try tx.insert("Log", ["level": 3])
                try tx.deleteAll("Item")
            }
            #expect(try ids(db, "tag", "red") == [])
            #expect(try ids(db, "note", nil) == [])
            #expect(try db.read { try $0.objects("Log").where("level", equals: 3).count } == 1)
            try db.write { tx in _ = try tx.insert("Item", Items.item(1, "red")) }
            #expect(try ids(db, "tag", "red") == [1])
        }
    }

    @Test(arguments: Fixtures.modes) func writeThatThrowsLeavesIndexesAsTheyWere(_ mode: Database.Mode) throws {
        struct Failure: Error {}
        try withIndexedFile(mode: mode) { db throws in
            #expect(throws: Failure.self) {
                try db.write { tx throws in
                    try tx.insert("Item", Items.item(7, "red"))
                    try tx.update("Item", key: 1, ["tag": "blue"])
                    _ = try tx.upsert("Item", Items.item(2, "red", note: "a"))
                    try tx.delete("Item", key: 3)
                    try tx.deleteAll("Log")
                    throw Failure()
                }
            }
            #expect(try ids(db, "tag", "red") == [1, 3, 5])
            #expect(try ids(db, "tag", "blue") == [2, 6])
            #expect(try ids(db, "note", "a") == [1, 4])
        }
    }

    @Test(arguments: Fixtures.modes) func nullsInOptionalIndexedPropertyAreFoundWithNull(_ mode: Database.Mode) throws {
        try withIndexedFile(mode: mode) { db throws in
            #expect(try ids(db, "note", nil) == [2, 5])
            #expect(try ids(db, "ref", nil) == [1, 2, 3, 4, 5, 6])
            let ref = UUID()
            try db.write { tx throws in
                try tx.insert("Item", ["id": 7, "tag": "omitted"])
                try tx.update("Item", key: 2, ["note": "now set", "ref": .uuid(ref)])
                try tx.update("Item", key: 1, ["note": nil])
            }
            #expect(try ids(db, "note", nil) == [1, 5, 7])
            #expect(try ids(db, "note", "now set") == [2])
            #expect(try ids(db, "ref", .uuid(ref)) == [2])
            #expect(try ids(db, "ref", nil) == [1, 3, 4, 5, 6, 7])
        }
    }

    @Test(arguments: Fixtures.modes) func manyObjectsSharingOneValueStayConsistent(_ mode: Database.Mode) throws {
        let many = (1 ... 300 as ClosedRange<Int64>).map { id -> [String: Value] in
            Items.item(id, id % 10 == 0 ? "rare" : "common", rank: id % 3)
        }
        try withIndexedFile(seed: many, mode: mode) { db throws in
            try db.write { tx throws in
                for id in stride(from: 3, through: 300, by: 3) { try tx.delete("Item", key: .int(Int64(id))) }
                for id in stride(from: 1, through: 300, by: 7) where id % 3 != 0 {
                    try tx.update("Item", key: .int(Int64(id)), ["tag": "moved"])
                }
            }
            let expectedCommon = (1 ... 300 as ClosedRange<Int64>).filter { $0 % 3 != 0 && $0 % 10 != 0 && $0 % 7 != 1 }
            #expect(try ids(db, "tag", "common") == expectedCommon)
            #expect(try ids(db, "rank", 0) == [])
        }
    }

    @Test(arguments: Fixtures.modes) func longIndexedStringsSharingAPrefixMatchOnlyExactly(_ mode: Database.Mode) throws
    {
        let prefix = String(repeating: "p", count: 600)
        let tags = [
            prefix + "A", prefix + "B", prefix, prefix + "AA", String(repeating: "é", count: 300) + "x",
            String(repeating: "é", count: 300) + "y", String(repeating: "p", count: 509),
        ]
        let seed = tags.enumerated().map { Items.item(Int64($0.offset + 1), $0.element, note: $0.element) }
        try withIndexedFile(
            seed: seed, probes: [.string(prefix + "C"), .string(String(repeating: "p", count: 511))], mode: mode
        ) { db throws in
            for (i, tag) in tags.enumerated() {
                #expect(try ids(db, "tag", .string(tag)) == [Int64(i + 1)], "tag #\(i + 1)")
                #expect(try ids(db, "note", .string(tag)) == [Int64(i + 1)], "note #\(i + 1)")
            }
            try db.write { tx throws in
                try tx.update("Item", key: 1, ["tag": .string(prefix + "B")])
                try tx.delete("Item", key: 4)
            }
            #expect(try ids(db, "tag", .string(prefix + "A")) == [])
            #expect(try ids(db, "tag", .string(prefix + "B")) == [1, 2])
            #expect(try ids(db, "tag", .string(prefix + "AA")) == [])
        }
    }

    @Test(arguments: Fixtures.modes) func stringOfExactlyTheCutLengthDoesNotMatchLongerStrings(_ mode: Database.Mode)
        throws
    {
        // Index keys keep the first 510 bytes of a string; a 510-byte string is
        // not cut, yet its key equals that of every longer string it begins.
        let cut = String(repeating: "q", count: 510)
        let seed = [Items.item(1, cut), Items.item(2, cut + "tail"), Items.item(3, cut + "other")]
        try withIndexedFile(seed: seed, mode: mode) { db throws in
            #expect(try ids(db, "tag", .string(cut)) == [1])
            #expect(try ids(db, "tag", .string(cut + "tail")) == [2])
        }
    }

    @Test(arguments: Fixtures.modes) func indexedBoolDateAndUUIDStayConsistent(_ mode: Database.Mode) throws {
        let (a, b) = (UUID(), UUID())
        let fine = Date(timeIntervalSinceReferenceDate: 745_000_000.000_123_4)
        let finer = Date(timeIntervalSinceReferenceDate: 745_000_000.000_123_5)
        let seed = [
            Items.item(1, "x", flag: true, when: fine, ref: a),
            Items.item(2, "x", flag: false, when: finer, ref: b),
            Items.item(3, "x", flag: true, when: .distantPast, ref: a),
            Items.item(4, "x", flag: false, when: .distantFuture),
            Items.item(5, "x", flag: true, when: fine, ref: Fixtures.zeroUUID),
        ]
        try withIndexedFile(seed: seed, mode: mode) { db throws in
            #expect(try ids(db, "when", .date(fine)) == [1, 5])
            #expect(try ids(db, "when", .date(finer)) == [2])
            #expect(try ids(db, "ref", .uuid(a)) == [1, 3])
            #expect(try ids(db, "ref", .uuid(Fixtures.zeroUUID)) == [5])
            try db.write { tx throws in
                try tx.update("Item", key: 1, ["flag": false, "when": .date(finer), "ref": .uuid(b)])
                _ = try tx.upsert("Item", Items.item(3, "x", flag: false, when: .distantPast))
                try tx.delete("Item", key: 5)
            }
            #expect(try ids(db, "flag", true) == [])
            #expect(try ids(db, "flag", false) == [1, 2, 3, 4])
            #expect(try ids(db, "when", .date(fine)) == [])
            #expect(try ids(db, "when", .date(finer)) == [1, 2])
            #expect(try ids(db, "ref", .uuid(b)) == [1, 2])
            #expect(try ids(db, "ref", .uuid(a)) == [])
        }
    }

    @Test(arguments: Fixtures.modes) func indexOnTypeWithAutomaticIDsStaysConsistent(_ mode: Database.Mode) throws {
        try withIndexedFile(mode: mode) { db throws in
            try db.write { tx throws in
                for level in [1, 2, 2, 3, 1] as [Int64] { _ = try tx.insert("Log", ["level": .int(level)]) }
                try tx.update("Log", key: 2, ["level": 3])
                try tx.update("Log", key: 3, ["message": "same level"])
                try tx.delete("Log", key: 5)
            }
            let levels = try db.read { tx in try tx.objects("Log").map { [$0.primaryKey: $0["level"]] } }
            #expect(levels == [[1: 1], [2: 3], [3: 2], [4: 3]])
        }
    }

    @Test(arguments: Fixtures.modes) func indexedLookupAgreesWithUnindexedLookupForCanonicallyEquivalentStrings(
        _ mode: Database.Mode
    ) throws {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        let seed = [Items.item(1, composed, plain: composed), Items.item(2, decomposed, plain: decomposed)]
        let db = try Database(configuration: Fixtures.configuration(folder.path(), schema: Items.schema, mode: mode))
        try db.write { tx in for item in seed { try tx.insert("Item", item) } }
        for probe in [composed, decomposed] {
            let (indexed, unindexed) = try db.read { tx in
                let items = try tx.objects("Item")
                return (
                    try items.where("tag", equals: .string(probe)).map(\.primaryKey),
                    try items.where("plain", equals: .string(probe)).map(\.primaryKey)
                )
            }
            #expect(indexed == unindexed, "where(_:equals: \(Array(probe.utf8)))")
        }
    }
}
