import Foundation
import Testing

@testable import Strata

/// A record built with the codec, with where each part of it lies.
private struct BuiltRecord {
    var bytes: [UInt8]
    var schemaVersion: UInt64
    var fields: [(id: PropertyID, value: Value)]
    var headerLength: Int
    var fieldRanges: [Range<Int>]
}

/// Bytes that the record validator must reject, and why.
struct CraftedRecord: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]

    var testDescription: String { name }

    init(_ name: String, _ bytes: [UInt8]) {
        self.name = name
        self.bytes = bytes
    }

    static func varint(_ value: UInt64) -> [UInt8] {
        let writer = ByteWriter()
        writer.appendVarint(value)
        return writer.bytes
    }

    static let all: [CraftedRecord] = [
        CraftedRecord("empty input", []),
        CraftedRecord("two bytes", [0x01, 0x01]),
        CraftedRecord("layout byte 0", [0x00, 0x01, 0x00]),
        CraftedRecord("layout byte 2", [0x02, 0x01, 0x00]),
        CraftedRecord("layout byte 0xFF", [0xFF, 0x01, 0x00]),
        CraftedRecord("11-byte varint as schema version", [0x01] + [UInt8](repeating: 0x80, count: 10) + [0x01, 0x00]),
        CraftedRecord(
            "10-byte varint above 64 bits as schema version",
            [0x01] + [UInt8](repeating: 0xFF, count: 9) + [0x02, 0x00]),
        CraftedRecord("schema version varint running off the end", [0x01, 0x80, 0x80]),
        CraftedRecord(
            "11-byte varint as field id", [0x01, 0x01, 0x01] + [UInt8](repeating: 0x80, count: 10) + [0x01, 0x00]),
        CraftedRecord(
            "11-byte varint as int payload",
            [0x01, 0x01, 0x01, 0x01, 0x03] + [UInt8](repeating: 0x80, count: 10) + [0x01]),
        CraftedRecord("field count 2^40", [0x01, 0x01] + varint(1 << 40) + [0x01, 0x00, 0x02, 0x00, 0x03, 0x00]),
        CraftedRecord("field count 2^64-1", [0x01, 0x01] + varint(.max) + [0x01, 0x00]),
        CraftedRecord("field count one more than the fields", [0x01, 0x01, 0x02, 0x01, 0x00, 0x02, 0x03]),
        CraftedRecord("string length 2^62", [0x01, 0x01, 0x01, 0x01, 0x05] + varint(1 << 62) + Array("abc".utf8)),
        CraftedRecord(
            "data length one more than the bytes left", [0x01, 0x01, 0x01, 0x01, 0x06, 0x04, 0xAA, 0xBB, 0xCC]),
        CraftedRecord("double cut short", [0x01, 0x01, 0x01, 0x01, 0x04, 0, 0, 0, 0, 0, 0, 0]),
        CraftedRecord("date cut short", [0x01, 0x01, 0x01, 0x01, 0x07, 0]),
        CraftedRecord("uuid cut short", [0x01, 0x01, 0x01, 0x01, 0x08] + [UInt8](repeating: 0xAB, count: 15)),
        CraftedRecord("ids out of order", [0x01, 0x01, 0x02, 0x02, 0x00, 0x01, 0x00]),
        CraftedRecord("duplicate id", [0x01, 0x01, 0x02, 0x01, 0x00, 0x01, 0x00]),
        CraftedRecord("id above UInt32.max", [0x01, 0x01, 0x01] + varint(UInt64(UInt32.max) + 1) + [0x00]),
        CraftedRecord("unknown tag 9", [0x01, 0x01, 0x01, 0x01, 0x09]),
        CraftedRecord("unknown tag 0xFF", [0x01, 0x01, 0x01, 0x01, 0xFF]),
        CraftedRecord("field id without a tag", [0x01, 0x01, 0x00, 0x01]),
        CraftedRecord("trailing byte after the last field", [0x01, 0x01, 0x01, 0x01, 0x00, 0x00]),
        CraftedRecord("trailing bytes after zero fields", [0x01, 0x01, 0x00, 0x00, 0x00]),
    ]
}

@Suite struct HostileBytesTests {
    // MARK: Generating values and records

    static let sampleStrings = [
        "", "a", "Ada", "\u{E9}", "e\u{301}", "🦄", "\u{0}", "日本語", String(repeating: "x", count: 200),
    ]

    private static func randomDouble(_ rng: inout SplitMix64) -> Double {
        let specials: [Double] = [
            0, -0.0, 1, -1, .nan, -.nan, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
            .ulpOfOne,
        ]
        return Bool.random(using: &rng) ? specials.randomElement(using: &rng)! : Double(bitPattern: rng.next())
    }

    private static func randomBytes(_ count: Int, _ rng: inout SplitMix64) -> [UInt8] {
        (0 ..< count).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
    }

    /// A value of kind `kind` (0 ... 8, one per tag), with its edge cases.
    private static func randomValue(kind: Int, _ rng: inout SplitMix64) -> Value {
        switch kind {
        case 0: return .null
        case 1: return .bool(false)
        case 2: return .bool(true)
        case 3:
            let specials: [Int64] = [0, 1, -1, 63, 64, -64, -65, .min, .max]
            return .int(Bool.random(using: &rng) ? specials.randomElement(using: &rng)! : Int64(bitPattern: rng.next()))
        case 4: return .double(randomDouble(&rng))
        case 5:
            if Bool.random(using: &rng) { return .string(sampleStrings.randomElement(using: &rng)!) }
            let ascii = (0 ..< Int.random(in: 0 ... 30, using: &rng)).map { _ in
                Character(Unicode.Scalar(UInt8.random(in: 0x20 ... 0x7E, using: &rng)))
            }
            return .string(String(ascii))
        case 6: return .data(Data(randomBytes(Int.random(in: 0 ... 40, using: &rng), &rng)))
        case 7: return .date(Date(timeIntervalSinceReferenceDate: randomDouble(&rng)))
        default:
            var uuid = UUID().uuid
            let bytes = randomBytes(16, &rng)
            withUnsafeMutableBytes(of: &uuid) { $0.copyBytes(from: bytes) }
            return .uuid(UUID(uuid: uuid))
        }
    }

    /// A valid record of 0 ... 10 fields with ids mostly in 0 ... 20, now
    /// and then UInt32.max.
    private static func randomRecord(_ rng: inout SplitMix64) -> BuiltRecord {
        let versions: [UInt64] = [0, 1, 2, 127, 128, 1 << 63, .max]
        let schemaVersion =
            Bool.random(using: &rng)
            ? versions.randomElement(using: &rng)! : rng.next() >> Int.random(in: 0 ... 63, using: &rng)
        var ids: [UInt32] = []
        var id = UInt32.random(in: 0 ... 1, using: &rng)
        for _ in 0 ..< Int.random(in: 0 ... 10, using: &rng) {
            ids.append(id)
            id += UInt32.random(in: 1 ... 2, using: &rng)
        }
        if !ids.isEmpty && Int.random(in: 0 ..< 10, using: &rng) == 0 { ids[ids.count - 1] = .max }
        let writer = ByteWriter()
        RecordCodec.beginRecord(writer, schemaVersion: schemaVersion, fieldCount: ids.count)
        let headerLength = writer.bytes.count
        var fields: [(id: PropertyID, value: Value)] = []
        var ranges: [Range<Int>] = []
        for id in ids {
            let value = randomValue(kind: Int.random(in: 0 ... 8, using: &rng), &rng)
            let start = writer.bytes.count
            RecordCodec.appendField(writer, id: PropertyID(id), value: value)
            fields.append((PropertyID(id), value))
            ranges.append(start ..< writer.bytes.count)
        }
        return BuiltRecord(
            bytes: writer.bytes, schemaVersion: schemaVersion, fields: fields, headerLength: headerLength,
            fieldRanges: ranges)
    }

    /// Whether two values are the same stored value: `isStored(identicallyTo:)`,
    /// and for numbers other than NaN, the same bits (so 0.0 is not -0.0).
    static func identical(_ a: Value?, _ b: Value?) -> Bool {
        switch (a, b) {
        case (nil, nil):
            return true
        case (.double(let x)?, .double(let y)?):
            return x.isNaN ? y.isNaN : x.bitPattern == y.bitPattern
        case (.date(let x)?, .date(let y)?):
            let (s, t) = (x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
            return s.isNaN ? t.isNaN : s.bitPattern == t.bitPattern
        case (let a?, let b?):
            return a.isStored(identicallyTo: b)
        default:
            return false
        }
    }

    /// Reads everything an accepted record offers; returns what is wrong
    /// with it, or nil.
    static func problemReading(_ view: RecordView, inputCount: Int) -> String? {
        var visited: [(id: PropertyID, value: Value)] = []
        view.forEachField { visited.append(($0, $1)) }
        guard visited.count == view.fieldCount else {
            return "forEachField visited \(visited.count) of \(view.fieldCount) fields"
        }
        for (index, field) in visited.enumerated() {
            if index > 0 && field.id <= visited[index - 1].id { return "ids not increasing: \(visited.map(\.id))" }
            switch field.value {
            // Each bad byte reads as one U+FFFD, so a string has at most one
            // scalar per input byte, though its UTF-8 may be longer.
            case .string(let s) where s.unicodeScalars.count > inputCount:
                return "a string of \(s.unicodeScalars.count) scalars from \(inputCount) bytes"
            case .data(let d) where d.count > inputCount:
                return "data of \(d.count) bytes from \(inputCount) bytes"
            default:
                break
            }
        }
        for id in (0 ... 10 as ClosedRange<UInt32>).map(PropertyID.init(rawValue:)) {
            let expected = visited.first { $0.id == id }?.value
            for position in 0 ... 9 {
                let found = view.value(forField: id, expectedAt: position)
                if !identical(found, expected) {
                    return
                        "field \(id) at position \(position) reads \(found.map { "\($0)" } ?? "nil"), forEachField gave \(expected.map { "\($0)" } ?? "nil")"
                }
            }
        }
        return nil
    }

    // MARK: Records

    @Test func validRecordsRoundTripEveryValueExactly() throws {
        var rng = SplitMix64(seed: 1)
        for _ in 0 ..< 3_000 {
            let record = Self.randomRecord(&rng)
            try record.bytes.withUnsafeBytes { raw in
                let view = try RecordView(validating: raw)
                #expect(view.effectiveSchemaVersion == record.schemaVersion)
                #expect(view.fieldCount == record.fields.count)
                var read: [(id: PropertyID, value: Value)] = []
                view.forEachField { read.append(($0, $1)) }
                #expect(read.map(\.id) == record.fields.map(\.id))
                for (index, field) in record.fields.enumerated() {
                    let visited: Value? = read.indices.contains(index) ? read[index].value : nil
                    #expect(
                        Self.identical(visited, field.value),
                        "field \(field.id): wrote \(field.value), forEachField read \(visited.map { "\($0)" } ?? "nil")"
                    )
                    for position in [index, (index + 3) % 10, 9] {
                        let found = view.value(forField: field.id, expectedAt: position)
                        #expect(
                            Self.identical(found, field.value),
                            "field \(field.id) at position \(position): wrote \(field.value), read \(found.map { "\($0)" } ?? "nil")"
                        )
                    }
                }
                let absent = (0 ... 22 as ClosedRange<UInt32>).map(PropertyID.init(rawValue:)).first { id in
                    !record.fields.contains { $0.id == id }
                }
                if let absent { #expect(view.value(forField: absent, expectedAt: 0) == nil) }
            }
        }
    }

    @Test func theDocumentedExampleRecordDecodes() throws {
        let bytes: [UInt8] = [0x01, 0x01, 0x03, 0x01, 0x03, 0x02, 0x02, 0x05, 0x03, 0x41, 0x64, 0x61, 0x04, 0x03, 0x48]
        try bytes.withUnsafeBytes { raw in
            let view = try RecordView(validating: raw)
            #expect(view.effectiveSchemaVersion == 1)
            var fields: [UInt32: Value] = [:]
            view.forEachField { fields[$0.rawValue] = $1 }
            #expect(fields == [1: .int(1), 2: .string("Ada"), 4: .int(36)])
            #expect(view.value(forField: PropertyID(3), expectedAt: 2) == nil)
            #expect(view.value(forField: PropertyID(4), expectedAt: 3) == .int(36))
        }
    }

    @Test func theLargestTenByteVarintIsAccepted() throws {
        let bytes: [UInt8] = [0x01] + [UInt8](repeating: 0x80, count: 9) + [0x01, 0x00]
        try bytes.withUnsafeBytes { raw in
            let view = try RecordView(validating: raw)
            #expect(view.effectiveSchemaVersion == 1 << 63)
        }
    }

    @Test(arguments: CraftedRecord.all)
    func craftedRecordIsRejected(_ crafted: CraftedRecord) {
        crafted.bytes.withUnsafeBytes { raw in
            do throws(DecodingFailure) {
                let view = try RecordView(validating: raw)
                Issue.record("accepted \(crafted.bytes) with \(view.fieldCount) fields")
            } catch {
                #expect(!error.reason.isEmpty)
                #expect((0 ... raw.count).contains(error.offset), "offset \(error.offset) outside \(raw.count) bytes")
            }
        }
    }

    enum Mutation: CaseIterable {
        case flip, truncate, extend, duplicateField
    }

    @Test(.timeLimit(.minutes(5)))
    func recordValidatorSurvivesRandomAndMutatedBytes() async {
        await #expect(processExitsWith: .success) {
            let limits = try MemoryLimits()
            HostileBytesTests.feedTheRecordValidator(100_000)
            limits.expectResidentGrowthBelow(32 << 20)
        }
    }

    /// Half random bytes, half valid records flipped, cut, extended or with
    /// a field repeated.
    static func feedTheRecordValidator(_ inputs: Int) {
        var rng = SplitMix64(seed: 2)
        var problems: [String] = []
        var acceptedMutants = 0
        var acceptedRandom = 0
        for iteration in 0 ..< inputs {
            var input: [UInt8]
            var mustReject = false
            if iteration % 2 == 0 {
                input = Self.randomBytes(Int.random(in: 0 ... 64, using: &rng), &rng)
                // Half of them look like a record's start, so that the
                // validator gets past the layout byte.
                if iteration % 4 == 0 && input.count >= 3 {
                    input[0] = RecordCodec.layoutVersion
                    input[2] = UInt8.random(in: 0 ... 6, using: &rng)
                }
            } else {
                let record = Self.randomRecord(&rng)
                input = record.bytes
                switch Mutation.allCases.randomElement(using: &rng)! {
                case .flip:
                    for _ in 0 ..< Int.random(in: 1 ... 3, using: &rng) {
                        input[Int.random(in: 0 ..< input.count, using: &rng)] ^= UInt8.random(
                            in: 1 ... 255, using: &rng)
                    }
                case .truncate:
                    input = Array(input.prefix(Int.random(in: 0 ..< input.count, using: &rng)))
                    mustReject = true
                case .extend:
                    input += Self.randomBytes(Int.random(in: 1 ... 8, using: &rng), &rng)
                    mustReject = true
                case .duplicateField:
                    guard let range = record.fieldRanges.randomElement(using: &rng) else { continue }
                    input.insert(contentsOf: input[range], at: range.upperBound)
                    if Bool.random(using: &rng) {
                        // Also count the copy, so that the only fault is the repeated id.
                        let header = ByteWriter()
                        RecordCodec.beginRecord(
                            header, schemaVersion: record.schemaVersion, fieldCount: record.fields.count + 1)
                        input = header.bytes + input[record.headerLength...]
                    }
                    mustReject = true
                }
            }
            input.withUnsafeBytes { raw in
                do throws(DecodingFailure) {
                    let view = try RecordView(validating: raw)
                    if iteration % 2 == 0 { acceptedRandom += 1 } else { acceptedMutants += 1 }
                    if mustReject { problems.append("accepted \(input)") }
                    if let problem = Self.problemReading(view, inputCount: raw.count) {
                        problems.append("\(problem) in \(input)")
                    }
                } catch {
                    if !(0 ... raw.count).contains(error.offset) {
                        problems.append("offset \(error.offset) outside \(input)")
                    }
                }
            }
            if problems.count >= 10 { break }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        // Otherwise the reads above were never exercised.
        #expect(acceptedMutants > 1000)
        #expect(acceptedRandom > 0)
    }

    // MARK: Keys

    @Test(.timeLimit(.minutes(5)))
    func keyDecodersSurviveRandomBytes() async {
        await #expect(processExitsWith: .success) {
            let limits = try MemoryLimits()
            HostileBytesTests.feedTheKeyDecoders(20_000)
            limits.expectResidentGrowthBelow(32 << 20)
        }
    }

    static func feedTheKeyDecoders(_ inputs: Int) {
        var rng = SplitMix64(seed: 3)
        let types: [PropertyType?] = [nil] + PropertyType.allCases.map { $0 }
        var problems: [String] = []
        var decoded = 0
        for _ in 0 ..< inputs {
            let lengths = [0, 1, 7, 8, 9, 15, 16, 17, Int.random(in: 0 ... 600, using: &rng)]
            var bytes = Self.randomBytes(lengths.randomElement(using: &rng)!, &rng)
            if !bytes.isEmpty && Bool.random(using: &rng) { bytes[0] = KeyCodec.stringMarker }
            bytes.withUnsafeBytes { raw in
                for type in types {
                    let valid = (try? KeyCodec.validateKey(raw, type: type)) != nil
                    let value = try? KeyCodec.decodeKey(raw, type: type)
                    let label = type.map { "\($0)" } ?? "automatic id"
                    if valid != (value != nil) {
                        problems.append(
                            "\(label) key \(bytes): validateKey says \(valid), decodeKey gave \(value.map { "\($0)" } ?? "nil")"
                        )
                    }
                    if let type, !type.canBePrimaryKey, valid || value != nil {
                        problems.append("\(label) key accepted for \(bytes)")
                    }
                    guard let value else { continue }
                    decoded += 1
                    let writer = ByteWriter()
                    if let type {
                        _ = KeyCodec.appendPrimaryKey(value, type: type, to: writer)
                    } else if case .int(let id) = value {
                        KeyCodec.appendAutomaticID(UInt64(bitPattern: id), to: writer)
                    }
                    // A string key of invalid UTF-8 reads with U+FFFD, so
                    // only valid UTF-8 re-encodes to the same bytes.
                    let reencodes = type != .string || String(validating: bytes.dropFirst(), as: UTF8.self) != nil
                    if reencodes && writer.bytes != bytes {
                        problems.append("\(label) key \(bytes) decoded to \(value), which encodes to \(writer.bytes)")
                    }
                }
            }
            if problems.count >= 10 { break }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        #expect(decoded > 1000)
    }
}
