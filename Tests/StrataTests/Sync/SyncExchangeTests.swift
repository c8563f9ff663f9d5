import Foundation
import Testing

@_spi(Hub) @testable import Strata

@Model(name: "Note") struct NoteV1: Equatable {
    @PrimaryKey var id: Int
    var title = ""
    var stars = 0
}

@Model(name: "Note") struct NoteV2: Equatable {
    @PrimaryKey var id: Int
    var title = ""
    var stars = 0
    var tag: String?
}

@Model(name: "Label") struct Label: Equatable {
    @PrimaryKey var name: String
    var color = 0
}

/// Two files of one dataset exchanging changes: inserts, updates, deletes
/// and re-inserts travel, conflicts resolve the same way on both sides,
/// and a field the older app does not declare is kept and revealed.
@Suite(.temporaryFolder) struct SyncExchangeTests {
    let folder = TemporaryFolder.current
    static let dataset = UUID(uuidString: "6F1B0C2E-1D7A-4B54-9E0C-2B8E5D0A7F11")!

    func open(_ name: String, version: UInt64 = 1, _ models: [any Model.Type] = [NoteV1.self]) throws -> Database {
        var config = Database.Configuration(path: folder.path(name), schemaVersion: version, models: models)
        config.durability = .noSync
        config.mode = .synced
        config.sync = .init(dataset: SyncExchangeTests.dataset)
        return try Database(configuration: config)
    }

    func notes(_ db: Database) throws -> [Int: NoteV1] {
        try db.read { tx in Dictionary(uniqueKeysWithValues: try tx.objects(NoteV1.self).map { ($0.id, $0) }) }
    }

    @Test func insertsUpdatesAndDeletesTravelBothWays() throws {
        let a = try open("a.strata")
        let b = try open("b.strata")
        try a.write { tx in
            try tx.insert(NoteV1(id: 1, title: "one", stars: 1))
            try tx.insert(NoteV1(id: 2, title: "two", stars: 2))
        }
        try a.sync.exchange(with: b)
        #expect(try notes(b) == notes(a))
        #expect(try notes(b)[2]?.title == "two")
        try b.write { tx in
            try tx.update("Note", key: 1, ["stars": 5])
            try tx.delete(NoteV1.self, primaryKey: 2)
            try tx.insert(NoteV1(id: 3, title: "three"))
        }
        try b.sync.exchange(with: a)
        let state = try notes(a)
        #expect(state == (try notes(b)))
        #expect(state[1] == NoteV1(id: 1, title: "one", stars: 5))
        #expect(state[2] == nil)
        #expect(state[3]?.title == "three")
        // A second exchange has nothing to send and changes nothing.
        let seq = try a.sync.lastSequenceNumber()
        try a.sync.exchange(with: b)
        #expect(try a.sync.lastSequenceNumber() == seq)
    }

    @Test func concurrentEditsOfOneFieldEndWithTheLaterAndOfTwoFieldsKeepBoth() throws {
        let a = try open("a.strata")
        let b = try open("b.strata")
        try a.write { tx in try tx.insert(NoteV1(id: 1, title: "start", stars: 0)) }
        try a.sync.exchange(with: b)
        try a.write { tx in try tx.update("Note", key: 1, ["title": "from a"]) }
        Thread.sleep(forTimeInterval: 0.005)
        try b.write { tx in try tx.update("Note", key: 1, ["title": "from b", "stars": 4]) }
        // Writes of two sites in one millisecond are ordered by site: wait.
        Thread.sleep(forTimeInterval: 0.005)
        try a.write { tx in try tx.update("Note", key: 1, ["stars": 7]) }
        try a.sync.exchange(with: b)
        // Title: b wrote later. Stars: a's second write came after b's.
        // (Writing a field's stored value again is no change: not stamped.)
        let merged = try notes(a)[1]
        #expect(merged == NoteV1(id: 1, title: "from b", stars: 7))
        #expect(try notes(b)[1] == merged)
    }

    @Test func aDeleteBeatsAConcurrentEditAndAReinsertBeatsTheDelete() throws {
        let a = try open("a.strata")
        let b = try open("b.strata")
        try a.write { tx in try tx.insert(NoteV1(id: 1, title: "x")) }
        try a.sync.exchange(with: b)
        try a.write { tx in _ = try tx.delete(NoteV1.self, primaryKey: 1) }
        try b.write { tx in try tx.update("Note", key: 1, ["title": "edited later"]) }
        try a.sync.exchange(with: b)
        #expect(try notes(a).isEmpty)
        #expect(try notes(b).isEmpty)
        // B saw the delete and inserts the key again: a new life wins.
        try b.write { tx in try tx.insert(NoteV1(id: 1, title: "again")) }
        try b.sync.exchange(with: a)
        #expect(try notes(a)[1] == NoteV1(id: 1, title: "again", stars: 0))
    }

    @Test func anOlderAppObservesWhatNewerAppsWroteAndTheFieldsItKeeps() async throws {
        let newer = try open("new.strata", version: 2, [NoteV2.self])
        let older = try open("old.strata", version: 1, [NoteV1.self])
        var written = older.observe(NoteV1.self) { $0.writtenByNewerSchema() }.makeAsyncIterator()
        var holding = older.observe(NoteV1.self) { $0.holdingUndeclaredFields() }.makeAsyncIterator()
        #expect(try await written.next()?.results.isEmpty == true)
        #expect(try await holding.next()?.results.isEmpty == true)
        try await newer.write { tx in try tx.insert(NoteV2(id: 1, title: "t", tag: "work")) }
        try older.sync.exchange(with: newer)
        #expect(try await written.next()?.results.map(\.id) == [1])
        #expect(try await holding.next()?.results.map(\.id) == [1])
        // Rewritten by the older app: no longer a newer app's, still holding.
        try await older.write { tx in try tx.update(NoteV1(id: 1, title: "t2")) }
        #expect(try await written.next()?.results.isEmpty == true)
        try await older.write { tx in try tx.insert(NoteV1(id: 2, title: "mine")) }
        #expect(try await holding.next()?.results.map(\.id) == [1])
    }

    @Test func anOlderAppKeepsAFieldItDoesNotDeclareAndRevealsItAfterUpgrading() throws {
        let newer = try open("new.strata", version: 2, [NoteV2.self])
        var older: Database? = try open("old.strata", version: 1, [NoteV1.self])
        try newer.write { tx in try tx.insert(NoteV2(id: 1, title: "t", stars: 1, tag: "work")) }
        try newer.write { tx in try tx.insert(NoteV2(id: 2, title: "u", stars: 0, tag: nil)) }
        try newer.sync.exchange(with: older!)
        // The older app can list what a newer app wrote.
        #expect(try older!.read { tx in try tx.objects(NoteV1.self).writtenByNewerSchema().map(\.id) } == [1, 2])
        #expect(try older!.read { tx in try tx.objects("Note").writtenByNewerSchema().count } == 2)
        // The older app edits the object: the tag it does not know stays.
        try older!.write { tx in try tx.update("Note", key: 1, ["stars": 3]) }
        try older!.write { tx in try tx.update(NoteV1(id: 1, title: "t2", stars: 3)) }
        #expect(try older!.read { tx in try tx.objects(NoteV1.self).writtenByNewerSchema().map(\.id) } == [2])
        // It still holds the tag it cannot read: note 2's tag is nil, a value.
        #expect(try older!.read { tx in try tx.objects(NoteV1.self).holdingUndeclaredFields().map(\.id) } == [1, 2])
        try older!.write { tx in try tx.insert(NoteV1(id: 3, title: "its own")) }
        #expect(try older!.read { tx in try tx.objects("Note").holdingUndeclaredFields().count } == 2)
        older!.close()
        older = nil
        let upgraded = try open("old.strata", version: 2, [NoteV2.self])
        let revealed = try upgraded.read { tx in try tx.object(NoteV2.self, primaryKey: 1) }
        #expect(revealed == NoteV2(id: 1, title: "t2", stars: 3, tag: "work"))
        try upgraded.sync.exchange(with: newer)
        #expect(try newer.read { tx in try tx.object(NoteV2.self, primaryKey: 1) } == revealed)
    }

    /// An object changed in an early page's range and again later is only
    /// in the later page: that page still carries every field changed since
    /// the pull began (the cursor's baseline), not only those after the
    /// page's own start.
    @Test func pagesKeepEveryFieldOfAnObjectChangedInAnEarlierPagesRange() throws {
        let a = try open("a.strata")
        let b = try open("b.strata")
        try a.write { tx in for id in 1 ... 3 { try tx.insert(NoteV1(id: id, title: "t\(id)")) } }
        try a.sync.exchange(with: b)
        try a.write { tx in try tx.update("Note", key: 1, ["title": "changed first"]) }
        try a.write { tx in for id in 4 ... 6 { try tx.insert(NoteV1(id: id)) } }
        try a.write { tx in try tx.update("Note", key: 1, ["stars": 9]) }
        let site = try a.sync.site
        var pages = 0
        while true {
            let page = try a.sync.changes(from: try b.sync.cursor(of: site), limit: 1)
            try b.sync.apply(page)
            pages += 1
            if !(try page.summary().hasMore) { break }
        }
        // Notes 4 to 6 (one transaction, split), then note 1.
        #expect(pages == 4)
        #expect(try notes(b)[1] == NoteV1(id: 1, title: "changed first", stars: 9))
        #expect(try notes(b) == notes(a))
        let cursor = try b.sync.cursor(of: site)
        #expect(cursor.since == cursor.after)
    }

    /// After an exchange each side knows what the other has: pending
    /// counts the objects changed here or relayed since, per peer.
    @Test func statusCountsWhatEachPeerHasYetToReceive() throws {
        let a = try open("a.strata")
        let b = try open("b.strata")
        let c = try open("c.strata")
        try a.write { tx in for id in 1 ... 3 { try tx.insert(NoteV1(id: id)) } }
        try a.sync.exchange(with: b)
        try a.sync.exchange(with: c)
        func pending(_ db: Database, for peer: Database) throws -> Int? {
            let site = try peer.sync.site
            return try db.sync.status().peers.first { $0.site == site }?.pendingObjects
        }
        #expect(try pending(a, for: b) == 0)
        try a.write { tx in try tx.update("Note", key: 1, ["stars": 2]) }
        try c.write { tx in try tx.insert(NoteV1(id: 9)) }
        try c.sync.exchange(with: a)
        // B lacks note 1's change and note 9, relayed from C; C has both.
        #expect(try pending(a, for: b) == 2)
        #expect(try pending(a, for: c) == 0)
        #expect(try a.sync.status().pendingObjects == 2)
        try a.sync.exchange(with: b)
        #expect(try pending(a, for: b) == 0)
    }

    @Test func aChainRelaysThroughAnOlderAppTheTypesAndFieldsItDoesNotDeclare() throws {
        let a = try open("a.strata", version: 2, [NoteV2.self, Label.self])
        var b: Database? = try open("b.strata", version: 1, [NoteV1.self])
        let c = try open("c.strata", version: 2, [NoteV2.self, Label.self])
        try a.write { tx in
            try tx.insert(NoteV2(id: 1, title: "n", stars: 2, tag: "home"))
            try tx.insert(Label(name: "red", color: 0xFF0000))
        }
        try a.sync.exchange(with: b!)
        // B does not declare Label nor Note.tag; it relays both to C.
        try b!.write { tx in try tx.update("Note", key: 1, ["title": "n (b)"]) }
        try b!.sync.exchange(with: c)
        let atC = try c.read { tx in
            (try tx.object(NoteV2.self, primaryKey: 1), try tx.object(Label.self, primaryKey: "red"))
        }
        #expect(atC.0 == NoteV2(id: 1, title: "n (b)", stars: 2, tag: "home"))
        #expect(atC.1 == Label(name: "red", color: 0xFF0000))
        // C changes the label; the change reaches A through B.
        try c.write { tx in try tx.update(Label(name: "red", color: 0xEE0000)) }
        try c.sync.exchange(with: b!)
        try b!.sync.exchange(with: a)
        #expect(try a.read { tx in try tx.object(Label.self, primaryKey: "red") }?.color == 0xEE0000)
        // B upgraded reads the label it kept, with nothing pulled again.
        b!.close()
        b = nil
        let upgraded = try open("b.strata", version: 2, [NoteV2.self, Label.self])
        #expect(
            try upgraded.read { tx in try tx.object(Label.self, primaryKey: "red") }
                == Label(name: "red", color: 0xEE0000))
        #expect(try upgraded.read { tx in try tx.object(NoteV2.self, primaryKey: 1) }?.tag == "home")
    }
}

@Model(name: "Note") struct NoteWithTextScore: Equatable {
    @PrimaryKey var id: Int
    var title = ""
    var stars = 0
    var score = ""
}

@Model(name: "Note") struct NoteWithIntScore: Equatable {
    @PrimaryKey var id: Int
    var title = ""
    var stars = 0
    var score = 0
}

/// One name, two types: two fields, and no failed open.
@Suite(.temporaryFolder) struct SyncTypeClashTests {
    let folder = TemporaryFolder.current

    func open(_ name: String, version: UInt64, _ model: any Model.Type) throws -> Database {
        var config = Database.Configuration(path: folder.path(name), schemaVersion: version, models: [model])
        config.durability = .noSync
        config.mode = .synced
        config.sync = .init(dataset: SyncExchangeTests.dataset)
        return try Database(configuration: config)
    }

    @Test func aLearnedFieldOfAnotherTypeStaysApartWhenTheAppDeclaresTheName() throws {
        let texts = try open("texts.strata", version: 2, NoteWithTextScore.self)
        var older: Database? = try open("older.strata", version: 1, NoteV1.self)
        try texts.write { tx in try tx.insert(NoteWithTextScore(id: 1, title: "t", score: "high")) }
        try texts.sync.exchange(with: older!)
        older!.close()
        older = nil
        // The older file's app is upgraded to a version where `score` is an Int.
        let ints = try open("older.strata", version: 3, NoteWithIntScore.self)
        #expect(try ints.read { tx in try tx.object(NoteWithIntScore.self, primaryKey: 1) }?.score == 0)
        try ints.write { tx in try tx.update("Note", key: 1, ["score": 7]) }
        try ints.sync.exchange(with: texts)
        // Each app reads its own field; the other's value travels untouched.
        #expect(try ints.read { tx in try tx.object(NoteWithIntScore.self, primaryKey: 1) }?.score == 7)
        #expect(try texts.read { tx in try tx.object(NoteWithTextScore.self, primaryKey: 1) }?.score == "high")
    }
}
