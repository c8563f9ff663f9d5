import Foundation
import Testing

@testable import Strata

@Model(name: "Versioned") struct VersionedV1 {
    @PrimaryKey var id: Int
    var title = ""
}

@Model(name: "Versioned") struct VersionedV2 {
    @PrimaryKey var id: Int
    var title = ""
    var note: String?
}

/// A hand-written model that keeps the version that wrote it.
struct VersionedReader: Model {
    typealias Key = Int
    var id: Int
    var title: String
    var note: String?
    var writtenBy: UInt64?

    static let schema = ModelSchema<VersionedReader>(
        name: "Versioned",
        properties: [.init(\.id, "id", primaryKey: true), .init(\.title, "title"), .init(\.note, "note")])

    func encode(to encoder: inout ModelEncoder) {
        encoder.encode(id)
        encoder.encode(title)
        encoder.encode(note)
    }

    init(from decoder: inout ModelDecoder) throws {
        id = try decoder.decode(Int.self)
        title = try decoder.decode(String.self)
        note = try decoder.decode(String?.self)
        writtenBy = decoder.schemaVersion
    }
}

/// Typed objects tell which schema version last wrote them, and a typed
/// query keeps those of some versions, as the dynamic API's
/// `whereSchemaVersion` does.
@Suite(.temporaryFolder) struct TypedSchemaVersionTests {
    let folder = TemporaryFolder.current

    func open(version: UInt64, _ models: [any Model.Type], mode: Database.Mode) throws -> Database {
        var config = Database.Configuration(path: folder.path(), schemaVersion: version, models: models)
        config.durability = .noSync
        config.mode = mode
        return try Database(configuration: config)
    }

    @Test(arguments: Fixtures.modes)
    func typedQueriesAndObjectsTellTheVersionThatWroteEachObject(mode: Database.Mode) throws {
        let first = try open(version: 1, [VersionedV1.self], mode: mode)
        try first.write { tx in
            for id in 1 ... 6 { try tx.insert(VersionedV1(id: id, title: "t\(id)")) }
        }
        first.close()
        // Version 2 adds a property: nothing is rewritten; objects written
        // from now on carry version 2.
        let db = try open(version: 2, [VersionedV2.self], mode: mode)
        try db.write { tx in
            try tx.update(VersionedV2(id: 2, title: "two", note: "n"))
            try tx.insert(VersionedV2(id: 7, title: "t7"))
        }
        try db.read { tx in
            let all = try tx.objects(VersionedV2.self)
            #expect(try all.whereSchemaVersion(..<2).map(\.id) == [1, 3, 4, 5, 6])
            #expect(try all.whereSchemaVersion(2...).map(\.id) == [2, 7])
            #expect(try all.whereSchemaVersion(2...).count == 2)
            #expect(try all.whereSchemaVersion(1 ... 1).where(\.id, in: 3 ... 9).count == 4)
            #expect(try all.whereSchemaVersion(3...).isEmpty)
            // Two calls keep what both keep.
            #expect(try all.whereSchemaVersion(1...).whereSchemaVersion(...1).count == 5)
            // The dynamic API agrees.
            #expect(try tx.objects("Versioned").whereSchemaVersion(2...).map { $0["id"] } == [2, 7])
            #expect(try tx.schemaVersion(of: VersionedV2.self, primaryKey: 1) == 1)
            #expect(try tx.schemaVersion(of: VersionedV2.self, primaryKey: 7) == 2)
            #expect(try tx.schemaVersion(of: VersionedV2.self, primaryKey: 99) == nil)
            let readers = try tx.objects(VersionedReader.self).array()
            #expect(readers.map(\.writtenBy) == [1, 2, 1, 1, 1, 1, 2])
        }
    }
}
