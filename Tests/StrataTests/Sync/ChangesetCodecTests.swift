import Foundation
import Testing

@_spi(Hub) @testable import Strata

/// Random changeset contents, seeded: types of every key kind, fields of
/// every descriptor, values of every kind (nested lists and embedded
/// objects among them), tombstones, many origins.
struct RandomChangesets {
    var generator: SplitMix64

    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    static let primitives: [PropertyType] = PropertyType.primitives

    /// Every shape of descriptor, with targets among `types`.
    static func descriptors(types: [String]) -> [String] {
        var all: [String] = []
        for primitive in primitives { all += ["\(primitive)", "\(primitive)?", "list(\(primitive))"] }
        for target in types { all += ["link(\(target))", "list(link(\(target)))"] }
        all += ["embedded(Address)", "embedded(Address)?", "list(embedded(Address))"]
        return all
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &generator) }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0 ..< 1, using: &generator) < p }

    mutating func site() -> SiteID { SiteID(high: generator.next(), low: generator.next()) }

    mutating func string() -> String {
        let alphabets = ["abc", "é日本🙂", "e\u{301}x", "\0\n\"", String(repeating: "long", count: 50)]
        let alphabet = Array(alphabets[int(0 ... alphabets.count - 1)])
        return String((0 ..< int(0 ... 12)).map { _ in alphabet[int(0 ... alphabet.count - 1)] })
    }

    mutating func primitive(_ type: PropertyType) -> Value {
        switch type {
        case .bool: return .bool(chance(0.5))
        case .int:
            return .int(chance(0.5) ? Int64(int(-300 ... 300)) : Int64(bitPattern: generator.next()))
        case .double:
            var d = Double(bitPattern: generator.next())
            while d.isNaN { d = Double(bitPattern: generator.next()) }
            return .double(chance(0.3) ? Double(int(-5 ... 5)) : d)
        case .string: return .string(string())
        case .data:
            return .data(Data((0 ..< int(0 ... 40)).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(int(-1_000_000 ... 1_000_000)) / 8))
        case .uuid: return .uuid(UUID(uuid: uuidBytes()))
        case .decimal:
            let digits = int(0 ... 30)
            let text = (0 ..< max(digits, 1)).map { _ in String(int(0 ... 9)) }.joined()
            let decimal = Decimal(string: (chance(0.5) ? "-" : "") + text)! * pow(10, int(-20 ... 20))
            return .decimal(decimal)
        default: preconditionFailure("\(type) is not primitive")
        }
    }

    mutating func uuidBytes() -> uuid_t {
        let a = generator.next()
        let b = generator.next()
        return withUnsafeBytes(of: (a, b)) { $0.load(as: uuid_t.self) }
    }

    mutating func key(_ type: PropertyType) -> Value {
        switch type {
        case .int: .int(Int64(bitPattern: generator.next()) >> UInt64(int(0 ... 63)))
        case .string: .string(string())
        default: .uuid(UUID(uuid: uuidBytes()))
        }
    }

    /// An embedded object: some primitives, a list, and objects nested
    /// `depth` more levels.
    mutating func object(depth: Int) -> Value {
        var fields: [String: Value] = [:]
        for _ in 0 ..< int(0 ... 4) {
            let name = chance(0.2) ? string() : "f\(int(0 ... 9))"
            switch int(0 ... 4) {
            case 0 where depth > 0: fields[name] = object(depth: depth - 1)
            case 1 where depth > 0: fields[name] = .list((0 ..< int(0 ... 3)).map { _ in object(depth: depth - 1) })
            case 2: fields[name] = .list((0 ..< int(0 ... 4)).map { _ in primitive(.int) })
            case 3: fields[name] = .null
            default: fields[name] = primitive(Self.primitives[int(0 ... Self.primitives.count - 1)])
            }
        }
        return .object(fields)
    }

    /// A value that `descriptor` admits.
    mutating func value(_ descriptor: FieldDescriptor, keyTypes: [String: PropertyType]) -> Value {
        if descriptor.isOptional && chance(0.15) { return .null }
        switch descriptor.type {
        case .link: return .link(key(keyTypes[descriptor.target!]!))
        // An embedded field carries its object's life, mostly; an object
        // is what older writers sent and still reads.
        case .embedded: return chance(0.7) ? .int(Int64(int(0 ... 9))) : object(depth: 3)
        case .list:
            let element = descriptor.elementType!
            return .list(
                (0 ..< int(0 ... 5)).map { _ in
                    switch element {
                    case .link: .link(key(keyTypes[descriptor.target!]!))
                    case .embedded: object(depth: 2)
                    default: primitive(element)
                    }
                })
        default: return primitive(descriptor.type)
        }
    }

    /// A random changeset of about `entries` entries.
    mutating func content(entries entryCount: Int, origins originCount: Int? = nil) -> ChangesetContent {
        let names = ["Person", "Dog", "ünïcode (type)", "T"].prefix(int(1 ... 4))
        let keyKinds: [PropertyType] = [.int, .string, .uuid]
        let types = names.map { WireType(name: $0, keyName: "id", keyDescriptor: keyKinds[int(0 ... 2)].rawValue) }
        let keyTypes = Dictionary(
            uniqueKeysWithValues: types.map { ($0.name, PropertyType(rawValue: $0.keyDescriptor)!) })
        let shapes = Self.descriptors(types: Array(names))
        var fields: [WireField] = []
        for (index, _) in types.enumerated() {
            for shape in shapes where chance(0.3) {
                // Some fields inside an embedded field of their type.
                let holders = fields.indices.filter {
                    fields[$0].type == index && fields[$0].descriptor.hasPrefix("embedded(")
                }
                let parent = !holders.isEmpty && chance(0.3) ? holders[int(0 ... holders.count - 1)] : nil
                fields.append(WireField(type: index, path: "p\(fields.count)", descriptor: shape, parent: parent))
            }
        }
        let origins = (0 ..< (originCount ?? int(1 ... 300))).map { _ in site() }
        var seen = Set<String>()
        var entries: [ChangeEntry] = []
        for _ in 0 ..< entryCount {
            let type = int(0 ... types.count - 1)
            let key = key(keyTypes[types[type].name]!)
            guard seen.insert("\(type) \(key)").inserted else { continue }
            let causalLength = UInt64(int(1 ... 9))
            let time = HybridTime(
                rawValue: chance(0.1) ? generator.next() : UInt64(1_700_000_000_000 + int(0 ... 1 << 30)) << 16)
            var changes: [FieldChange] = []
            if causalLength % 2 == 1 {
                for (index, field) in fields.enumerated().shuffled(using: &generator)
                where field.type == type && chance(0.6) {
                    let fieldTime = chance(0.2) ? generator.next() : time.rawValue &- UInt64(int(0 ... 1 << 40))
                    changes.append(
                        FieldChange(
                            field: index,
                            stamp: WireStamp(
                                time: HybridTime(rawValue: fieldTime), origin: int(0 ... origins.count - 1)),
                            value: value(FieldDescriptor(parsing: field.descriptor)!, keyTypes: keyTypes)))
                }
            }
            entries.append(
                ChangeEntry(
                    type: type, key: key, causalLength: causalLength, writerVersion: UInt64(int(0 ... 1000)),
                    stamp: WireStamp(time: time, origin: int(0 ... origins.count - 1)), fields: changes))
        }
        let from = UInt64(int(0 ... 1 << 40))
        let to = from + UInt64(int(0 ... 10_000))
        let hasMore = chance(0.5)
        // A page may start and end inside a sequence number: a key of a
        // type id and a record key, never inside the baseline's.
        func positionKey() -> [UInt8] { (0 ..< int(5 ... 40)).map { _ in UInt8(truncatingIfNeeded: generator.next()) } }
        let fromKey = from > 0 && chance(0.4) ? positionKey() : []
        var toKey = hasMore && chance(0.4) ? positionKey() : []
        if to == from && !fromKey.isEmpty && !toKey.isEmpty && !fromKey.lexicographicallyPrecedes(toKey) {
            toKey = []
        }
        return ChangesetContent(
            dataset: site(), sender: site(), writerSchemaVersion: UInt64(int(0 ... 1 << 20)),
            senderTime: HybridTime(rawValue: generator.next()), senderSeq: to + UInt64(int(0 ... 100)),
            baseline: from > 0 ? UInt64(int(0 ... Int(from) - 1)) : 0, fromSeq: from, fromKey: fromKey, toSeq: to,
            toKey: toKey, hasMore: hasMore, types: types, fields: fields, origins: origins, entries: entries)
    }
}

@Suite struct ChangesetCodecTests {
    @Test(arguments: 1 ... 40 as ClosedRange<UInt64>)
    func randomContentsRoundTrip(seed: UInt64) throws {
        var random = RandomChangesets(seed: seed)
        let content = random.content(entries: random.int(0 ... 60))
        let data = ChangesetCodec.encode(content)
        let decoded = try ChangesetCodec.decode(data)
        #expect(decoded == content)
        #expect(ChangesetCodec.encode(decoded) == data)
        let summary = try Changeset(data: data).summary()
        #expect(summary.entryCount == content.entries.count)
        #expect(summary.sender == content.sender && summary.dataset == content.dataset)
        #expect(summary.fromSeq == content.fromSeq && summary.toSeq == content.toSeq)
        #expect(summary.fromKey == Data(content.fromKey) && summary.toKey == Data(content.toKey))
        #expect(summary.hasMore == content.hasMore && summary.senderTime == content.senderTime)
        #expect(summary.writerSchemaVersion == content.writerSchemaVersion)
    }

    @Test func emptyChangesetRoundTripsAtTheMinimumLength() throws {
        let content = ChangesetContent(
            dataset: SiteID(high: 1, low: 2), sender: SiteID(high: 3, low: 4), writerSchemaVersion: 0,
            senderTime: .zero, fromSeq: 0, toSeq: 0, hasMore: false, types: [], fields: [], origins: [], entries: [])
        let data = ChangesetCodec.encode(content)
        #expect(data.count == ChangesetCodec.minimumLength)
        #expect(try ChangesetCodec.decode(data) == content)
        #expect(Array(data.prefix(6)) == Array("SCS1".utf8) + [1, 0])
    }

    @Test func largeChangesetRoundTrips() throws {
        var random = RandomChangesets(seed: 99)
        let content = random.content(entries: 20_000, origins: 1_000)
        let data = ChangesetCodec.encode(content)
        #expect(content.entries.count > 15_000)
        #expect(try ChangesetCodec.decode(data) == content)
    }

    @Test func nanAndSignedZeroSurviveByteForByte() throws {
        var content = ChangesetSample.oneField(descriptor: "list(double)", value: .null)
        let nans = [Double.nan, -Double.nan, Double(bitPattern: 0x7FF0_0000_0000_0001), -0.0, .infinity]
        content.entries[0].fields[0].value = .list(nans.map { .double($0) })
        let data = ChangesetCodec.encode(content)
        let decoded = try ChangesetCodec.decode(data)
        #expect(ChangesetCodec.encode(decoded) == data)
        let bits = decoded.entries[0].fields[0].value.list?.compactMap { $0.double?.bitPattern }
        #expect(bits == nans.map(\.bitPattern))
    }

    @Test func embeddedObjectsAreWrittenByNameInByteOrder() throws {
        let value: Value = ["b": 1, "a": ["z": true, "é": nil], "B": "x"]
        let writer = ByteWriter()
        ChangesetCodec.appendValue(value, to: writer)
        let expected: [UInt8] = [
            0x0B, 22, 3,  // an embedded object of 22 bytes, 3 fields
            1, 0x42, 0x05, 1, 0x78,  // "B": "x"
            1, 0x61, 0x0B, 8, 2, 1, 0x7A, 0x02, 2, 0xC3, 0xA9, 0x00,  // "a": {"z": true, "é": null}
            1, 0x62, 0x03, 2,  // "b": 1
        ]
        #expect(writer.bytes == expected)
        let decoded = try writer.withUnsafeBytes { raw in
            var reader = ChangesetReader(raw.baseAddress!, from: 0, to: raw.count)
            return try reader.value()
        }
        #expect(decoded == value)
    }

    /// The example of `docs/FileFormat.md`, "Changesets (sync)", byte for byte.
    @Test func theDocumentedExampleIsWhatTheCodecWrites() throws {
        let dataset = SiteID(high: 0x0101_0101_0101_0101, low: 0x0202_0202_0202_0202)
        let sender = SiteID(high: 0x0303_0303_0303_0303, low: 0x0404_0404_0404_0404)
        let t = HybridTime(rawValue: 0x0011_2233_4455_6677)
        let stamp = WireStamp(time: t, origin: 0)
        let content = ChangesetContent(
            dataset: dataset, sender: sender, writerSchemaVersion: 3, senderTime: t, senderSeq: 1, fromSeq: 0,
            toSeq: 1, hasMore: false, types: [WireType(name: "Person", keyName: "id", keyDescriptor: "int")],
            fields: [WireField(type: 0, path: "age", descriptor: "int")], origins: [sender],
            entries: [
                ChangeEntry(
                    type: 0, key: 1, causalLength: 1, writerVersion: 3, stamp: stamp,
                    fields: [FieldChange(field: 0, stamp: stamp, value: 36)])
            ])
        let time: [UInt8] = [0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00]
        var expected: [UInt8] = Array("SCS1".utf8) + [1, 0] + dataset.bytes + sender.bytes + [3] + time
        expected += [1, 0, 0, 0, 1, 0]
        expected += [1, 6] + Array("Person".utf8) + [2] + Array("id".utf8) + [3] + Array("int".utf8)
        expected += [1, 0, 3] + Array("age".utf8) + [3] + Array("int".utf8) + [0]
        expected += [1] + sender.bytes
        expected += [1, 0x00, 0x03, 0x02, 0x01, 0x03] + time + [0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x48]
        let data = [UInt8](ChangesetCodec.encode(content))
        #expect(Array(data.dropLast(4)) == expected)
        #expect(Array(data.suffix(4)) == [UInt8](ChangesetSample.resealed(expected + [0, 0, 0, 0]).suffix(4)))
    }

    /// The wire targets: ≤ 24 bytes per small field change and
    /// ≤ 40 per tombstone, over 1,000 entries.
    @Test func bytesPerChangeMeetTheTargets() throws {
        let site = SiteID(high: 7, low: 7)
        let time = HybridTime(milliseconds: 1_790_000_000_000, counter: 3)
        func changeset(_ entries: [ChangeEntry], key: String, fields: [WireField]) -> Data {
            ChangesetCodec.encode(
                ChangesetContent(
                    dataset: site, sender: site, writerSchemaVersion: 3, senderTime: time, fromSeq: 100,
                    toSeq: 1_100, hasMore: true, types: [WireType(name: "Person", keyName: "id", keyDescriptor: key)],
                    fields: fields, origins: [site], entries: entries))
        }
        let age = [WireField(type: 0, path: "age", descriptor: "int")]
        let tenFields = (0 ..< 10).map { WireField(type: 0, path: "field\($0)", descriptor: "int") }
        let stamp = WireStamp(time: time, origin: 0)
        func entry(_ key: Value, fields: Int) -> ChangeEntry {
            ChangeEntry(
                type: 0, key: key, causalLength: fields == 0 ? 2 : 1, writerVersion: 3, stamp: stamp,
                fields: (0 ..< fields).map { FieldChange(field: $0, stamp: stamp, value: .int(Int64($0 * 7 % 100))) })
        }
        let uuids = (0 ..< 1_000).map { i in
            Value.uuid(UUID(uuid: withUnsafeBytes(of: (UInt64(i), ~UInt64(i))) { $0.load(as: uuid_t.self) }))
        }
        let intKeyed = changeset(
            (0 ..< 1_000).map { entry(.int(Int64($0) * 1_000), fields: 1) }, key: "int", fields: age)
        let uuidKeyed = changeset(uuids.map { entry($0, fields: 1) }, key: "uuid", fields: age)
        let tenPerObject = changeset(uuids.map { entry($0, fields: 10) }, key: "uuid", fields: tenFields)
        let tombstones = changeset(uuids.map { entry($0, fields: 0) }, key: "uuid", fields: [])
        let perField = Double(intKeyed.count) / 1_000
        let perTombstone = Double(tombstones.count) / 1_000
        print(
            "SCS1 bytes: \(perField) per one-int-field entry (int key); \(Double(uuidKeyed.count) / 1_000) (uuid key);",
            "\(Double(tenPerObject.count) / 10_000) per field at 10 fields per object (uuid key);",
            "\(perTombstone) per tombstone (uuid key)")
        #expect(perField <= 24)
        #expect(Double(tenPerObject.count) / 10_000 <= 24)
        #expect(perTombstone <= 40)
        for data in [intKeyed, uuidKeyed, tenPerObject, tombstones] { _ = try ChangesetCodec.decode(data) }
    }
}

/// Small hand-made changesets.
enum ChangesetSample {
    static let site = SiteID(high: 0xA, low: 0xB)
    static let stamp = WireStamp(time: HybridTime(milliseconds: 1_790_000_000_000, counter: 0), origin: 0)

    /// One `Person` (int key 1) with one field `f` of `descriptor`
    /// holding `value`: the value's bytes end just before the checksum.
    static func oneField(descriptor: String, value: Value) -> ChangesetContent {
        ChangesetContent(
            dataset: site, sender: site, writerSchemaVersion: 1, senderTime: stamp.time, fromSeq: 0, toSeq: 1,
            hasMore: false, types: [WireType(name: "Person", keyName: "id", keyDescriptor: "int")],
            fields: [WireField(type: 0, path: "f", descriptor: descriptor)], origins: [site],
            entries: [
                ChangeEntry(
                    type: 0, key: .int(1), causalLength: 1, writerVersion: 1, stamp: stamp,
                    fields: [FieldChange(field: 0, stamp: stamp, value: value)])
            ])
    }

    /// `bytes` with its checksum made right again.
    static func resealed(_ bytes: [UInt8]) -> Data {
        let body = Array(bytes.dropLast(4))
        let crc = CRC32C.checksum(body)
        return Data(body + (0 ..< 4).map { UInt8(truncatingIfNeeded: crc >> (8 * UInt32($0))) })
    }
}
