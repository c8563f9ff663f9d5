import Foundation
import Testing

@testable import Strata

/// A typed model with two indexed properties, for writes that move many
/// index entries in one transaction.
@Model(name: "Ticket") struct Ticket {
    @PrimaryKey var id: Int
    @Indexed var queue: Int
    @Indexed var label: String
    var body: String
}

/// Index entries are written through a cursor the transaction keeps on
/// each index: thousands of entries added, moved and removed in one
/// transaction (pages split and merge under the kept cursor, and deletes
/// of whole objects go another way), then checked against a scan.
@Suite(.temporaryFolder) struct IndexChurnTests {
    let folder = TemporaryFolder.current

    static func label(_ n: Int) -> String { n % 7 == 0 ? String(repeating: "L", count: 300 + n % 50) : "label \(n)" }

    @Test(arguments: [11, 12] as [UInt64], Fixtures.modes)
    func thousandsOfIndexMovesInOneTransactionMatchAScan(seed: UInt64, _ mode: Database.Mode) throws {
        var generator = SplitMix64(seed: seed)
        var config = Database.Configuration(path: folder.path(), schemaVersion: 1, models: [Ticket.self])
        config.durability = .noSync
        config.mode = mode
        let db = try Database(configuration: config)
        var model: [Int: Ticket] = [:]
        for round in 0 ..< 3 {
            let aborts = round == 1
            var next = model
            do {
                try db.write { tx in
                    for _ in 0 ..< 4_000 {
                        let id = Int.random(in: 1 ... 2_500, using: &generator)
                        let ticket = Ticket(
                            id: id, queue: Int.random(in: 0 ..< 40, using: &generator),
                            label: Self.label(Int.random(in: 0 ..< 300, using: &generator)),
                            body: String(repeating: "b", count: Int.random(in: 0 ... 200, using: &generator)))
                        switch Int.random(in: 0 ..< 10, using: &generator) {
                        case 0 ..< 6:
                            try tx.upsert(ticket)
                            next[id] = ticket
                        case 6 ..< 8:
                            guard var current = next[id] else { continue }
                            current.queue = ticket.queue
                            try tx.update(current)
                            next[id] = current
                        default:
                            #expect(try tx.delete(Ticket.self, primaryKey: id) == (next[id] != nil))
                            next[id] = nil
                        }
                    }
                    if aborts { throw RandomizedWriteTests.Abort() }
                }
                model = next
            } catch is RandomizedWriteTests.Abort {
                // Rolled back: the model stays as it was.
            }
            let stored = try db.read { tx in try tx.objects(Ticket.self).map { $0 } }
            #expect(stored.map(\.id) == model.keys.sorted())
            for ticket in stored {
                let expected = model[ticket.id]
                #expect(ticket.queue == expected?.queue && ticket.label == expected?.label, "ticket \(ticket.id)")
            }
            try IndexTests().expectIndexesMatchScan(db, probes: [])
            #expect(try db.verify() == [])
        }
        #expect(model.count > 1_000)
    }
}
