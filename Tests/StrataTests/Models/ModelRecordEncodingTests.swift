import Foundation
import Testing

@testable import Strata

/// One property of each primitive kind, optionals too, an indexed one.
@Model(name: "Sample") struct EncodedSample: Equatable {
    @PrimaryKey var id: Int
    var flag: Bool
    var count: Int64
    var ratio: Double
    var name: String
    var blob: Data
    var when: Date
    var tag: UUID
    var price: Decimal
    var note: String?
    var score: Int?
    @Indexed var rank: Int
}

@Model(name: "Ordered") struct OrderedV1 {
    @PrimaryKey var id: Int
    var last: String
}

/// Version 2 adds `middle` between the two: its field id is the largest, so
/// the model's order is not the record's.
@Model(name: "Ordered") struct OrderedV2: Equatable {
    @PrimaryKey var id: Int
    var middle: String = ""
    var last: String
}

@Embedded(name: "Spot") struct EncodedSpot: Equatable {
    var street: String
    var lines: [String] = []
}

@Model(name: "Holder") struct EncodedHolder: Equatable {
    @PrimaryKey var id: String
    var name: String
    var home: EncodedSpot
    var partner: Link<EncodedHolder>?
    var tags: [String] = []
    @Indexed var size: Int = 0
}

/// A hand-written model that hands over other types than its schema
/// declares, as a model written by hand may: an `Int` for a `Double`
/// property, and a null or a NaN where `bad` says so.
struct LooseModel: Model {
    typealias Key = Int
    var id: Int
    var bad: Bad = .none

    enum Bad { case none, nullName, notANumber }

    static let schema = ModelSchema<LooseModel>(
        name: "Loose",
        properties: [
            .init(\.id, "id", primaryKey: true),
            .init(\.ratio, "ratio"),
            .init(\.name, "name"),
            .init(\.price, "price"),
        ])

    var ratio: Double { Double(id) }
    var name: String { "n\(id)" }
    var price: Decimal { 1 }

    func encode(to encoder: inout ModelEncoder) {
        encoder.encode(id)
        encoder.encode(id * 3)
        encoder.encode(bad == .nullName ? nil : name)
        encoder.encode(bad == .notANumber ? Decimal.nan : price)
    }

    init(id: Int, bad: Bad = .none) {
        self.id = id
        self.bad = bad
    }

    init(from decoder: inout ModelDecoder) throws {
        id = try decoder.decode(Int.self)
        _ = try decoder.decode(Double.self)
        _ = try decoder.decode(String.self)
        _ = try decoder.decode(Decimal.self)
    }
}

/// A model writes its record straight into bytes; these tests check that
/// the bytes are the ones the dynamic API's encoder writes for the same
/// values, field order, composite properties and misfits included.
@Suite(.temporaryFolder) struct ModelRecordEncodingTests {
    let folder = TemporaryFolder.current

    /// The records written, by type and key.
    // @unchecked: written by the one write transaction at a time that holds it, read after it ends.
    final class Records: ChangeSubscriber, @unchecked Sendable {
        var written: [String: [UInt8]] = [:]

        func objectChanged(_ change: ChangeRecord) throws {
            let key = try KeyCodec.decodeKey(change.key, type: change.table.primaryKey?.type)
            written["\(change.table.name) \(key)"] = change.after.map { Array($0.bytes) }
        }

        func tableWillEmpty(_ table: ObjectTable, in engine: TableEngine) throws {}
    }

    func open(_ name: String, version: UInt64 = 1, models: [any Model.Type], records: Records) throws -> Database {
        var config = Database.Configuration(
            path: folder.path(name), schemaVersion: version, models: models)
        config.durability = .noSync
        config.changeSubscribers = [{ records }]
        return try Database(configuration: config)
    }

    static let samples = [
        EncodedSample(
            id: 1, flag: true, count: -7, ratio: 2.5, name: "Ada", blob: Data([0, 1, 255]),
            when: Date(timeIntervalSinceReferenceDate: 12.25), tag: UUID(), price: Decimal(string: "12.345")!,
            note: "n", score: 9, rank: 3),
        EncodedSample(
            id: -2, flag: false, count: .max, ratio: -.infinity, name: "", blob: Data(),
            when: .distantPast, tag: UUID(), price: 0, note: nil, score: nil, rank: -1),
    ]

    /// Writes `objects` through the typed API into one file and their
    /// `storedValues` through the dynamic API into another; returns both
    /// files' records.
    func bothWays<M: Model>(
        _ objects: [M], models: [any Model.Type], prepare: (String) throws -> Void = { _ in }
    ) throws -> (typed: [String: [UInt8]], dynamic: [String: [UInt8]], db: Database) {
        try prepare("typed")
        try prepare("dynamic")
        let typed = Records()
        let dynamic = Records()
        let typedDB = try open("typed", version: 2, models: models, records: typed)
        let dynamicDB = try open("dynamic", version: 2, models: models, records: dynamic)
        try typedDB.write { tx in
            for object in objects { _ = try tx.insert(object) }
        }
        try dynamicDB.write { tx in
            for object in objects { _ = try tx.insert(M.storedTypeName, object.storedValues) }
        }
        dynamicDB.close()
        return (typed.written, dynamic.written, typedDB)
    }

    @Test func everyPrimitiveKindIsWrittenAsTheDynamicEncoderWritesIt() throws {
        let (typed, dynamic, db) = try bothWays(Self.samples, models: [EncodedSample.self])
        #expect(typed.count == 2)
        #expect(typed == dynamic)
        try db.read { tx in
            let read = try tx.objects(EncodedSample.self).sorted(by: \.id).array()
            #expect(read == Self.samples.sorted { $0.id < $1.id })
            let ranked = try tx.objects(EncodedSample.self).where(\.rank, equals: 3).array()
            #expect(ranked.map(\.id) == [1])
        }
    }

    @Test func aModelWhoseOrderIsNotTheRecordsWritesFieldsInIDOrder() throws {
        let objects = [OrderedV2(id: 1, middle: "m", last: "l"), OrderedV2(id: 2, last: "z")]
        let (typed, dynamic, db) = try bothWays(objects, models: [OrderedV2.self]) { name in
            let v1 = try open(name, models: [OrderedV1.self], records: Records())
            v1.close()
        }
        #expect(typed.count == 2)
        #expect(typed == dynamic)
        try db.read { tx in
            let read = try tx.objects(OrderedV2.self).sorted(by: \.id).array()
            #expect(read == objects)
            let first = try tx.object("Ordered", key: 1)
            #expect(first?["middle"] == "m")
        }
    }

    @Test func linksListsAndEmbeddedObjectsAreWrittenAsTheDynamicEncoderWritesThem() throws {
        let objects = [
            EncodedHolder(id: "a", name: "A", home: EncodedSpot(street: "1 Main St", lines: ["x", "y"])),
            EncodedHolder(
                id: "b", name: "B", home: EncodedSpot(street: "2 Side St"), partner: Link("a"), tags: ["t"], size: 2),
        ]
        let (typed, dynamic, db) = try bothWays(objects, models: [EncodedHolder.self])
        #expect(typed.count == 2)
        #expect(typed == dynamic)
        try db.read { tx in
            let read = try tx.objects(EncodedHolder.self).sorted(by: \.id).array()
            #expect(read == objects)
            let sized = try tx.objects(EncodedHolder.self).where(\.size, equals: 2).array()
            #expect(sized.map(\.id) == ["b"])
        }
        // A link to an object that does not exist is refused, as before.
        #expect(throws: StrataError.self) {
            try db.write { tx in
                _ = try tx.insert(
                    EncodedHolder(id: "c", name: "C", home: EncodedSpot(street: "s"), partner: Link("zz")))
            }
        }
    }

    @Test func updatesAndUpsertsMoveIndexEntries() throws {
        let records = Records()
        let db = try open("file", models: [EncodedSample.self], records: records)
        var sample = Self.samples[0]
        try db.write { tx in _ = try tx.insert(sample) }
        sample.rank = 40
        sample.note = nil
        try db.write { tx in try tx.update(sample) }
        try db.read { tx in
            let old = try tx.objects(EncodedSample.self).where(\.rank, equals: 3).array()
            let new = try tx.objects(EncodedSample.self).where(\.rank, equals: 40).array()
            #expect(old.isEmpty)
            #expect(new == [sample])
        }
        sample.rank = 41
        try db.write { tx in _ = try tx.upsert(sample) }
        try db.read { tx in
            let new = try tx.objects(EncodedSample.self).where(\.rank, equals: 41).array()
            let count = try tx.objects(EncodedSample.self).count
            #expect(new == [sample])
            #expect(count == 1)
        }
    }

    @Test func aValueOfAnotherTypeIsConvertedAsTheDynamicEncoderConvertsIt() throws {
        let (typed, dynamic, db) = try bothWays([LooseModel(id: 2)], models: [LooseModel.self])
        #expect(typed == dynamic)
        let ratio = try db.read { tx in try tx.object("Loose", key: 2)?["ratio"] }
        #expect(ratio == .double(6))
    }

    @Test(arguments: [LooseModel.Bad.nullName, .notANumber])
    func aValueNoFieldCanHoldIsRefusedWithNothingWritten(bad: LooseModel.Bad) throws {
        let db = try open("file", models: [LooseModel.self], records: Records())
        let error = #expect(throws: StrataError.self) {
            try db.write { tx in _ = try tx.insert(LooseModel(id: 1, bad: bad)) }
        }
        #expect(error?.typeName == "Loose")
        #expect(error?.property == (bad == .nullName ? "name" : "price"))
        let count = try db.read { tx in try tx.objects("Loose").count }
        #expect(count == 0)
    }
}
