import Foundation
import Strata
import Testing

/// Files peer to peer drop the tombstones every peer they know has
/// acknowledged, through the public API only: a peer that lacks a delete
/// holds its tombstone back, and what was dropped leaves the files sound
/// and still converging.
@Suite(.temporaryFolder) struct SyncTombstoneTests {
    /// A file of `NoteV1` in the test's folder, as the exchange tests open
    /// theirs.
    func open(_ name: String) throws -> Database { try SyncExchangeTests().open(name) }

    func ids(_ db: Database) throws -> [Int] {
        try db.read { tx in try tx.objects(NoteV1.self).map(\.id).sorted() }
    }

    @Test func tombstonesGoOnceEveryKnownPeerHasAcknowledgedThem() throws {
        let a = try open("a.strata")
        let b = try open("b.strata")
        let c = try open("c.strata")
        // No peer yet: nothing is acknowledged, nothing goes.
        try a.write { tx in
            for id in 1 ... 10 { try tx.insert(NoteV1(id: id, title: "note \(id)")) }
            _ = try tx.delete(NoteV1.self, primaryKey: 10)
        }
        #expect(try a.sync.dropAcknowledgedTombstones() == 0)
        #expect(try a.sync.status().tombstones == 1)
        // a knows b; b knows a and c.
        try a.sync.exchange(with: b)
        try b.sync.exchange(with: c)
        try a.write { tx in
            for id in 1 ... 4 { _ = try tx.delete(NoteV1.self, primaryKey: id) }
        }
        try a.sync.exchange(with: b)
        #expect(try a.sync.status().tombstones == 5)
        #expect(try b.sync.status().tombstones == 5)
        // b's peer c lacks the deletes: b keeps them. a's only peer, b,
        // has them all.
        #expect(try b.sync.dropAcknowledgedTombstones() == 1)
        #expect(try b.sync.status().tombstones == 4)
        #expect(try a.sync.dropAcknowledgedTombstones() == 5)
        #expect(try a.sync.status().tombstones == 0)
        try b.sync.exchange(with: c)
        #expect(try b.sync.dropAcknowledgedTombstones() == 4)
        #expect(try c.sync.dropAcknowledgedTombstones() == 5)
        for db in [a, b, c] {
            #expect(try db.sync.status().tombstones == 0)
            #expect(try db.sync.status().objects == 5)
            #expect(try db.verify() == [], "\(db.path)")
            #expect(try ids(db) == [5, 6, 7, 8, 9])
        }
        // Changes go on: a delete, an update and a key used again travel,
        // and no dropped object comes back.
        try c.write { tx in
            _ = try tx.delete(NoteV1.self, primaryKey: 5)
            try tx.update("Note", key: 6, ["title": "six"])
            try tx.insert(NoteV1(id: 1, title: "one again"))
        }
        try c.sync.exchange(with: b)
        try b.sync.exchange(with: a)
        for db in [a, b, c] {
            #expect(try ids(db) == [1, 6, 7, 8, 9], "\(db.path)")
            #expect(try db.read { try $0.object(NoteV1.self, primaryKey: 1)?.title } == "one again")
            #expect(try db.read { try $0.object(NoteV1.self, primaryKey: 6)?.title } == "six")
            #expect(try db.verify() == [], "\(db.path)")
        }
        for db in [a, b, c] { db.close() }
    }
}
