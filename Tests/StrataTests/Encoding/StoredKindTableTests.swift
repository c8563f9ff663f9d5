import Foundation
import Testing

@testable import Strata

/// The table of stored kinds (`StoredKind`) agrees with everything that
/// restates part of it: the record tags, ``PropertyType``, the record
/// walk's skip chain, the Swift types' ``PropertyValue`` conformances, and
/// the `@Model` macro's lists, which the plug-in keeps apart because it
/// cannot import Strata.
@Suite struct StoredKindTableTests {
    /// The macro's source, read as text.
    static func macroSource() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return try String(
            contentsOf: root.appendingPathComponent("Sources/StrataMacros/StoredType.swift"), encoding: .utf8)
    }

    /// The string literals of the array that `static let name ... = [` starts.
    static func list(_ name: String, in source: String) throws -> [String] {
        let start = try #require(source.range(of: "static let \(name)"), "StoredType.\(name) is declared")
        let open = try #require(source[start.upperBound...].firstIndex(of: "["))
        let close = try #require(source[open...].firstIndex(of: "]"))
        return source[source.index(after: open) ..< close].split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }.filter { !$0.isEmpty }
    }

    @Test func theMacrosTypeListsAreTheTables() throws {
        let source = try Self.macroSource()
        let kinds = StoredKind.allCases
        #expect(try Self.list("supported", in: source) == kinds.flatMap(\.swiftTypeNames))
        #expect(
            Set(try Self.list("keys", in: source)) == Set(kinds.filter(\.canBePrimaryKey).flatMap(\.swiftTypeNames)))
        #expect(
            Set(try Self.list("indexable", in: source)) == Set(kinds.filter(\.canBeIndexed).flatMap(\.swiftTypeNames)))
        // No stored type is also listed as one the macro refuses.
        let refused = Set(try Self.list("unsupportedNames", in: source))
        #expect(refused.isDisjoint(with: kinds.flatMap(\.swiftTypeNames)))
    }

    /// The Swift type each name of ``StoredKind/swiftTypeNames`` means: a
    /// new kind's type must be added here, and must map to its kind.
    static func swiftType(named name: String) -> (any PropertyValue.Type)? {
        switch name {
        case "Bool": Bool.self
        case "Int": Int.self
        case "Int64": Int64.self
        case "Double": Double.self
        case "String": String.self
        case "Data": Data.self
        case "Date": Date.self
        case "UUID": UUID.self
        case "Decimal": Decimal.self
        default: nil
        }
    }

    @Test(arguments: StoredKind.allCases) func eachKindIsDescribedOnce(_ kind: StoredKind) throws {
        #expect(StoredKind(kind.propertyType) == kind)
        #expect(PropertyType.primitives.contains(kind.propertyType))
        #expect(!kind.propertyType.isComposite)
        #expect(kind.propertyType.canBePrimaryKey == kind.canBePrimaryKey)
        #expect(kind.propertyType.canBeIndexed == kind.canBeIndexed)
        #expect(kind.propertyType.emptyValue == kind.emptyValue)
        #expect(kind.emptyValue.fits(kind.propertyType, optional: false))
        #expect(StoredKind(of: kind.emptyValue) == kind)
        #expect(kind.tags.contains(kind.tag))
        for tag in kind.tags {
            #expect(StoredKind(tag: tag.rawValue) == kind)
            #expect(!RecordCodec.Tag.isComposite(tag.rawValue))
            #expect(RecordCodec.tag(tag.rawValue, fits: kind.propertyType, optional: false))
        }
        for name in kind.swiftTypeNames {
            let type = try #require(Self.swiftType(named: name), "\(name) is in StoredKindTableTests.swiftType(named:)")
            #expect(type.propertyType == kind.propertyType, "\(name)")
        }
        #expect(!kind.noun.isEmpty)
        #expect(StoredKind.json(kind.emptyValue) != nil)
    }

    @Test func everyTagIsAKindNullOrARelationship() {
        var kindTags: [UInt8] = []
        for kind in StoredKind.allCases { kindTags += kind.tags.map(\.rawValue) }
        #expect(Set(kindTags).count == kindTags.count, "no two kinds share a tag")
        for raw in UInt8.min ... UInt8.max {
            let tag = RecordCodec.Tag(rawValue: raw)
            let isKind = StoredKind(tag: raw) != nil
            let isComposite = RecordCodec.Tag.isComposite(raw)
            switch tag {
            case nil: #expect(!isKind && !isComposite, "tag \(raw)")
            case .null?: #expect(!isKind && !isComposite)
            case .link?, .list?, .object?: #expect(!isKind && isComposite, "tag \(raw)")
            default: #expect(isKind && !isComposite, "tag \(raw)")
            }
        }
        #expect(PropertyType.primitives == StoredKind.allCases.map(\.propertyType))
        #expect(PropertyType.allCases.filter { !$0.isComposite } == PropertyType.primitives)
    }

    /// `RecordView.skip`, a hand-ordered chain of comparisons, passes over
    /// exactly the payload each kind's shape says, for each kind's values.
    @Test(arguments: StoredKind.allCases) func theSkipChainFollowsEachKindsPayload(_ kind: StoredKind) throws {
        for value in RoundTripTests.edgeValues(kind.propertyType) where value.fits(kind.propertyType, optional: false) {
            let writer = ByteWriter()
            RecordCodec.appendTagged(writer, value)
            try writer.withUnsafeBytes { bytes in
                let base = try #require(bytes.baseAddress)
                switch kind.payload {
                case .none: #expect(bytes.count == 1)
                case .fixed(let size): #expect(bytes.count == 1 + size)
                case .varint, .sized:
                    var p = 1
                    let length = try #require(RecordView.varint(base, &p, bytes.count))
                    if kind.payload == .sized { #expect(p + Int(length) == bytes.count) }
                }
                var p = 0
                #expect(RecordView.skip(base, &p, bytes.count))
                #expect(p == bytes.count, "\(kind) \(value)")
                p = 0
                #expect(RecordView.read(base, &p, bytes.count) != nil)
                #expect(p == bytes.count)
            }
        }
    }
}
