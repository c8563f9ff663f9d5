import Foundation
import Testing

@testable import Strata

@Suite(.temporaryFolder) struct RoundTripTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    /// One object type with a required and an optional property of `type`.
    static func sampleSchema(_ type: PropertyType) -> Schema {
        Schema([
            ObjectSchema("Sample", primaryKey: "id") {
                Property("id", .int)
                Property("value", type)
                Property("maybe", type, optional: true)
            }
        ])
    }

    static let megabyte = Data((0 ..< 1 << 20).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })
    static let maxUUID = UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))

    /// The values most likely to be damaged by an encoding: extremes, signs,
    /// special floating-point values, multi-byte and NUL characters, sizes.
    static func edgeValues(_ type: PropertyType) -> [Value] {
        switch type {
        case .bool:
            [true, false]
        case .int:
            [.int(.min), .int(.max), 0, -1, 1, 63, -64, 64, .int(.min + 1)]
        case .double:
            [
                .double(.nan), .double(.infinity), .double(-.infinity), .double(-0.0), 0.0,
                .double(.greatestFiniteMagnitude), .double(-.greatestFiniteMagnitude),
                .double(.leastNonzeroMagnitude), .double(.pi), -1.5,
            ]
        case .string:
            [
                "", "plain ASCII", "😀👩‍👩‍👧‍👦🇫🇷", "e\u{301}", "\u{E9}", "日本語のテキスト", "한국어", "a\u{0}b", "\u{0}",
                .string(String(repeating: "long ", count: 2000)),
            ]
        case .data:
            [.data(Data()), .data(Data([0])), .data(Data([0, 255, 0, 128])), .data(megabyte)]
        case .date:
            [
                .date(.distantPast), .date(.distantFuture), .date(Date(timeIntervalSinceReferenceDate: 0)),
                .date(Date(timeIntervalSinceReferenceDate: 745_000_000.000_123_4)),
                .date(Date(timeIntervalSince1970: -0.000_000_5)), .date(Date(timeIntervalSince1970: 0)),
            ]
        case .uuid:
            [.uuid(Fixtures.zeroUUID), .uuid(maxUUID), .uuid(UUID()), .uuid(UUID())]
        case .decimal:
            DecimalStorageTests.edgeDecimals.map { .decimal($0) }
        case .link, .list, .embedded:
            []
        }
    }

    /// Whether two values are the same bit for bit: NaN equals NaN, -0.0 differs
    /// from 0.0, strings compare by their UTF-8 bytes (not by canonical
    /// equivalence), dates by their exact time interval.
    static func identical(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.double(let x), .double(let y)): x.isNaN ? y.isNaN : x.bitPattern == y.bitPattern
        case (.string(let x), .string(let y)): Array(x.utf8) == Array(y.utf8)
        case (.date(let x), .date(let y)):
            x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
        case (.decimal(let x), .decimal(let y)):
            x == y && x.exponent == y.exponent && x.significand == y.significand && x.sign == y.sign
        default: a == b
        }
    }

    /// Runs `write`, then `read` three times: inside the same write
    /// transaction, in a later read transaction, and in a read transaction
    /// of a new Database on the same file after the first was released.
    func atEveryStage<T>(
        _ config: Database.Configuration, write: (WriteTransaction) throws -> Void,
        read: (ReadTransaction) throws -> T
    ) throws -> [(stage: String, result: T)] {
        var results: [(stage: String, result: T)] = []
        do {
            let db = try Database(configuration: config)
            let inWrite = try db.write { tx in
                try write(tx)
                return try read(tx)
            }
            results.append(("inside the write", inWrite))
            results.append(("in a later read", try db.read(read)))
        }
        let reopened = try Database(configuration: config)
        results.append(("after reopening", try reopened.read(read)))
        return results
    }

    // MARK: Property values

    @Test(arguments: PropertyType.primitives, Fixtures.modes)
    func edgeValuesSurviveWriteReadAndReopen(type: PropertyType, _ mode: Database.Mode) throws {
        let values = Self.edgeValues(type)
        let stages = try atEveryStage(
            Fixtures.configuration(folder.path(), schema: Self.sampleSchema(type), mode: mode)
        ) { tx in
            for (i, value) in values.enumerated() {
                try tx.insert("Sample", ["id": .int(Int64(i)), "value": value, "maybe": value])
            }
        } read: { tx in
            try values.indices.map { i in try #require(try tx.object("Sample", key: .int(Int64(i)))).values }
        }
        for (stage, objects) in stages {
            for (expected, object) in zip(values, objects) {
                let value = try #require(object["value"])
                let maybe = try #require(object["maybe"])
                #expect(Self.identical(value, expected), "\(stage): required \(type) \(expected) read back as \(value)")
                #expect(Self.identical(maybe, expected), "\(stage): optional \(type) \(expected) read back as \(maybe)")
            }
        }
    }

    @Test(arguments: Fixtures.modes) func specialDoublesKeepTheirIdentity(_ mode: Database.Mode) throws {
        let specials: [Double] = [.nan, -0.0, .infinity, -.infinity]
        let stages = try atEveryStage(
            Fixtures.configuration(folder.path(), schema: Self.sampleSchema(.double), mode: mode)
        ) { tx in
            for (i, value) in specials.enumerated() {
                try tx.insert("Sample", ["id": .int(Int64(i)), "value": .double(value)])
            }
        } read: { tx in
            try specials.indices.map { i in try #require(try tx.object("Sample", key: .int(Int64(i)))?["value"].double)
            }
        }
        for (stage, read) in stages {
            #expect(read.count == 4, "\(stage)")
            guard read.count == 4 else { continue }
            #expect(read[0].isNaN, "\(stage)")
            #expect(read[1] == 0 && read[1].sign == .minus, "\(stage): -0.0 read back as \(read[1])")
            #expect(read[2] == .infinity, "\(stage)")
            #expect(read[3] == -.infinity, "\(stage)")
        }
    }

    @Test(arguments: PropertyType.primitives, Fixtures.modes)
    func optionalPropertyGivenNullOrOmittedReadsNull(type: PropertyType, _ mode: Database.Mode) throws {
        let present = Self.edgeValues(type)[0]
        let stages = try atEveryStage(
            Fixtures.configuration(folder.path(), schema: Self.sampleSchema(type), mode: mode)
        ) { tx in
            try tx.insert("Sample", ["id": 1, "value": present, "maybe": nil])
            try tx.insert("Sample", ["id": 2, "value": present])
            try tx.insert("Sample", ["id": 3, "value": present, "maybe": present])
        } read: { tx in
            try (1 ... 3).map { try #require(try tx.object("Sample", key: .int($0)))["maybe"] }
        }
        for (stage, maybes) in stages {
            #expect(maybes[0] == .null, "\(stage): explicit null read back as \(maybes[0])")
            #expect(maybes[1] == .null, "\(stage): omitted optional read back as \(maybes[1])")
            #expect(
                Self.identical(maybes[2], present), "\(stage): a present value next to nulls read back as \(maybes[2])")
        }
    }

    @Test(arguments: Fixtures.modes) func optionalPropertyOmittedReadsNullAndDefaultsApply(_ mode: Database.Mode) throws
    {
        let stages = try atEveryStage(Fixtures.configuration(folder.path(), mode: mode)) { tx in
            try tx.insert("Person", ["id": 1, "firstName": "Ada", "lastName": "Lovelace"])
        } read: { tx in
            try #require(try tx.object("Person", key: 1)).values
        }
        for (stage, ada) in stages {
            #expect(ada == ["id": 1, "firstName": "Ada", "lastName": "Lovelace", "age": 0, "email": nil], "\(stage)")
        }
    }

    @Test(arguments: Fixtures.modes) func defaultsOfEveryTypeAreAppliedOnInsert(_ mode: Database.Mode) throws {
        let date = Date(timeIntervalSinceReferenceDate: 123_456.789_012_3)
        let uuid = UUID()
        let defaults: [String: Value] = [
            "b": true, "i": .int(.min), "d": .double(-0.0), "s": "défaut 😀", "bytes": .data(Data([1, 2, 3])),
            "when": .date(date), "ref": .uuid(uuid), "maybe": "fallback",
        ]
        let schema = Schema([
            ObjectSchema("Defaults", primaryKey: "id") {
                Property("id", .int)
                Property("b", .bool, default: defaults["b"])
                Property("i", .int, default: defaults["i"])
                Property("d", .double, default: defaults["d"])
                Property("s", .string, default: defaults["s"])
                Property("bytes", .data, default: defaults["bytes"])
                Property("when", .date, default: defaults["when"])
                Property("ref", .uuid, default: defaults["ref"])
                Property("maybe", .string, optional: true, default: defaults["maybe"])
            }
        ])
        let stages = try atEveryStage(Fixtures.configuration(folder.path(), schema: schema, mode: mode)) { tx in
            try tx.insert("Defaults", ["id": 1])
            try tx.insert("Defaults", ["id": 2, "maybe": nil, "i": 5])
        } read: { tx in
            (
                try #require(try tx.object("Defaults", key: 1)).values,
                try #require(try tx.object("Defaults", key: 2)).values
            )
        }
        for (stage, (first, second)) in stages {
            for (name, expected) in defaults {
                let value = try #require(first[name])
                #expect(Self.identical(value, expected), "\(stage): default of \(name) read back as \(value)")
            }
            #expect(second["maybe"] == .null, "\(stage): an explicit null must not be replaced by the default")
            #expect(second["i"] == 5, "\(stage)")
        }
    }

    @Test(arguments: Fixtures.modes) func intGivenForDoublePropertyIsStoredAsDouble(_ mode: Database.Mode) throws {
        let schema = Schema([
            ObjectSchema("Measure", primaryKey: "id") {
                Property("id", .int)
                Property("reading", .double)
                Property("fallback", .double, default: 2)
            }
        ])
        let stages = try atEveryStage(Fixtures.configuration(folder.path(), schema: schema, mode: mode)) { tx in
            try tx.insert("Measure", ["id": 1, "reading": 3])
            try tx.insert("Measure", ["id": 2, "reading": .int(-(1 << 53))])
        } read: { tx in
            try (1 ... 2).map { try #require(try tx.object("Measure", key: .int($0))).values }
        }
        for (stage, objects) in stages {
            // Value.== tells .int(3) from .double(3): the stored case must be double.
            #expect(objects[0]["reading"] == .double(3), "\(stage): \(objects[0]["reading"]!)")
            #expect(objects[0]["fallback"] == .double(2), "\(stage): \(objects[0]["fallback"]!)")
            #expect(objects[1]["reading"] == .double(-9_007_199_254_740_992), "\(stage)")
        }
    }

    @Test(arguments: Fixtures.modes) func intThatNoDoubleHoldsExactlyIsRejectedForDoubleProperty(_ mode: Database.Mode)
        throws
    {
        let db = try Database(
            configuration: Fixtures.configuration(folder.path(), schema: Self.sampleSchema(.double), mode: mode))
        let error = expectStrataError(.invalidValue) {
            try db.write { tx in _ = try tx.insert("Sample", ["id": 1, "value": .int(.max)]) }
        }
        #expect(error?.message.contains("'Sample.value'") == true)
        #expect(try db.read { try $0.objects("Sample").count } == 0)
    }

    // MARK: Primary keys

    static func keyedSchema(_ type: PropertyType) -> Schema {
        Schema([
            ObjectSchema("Keyed", primaryKey: "id") {
                Property("id", type)
                Property("label", .string)
            }
        ])
    }

    @Test(arguments: Fixtures.modes) func intPrimaryKeysEnumerateInNumericOrder(_ mode: Database.Mode) throws {
        let keys: [Int64] = [42, .min, -1, .max, 0, -1_000_000, 1, .min + 1, .max - 1, 255, 256, -256, -255]
        let stages = try atEveryStage(Fixtures.configuration(folder.path(), schema: Self.keyedSchema(.int), mode: mode))
        { tx in
            for key in keys { try tx.insert("Keyed", ["id": .int(key), "label": .string("\(key)")]) }
        } read: { tx in
            try tx.objects("Keyed").map { ($0.primaryKey, $0["id"], $0["label"]) }
        }
        let expected = keys.sorted()
        for (stage, objects) in stages {
            #expect(objects.map(\.0) == expected.map(Value.int), "\(stage): enumeration order")
            #expect(objects.map(\.1) == expected.map(Value.int), "\(stage): id property")
            #expect(objects.map(\.2) == expected.map { .string("\($0)") }, "\(stage): labels")
        }
        let db = try Database(
            configuration: Fixtures.configuration(folder.path(), schema: Self.keyedSchema(.int), mode: mode))
        try db.read { tx throws in
            for key in keys {
                #expect(try tx.object("Keyed", key: .int(key))?["label"] == .string("\(key)"))
            }
            #expect(try tx.object("Keyed", key: 7) == nil)
        }
    }

    @Test(arguments: Fixtures.modes) func stringPrimaryKeysEnumerateInUTF8ByteOrder(_ mode: Database.Mode) throws {
        let keys = [
            "z", "", "a", "B", "\u{E9}", "e\u{301}", "e", "日本", "😀", "a\u{0}b", "a\u{0}", "ab", "Z", "\u{FFFF}", "ÿ",
        ]
        let config = Fixtures.configuration(folder.path(), schema: Self.keyedSchema(.string), mode: mode)
        let stages = try atEveryStage(config) { tx in
            for (i, key) in keys.enumerated() {
                try tx.insert("Keyed", ["id": .string(key), "label": .string("#\(i)")])
            }
        } read: { tx in
            let order = try tx.objects("Keyed").map { Array(($0.primaryKey.string ?? "<not a string>").utf8) }
            let labels = try keys.map { try tx.object("Keyed", key: .string($0))?["label"] }
            return (order, labels)
        }
        let expected = keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
        for (stage, (order, labels)) in stages {
            #expect(order == expected, "\(stage): enumeration order")
            // Byte-exact keys: "é" and "e\u{301}" are two objects, each found by its own key.
            #expect(labels == keys.indices.map { .string("#\($0)") }, "\(stage): lookup by key")
        }
    }

    @Test(arguments: Fixtures.modes) func uuidPrimaryKeysRoundTripAndEnumerateInByteOrder(_ mode: Database.Mode) throws
    {
        let keys = [UUID(), Self.maxUUID, UUID(), Fixtures.zeroUUID, UUID(), UUID()]
        let stages = try atEveryStage(
            Fixtures.configuration(folder.path(), schema: Self.keyedSchema(.uuid), mode: mode)
        ) { tx in
            for (i, key) in keys.enumerated() { try tx.insert("Keyed", ["id": .uuid(key), "label": .string("#\(i)")]) }
        } read: { tx in
            (
                try tx.objects("Keyed").map(\.primaryKey),
                try keys.map { try tx.object("Keyed", key: .uuid($0))?["label"] }
            )
        }
        let bytes = { (uuid: UUID) in withUnsafeBytes(of: uuid.uuid) { Array($0) } }
        let expected = keys.sorted { bytes($0).lexicographicallyPrecedes(bytes($1)) }.map(Value.uuid)
        for (stage, (order, labels)) in stages {
            #expect(order == expected, "\(stage)")
            #expect(labels == keys.indices.map { .string("#\($0)") }, "\(stage)")
        }
    }

    @Test(arguments: Fixtures.modes) func automaticIDsCountUpAndAreNotReusedAfterDeletingTheLastAndReopening(
        _ mode: Database.Mode
    ) throws {
        let config = Fixtures.configuration(
            folder.path(), schema: Schema([ObjectSchema("Note") { Property("text", .string) }]), mode: mode)
        do {
            let db = try Database(configuration: config)
            let ids = try db.write { tx in try (1 ... 3).map { try tx.insert("Note", ["text": .string("n\($0)")]) } }
            #expect(ids == [1, 2, 3])
            try db.read { tx throws in
                #expect(try tx.objects("Note").map(\.primaryKey) == [1, 2, 3])
                #expect(try tx.object("Note", key: 2)?["text"] == "n2")
            }
            #expect(try db.write { try $0.delete("Note", key: 3) })
        }
        let db = try Database(configuration: config)
        let next = try db.write { try $0.insert("Note", ["text": "n4"]) }
        #expect(next == 4)
        try db.read { tx throws in
            #expect(try tx.objects("Note").map(\.primaryKey) == [1, 2, 4])
            #expect(try tx.object("Note", key: 3) == nil)
            #expect(try tx.object("Note", key: 4)?["text"] == "n4")
        }
    }

    @Test(arguments: [511, 600, 4096], Fixtures.modes)
    func stringPrimaryKeyOverTheLimitThrowsKeyTooLargeAndWritesNothing(byteCount: Int, _ mode: Database.Mode) throws {
        let db = try Database(
            configuration: Fixtures.configuration(folder.path(), schema: Self.keyedSchema(.string), mode: mode))
        let key = String(repeating: "k", count: byteCount)
        let error = expectStrataError(.keyTooLarge) {
            try db.write { tx in _ = try tx.insert("Keyed", ["id": .string(key), "label": "too long"]) }
        }
        #expect(error?.message.contains("'Keyed'") == true)
        expectStrataError(.keyTooLarge) {
            try db.write { tx in
                _ = try tx.upsert(
                    "Keyed", ["id": .string(String(repeating: "é", count: byteCount / 2 + 1)), "label": "x"])
            }
        }
        try db.read { tx throws in
            #expect(try tx.objects("Keyed").count == 0)
            #expect(try tx.objects("Keyed").isEmpty)
        }
    }

    @Test(arguments: Fixtures.modes) func stringPrimaryKeyAtTheLimitIsAccepted(_ mode: Database.Mode) throws {
        // 510 bytes of UTF-8 plus the key's marker byte make LMDB's 511.
        let key = String(repeating: "é", count: 255)
        let stages = try atEveryStage(
            Fixtures.configuration(folder.path(), schema: Self.keyedSchema(.string), mode: mode)
        ) { tx in
            try tx.insert("Keyed", ["id": .string(key), "label": "at the limit"])
        } read: { tx in
            try tx.object("Keyed", key: .string(key))?["label"]
        }
        for (stage, label) in stages { #expect(label == "at the limit", "\(stage)") }
    }

    @Test(arguments: Fixtures.modes) func objectSchemaVersionIsTheConfiguredVersion(_ mode: Database.Mode) throws {
        let config = Fixtures.configuration(folder.path(), version: 7, mode: mode)
        let stages = try atEveryStage(config) { tx in
            #expect(tx.appSchemaVersion == 7)
            try tx.insert("Person", Fixtures.person(1))
        } read: { tx in
            (tx.appSchemaVersion, try #require(try tx.object("Person", key: 1)).schemaVersion)
        }
        for (stage, (transactionVersion, objectVersion)) in stages {
            #expect(transactionVersion == 7, "\(stage)")
            #expect(objectVersion == 7, "\(stage)")
        }
        #expect(try Database(configuration: config).fileSchemaVersion == 7)
    }
}
