import Foundation
import Testing

@_spi(Hub) @testable import Strata

/// Bugs the convergence fuzz found, each shrunk to the few writes and
/// exchanges that show it, between files of the fuzz's dataset
/// (``SyncFuzzSchema``).
@Suite(.temporaryFolder) struct SyncRegressionTests {
    let folder = TemporaryFolder.current
    static let dataset = UUID(uuidString: "3C9E51A0-7B42-4D6F-8E13-A4F0B2C6D871")!

    func open(_ name: String, version: Int) throws -> Database {
        var config = Database.Configuration(
            path: folder.path(name), schemaVersion: UInt64(version), schema: SyncFuzzSchema.schema(version: version))
        config.durability = .noSync
        config.mode = .synced
        config.sync = .init(dataset: SyncRegressionTests.dataset)
        return try Database(configuration: config)
    }

    func item(_ db: Database, _ key: Int64) throws -> [String: Value]? {
        try SyncFuzzState.canonicalState(of: db).objects["Item"]?[.int(key)]
    }

    /// An older app's insert of a key a newer app inserted concurrently
    /// wrote no `score`: it must not beat the newer app's `score`, which
    /// the older file learns afterwards. (The merge took the stamp of a
    /// field the record did not hold from the clock row's base, the older
    /// insert's: the learned value lost there and stayed in the newer file.)
    @Test func aFieldLearnedOnAnObjectTheFileInsertedTakesThePeersValue() throws {
        let newer = try open("new.strata", version: 3)
        let older = try open("old.strata", version: 1)
        try newer.write { tx in _ = try tx.insert("Item", ["id": 1, "title": "new", "score": 5.5]) }
        Thread.sleep(forTimeInterval: 0.003)
        try older.write { tx in _ = try tx.insert("Item", ["id": 1, "title": "old"]) }
        try older.sync.exchange(with: newer)
        let merged = try item(older, 1)
        #expect(merged?["score: double"] == .double(5.5))
        #expect(merged?["title: string"] == .string("old"))
        #expect(try item(newer, 1) == merged)
    }

    /// A file that holds a link whose target it has not received yet
    /// stores null, and keeps the register (the target's key) aside; it
    /// must send on the register, not the null. (It sent the null with the
    /// register's stamp: a third file took it, and the original's link,
    /// with the same stamp, never replaced it.)
    @Test func aLinkRelayedBeforeItsTargetArrivesKeepsItsTarget() throws {
        let origin = try open("origin.strata", version: 1)
        let relay = try open("relay.strata", version: 1)
        let last = try open("last.strata", version: 1)
        try origin.write { tx in
            _ = try tx.insert("Person", ["id": 6, "name": "p"])
            _ = try tx.insert("Item", ["id": 12, "owner": .link(6)])
        }
        // The person's next change moves it after the item in the log: a
        // page of one object holds the item alone.
        try origin.write { tx in try tx.update("Person", key: 6, ["name": "q"]) }
        let firstPage = try origin.sync.changes(since: 0, limit: 1)
        #expect(try firstPage.summary().hasMore)
        try relay.sync.apply(firstPage)
        try last.sync.apply(try relay.sync.changes(since: 0))
        try last.sync.exchange(with: origin)
        try relay.sync.exchange(with: origin)
        for db in [origin, relay, last] {
            #expect(try item(db, 12)?["owner: link(Person)"] == .link(.int(6)), "\(db.path)")
        }
    }

    /// A newer app that edits one field of an object an older app made
    /// (whose record lacks the newer fields) writes only that field: it
    /// must not stamp the fields it filled with their defaults, or its
    /// edit beats a real value written elsewhere before it.
    @Test func anEditOfAnObjectWithoutTheNewerFieldsStampsOnlyTheEditedField() throws {
        let older = try open("old.strata", version: 1)
        let middle = try open("mid.strata", version: 2)
        let newer = try open("new.strata", version: 3)
        try older.write { tx in _ = try tx.insert("Item", ["id": 1, "title": "made by v1"]) }
        try middle.sync.exchange(with: older)
        try newer.sync.exchange(with: older)
        try middle.write { tx in try tx.update("Item", key: 1, ["note": "written by v2"]) }
        Thread.sleep(forTimeInterval: 0.003)
        try newer.write { tx in try tx.update("Item", key: 1, ["title": "edited by v3"]) }
        try newer.sync.exchange(with: middle)
        try older.sync.exchange(with: newer)
        for db in [older, middle, newer] {
            let state = try item(db, 1)
            #expect(state?["note: string?"] == .string("written by v2"), "\(db.path)")
            #expect(state?["title: string"] == .string("edited by v3"), "\(db.path)")
        }
    }

    /// An object a file first receives from an older app holds only the
    /// older fields; when a link of it is restored (its target arrived),
    /// the record is written again with the newer fields' defaults. Those
    /// were never written: they must not carry the object's stamp, or the
    /// defaults beat a real value from a concurrent insert.
    @Test func fieldsFilledInWhenALinkIsRestoredStayUnwritten() throws {
        let older = try open("old.strata", version: 1)
        let middle = try open("mid.strata", version: 2)
        let newer = try open("new.strata", version: 3)
        try middle.write { tx in _ = try tx.insert("Item", ["id": 1, "note": "from v2"]) }
        Thread.sleep(forTimeInterval: 0.003)
        try older.write { tx in
            _ = try tx.insert("Person", ["id": 4])
            _ = try tx.insert("Item", ["id": 1, "title": "from v1", "owner": .link(4)])
        }
        try older.write { tx in try tx.update("Person", key: 4, ["name": "later"]) }
        // The item alone first: its link waits for the person.
        try newer.sync.apply(try older.sync.changes(since: 0, limit: 1))
        try newer.sync.exchange(with: older)
        try newer.sync.exchange(with: middle)
        try older.sync.exchange(with: middle)
        for db in [older, middle, newer] {
            let state = try item(db, 1)
            #expect(state?["note: string?"] == .string("from v2"), "\(db.path)")
            #expect(state?["title: string"] == .string("from v1"), "\(db.path)")
            #expect(state?["owner: link(Person)"] == .link(.int(4)), "\(db.path)")
        }
    }

    /// A new life of an object this file holds, sent without its key
    /// field (a changeset carries only the fields changed since the
    /// receiver's cursor): the old record's links must leave the
    /// backlinks. (The record was written as an insert, without the key,
    /// and the backlinks kept the old link: `verify` failed.)
    @Test func aNewLifeWithoutItsKeyFieldReplacesTheOldRecordsLinks() throws {
        let db = try open("a.strata", version: 1)
        try db.write { tx in
            _ = try tx.insert("Person", ["id": 3])
            _ = try tx.insert("Person", ["id": 5])
            _ = try tx.insert("Item", ["id": 5, "title": "old", "owner": .link(3)])
        }
        let peer = SiteID.random()
        let stamp = WireStamp(time: HybridTime.zero.tick(), origin: 0)
        let content = ChangesetContent(
            dataset: try db.sync.handles().identity.dataset, sender: peer, writerSchemaVersion: 1,
            senderTime: stamp.time, fromSeq: 0, toSeq: 1, hasMore: false,
            types: [WireType(name: "Item", keyName: "id", keyDescriptor: "int")],
            fields: [
                WireField(type: 0, path: "owner", descriptor: "link(Person)"),
                WireField(type: 0, path: "count", descriptor: "int"),
            ],
            origins: [peer],
            entries: [
                ChangeEntry(
                    type: 0, key: .int(5), causalLength: 3, writerVersion: 1, stamp: stamp,
                    fields: [
                        FieldChange(field: 0, stamp: stamp, value: .link(.int(5))),
                        FieldChange(field: 1, stamp: stamp, value: .int(9)),
                    ])
            ])
        try db.sync.apply(content: content)
        #expect(try db.verify() == [])
        let item = try db.read { tx in try tx.object("Item", key: 5)?.values }
        #expect(item?["owner"] == .link(.int(5)))
        #expect(item?["count"] == .int(9))
        #expect(item?["title"] == .string(""))
        #expect(try db.read { tx in try tx.objects("Item", linkingTo: 3, through: "owner").count } == 0)
    }

    /// Pages of one pull: an object changed in the first page's range and
    /// again after it moved past the first page; the later page carries
    /// every field changed since the pull's baseline, not only those after
    /// the first page's end.
    @Test func pagesCarryEveryFieldOfAnObjectThatMovedPastAnEarlierPage() throws {
        let a = try open("a.strata", version: 1)
        let b = try open("b.strata", version: 1)
        try a.write { tx in _ = try tx.insert("Item", ["id": 1, "title": "first"]) }
        try a.write { tx in _ = try tx.insert("Item", ["id": 2, "title": "second"]) }
        try a.write { tx in try tx.update("Item", key: 1, ["count": 7]) }
        let site = try a.sync.site
        while true {
            let page = try a.sync.changes(from: try b.sync.cursor(of: site), limit: 1)
            try b.sync.apply(page)
            if !(try page.summary().hasMore) { break }
        }
        let item = try item(b, 1)
        #expect(item?["title: string"] == .string("first"))
        #expect(item?["count: int"] == .int(7))
    }

    /// A link to a target that comes later in the same changeset, applied
    /// by a file that had no dangling link when the changeset began: the
    /// link is restored when the target arrives. (Whether the file had any
    /// dangling link was read once per transaction, at the first object
    /// that appeared, and stayed false.)
    @Test func aLinkWhoseTargetComesLaterInTheSameChangesetIsRestored() throws {
        let origin = try open("origin.strata", version: 1)
        let receiver = try open("receiver.strata", version: 1)
        try origin.write { tx in _ = try tx.insert("Person", ["id": 9]) }
        try origin.write { tx in
            _ = try tx.insert("Person", ["id": 2])
            _ = try tx.insert("Item", ["id": 24, "owner": .link(2)])
        }
        try origin.write { tx in try tx.update("Person", key: 2, ["name": "later"]) }
        try receiver.sync.apply(try origin.sync.changes(since: 0))
        #expect(try item(receiver, 24)?["owner: link(Person)"] == .link(.int(2)))
        #expect(try receiver.verify() == [])
    }

    /// A file keeps the register of a link whose target is absent, to
    /// restore the link when the target comes. When the holder is deleted
    /// and inserted again with another link, that register is the old
    /// life's: the target's arrival must not restore it. (It did, over
    /// the new life's link, unstamped: the files diverged.)
    @Test func aReinsertedHolderKeepsItsNewLinkWhenAnOldTargetArrives() throws {
        let origin = try open("origin.strata", version: 1)
        let b = try open("b.strata", version: 1)
        try origin.write { tx in
            _ = try tx.insert("Person", ["id": 6])
            _ = try tx.insert("Item", ["id": 18, "owner": .link(6)])
        }
        try origin.write { tx in try tx.update("Person", key: 6, ["name": "later"]) }
        try b.sync.apply(try origin.sync.changes(since: 0, limit: 1))
        try b.write { tx in
            _ = try tx.delete("Item", key: 18)
            _ = try tx.insert("Person", ["id": 9])
        }
        try b.write { tx in _ = try tx.insert("Item", ["id": 18, "owner": .link(9)]) }
        try b.sync.apply(try origin.sync.changes(since: 0))
        #expect(try item(b, 18)?["owner: link(Person)"] == .link(.int(9)))
        try origin.sync.exchange(with: b)
        #expect(try item(origin, 18)?["owner: link(Person)"] == .link(.int(9)))
    }
}
