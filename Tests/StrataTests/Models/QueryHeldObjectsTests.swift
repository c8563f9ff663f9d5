import Foundation
import Testing

@testable import Strata

/// A query sorted in memory holds the objects it found until the walk
/// ends, then hands them over one by one. In a write transaction the body
/// may rewrite the records of objects still held, on pages the
/// transaction already changed (LMDB edits those in place): each object
/// must still reach the body as the walk found it.
@Suite(.temporaryFolder) struct QueryHeldObjectsTests {
    let folder = TemporaryFolder.current

    /// Ten items, `rank` unindexed (a sort by it is done in memory), whose
    /// labels were all rewritten once in the transaction that walks them,
    /// so that their pages are already the transaction's own.
    func walkWhileRewriting(
        _ walk: (WriteTransaction, (Int, String) throws -> Void) throws -> Void
    ) throws -> (seen: [(id: Int, label: String)], expected: [(id: Int, label: String)]) {
        var config = Database.Configuration(path: folder.path(), models: [QueryItem.self])
        config.durability = .noSync
        let db = try Database(configuration: config)
        try db.write { tx in
            for id in 0 ..< 10 { try tx.insert(QueryItem(id: id, score: id, rank: (id * 7) % 10, label: "a\(id)")) }
        }
        var seen: [(id: Int, label: String)] = []
        try db.write { tx in
            for id in 0 ..< 10 { try tx.update(QueryItem(id: id, score: id, rank: (id * 7) % 10, label: "b\(id)")) }
            try walk(tx) { id, label in
                seen.append((id, label))
                // Every other object's record grows and moves on the page.
                for other in 0 ..< 10 where other != id {
                    try tx.update(
                        QueryItem(
                            id: other, score: other, rank: (other * 7) % 10,
                            label: String(repeating: "c", count: 40 + id)))
                }
            }
        }
        let expected = (0 ..< 10).sorted { ($0 * 7) % 10 < ($1 * 7) % 10 }.map { (id: $0, label: "b\($0)") }
        return (seen, expected)
    }

    @Test func aTypedQuerySortedInMemoryHandsOverEachObjectAsItWasFound() throws {
        let (seen, expected) = try walkWhileRewriting { tx, body in
            try tx.objects(QueryItem.self).sorted(by: \.rank).forEach { try body($0.id, $0.label) }
        }
        #expect(seen.map(\.id) == expected.map(\.id))
        #expect(seen.map(\.label) == expected.map(\.label))
    }

    @Test func aDynamicQuerySortedInMemoryHandsOverEachObjectAsItWasFound() throws {
        let (seen, expected) = try walkWhileRewriting { tx, body in
            try tx.objects("Item").sorted(by: "rank").forEach { object in
                try body(Int(object["id"].int!), object["label"].string!)
            }
        }
        #expect(seen.map(\.id) == expected.map(\.id))
        #expect(seen.map(\.label) == expected.map(\.label))
    }
}
