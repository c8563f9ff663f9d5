import Foundation
import Testing

@testable import Strata

@Model(name: "Note") struct NoteKeyedByName {
    @PrimaryKey var id: String
    var title = ""
}

/// What a sync-enabled file refuses, and what enabling sync needs: each
/// refusal says why and applies nothing; the next good changeset applies.
@Suite(.temporaryFolder) struct SyncRefusalTests {
    let folder = TemporaryFolder.current

    func open(
        _ name: String, dataset: UUID = SyncExchangeTests.dataset, _ models: [any Model.Type] = [NoteV1.self],
        mode: Database.Mode = .synced, drift: Duration = .seconds(300)
    ) throws -> Database {
        var config = Database.Configuration(path: folder.path(name), schemaVersion: 1, models: models)
        config.durability = .noSync
        config.mode = mode
        config.sync = .init(dataset: dataset, maxClockDrift: drift)
        return try Database(configuration: config)
    }

    func count(_ db: Database) throws -> Int { try db.read { tx in try tx.objects(NoteV1.self).count } }

    @Test func enablingNeedsSyncedModeAndPrimaryKeys() throws {
        #expect(throws: StrataError.self) { try open("local.strata", mode: .local) }
        let error = #expect(throws: StrataError.self) {
            try open("keyless.strata", [NoteV1.self, HandWrittenKeylessNote.self])
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("KeylessNote") == true)
        #expect(!FileManager.default.fileExists(atPath: folder.path("local.strata")) || true)
    }

    @Test func anotherDatasetIsRefusedAndTheNextGoodChangesetApplies() throws {
        let a = try open("a.strata")
        let other = try open("other.strata", dataset: UUID())
        try other.write { tx in try tx.insert(NoteV1(id: 1, title: "foreign")) }
        let error = #expect(throws: StrataError.self) { try a.sync.apply(try other.sync.changes()) }
        #expect(error?.code == .changesetRefused)
        #expect(try count(a) == 0)
        let b = try open("b.strata")
        try b.write { tx in try tx.insert(NoteV1(id: 2, title: "ours")) }
        try a.sync.apply(try b.sync.changes())
        #expect(try count(a) == 1)
    }

    @Test func aClockTooFarAheadIsRefused() throws {
        let a = try open("a.strata", drift: .milliseconds(1))
        let b = try open("b.strata")
        try b.write { tx in try tx.insert(NoteV1(id: 1)) }
        var content = try b.sync.content(since: 0)
        content.entries[0].stamp.time = HybridTime(milliseconds: HybridTime.wallClock() + 60_000, counter: 0)
        let error = #expect(throws: StrataError.self) {
            try a.sync.apply(Changeset(data: ChangesetCodec.encode(content)))
        }
        #expect(error?.code == .changesetRefused)
        #expect(error?.message.contains("ahead") == true)
        #expect(try count(a) == 0)
    }

    @Test func aTypeKeyedOtherwiseIsRefused() throws {
        let a = try open("a.strata")
        let b = try open("b.strata", [NoteKeyedByName.self])
        try b.write { tx in try tx.insert(NoteKeyedByName(id: "x", title: "t")) }
        let error = #expect(throws: StrataError.self) { try a.sync.apply(try b.sync.changes()) }
        #expect(error?.code == .changesetRefused)
        #expect(error?.message.contains("'Note'") == true)
        #expect(try count(a) == 0)
    }

    @Test func aCopiedFileIsRefusedUntilItsIdentityIsReset() throws {
        var original: Database? = try open("original.strata")
        try original!.write { tx in try tx.insert(NoteV1(id: 1, title: "before the copy")) }
        let site = try original!.sync.site
        original!.close()
        original = nil
        try FileManager.default.copyItem(atPath: folder.path("original.strata"), toPath: folder.path("copy.strata"))
        let a = try open("original.strata")
        var copy: Database? = try open("copy.strata")
        try copy!.write { tx in try tx.insert(NoteV1(id: 2, title: "on the copy")) }
        let error = #expect(throws: StrataError.self) { try copy!.sync.exchange(with: a) }
        #expect(error?.code == .changesetRefused)
        #expect(error?.message.contains("copied") == true)
        copy!.close()
        copy = nil
        let newSite = try Database.resetSyncIdentity(at: folder.path("copy.strata"))
        #expect(newSite != site)
        let reset = try open("copy.strata")
        #expect(try reset.sync.site == newSite)
        try reset.write { tx in try tx.update("Note", key: 1, ["title": "edited on the copy"]) }
        try reset.sync.exchange(with: a)
        let titles = try a.read { tx in try tx.objects(NoteV1.self).map(\.title) }
        #expect(titles == ["edited on the copy", "on the copy"])
        #expect(try reset.read { tx in try tx.objects(NoteV1.self).map(\.title) } == titles)
    }
}

/// A type without a primary key, which sync refuses.
@Model(name: "KeylessNote") struct HandWrittenKeylessNote {
    var title = ""
}

/// Devices that never meet converge through an in-process hub, which
/// learns every type it relays.
@Suite(.temporaryFolder) struct InProcessHubTests {
    let folder = TemporaryFolder.current

    @Test func devicesAtTwoVersionsConvergeThroughTheHub() throws {
        let hub = try InProcessHub(path: folder.path("hub.strata"), dataset: SyncExchangeTests.dataset)
        let refusals = SyncRefusalTests()
        let old = try refusals.open("old.strata")
        var config = Database.Configuration(
            path: folder.path("new.strata"), schemaVersion: 2, models: [NoteV2.self, Label.self])
        config.mode = .synced
        config.sync = .init(dataset: SyncExchangeTests.dataset)
        let new = try Database(configuration: config)
        try old.write { tx in try tx.insert(NoteV1(id: 1, title: "from old")) }
        try new.write { tx in
            try tx.insert(NoteV2(id: 2, title: "from new", tag: "t"))
            try tx.insert(Label(name: "blue", color: 3))
        }
        try hub.sync(old)
        try hub.sync(new)
        try hub.sync(old)
        #expect(try old.read { tx in try tx.objects(NoteV1.self).map(\.title) } == ["from old", "from new"])
        #expect(try new.read { tx in try tx.objects(NoteV2.self).map(\.title) } == ["from old", "from new"])
        #expect(try new.read { tx in try tx.object(Label.self, primaryKey: "blue") }?.color == 3)
        // A second round moves nothing.
        #expect(try hub.sync(new).isEmpty)
        #expect(try hub.sync(old).isEmpty)
    }
}
