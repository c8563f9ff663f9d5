import Foundation
import Testing

@testable import Strata

// Three versions of a task: version 2 only adds `done`; version 3 makes
// `priority` an Int.

@Model(name: "Task") struct ConversionTaskV1: Equatable {
    @PrimaryKey var id: Int
    var priority: String
}

@Model(name: "Task") struct ConversionTaskV2: Equatable {
    @PrimaryKey var id: Int
    var priority: String
    var done: Bool = false
}

@Model(name: "Task") struct ConversionTaskV3: Equatable {
    @PrimaryKey var id: Int
    var priority: Int = 0
    var done: Bool = false
}

enum ConversionV1: VersionedSchema {
    static let version: UInt64 = 1
    static let models: [any Model.Type] = [ConversionTaskV1.self]
}

enum ConversionV2: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [ConversionTaskV2.self]
}

enum ConversionV3: VersionedSchema {
    static let version: UInt64 = 3
    static let models: [any Model.Type] = [ConversionTaskV3.self]
}

// A shop whose embedded place changes the type of `zip`.

@Embedded(name: "Place") struct ConversionPlaceV1: Equatable {
    var zip: String = ""
}

@Embedded(name: "Place") struct ConversionPlaceV2: Equatable {
    var zip: Int = 0
}

@Model(name: "Shop") struct ConversionShopV1: Equatable {
    @PrimaryKey var id: Int
    var place: ConversionPlaceV1 = ConversionPlaceV1()
}

@Model(name: "Shop") struct ConversionShopV2: Equatable {
    @PrimaryKey var id: Int
    var place: ConversionPlaceV2 = ConversionPlaceV2()
}

enum ShopV1App: VersionedSchema {
    static let version: UInt64 = 1
    static let models: [any Model.Type] = [ConversionShopV1.self]
}

enum ShopV2App: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [ConversionShopV2.self]
}

/// Which code counts as converting the values of a property whose type
/// changes, across typed steps: the step across which the type changes
/// must handle it.
@Suite(.temporaryFolder) struct TypeChangeConversionTests {
    let folder = TemporaryFolder.current

    static let v1ToV2 = MigrationStep.step(from: ConversionV1.self, to: ConversionV2.self) {
        $0.map(ConversionTaskV1.self, to: ConversionTaskV2.self) { ConversionTaskV2(id: $0.id, priority: $0.priority) }
    }

    private func seedTasks() throws {
        var config = Database.Configuration(path: folder.path(), schema: ConversionV1.self)
        config.durability = .noSync
        let db = try Database(configuration: config)
        defer { db.close() }
        try db.write { tx in
            for (id, priority) in [(1, "P1"), (2, "P3"), (3, "urgent")] {
                try tx.insert(ConversionTaskV1(id: id, priority: priority))
            }
        }
    }

    private func configuration(_ v2ToV3: MigrationStep) -> Database.Configuration {
        var config = Database.Configuration(
            path: folder.path(), schema: ConversionV3.self, versions: [ConversionV1.self, ConversionV2.self],
            migrations: [Self.v1ToV2, v2ToV3])
        config.durability = .noSync
        return config
    }

    private func priorities(_ db: Database) throws -> [Int] {
        try db.read { tx in try tx.objects(ConversionTaskV3.self).map(\.priority) }
    }

    @Test func aStepBeforeTheTypeChangeConvertsNothing() throws {
        try seedTasks()
        let before = try RawFile.contents(folder.path())
        let config = configuration(MigrationStep.step(from: ConversionV2.self, to: ConversionV3.self) { _ in })
        let plan = try Database.migrationPlan(for: config)
        #expect(plan.action == .refuse, "\(plan)")
        let error = #expect(throws: StrataError.self) { try Database(configuration: config) }
        #expect(error?.code == .migrationRequired)
        #expect(error?.message.contains("'Task.priority' has been changed from 'string' to 'int'") == true)
        #expect(try RawFile.contents(folder.path()) == before)
    }

    @Test func theStepAcrossTheTypeChangeConvertsIt() throws {
        try seedTasks()
        let config = configuration(
            MigrationStep.step(from: ConversionV2.self, to: ConversionV3.self) {
                $0.map(ConversionTaskV2.self, to: ConversionTaskV3.self) {
                    ConversionTaskV3(id: $0.id, priority: Int($0.priority.dropFirst()) ?? 9, done: $0.done)
                }
            })
        let plan = try Database.migrationPlan(for: config)
        let step = plan.steps.first { $0.change.kind == .propertyTypeChanged }
        #expect(step?.effect.hasPrefix("The typed step ConversionV2 → ConversionV3 sets its values") == true, "\(plan)")
        #expect(try priorities(try Database(configuration: config)) == [1, 3, 9])
    }

    private static let blockConverting = MigrationStep.step(from: ConversionV2.self, to: ConversionV3.self) {
        $0.migrate { migration in
            try migration.enumerateObjects(ofType: "Task") { old, new in
                new?["priority"] = .int(Int64(old?["priority"].string?.dropFirst() ?? "") ?? 9)
            }
        }
    }

    @Test func aMigrateBlockOfTheStepAcrossTheTypeChangeCounts() throws {
        try seedTasks()
        var config = configuration(Self.blockConverting)
        config.migrations = [
            MigrationStep.step(from: ConversionV1.self, to: ConversionV2.self) { _ in }, Self.blockConverting,
        ]
        let plan = try Database.migrationPlan(for: config)
        let step = plan.steps.first { $0.change.kind == .propertyTypeChanged }
        #expect(step?.effect.contains("the migrate block of the step ConversionV2 → ConversionV3") == true, "\(plan)")
        #expect(try priorities(try Database(configuration: config)) == [1, 3, 9])
    }

    /// Blocks run before the mappings, and a mapping starts from the stored
    /// objects: the block's values would be overwritten, so it does not count.
    @Test func aMigrateBlockDoesNotCountWhereAnotherStepMapsTheType() throws {
        try seedTasks()
        let config = configuration(Self.blockConverting)
        let plan = try Database.migrationPlan(for: config)
        #expect(plan.action == .refuse, "\(plan)")
        #expect(throws: StrataError.self) { try Database(configuration: config) }
    }

    private func seedShops() throws {
        var config = Database.Configuration(path: folder.path(), schema: ShopV1App.self)
        config.durability = .noSync
        let db = try Database(configuration: config)
        defer { db.close() }
        try db.write { tx in
            try tx.insert(ConversionShopV1(id: 1, place: ConversionPlaceV1(zip: "10115")))
            try tx.insert(ConversionShopV1(id: 2, place: ConversionPlaceV1(zip: "none")))
        }
    }

    private func shopConfiguration(_ step: MigrationStep) -> Database.Configuration {
        var config = Database.Configuration(
            path: folder.path(), schema: ShopV2App.self, versions: [ShopV1App.self], migrations: [step])
        config.durability = .noSync
        return config
    }

    @Test func anEmbeddedTypesChangeIsConvertedByAStepThatMapsItsOwner() throws {
        try seedShops()
        let config = shopConfiguration(
            MigrationStep.step(from: ShopV1App.self, to: ShopV2App.self) {
                $0.map(ConversionShopV1.self, to: ConversionShopV2.self) {
                    ConversionShopV2(id: $0.id, place: ConversionPlaceV2(zip: Int($0.place.zip) ?? -1))
                }
            })
        let db = try Database(configuration: config)
        #expect(try db.read { tx in try tx.objects(ConversionShopV2.self).map(\.place.zip) } == [10115, -1])
    }

    @Test func anEmbeddedTypesChangeWithoutCodeNamesTheTypesToMap() throws {
        try seedShops()
        let config = shopConfiguration(MigrationStep.step(from: ShopV1App.self, to: ShopV2App.self) { _ in })
        let error = #expect(throws: StrataError.self) { try Database(configuration: config) }
        #expect(error?.message.contains("'Place.zip' has been changed from 'string' to 'int'") == true)
        #expect(
            error?.message.contains("a typed step that maps 'Shop' (which embeds 'Place')") == true,
            "\(error?.message ?? "")")
    }

    @Test func discardValuesMustNameAPropertyOfTheSchema() throws {
        var config = Database.Configuration(path: folder.path(), schema: ConversionV3.self)
        config.discardValues(of: "priorty", onType: "Task")
        config.discardValues(of: "x", onType: "Tsk")
        let error = #expect(throws: StrataError.self) { try Database(configuration: config) }
        #expect(error?.code == .invalidSchema)
        #expect(error?.message.contains("discardValues names 'Task.priorty'") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("discardValues names the type 'Tsk'") == true, "\(error?.message ?? "")")
    }
}
