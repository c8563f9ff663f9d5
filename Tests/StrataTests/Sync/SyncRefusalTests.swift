import Foundation
import Testing

@_spi(Hub) @testable import Strata

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
        // The remedy names the call this test goes on to make.
        #expect(error?.remedy?.contains("Database.resetSyncIdentity(at:)") == true, "\(String(describing: error))")
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

/// A type a later app version adds to a sync-enabled file gets its clocks.
@Suite(.temporaryFolder) struct SyncSchemaChangeTests {
    let folder = TemporaryFolder.current

    @Test func aTypeAddedLaterIsRecordedAndSynced() throws {
        var first: Database? = try SyncRefusalTests().openAt(folder.path("a.strata"), version: 1, [NoteV1.self])
        try first!.write { tx in try tx.insert(NoteV1(id: 1)) }
        first!.close()
        first = nil
        let a = try SyncRefusalTests().openAt(folder.path("a.strata"), version: 2, [NoteV1.self, Label.self])
        try a.write { tx in try tx.insert(Label(name: "red", color: 1)) }
        let b = try SyncRefusalTests().openAt(folder.path("b.strata"), version: 2, [NoteV1.self, Label.self])
        try a.sync.exchange(with: b)
        #expect(try b.read { tx in try tx.object(Label.self, primaryKey: "red") }?.color == 1)
        #expect(try b.read { tx in try tx.objects(NoteV1.self).count } == 1)
    }
}

extension SyncRefusalTests {
    func openAt(_ path: String, version: UInt64, _ models: [any Model.Type]) throws -> Database {
        var config = Database.Configuration(path: path, schemaVersion: version, models: models)
        config.durability = .noSync
        config.mode = .synced
        config.sync = .init(dataset: SyncExchangeTests.dataset)
        return try Database(configuration: config)
    }
}

/// Enabling sync on a file that holds objects already: every object is
/// stamped, under one sequence number, and a peer's first pull comes in
/// pages all the same.
@Suite(.temporaryFolder) struct SyncEnablingTests {
    let folder = TemporaryFolder.current

    @Test func enablingAFileOfObjectsStampsThemUnderOneSequenceNumberAndAPeerPullsThemInPages() throws {
        var config = Database.Configuration(path: folder.path("old.strata"), schemaVersion: 1, models: [NoteV1.self])
        config.durability = .noSync
        config.mode = .synced
        var plain: Database? = try Database(configuration: config)
        let count = 1_017
        try plain!.write { tx in for id in 0 ..< count { try tx.insert(NoteV1(id: id, title: "n\(id)")) } }
        plain!.close()
        plain = nil
        config.sync = .init(dataset: SyncExchangeTests.dataset)
        let enabled = try Database(configuration: config)
        #expect(try enabled.sync.lastSequenceNumber() == 1)
        let peer = try SyncRefusalTests().openAt(folder.path("peer.strata"), version: 1, [NoteV1.self])
        let site = try enabled.sync.site
        var pages: [Changeset.Summary] = []
        while true {
            let page = try enabled.sync.changes(from: try peer.sync.cursor(of: site), limit: 100)
            try peer.sync.apply(page)
            pages.append(try page.summary())
            if !pages.last!.hasMore { break }
        }
        #expect(pages.map(\.entryCount) == Array(repeating: 100, count: 10) + [17])
        #expect(try peer.read { tx in try tx.objects(NoteV1.self).count } == count)
        #expect(try peer.read { tx in try tx.object(NoteV1.self, primaryKey: count - 1) }?.title == "n\(count - 1)")
    }
}

extension SyncRefusalTests {
    @Test func aChangesetFromAnotherSiteThanItsPeerIsRefused() throws {
        let a = try open("a.strata")
        let b = try open("b.strata")
        let c = try open("c.strata")
        try a.write { tx in try tx.insert(NoteV1(id: 1, title: "from a")) }
        let changes = try a.sync.changes()
        let error = #expect(throws: StrataError.self) { try c.sync.apply(changes, from: try b.sync.site) }
        #expect(error?.code == .changesetRefused)
        #expect(error?.message.contains("not by") == true)
        #expect(try count(c) == 0)
        #expect(try c.sync.apply(changes, from: try a.sync.site).changedObjects == 1)
        #expect(try count(c) == 1)
    }
}
