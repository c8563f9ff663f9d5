import Foundation
import Testing

@testable import Strata

@Model(name: "Gauge") struct GaugeV1: Equatable {
    @PrimaryKey var id: Int
    var a: Int
}
@Model(name: "Gauge") struct GaugeV2: Equatable {
    @PrimaryKey var id: Int
}
@Model(name: "Gauge") struct GaugeV3: Equatable {
    @PrimaryKey var id: Int
    var a: Int = 5
}
@Model(name: "Gauge") struct GaugeV3Text: Equatable {
    @PrimaryKey var id: Int
    var a: String = "new"
}

private enum GaugesV1: VersionedSchema {
    static let version: UInt64 = 1
    static let models: [any Model.Type] = [GaugeV1.self]
}
private enum GaugesV2: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [GaugeV2.self]
}
private enum GaugesV3: VersionedSchema {
    static let version: UInt64 = 3
    static let models: [any Model.Type] = [GaugeV3.self]
}
private enum GaugesV3Text: VersionedSchema {
    static let version: UInt64 = 3
    static let models: [any Model.Type] = [GaugeV3Text.self]
}

@Embedded(name: "Pin") struct PinV1: Equatable { var street: String }
@Embedded(name: "Pin") struct PinV3: Equatable { var road: String }
@Model(name: "Label") struct LabelV1: Equatable {
    @PrimaryKey var id: Int
    var a: String
    var pin: PinV1
}
@Model(name: "Label") struct LabelV2: Equatable {
    @PrimaryKey var id: Int
    var b: String
    var pin: PinV1
}
@Model(name: "Label") struct LabelV3: Equatable {
    @PrimaryKey var id: Int
    var c: String
    var pin: PinV3
}

private enum LabelsV1: VersionedSchema {
    static let version: UInt64 = 1
    static let models: [any Model.Type] = [LabelV1.self]
}
private enum LabelsV2: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [LabelV2.self]
}
private enum LabelsV3: VersionedSchema {
    static let version: UInt64 = 3
    static let models: [any Model.Type] = [LabelV3.self]
}

/// A name that a declared version removes and a later one adds again is
/// another field: a file that jumps from before the removal straight to
/// the later version does not show the old values as the new field's, on
/// whichever path it opens (a closure, typed steps, the automatic rules,
/// synced mode), while a declared rename still continues its field.
@Suite(.temporaryFolder)
struct ReaddedPropertyTests {
    let folder = TemporaryFolder.current

    /// How the file at version 1 is opened at version 3.
    enum Path: String, CaseIterable, CustomTestStringConvertible {
        /// Local mode, with a dynamic migration closure.
        case closure
        /// Local mode, with a typed step from version 1 to 2.
        case typedStep
        /// Local mode, no closure and no step.
        case automatic
        /// Synced mode (neither closure nor step is allowed).
        case synced
        var testDescription: String { rawValue }
        var mode: Database.Mode { self == .synced ? .synced : .local }
    }

    private func seed(_ mode: Database.Mode) throws {
        var config = Database.Configuration(path: folder.path(), schema: GaugesV1.self)
        config.durability = .noSync
        config.mode = mode
        let db = try Database(configuration: config)
        defer { db.close() }
        try db.write { tx in try tx.insert(GaugeV1(id: 1, a: 7)) }
    }

    private func configuration(
        _ path: Path, latest: any VersionedSchema.Type, seen: Recorder<Value>
    ) -> Database.Configuration {
        var config = Database.Configuration(
            path: folder.path(), schema: latest, versions: [GaugesV1.self, GaugesV2.self],
            migrations: path == .typedStep
                ? [
                    .step(from: GaugesV1.self, to: GaugesV2.self) {
                        $0.map(GaugeV1.self, to: GaugeV2.self) { GaugeV2(id: $0.id) }
                    }
                ]
                : [])
        config.durability = .noSync
        config.mode = path.mode
        if path == .closure {
            config.migration = { migration, _ in
                try migration.enumerateObjects(ofType: "Gauge") { _, new in seen.append(new?["a"] ?? .null) }
            }
        }
        return config
    }

    @Test(arguments: Path.allCases)
    func aNameAddedAgainOfTheSameTypeStartsAtItsDefault(_ path: Path) throws {
        try seed(path.mode)
        let seen = Recorder<Value>()
        let db = try Database(configuration: configuration(path, latest: GaugesV3.self, seen: seen))
        defer { db.close() }
        #expect(seen.all == (path == .closure ? [.int(5)] : []))
        #expect(try db.read { tx in try tx.objects(GaugeV3.self).array() } == [GaugeV3(id: 1, a: 5)])
        #expect(try db.read { tx in try tx.objects("Gauge").map { $0["a"] } } == [.int(5)])
        try expectOldFieldKept(db, path)
    }

    @Test(arguments: Path.allCases)
    func aNameAddedAgainOfAnotherTypeStartsAtItsDefault(_ path: Path) throws {
        try seed(path.mode)
        let seen = Recorder<Value>()
        let db = try Database(configuration: configuration(path, latest: GaugesV3Text.self, seen: seen))
        defer { db.close() }
        #expect(seen.all == (path == .closure ? [.string("new")] : []))
        #expect(try db.read { tx in try tx.objects(GaugeV3Text.self).array() } == [GaugeV3Text(id: 1, a: "new")])
        #expect(try db.read { tx in try tx.objects("Gauge").map { $0["a"] } } == [.string("new")])
        try expectOldFieldKept(db, path)
    }

    /// The plan says what happens: the old `a` goes (is kept, in synced
    /// mode) and a new `a` comes, automatically; no value type changes.
    @Test(arguments: [Path.automatic, .synced])
    func thePlanListsARemovalAndAnAddition(_ path: Path) throws {
        try seed(path.mode)
        let config = configuration(path, latest: GaugesV3Text.self, seen: Recorder<Value>())
        let plan = try Database.migrationPlan(for: config)
        #expect(plan.steps.map(\.change.kind) == [.propertyAdded, .propertyRemoved], "\(plan)")
        #expect(plan.steps.map(\.change.propertyName) == ["a", "a"])
        #expect(plan.steps.allSatisfy { $0.handling == .automatic }, "\(plan)")
    }

    /// The old field is another one than the new `a`: retired in local
    /// mode, kept in synced mode for the app versions that still read it.
    private func expectOldFieldKept(_ db: Database, _ path: Path) throws {
        let type = try #require(db.catalog[type: "Gauge"])
        let new = try #require(type[property: "a"]).id
        let old = (path == .synced ? type.keptProperties : type.retiredProperties).filter { $0.property.name == "a" }
        #expect(old.count == 1)
        #expect(old.first?.id != new)
    }

    /// Synced mode: an older app that opens the file after version 3 reads
    /// its own `a`, and version 3 still reads its own afterwards.
    @Test func inSyncedModeAnOlderAppKeepsReadingItsOwnField() throws {
        try seed(.synced)
        let seen = Recorder<Value>()
        do {
            let db = try Database(configuration: configuration(.synced, latest: GaugesV3.self, seen: seen))
            defer { db.close() }
            try db.write { tx in try tx.insert(GaugeV3(id: 2, a: 9)) }
        }
        do {
            var config = Database.Configuration(path: folder.path(), schema: GaugesV1.self)
            config.durability = .noSync
            config.mode = .synced
            let db = try Database(configuration: config)
            defer { db.close() }
            // Object 2, written by version 3, stored the empty value of
            // the field version 3 no longer has.
            #expect(
                try db.read { tx in try tx.objects(GaugeV1.self).array() } == [
                    GaugeV1(id: 1, a: 7), GaugeV1(id: 2, a: 0),
                ])
        }
        let db = try Database(configuration: configuration(.synced, latest: GaugesV3.self, seen: seen))
        defer { db.close() }
        #expect(
            try db.read { tx in try tx.objects(GaugeV3.self).array() } == [GaugeV3(id: 1, a: 5), GaugeV3(id: 2, a: 9)])
    }

    /// Renames the closure makes across declared versions (a → b → c, and
    /// an embedded type's street → road) continue their fields: the values
    /// stay, and no record is rewritten.
    @Test func renamesInAClosureAcrossDeclaredVersionsKeepTheirValues() throws {
        var seed = Database.Configuration(path: folder.path(), schema: LabelsV1.self)
        seed.durability = .noSync
        do {
            let db = try Database(configuration: seed)
            defer { db.close() }
            try db.write { tx in try tx.insert(LabelV1(id: 1, a: "x", pin: PinV1(street: "Elm"))) }
        }
        var config = Database.Configuration(
            path: folder.path(), schema: LabelsV3.self, versions: [LabelsV1.self, LabelsV2.self])
        config.durability = .noSync
        config.migration = { migration, oldVersion in
            if oldVersion < 2 { try migration.renameProperty(onType: "Label", from: "a", to: "b") }
            if oldVersion < 3 {
                try migration.renameProperty(onType: "Label", from: "b", to: "c")
                try migration.renameProperty(onType: "Pin", from: "street", to: "road")
            }
        }
        let db = try Database(configuration: config)
        defer { db.close() }
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 0)
        #expect(
            try db.read { tx in try tx.objects(LabelV3.self).array() } == [
                LabelV3(id: 1, c: "x", pin: PinV3(road: "Elm"))
            ])
    }
}
