import Foundation
import Testing

@_spi(Hub) @testable import Strata

@Model(name: "Owner") struct SyncOwner: Equatable {
    @PrimaryKey var id: Int
    var name = ""
}

@Model(name: "Pet") struct SyncPet: Equatable {
    @PrimaryKey var id: Int
    var name = ""
    var owner: Link<SyncOwner>?
}

/// Links across files: a link to an object the file does not have yet is
/// stored as null, its register kept and sent on, and restored when the
/// object arrives; observers see what apply changes.
@Suite(.temporaryFolder) struct SyncLinkTests {
    let folder = TemporaryFolder.current

    func open(_ name: String) throws -> Database {
        var config = Database.Configuration(
            path: folder.path(name), schemaVersion: 1, models: [SyncOwner.self, SyncPet.self])
        config.durability = .noSync
        config.mode = .synced
        config.sync = .init(dataset: SyncExchangeTests.dataset)
        return try Database(configuration: config)
    }

    func owner(of pet: Int, in db: Database) throws -> Int? {
        try db.read { tx in try tx.object(SyncPet.self, primaryKey: pet)?.owner?.key }
    }

    @Test func aLinkToAnAbsentObjectIsKeptAndRestoredWhenItArrives() throws {
        let a = try open("a.strata")
        let b = try open("b.strata")
        let c = try open("c.strata")
        try a.write { tx in try tx.insert(SyncOwner(id: 1, name: "Ann")) }
        let ownerSeq = try a.sync.lastSequenceNumber()
        try a.write { tx in try tx.insert(SyncPet(id: 7, name: "Rex", owner: Link(1))) }
        // B gets the pet without its owner: the link reads null, and the
        // file verifies.
        try b.sync.apply(try a.sync.changes(since: ownerSeq))
        #expect(try owner(of: 7, in: b) == nil)
        #expect(try b.verify() == [])
        // B passes the pet on to C: the register travels, not the null.
        try c.sync.apply(try b.sync.changes(since: 0))
        #expect(try owner(of: 7, in: c) == nil)
        // The owner reaches C from A: C's pet links to it again.
        try c.sync.apply(try a.sync.changes(since: 0))
        #expect(try owner(of: 7, in: c) == 1)
        // And B's, when B gets it.
        try a.sync.exchange(with: b)
        #expect(try owner(of: 7, in: b) == 1)
        #expect(try b.verify() == [])
        #expect(try c.verify() == [])
    }

    @Test func aPeersDeleteRunsNoRuleHereAndTheLinksToItReadNull() throws {
        let a = try open("a.strata")
        let b = try open("b.strata")
        try a.write { tx in
            try tx.insert(SyncOwner(id: 1, name: "Ann"))
            try tx.insert(SyncPet(id: 7, name: "Rex", owner: Link(1)))
        }
        try a.sync.exchange(with: b)
        // B links a second pet to the owner while A deletes the owner.
        try b.write { tx in try tx.insert(SyncPet(id: 8, name: "Max", owner: Link(1))) }
        try a.write { tx in _ = try tx.delete(SyncOwner.self, primaryKey: 1) }
        try a.sync.exchange(with: b)
        for db in [a, b] {
            #expect(try db.read { tx in try tx.objects(SyncOwner.self).count } == 0)
            #expect(try owner(of: 7, in: db) == nil)
            #expect(try owner(of: 8, in: db) == nil)
            #expect(try db.verify() == [])
        }
    }

    @Test func observersSeeWhatApplyChanges() async throws {
        let a = try open("a.strata")
        let b = try open("b.strata")
        var updates = b.observe(SyncPet.self).makeAsyncIterator()
        let first = try #require(try await updates.next())
        #expect(first.results.count == 0)
        try await a.write { tx in try tx.insert(SyncPet(id: 1, name: "Rex")) }
        try a.sync.exchange(with: b)
        let next = try #require(try await updates.next())
        #expect(next.results.map(\.name) == ["Rex"])
    }
}
