import Foundation
import Testing

@_spi(Hub) @testable import Strata

/// A changeset that must be refused, and how: a fragment of the message
/// and, when it is known, the byte offset the error names.
struct BadChangeset: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: Data
    let fragment: String
    let offset: Int?
    var testDescription: String { name }

    init(_ name: String, _ fragment: String, at offset: Int? = nil, _ bytes: Data) {
        self.name = name
        self.fragment = fragment
        self.offset = offset
        self.bytes = bytes
    }

    /// A changeset of one field of `descriptor` whose value's bytes are
    /// `value`, spliced in by hand (the value is the last thing before the
    /// checksum), with the checksum made right.
    static func value(_ name: String, _ fragment: String, descriptor: String, _ value: [UInt8]) -> BadChangeset {
        let bytes = [UInt8](ChangesetCodec.encode(ChangesetSample.oneField(descriptor: descriptor, value: .null)))
        let valueAt = bytes.count - 5
        return BadChangeset(
            name, fragment, at: nil, ChangesetSample.resealed(Array(bytes[..<valueAt]) + value + [0, 0, 0, 0]))
    }

    /// `content` written by the encoder, which writes what it is given.
    static func content(
        _ name: String, _ fragment: String, _ change: (inout ChangesetContent) -> Void
    ) -> BadChangeset {
        var content = ChangesetSample.oneField(descriptor: "int", value: 5)
        change(&content)
        return BadChangeset(name, fragment, ChangesetCodec.encode(content))
    }

    static let noEntries: [UInt8] = {
        var content = ChangesetSample.oneField(descriptor: "int", value: 1)
        content.entries = []
        return [UInt8](ChangesetCodec.encode(content))
    }()

    static let valid = [UInt8](ChangesetCodec.encode(ChangesetSample.oneField(descriptor: "string", value: "hello")))

    static func edited(_ edit: (inout [UInt8]) -> Void) -> [UInt8] {
        var bytes = valid
        edit(&bytes)
        return bytes
    }

    static let all: [BadChangeset] = [
        BadChangeset("no bytes", "it is empty", at: 0, Data()),
        BadChangeset("another magic", "does not start with 'SCS1'", at: 0, Data(edited { $0[3] = 0x32 })),
        BadChangeset("a JSON document", "does not start with 'SCS1'", at: 0, Data("{\"a\": 1}".utf8)),
        BadChangeset("unknown version", "format version is 2", at: 4, Data(edited { $0[4] = 2 })),
        BadChangeset("the first 20 bytes", "shorter than any changeset", at: 20, Data(valid.prefix(20))),
        BadChangeset("the magic alone", "shorter than any changeset", at: 4, Data(valid.prefix(4))),
        BadChangeset("a flipped bit", "checksum", at: valid.count - 4, Data(edited { $0[40] ^= 0x10 })),
        BadChangeset("a wrong checksum", "checksum", at: valid.count - 4, Data(edited { $0[$0.count - 1] ^= 1 })),
        BadChangeset("unknown flags", "unknown flags 2", at: 5, ChangesetSample.resealed(edited { $0[5] = 2 })),
        BadChangeset(
            "cut inside the last value, resealed", "it ends inside a string value",
            at: valid.count - 10, ChangesetSample.resealed(Array(valid.dropLast(7)) + [0, 0, 0, 0])),
        BadChangeset(
            "two bytes after the last entry", "2 bytes follow the last entry", at: valid.count - 4,
            ChangesetSample.resealed(Array(valid.dropLast(4)) + [0, 0, 0, 0, 0, 0])),
        content("sequence range backwards", "runs backwards") {
            $0.fromSeq = 9
            $0.toSeq = 8
        },
        content("positions backwards inside one sequence number", "runs backwards") {
            ($0.fromSeq, $0.fromKey, $0.toSeq, $0.toKey) = (9, [0, 0, 0, 1, 9], 9, [0, 0, 0, 1, 3])
            $0.hasMore = true
        },
        content("a position key too short for a type id and a key", "has 3 bytes, which no change-log key has") {
            ($0.fromSeq, $0.fromKey, $0.toSeq) = (9, [0, 0, 1], 10)
        },
        content("a position key longer than any", "has 516 bytes") {
            ($0.toSeq, $0.toKey, $0.hasMore) = (9, Array(repeating: 7, count: 516), true)
        },
        content("a page starting inside its baseline", "starts inside sequence number 9, its baseline") {
            ($0.baseline, $0.fromSeq, $0.fromKey, $0.toSeq) = (9, 9, [0, 0, 0, 1, 9], 10)
        },
        content("a last page ending inside a sequence number", "a last page ends inside sequence number 9") {
            ($0.toSeq, $0.toKey) = (9, [0, 0, 0, 1, 9])
        },
        content("type index out of range", "an entry's type index 3 is out of range") { $0.entries[0].type = 3 },
        content("field index out of range", "an entry's field index 1 is out of range") {
            $0.entries[0].fields[0].field = 1
        },
        content("entry origin out of range", "an entry's origin index 1 is out of range") {
            $0.entries[0].stamp.origin = 1
        },
        content("field origin out of range", "a field's origin index 7 is out of range") {
            $0.entries[0].fields[0].stamp.origin = 7
        },
        content("field table's type out of range", "field 0's type index 1 is out of range") { $0.fields[0].type = 1 },
        content("a second entry for one object", "a second entry for the 'Person' object 1") {
            $0.entries.append($0.entries[0])
        },
        content("a field twice in one entry", "the field 'f' appears twice") {
            $0.entries[0].fields.append($0.entries[0].fields[0])
        },
        content("a tombstone with fields", "the tombstone of the object 1 (causal length 2) has fields") {
            $0.entries[0].causalLength = 2
        },
        content("a leave with fields", "the object 1, which left the receiver's view (causal length 0), has fields") {
            $0.entries[0].causalLength = 0
        },
        content("a field of another type", "the field 'Dog.g' is in an entry of 'Person'") {
            $0.types.append(WireType(name: "Dog", keyName: "id", keyDescriptor: "int"))
            $0.fields.append(WireField(type: 1, path: "g", descriptor: "int"))
            $0.entries[0].fields[0].field = 1
        },
        content("a value of another type", "the value \"five\" of 'f' does not fit its type int") {
            $0.entries[0].fields[0].value = "five"
        },
        content("null for a required field", "the value null of 'f' does not fit its type int") {
            $0.entries[0].fields[0].value = nil
        },
        content("a list element of another type", "does not fit its type list(int)") {
            $0.fields[0].descriptor = "list(int)"
            $0.entries[0].fields[0].value = [1, "2"]
        },
        content("a key of another type", "the key \"1\" of a 'Person' object is not int") {
            $0.entries[0].key = "1"
        },
        content("a key type that cannot be a key", "the key of 'Person' is 'double'") {
            $0.types[0].keyDescriptor = "double"
        },
        content("an optional key", "the key of 'Person' is 'int?'") { $0.types[0].keyDescriptor = "int?" },
        content("a descriptor that is no type", "the descriptor 'integer' of field 'f' is not a field type") {
            $0.fields[0].descriptor = "integer"
        },
        content("an optional list", "the descriptor 'list(int)?'") { $0.fields[0].descriptor = "list(int)?" },
        content("a type named twice", "the type 'Person' is named twice") { $0.types.append($0.types[0]) },
        content("a type without a name", "type 0 has no name") { $0.types[0].name = "" },
        content("a field named twice", "the field 'Person.f' (int) is named twice") { $0.fields.append($0.fields[0]) },
        content("a field without a path", "field 0 has no path") { $0.fields[0].path = "" },
        content("an origin named twice", "is named twice") { $0.origins.append($0.origins[0]) },
        content("nesting 33 levels deep", "nested deeper than 32 levels") {
            $0.fields[0].descriptor = "embedded(E)"
            $0.entries[0].fields[0].value = (0 ..< 32).reduce(Value.object([:])) { inner, _ in ["a": inner] }
        },
        content("lists nesting 33 levels deep", "nested deeper than 32 levels") {
            $0.fields[0].descriptor = "embedded(E)"
            $0.entries[0].fields[0].value = ["a": (0 ..< 32).reduce(Value.list([])) { inner, _ in [inner] }]
        },
        value("an unknown tag", "unknown value tag 13", descriptor: "string", [0x0D]),
        value(
            "a string of invalid UTF-8", "a string value is not valid UTF-8", descriptor: "string", [5, 2, 0xC3, 0x28]),
        value("a decimal with sign 2", "a decimal that is not well-formed", descriptor: "decimal", [0x0C, 2, 0, 2]),
        value("a double cut short", "it ends inside a value", descriptor: "double", [0x04, 1, 2, 3]),
        value(
            "an int varint of 11 bytes", "an int value overflows 64 bits", descriptor: "int",
            [0x03] + [UInt8](repeating: 0xFF, count: 10) + [0x01]),
        value(
            "a link to a double key", "a link whose key is not an int, string or uuid", descriptor: "link(Person)",
            [0x09, 0x04, 0, 0, 0, 0, 0, 0, 0, 0]),
        value("a link to a list", "a link whose key is not", descriptor: "link(Person)", [0x09, 0x0A, 1, 0]),
        value(
            "a list longer than the bytes", "it ends inside a list or embedded object", descriptor: "list(int)",
            [0x0A, 9, 0]),
        value(
            "a list count beyond its bytes", "a count of 5 that its 1 bytes cannot hold", descriptor: "list(int)",
            [0x0A, 1, 5]),
        value("a list with bytes left over", "1 bytes left over", descriptor: "list(int)", [0x0A, 4, 1, 3, 2, 0]),
        value(
            "an element past its list's end", "it ends inside", descriptor: "list(string)",
            [0x0A, 3, 1, 5, 3, 0x61, 0x62, 0x63]),
        value(
            "object names out of order", "field 'a' out of order or named twice", descriptor: "embedded(E)",
            [0x0B, 7, 2, 1, 0x62, 0x00, 1, 0x61, 0x00]),
        value(
            "an object name twice", "field 'a' out of order or named twice", descriptor: "embedded(E)",
            [0x0B, 7, 2, 1, 0x61, 0x00, 1, 0x61, 0x00]),
        value(
            "an object name of invalid UTF-8", "is not valid UTF-8", descriptor: "embedded(E)",
            [0x0B, 4, 1, 1, 0xFF, 0x00]),
        BadChangeset(
            "2^40 entries", "1099511627776 entries are more than the 0 bytes left can hold", at: noEntries.count - 5,
            ChangesetSample.resealed(Array(noEntries.dropLast(5)) + [0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0, 0, 0, 0])),
    ]

}

@Suite struct ChangesetRefusalTests {
    @Test(arguments: BadChangeset.all)
    func isRefused(_ bad: BadChangeset) {
        let error = expectStrataError(.invalidChangeset) { _ = try ChangesetCodec.decode(bad.bytes) }
        #expect(error?.summary.contains(bad.fragment) == true, "\(error?.message ?? "")")
        if let offset = bad.offset { #expect(error?.offset == offset, "\(error?.message ?? "")") }
        #expect(error?.message.lowercased().contains("nothing of it is applied") == true)
    }

    @Test func summaryRefusesWhatDecodeRefusesInTheHeader() {
        for bad in BadChangeset.all where bad.offset.map({ $0 < 60 || $0 >= bad.bytes.count - 4 }) ?? false {
            expectStrataError(.invalidChangeset) { _ = try Changeset(data: bad.bytes).summary() }
        }
    }

    @Test func keysEqualAsTextButNotAsBytesAreTwoObjects() throws {
        var content = ChangesetSample.oneField(descriptor: "int", value: 1)
        content.types[0].keyDescriptor = "string"
        content.entries[0].key = "\u{E9}"
        content.entries.append(content.entries[0])
        content.entries[1].key = "e\u{301}"
        #expect(content.entries[0].key == content.entries[1].key)  // Swift's == is canonical equivalence
        #expect(try ChangesetCodec.decode(ChangesetCodec.encode(content)) == content)
    }

    @Test func nestingOf32LevelsIsRead() throws {
        var content = ChangesetSample.oneField(descriptor: "embedded(E)", value: nil)
        content.entries[0].fields[0].value = (0 ..< 31).reduce(Value.object([:])) { inner, _ in ["a": inner] }
        #expect(try ChangesetCodec.decode(ChangesetCodec.encode(content)) == content)
    }
}
