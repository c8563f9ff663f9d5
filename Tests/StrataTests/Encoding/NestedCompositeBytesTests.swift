import Foundation
import Testing

@testable import Strata

/// A field value with lists or embedded objects inside, built byte by
/// byte, sound or with one fault deep inside it: the validator must
/// accept the sound bytes and refuse the faulty ones, so that each case
/// tests its fault and nothing else.
struct NestedComposite: Sendable, CustomTestStringConvertible {
    let name: String
    let value: @Sendable (_ faulty: Bool) -> [UInt8]

    var testDescription: String { name }

    static func varint(_ value: UInt64) -> [UInt8] {
        let writer = ByteWriter()
        writer.appendVarint(value)
        return writer.bytes
    }

    static func int(_ value: UInt8) -> [UInt8] { [RecordCodec.Tag.int.rawValue, value] }

    /// A list of `elements` (each a tag and payload) declaring `count`
    /// elements, with `extra` bytes after them inside its length, and a
    /// length `lengthDelta` off the true one.
    static func list(_ elements: [[UInt8]], count: Int? = nil, extra: [UInt8] = [], lengthDelta: Int = 0) -> [UInt8] {
        sized(.list, count: count ?? elements.count, elements.flatMap { $0 } + extra, lengthDelta)
    }

    /// An embedded object of `fields` (an id, then a tag and payload),
    /// declaring `count` fields.
    static func object(_ fields: [(id: UInt64, value: [UInt8])], count: Int? = nil) -> [UInt8] {
        sized(.object, count: count ?? fields.count, fields.flatMap { varint($0.id) + $0.value }, 0)
    }

    private static func sized(_ tag: RecordCodec.Tag, count: Int, _ body: [UInt8], _ lengthDelta: Int) -> [UInt8] {
        let content = varint(UInt64(count)) + body
        return [tag.rawValue] + varint(UInt64(content.count + lengthDelta)) + content
    }

    /// A record of field 1 holding `value` and field 2 a string, so that
    /// bytes follow the value: an over-long length inside it does not run
    /// past the record, only past the list or object around it.
    static func record(_ value: [UInt8]) -> [UInt8] {
        [RecordCodec.layoutVersion, 0x01, 0x02, 0x01] + value + [0x02, RecordCodec.Tag.string.rawValue, 0x05]
            + Array("tail!".utf8)
    }

    static let all: [NestedComposite] = [
        NestedComposite("a list's length past the end of the record") { faulty in
            list([int(2)], lengthDelta: faulty ? 20 : 0)
        },
        NestedComposite("a nested list's length past the end of its outer list") { faulty in
            list([list([int(2), int(4)], lengthDelta: faulty ? 2 : 0)])
        },
        NestedComposite("a nested embedded object's length past the end of its outer one") { faulty in
            let inner = object([(1, int(2))])
            return object([(1, faulty ? [inner[0], inner[1] + 4] + inner.dropFirst(2) : inner)])
        },
        NestedComposite("an unknown tag in a list at depth 2") { faulty in
            list([list([int(2), faulty ? [0xFF] : [RecordCodec.Tag.trueValue.rawValue]])])
        },
        NestedComposite("an unknown tag in an embedded object at depth 2") { faulty in
            object([(3, object([(1, faulty ? [0xFF] : int(1))]))])
        },
        NestedComposite("a list at depth 2 declaring more elements than it holds") { faulty in
            list([int(6), list([int(2)], count: faulty ? 2 : 1)])
        },
        NestedComposite("a list at depth 2 declaring 2^40 elements") { faulty in
            list([list([int(2)], count: faulty ? 1 << 40 : 1)])
        },
        NestedComposite("an embedded object at depth 2 declaring more fields than it holds") { faulty in
            object([(1, object([(1, int(2))], count: faulty ? 2 : 1))])
        },
        NestedComposite("a byte left over inside a list at depth 2") { faulty in
            list([list([[RecordCodec.Tag.falseValue.rawValue]], extra: faulty ? [0x00] : [])])
        },
        NestedComposite("field ids out of order in an embedded object at depth 2") { faulty in
            let fields: [(id: UInt64, value: [UInt8])] = [(1, int(2)), (2, int(4))]
            return list([object([(7, object(faulty ? fields.reversed() : fields))])])
        },
        NestedComposite("a field id above UInt32.max in an embedded object at depth 2") { faulty in
            object([(1, object([(faulty ? UInt64(UInt32.max) + 1 : UInt64(UInt32.max), int(2))]))])
        },
        NestedComposite("an int at depth 2 whose varint runs past its list") { faulty in
            list([list([[RecordCodec.Tag.int.rawValue, faulty ? 0x80 : 0x00]])])
        },
        NestedComposite("a link in a list at depth 2 whose key is a double") { faulty in
            let key = faulty ? [RecordCodec.Tag.double.rawValue] + [UInt8](repeating: 0, count: 8) : int(2)
            return object([(1, list([[RecordCodec.Tag.link.rawValue] + key]))])
        },
    ]

    init(_ name: String, _ value: @escaping @Sendable (_ faulty: Bool) -> [UInt8]) {
        self.name = name
        self.value = value
    }

    /// The record bytes of the case: its value in ``record(_:)``.
    func record(faulty: Bool) -> [UInt8] { Self.record(value(faulty)) }

    /// `depth` lists, each holding the next, the innermost an int.
    static func nestedLists(_ depth: Int) -> [UInt8] {
        (0 ..< depth).reduce(int(2)) { inner, _ in list([inner]) }
    }
}

@Suite(.temporaryFolder) struct NestedCompositeBytesTests {
    let folder = TemporaryFolder.current

    private static func validates(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            do throws(DecodingFailure) {
                _ = try RecordView(validating: raw)
                return true
            } catch {
                #expect((0 ... raw.count).contains(error.offset), "offset \(error.offset) outside \(raw.count) bytes")
                return false
            }
        }
    }

    @Test(arguments: NestedComposite.all)
    func aFaultInsideNestedCompositesIsRefusedAndTheSoundBytesAccepted(_ composite: NestedComposite) {
        #expect(Self.validates(composite.record(faulty: false)), "sound: \(composite.record(faulty: false))")
        #expect(!Self.validates(composite.record(faulty: true)), "faulty: \(composite.record(faulty: true))")
    }

    @Test func listsNestDownToTheLimitAndNoDeeper() {
        #expect(Self.validates(NestedComposite.record(NestedComposite.nestedLists(RecordCodec.maxNesting))))
        #expect(!Self.validates(NestedComposite.record(NestedComposite.nestedLists(RecordCodec.maxNesting + 1))))
    }

    @Test func aSoundNestedListReadsBackWhole() throws {
        let value = NestedComposite.list([
            NestedComposite.list([NestedComposite.int(2), [RecordCodec.Tag.trueValue.rawValue]]),
            NestedComposite.list([]), [RecordCodec.Tag.link.rawValue] + NestedComposite.int(6),
        ])
        try NestedComposite.record(value).withUnsafeBytes { raw in
            let view = try RecordView(validating: raw)
            #expect(view.value(forField: PropertyID(1), expectedAt: 0) == [[1, true], [], .link(3)])
            #expect(view.value(forField: PropertyID(2), expectedAt: 1) == "tail!")
        }
    }

    /// The record of Annabella (key 3) in the relationship fixtures, with
    /// `past` (a list of embedded addresses) holding `past`.
    private func storeAnnabella(withPast past: [UInt8], _ path: String, _ mode: Database.Mode) throws {
        let db = try Database(
            configuration: Fixtures.configuration(path, schema: RelationshipFixtures.schema, mode: mode))
        let person = try #require(db.catalog[type: "Person"])
        db.close()
        let ids = try ["id", "name", "past"].map { try #require(person[property: $0]?.id) }
        #expect(ids == ids.sorted())
        let record = ByteWriter()
        RecordCodec.beginRecord(record, schemaVersion: 1, fieldCount: 3)
        RecordCodec.appendField(record, id: ids[0], value: 3)
        RecordCodec.appendField(record, id: ids[1], value: "Annabella")
        record.appendVarint(UInt64(ids[2].rawValue))
        record.append(contentsOf: past)
        try RawFile.withWrite(path) { txn in
            let records = try #require(try txn.openDatabase(person.recordsDatabase, create: false))
            try txn.put(records, RawFile.key(3), record.bytes)
        }
    }

    @Test(arguments: NestedComposite.all, Fixtures.modes)
    func aRecordWithAFaultInsideNestedCompositesIsACorruptFile(
        _ composite: NestedComposite, _ mode: Database.Mode
    ) throws {
        let path = folder.path()
        try RelationshipFixtures.seed(path, mode: mode)
        try storeAnnabella(withPast: composite.value(false), path, mode)
        let configuration = Fixtures.configuration(path, schema: RelationshipFixtures.schema, mode: mode)
        do {
            let db = try Database(configuration: configuration)
            defer { db.close() }
            // Sound bytes that do not fit the property read as its default.
            #expect(try db.read { try $0.object("Person", key: 3)?["name"] } == "Annabella")
        }
        try storeAnnabella(withPast: composite.value(true), path, mode)
        let db = try Database(configuration: configuration)
        defer { db.close() }
        let byKey = expectStrataError(.corruptFile) { _ = try db.read { try $0.object("Person", key: 3) } }
        #expect(byKey?.message.contains("'Person'") == true, "\(byKey?.message ?? "")")
        #expect(byKey?.message.contains("key 3") == true, "\(byKey?.message ?? "")")
        let scan = expectStrataError(.corruptFile) { _ = try db.read { try $0.objects("Person").map(\.values) } }
        #expect(scan?.message.contains("key 3") == true, "\(scan?.message ?? "")")
        #expect(try db.read { try $0.object("Person", key: 1)?["name"] } == "Ada")
    }
}
