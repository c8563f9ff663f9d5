import Foundation
import Testing

@testable import Strata

@Embedded(name: "Place") struct PlaceV1: Equatable { var street: String }
@Embedded(name: "Place") struct PlaceV2: Equatable {
    @Renamed(from: "street") var road: String
}

@Model(name: "Trip") struct TripV1: Equatable {
    @PrimaryKey var id: Int
    var place: PlaceV1
    var stops: [PlaceV1]
}
@Model(name: "Trip") struct TripV2: Equatable {
    @PrimaryKey var id: Int
    var place: PlaceV2
    var stops: [PlaceV2]
}

private enum TripsV1: VersionedSchema {
    static let version: UInt64 = 1
    static let models: [any Model.Type] = [TripV1.self]
}
private enum TripsV2: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [TripV2.self]
}

/// Renames declared with `@Renamed(from:)`, as the field resolver follows
/// them to the catalog.
@Suite(.temporaryFolder)
struct DeclaredRenameTests {
    let folder = TemporaryFolder.current

    private func seed(_ path: String) throws {
        var config = Database.Configuration(path: path, schema: TripsV1.self)
        config.durability = .noSync
        let db = try Database(configuration: config)
        defer { db.close() }
        try db.write { tx in
            try tx.insert(TripV1(id: 1, place: PlaceV1(street: "Elm"), stops: [PlaceV1(street: "Oak")]))
        }
    }

    private var configuration: Database.Configuration {
        var config = Database.Configuration(path: folder.path(), schema: TripsV2.self, versions: [TripsV1.self])
        config.durability = .noSync
        return config
    }

    @Test func aRenameDeclaredOnAnEmbeddedTypeKeepsItsValues() throws {
        try seed(folder.path())
        let db = try Database(configuration: configuration)
        defer { db.close() }
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 0)
        let trips = try db.read { tx in try tx.objects(TripV2.self).array() }
        #expect(trips == [TripV2(id: 1, place: PlaceV2(road: "Elm"), stops: [PlaceV2(road: "Oak")])])
    }

    @Test func thePlanListsARenameDeclaredOnAnEmbeddedType() throws {
        try seed(folder.path())
        let plan = try Database.migrationPlan(for: configuration)
        #expect(plan.renames == ["'Place.street' to 'road'"])
        #expect(plan.rewrittenTypes == [])
    }
}
