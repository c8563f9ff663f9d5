import Foundation
import Testing

@testable import Strata

@Model(name: "Optionals") struct OptionalsV1: Equatable {
    @PrimaryKey var id: Int
}

/// Version 2 adds an optional property of every primitive kind: records
/// written at version 1 have none of those fields.
@Model(name: "Optionals") struct OptionalsV2: Equatable {
    @PrimaryKey var id: Int
    var flag: Bool?
    var small: Int?
    var wide: Int64?
    var ratio: Double?
    var name: String?
    var blob: Data?
    var when: Date?
    var tag: UUID?
    var price: Decimal?
}

/// A typed read of an optional property reads a stored null as nil without
/// going through a `Value`; these tests pin what it reads in every case:
/// a stored value, a stored null, and a field the record does not have.
@Suite(.temporaryFolder) struct ModelOptionalDecodingTests {
    let folder = TemporaryFolder.current

    func open(version: UInt64, models: [any Model.Type]) throws -> Database {
        var config = Database.Configuration(path: folder.path("optionals"), schemaVersion: version, models: models)
        config.durability = .noSync
        return try Database(configuration: config)
    }

    static let full = OptionalsV2(
        id: 10, flag: false, small: -3, wide: .min, ratio: 0.5, name: "ä", blob: Data([9]),
        when: Date(timeIntervalSinceReferenceDate: -1), tag: UUID(), price: Decimal(string: "-0.01")!)

    @Test func storedValuesNullsAndAbsentFieldsReadAsTheyWereWritten() throws {
        let v1 = try open(version: 1, models: [OptionalsV1.self])
        try v1.write { tx in _ = try tx.insert(OptionalsV1(id: 1)) }
        v1.close()
        let db = try open(version: 2, models: [OptionalsV2.self])
        let empty = OptionalsV2(id: 2)
        try db.write { tx in
            _ = try tx.insert(Self.full)
            _ = try tx.insert(empty)
        }
        try db.read { tx in
            let read = try tx.objects(OptionalsV2.self).sorted(by: \.id).array()
            // Object 1 was written before the fields existed: every one is nil.
            #expect(read == [OptionalsV2(id: 1), empty, Self.full])
            // Its record has no such fields, and object 2 stores nulls.
            let old = try #require(try tx.object("Optionals", key: 1))
            #expect(old.record.fieldCount == 1)
            let nulls = try #require(try tx.object("Optionals", key: 2))
            #expect(nulls["name"] == .null && nulls["price"] == .null)
        }
        // Setting and clearing through the typed API round-trips.
        try db.write { tx in
            var changed = Self.full
            changed.id = 1
            changed.name = nil
            changed.small = 0
            try tx.update(changed)
        }
        try db.read { tx in
            let one = try #require(try tx.objects(OptionalsV2.self).where(\.id, equals: 1).array().first)
            #expect(one.name == nil && one.small == 0 && one.price == Self.full.price && one.tag == Self.full.tag)
        }
    }
}
