import Foundation
import Strata
import Testing

/// Version 1 of the chores: statuses `todo` and `finished`.
enum ChoresV1: VersionedSchema {
    static let version: UInt64 = 1
    static let models: [any Model.Type] = [Chore.self]

    enum Status: String, PersistableEnum { case todo, finished }

    @Model struct Chore: Equatable {
        @PrimaryKey var id: Int
        @Indexed var status: Status
        var past: [Status] = []
    }
}

/// Version 2: the cases are now `open`, `done` and `blocked`, with other
/// raw values, so a typed step maps them.
enum ChoresV2: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [Chore.self]

    enum Status: String, PersistableEnum { case open, done, blocked }

    @Model struct Chore: Equatable {
        @PrimaryKey var id: Int
        @Indexed var status: Status
        var past: [Status] = []
    }
}

/// Version 1 again, with `finished` renamed in Swift only: the case keeps
/// its raw value, so the file needs no migration.
enum ChoresRenamed {
    enum Status: String, PersistableEnum {
        case todo
        case completed = "finished"
    }

    @Model(name: "Chore") struct Chore: Equatable {
        @PrimaryKey var id: Int
        @Indexed var status: Status
        var past: [Status] = []
    }
}

@Suite(.temporaryFolder) struct EnumMigrationTests {
    let folder = TemporaryFolder.current

    func seed(_ path: String) throws {
        var config = Database.Configuration(path: path, schema: ChoresV1.self)
        config.durability = .noSync
        let db = try Database(configuration: config)
        try db.write { tx in
            try tx.insert(ChoresV1.Chore(id: 1, status: .todo))
            try tx.insert(ChoresV1.Chore(id: 2, status: .finished, past: [.todo]))
            try tx.insert(ChoresV1.Chore(id: 3, status: .finished))
        }
    }

    static func map(_ old: ChoresV1.Status) -> ChoresV2.Status {
        switch old {
        case .todo: .open
        case .finished: .done
        }
    }

    @Test func aTypedStepMapsOldCasesToNewOnes() throws {
        let path = folder.path()
        try seed(path)
        var config = Database.Configuration(
            path: path, schema: ChoresV2.self, versions: [ChoresV1.self],
            migrations: [
                .step(from: ChoresV1.self, to: ChoresV2.self) {
                    $0.map(ChoresV1.Chore.self, to: ChoresV2.Chore.self) { old in
                        ChoresV2.Chore(id: old.id, status: Self.map(old.status), past: old.past.map(Self.map))
                    }
                }
            ])
        config.durability = .noSync
        let db = try Database(configuration: config)
        let chores = try db.read { tx in try tx.objects(ChoresV2.Chore.self).array() }
        #expect(
            chores == [
                ChoresV2.Chore(id: 1, status: .open), ChoresV2.Chore(id: 2, status: .done, past: [.open]),
                ChoresV2.Chore(id: 3, status: .done),
            ])
        // The index holds the new raw values only.
        try db.read { tx in
            let chores = try tx.objects(ChoresV2.Chore.self)
            #expect(try chores.where(\.status, equals: .done).map(\.id) == [2, 3])
            #expect(try tx.objects("Chore").where("status", equals: "finished").count == 0)
        }
        #expect(try db.verify() == [])
    }

    @Test func aCaseRenamedInSwiftKeepsItsRawValueAndNeedsNoMigration() throws {
        let path = folder.path()
        try seed(path)
        var config = Database.Configuration(path: path, models: [ChoresRenamed.Chore.self])
        config.durability = .noSync
        let db = try Database(configuration: config)
        let done = try db.read { tx in
            try tx.objects(ChoresRenamed.Chore.self).where(\.status, equals: .completed).map(\.id)
        }
        #expect(done == [2, 3])
        try db.write { tx in try tx.insert(ChoresRenamed.Chore(id: 4, status: .completed)) }
        #expect(try db.read { tx in try tx.object("Chore", key: 4)?["status"] } == "finished")
    }
}
