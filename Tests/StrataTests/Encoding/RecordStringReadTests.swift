import Foundation
import Testing

@testable import Strata

/// A typed read of a string field (``RecordView/string(forField:from:)``)
/// builds its `String` in place; these check that it reads what
/// `String(decoding:as:)` reads, repairs included.
@Suite struct RecordStringReadTests {
    /// A record of one field, id 1, holding `utf8` as a string.
    static func record(_ utf8: [UInt8]) -> [UInt8] {
        precondition(utf8.count < 0x80, "one-byte length only")
        return [RecordCodec.layoutVersion, 1, 1, 1, RecordCodec.Tag.string.rawValue, UInt8(utf8.count)] + utf8
    }

    static let payloads: [[UInt8]] = [
        [],
        Array("Ada".utf8),
        Array("Last9999".utf8),
        Array("exactly fifteen".utf8),
        Array("sixteen bytes ok".utf8),
        Array("Zoë and 東京".utf8),
        [0xC3, 0x28],
        [0x41, 0xFF, 0x42],
        [0xE2, 0x82],
        Array(repeating: 0x80, count: 40),
        Array("a longer name, well past the inline size".utf8) + [0xF0, 0x9F],
    ]

    @Test(arguments: payloads)
    func typedStringReadMatchesDecodingWithRepairs(utf8: [UInt8]) throws {
        let bytes = Self.record(utf8)
        let read = try bytes.withUnsafeBytes { raw in
            let view = try RecordView(checkingHeader: raw)
            var cursor = FieldCursor(view)
            return view.string(forField: PropertyID(rawValue: 1), from: &cursor)
        }
        #expect(read == String(decoding: utf8, as: UTF8.self))
    }
}
