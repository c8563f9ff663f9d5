import Foundation
import Testing

@testable import Strata

/// `strata verify` reports each kind of damage; `strata compact` keeps the
/// objects and drops what no version reads.
@Suite(.temporaryFolder) struct VerifyCompactCommandTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    @Test func verifyPassesOnADemoFile() throws {
        let path = try StrataBinary.demoFile(folder)
        let result = try StrataBinary.run(["verify", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(
            result.output
                == "OK: \(path): 1 type, 25 objects; the catalog is consistent, every record decodes and every index matches its table.\n"
        )
        #expect(result.error.isEmpty)
    }

    /// A seeded file (3 people, `age` indexed), checked sound first so that
    /// what verify then finds comes from `damage`, which gets a write
    /// transaction of the storage layer, Person's records and its index on age.
    static func seeded(
        _ folder: TemporaryFolder,
        damagedBy damage: (LMDBTransaction, _ records: DatabaseHandle, _ ageIndex: DatabaseHandle) throws -> Void
    ) throws -> String {
        let path = folder.path()
        try Fixtures.seed(path)
        let db = try Database(configuration: Fixtures.configuration(path))
        let person = try #require(db.catalog[type: "Person"])
        db.close()
        let sound = try StrataBinary.run(["verify", path])
        #expect(sound.status == 0 && sound.output.hasPrefix("OK: "), "\(sound)")
        let age = try #require(person[property: "age"])
        try RawFile.withWrite(path) { txn in
            let records = try #require(try txn.openDatabase(person.recordsDatabase, create: false))
            let index = try #require(try txn.openDatabase(person.indexDatabase(age), create: false))
            try damage(txn, records, index)
        }
        return path
    }

    @Test func verifyCatchesAMissingIndexEntry() throws {
        let path = try Self.seeded(folder) { txn, _, index in
            // Charles (key 2) is 79: the last entry by age.
            let (indexKey, objectKey) = try #require(
                try txn.withCursor(index) { try $0.last().map { (Array($0.key), Array($0.value)) } })
            #expect(objectKey == RawFile.key(2))
            let deleted = try indexKey.withUnsafeBytes { k in
                try objectKey.withUnsafeBytes { v in try txn.delete(index, k, value: v) }
            }
            #expect(deleted)
        }
        let result = try StrataBinary.run(["verify", path])
        StrataBinary.expectOneLineError(result, containing: [path, "has a problem (listed above)."])
        #expect(result.output == "- The object of 'Person' with key 2 is missing from the index on 'age'.\n")
    }

    @Test func verifyCatchesAnIndexEntryForAnotherValue() throws {
        let path = try Self.seeded(folder) { txn, _, index in
            // File Ada (key 1, 36) under Charles's age too.
            let charles = try #require(try txn.withCursor(index) { try $0.last().map { Array($0.key) } })
            try txn.put(index, charles, RawFile.key(1))
        }
        let result = try StrataBinary.run(["verify", path])
        StrataBinary.expectOneLineError(result, containing: [path, "has a problem (listed above)."])
        #expect(result.output.contains("files the object with key 1 under another value"), "\(result.output)")
    }

    @Test func verifyCatchesACorruptedRecord() throws {
        let path = try Self.seeded(folder) { txn, records, _ in
            let original = try #require(try txn.get(records, RawFile.key(2)).map { Array($0) })
            try txn.put(records, RawFile.key(2), Array(original.prefix(original.count / 2)))
        }
        let result = try StrataBinary.run(["verify", path])
        StrataBinary.expectOneLineError(result, containing: [path, "(listed above)."])
        let problems = StrataBinary.lines(result.output).filter { !$0.isEmpty }
        #expect(
            problems.contains { $0.hasPrefix("- ") && $0.contains("'Person'") && $0.contains("key 2") },
            "\(result.output)")
    }

    // MARK: compact

    @Test func compactKeepsTheObjectsAndDropsRetiredFields() throws {
        let path = folder.path()
        let marker = Array("RETIRED-BIO".utf8)
        var v1 = Fixtures.person
        v1.properties.append(Property("bio", .string))
        do {
            let db = try Database(configuration: Fixtures.configuration(path, schema: Schema([v1])))
            try db.write { tx in
                for id in 1 ... 300 {
                    var person = Fixtures.person(Int64(id), "First\(id)", age: Int64(id % 90))
                    person["bio"] = .string("RETIRED-BIO" + String(repeating: "x", count: 1500))
                    try tx.insert("Person", person)
                }
            }
            db.close()
        }
        // Version 2 removes bio: no record is rewritten, its bytes stay.
        let v2 = Fixtures.configuration(path, version: 2)
        let expected = try Fixtures.people(opening: v2)
        #expect(expected.count == 300)
        func recordsHoldingTheBio() throws -> Int {
            try RawFile.withWrite(path) { txn in
                let records = try #require(try txn.openDatabase(FileLayout.records(TypeID(1)), create: false))
                var count = 0
                try txn.withCursor(records) { cursor in
                    var entry = try cursor.first()
                    while let (_, record) = entry {
                        if Array(record).firstRange(of: marker) != nil { count += 1 }
                        entry = try cursor.next()
                    }
                }
                return count
            }
        }
        #expect(try recordsHoldingTheBio() == 300)

        let result = try StrataBinary.run(["compact", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(result.output.hasPrefix("Compacted \(path): "), "\(result.output)")
        // "Compacted PATH: 1 bytes before, 2 bytes after (-3.4%)."
        let sizes = result.output.dropFirst("Compacted \(path): ".count).split(whereSeparator: { !$0.isNumber })
            .compactMap { Int($0) }
        let size = try RawFile.size(path)
        try #require(sizes.count == 4, "\(result.output)")
        #expect(sizes[1] == size, "\(result.output)")
        #expect(size < sizes[0] / 2, "\(result.output)")
        #expect(try recordsHoldingTheBio() == 0)
        #expect(try Fixtures.people(opening: v2) == expected)
        let info = try StrataBinary.run(["info", path])
        #expect(
            info.output.contains("  Person  300 objects  (version 1: 300)\n"),
            "each object keeps its effective version: \(info.output)")
        let verify = try StrataBinary.run(["verify", path])
        #expect(verify.status == 0 && verify.output.hasPrefix("OK: "), "\(verify)")
    }
}
