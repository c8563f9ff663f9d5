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

@Model(name: "Person") struct WalkerV1: Equatable {
    @PrimaryKey var id: Int
    var name: String
}
@Model(name: "Human") struct WalkerV2: Equatable {
    @PrimaryKey var id: Int
    var name: String
}
@Model(name: "Human") struct WalkerV3: Equatable {
    @PrimaryKey var id: Int
    @Renamed(from: "name") var fullName: String
}

private enum WalkersV1: VersionedSchema {
    static let version: UInt64 = 1
    static let models: [any Model.Type] = [WalkerV1.self]
}
private enum WalkersV2: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [WalkerV2.self]
}
private enum WalkersV3: VersionedSchema {
    static let version: UInt64 = 3
    static let models: [any Model.Type] = [WalkerV3.self]
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

    /// Version 2 renames the type in a step's block, version 3 maps it:
    /// the mapping's old model reads the values the file stores under the
    /// type's old name.
    @Test func aTypeRenamedInAStepBlockKeepsItsValuesForALaterMapping() throws {
        let path = folder.path()
        var seed = Database.Configuration(path: path, schema: WalkersV1.self)
        seed.durability = .noSync
        do {
            let db = try Database(configuration: seed)
            defer { db.close() }
            try db.write { tx in try tx.insert(WalkerV1(id: 1, name: "Ada")) }
        }
        var config = Database.Configuration(
            path: path, schema: WalkersV3.self, versions: [WalkersV1.self, WalkersV2.self],
            migrations: [
                .step(from: WalkersV1.self, to: WalkersV2.self) {
                    $0.migrate { try $0.renameType(from: "Person", to: "Human") }
                },
                .step(from: WalkersV2.self, to: WalkersV3.self) {
                    $0.map(WalkerV2.self, to: WalkerV3.self) { WalkerV3(id: $0.id, fullName: $0.name.uppercased()) }
                },
            ])
        config.durability = .noSync
        let db = try Database(configuration: config)
        defer { db.close() }
        #expect(try db.read { tx in try tx.objects(WalkerV3.self).array() } == [WalkerV3(id: 1, fullName: "ADA")])
    }
}
