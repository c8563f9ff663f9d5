import Foundation
import Testing

@testable import Strata

@Model(name: "Part")
struct PartV1: Equatable {
    @PrimaryKey var id: Int
    @Indexed var code: String
    @Indexed var rank: Int
    var name: String
}

@Model(name: "Part")
struct PartV2: Equatable {
    @PrimaryKey var id: Int
    @Indexed var code: String
    @Indexed var rank: Int
    var title: String
    var tags: [String] = []
    var parent: Link<PartV2>?
    var weight: Double = 0
}

enum PartsV1: VersionedSchema {
    static let version: UInt64 = 1
    static let models: [any Model.Type] = [PartV1.self]
}

enum PartsV2: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [PartV2.self]
}

/// The new model of a version-2 `Part` written by hand, handing an `Int`
/// over for the `Double` property `weight`, as a model written by hand may,
/// and an `Int` for an empty `title`.
struct LoosePartV2: Model {
    typealias Key = Int
    var part: PartV2

    static var storedTypeName: String { "Part" }
    static let schema = ModelSchema<LoosePartV2>(
        name: "Part",
        properties: [
            .init(\.part.id, "id", primaryKey: true),
            .init(\.part.code, "code", indexed: true),
            .init(\.part.rank, "rank", indexed: true),
            .init(\.part.title, "title"),
            .init(\.part.tags, "tags"),
            .init(\.part.parent, "parent"),
            .init(\.part.weight, "weight"),
        ])

    func encode(to encoder: inout ModelEncoder) {
        encoder.encode(part.id)
        encoder.encode(part.code)
        encoder.encode(part.rank)
        // An empty title is handed over as the id, an integer, which the
        // string property cannot hold.
        if part.title.isEmpty { encoder.encode(part.id) } else { encoder.encode(part.title) }
        encoder.encode(part.tags)
        encoder.encode(part.parent)
        encoder.encode(Int(part.weight))
    }

    init(_ part: PartV2) { self.part = part }

    init(from decoder: inout ModelDecoder) throws {
        part = PartV2(
            id: try decoder.decode(), code: try decoder.decode(), rank: try decoder.decode(),
            title: try decoder.decode(), tags: try decoder.decode(), parent: try decoder.decode(),
            weight: try decoder.decode())
    }
}

enum LoosePartsV2: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [LoosePartV2.self]
}

/// A typed step's last stage writes each new model's record itself, straight
/// into bytes; what it writes must read, index and verify as the general
/// path's records do.
@Suite(.temporaryFolder) struct TypedStepRecordTests {
    let folder = TemporaryFolder.current

    static let parts = (1 ... 6).map { PartV1(id: $0, code: "c\($0)", rank: $0, name: "part \($0)") }

    /// What the step makes of `old`: even ranks change, codes do not.
    static func migrated(_ old: PartV1) -> PartV2 {
        PartV2(
            id: old.id, code: old.code, rank: old.id.isMultiple(of: 2) ? old.rank * 10 : old.rank,
            title: old.name.uppercased(), tags: [old.name], parent: old.id > 1 ? Link(old.id - 1) : nil,
            weight: Double(old.id))
    }

    func seed() throws -> String {
        let path = folder.path()
        var config = Database.Configuration(path: path, schema: PartsV1.self)
        config.durability = .noSync
        let db = try Database(configuration: config)
        try db.write { tx in
            for part in Self.parts { _ = try tx.insert(part) }
        }
        db.close()
        return path
    }

    @Test func aTypedStepsRecordsReadIndexAndVerifyAsWritten() throws {
        let path = try seed()
        let step = MigrationStep.step(from: PartsV1.self, to: PartsV2.self) {
            $0.map(PartV1.self, to: PartV2.self) { old in
                old.id == 6 ? nil : Self.migrated(old)
            }
        }
        var config = Database.Configuration(
            path: path, schema: PartsV2.self, versions: [PartsV1.self], migrations: [step])
        config.durability = .noSync
        let db = try Database(configuration: config)
        let expected = Self.parts.dropLast().map(Self.migrated)
        let (all, changedRank, keptRank, byCode, versions) = try db.read { tx in
            (
                try tx.objects(PartV2.self).sorted(by: \.id).array(),
                try tx.objects(PartV2.self).where(\.rank, equals: 40).array().map(\.id),
                try tx.objects(PartV2.self).where(\.rank, equals: 3).array().map(\.id),
                try tx.objects(PartV2.self).where(\.code, equals: "c2").array().map(\.id),
                Set(try tx.objects("Part").array().map(\.schemaVersion))
            )
        }
        #expect(all == expected)
        // The rank index was rebuilt for the changed ranks, the old ones are gone.
        #expect(changedRank == [4])
        #expect(keptRank == [3])
        let oldRank = try db.read { tx in try tx.objects(PartV2.self).where(\.rank, equals: 4).array() }
        #expect(oldRank.isEmpty)
        #expect(byCode == [2])
        #expect(versions == [2])
        #expect(try db.verify() == [])
    }

    @Test func aValueOfAnotherTypeInATypedStepIsConverted() throws {
        let path = try seed()
        let step = MigrationStep.step(from: PartsV1.self, to: LoosePartsV2.self) {
            $0.map(PartV1.self, to: LoosePartV2.self) { old in LoosePartV2(Self.migrated(old)) }
        }
        var config = Database.Configuration(
            path: path, schema: LoosePartsV2.self, versions: [PartsV1.self], migrations: [step])
        config.durability = .noSync
        let db = try Database(configuration: config)
        let weights = try db.read { tx in try tx.objects("Part").array().map { $0["weight"] } }
        #expect(weights == Self.parts.map { .double(Double($0.id)) })
        #expect(try db.verify() == [])
    }

    @Test func aValueNoPropertyCanHoldInATypedStepIsRefusedWithTheFileAsItWas() throws {
        let path = try seed()
        let step = MigrationStep.step(from: PartsV1.self, to: LoosePartsV2.self) {
            $0.map(PartV1.self, to: LoosePartV2.self) { old in
                var part = Self.migrated(old)
                if old.id == 3 { part.title = "" }
                return LoosePartV2(part)
            }
        }
        var config = Database.Configuration(
            path: path, schema: LoosePartsV2.self, versions: [PartsV1.self], migrations: [step])
        config.durability = .noSync
        let error = #expect(throws: StrataError.self) { _ = try Database(configuration: config) }
        #expect(error?.typeName == "Part")
        #expect((error?.cause as? StrataError)?.property == "title")
        var old = Database.Configuration(path: path, schema: PartsV1.self)
        old.durability = .noSync
        let db = try Database(configuration: old)
        let parts = try db.read { tx in try tx.objects(PartV1.self).sorted(by: \.id).array() }
        #expect(parts == Self.parts)
    }
}
