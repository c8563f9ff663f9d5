import Foundation
import Testing

@_spi(Hub) @testable import Strata

/// Pages hold at most `limit` objects, even when one transaction changed
/// more: a page then ends inside the transaction's sequence number, the
/// cursor says where, and the next page goes on from there. Pulls split
/// that way converge, resume after more writes and after a reopen, and a
/// page applied twice or out of order does not move the cursor wrongly.
@Suite(.temporaryFolder) struct SyncPagingTests {
    /// Files of one dataset with `Note`s at version 1, in this test's
    /// folder (``SyncExchangeTests/open(_:version:_:)``).
    let files = SyncExchangeTests()

    /// Pulls `sender`'s changes into `receiver` page by page, each asked
    /// with the receiver's cursor, until the last page or `pages` pages.
    @discardableResult
    func pull(_ sender: Database, into receiver: Database, limit: Int, pages: Int = .max) throws -> [Changeset] {
        let site = try sender.sync.site
        var applied: [Changeset] = []
        while applied.count < pages {
            let page = try sender.sync.changes(from: try receiver.sync.cursor(of: site), limit: limit)
            try receiver.sync.apply(page)
            applied.append(page)
            if !(try page.summary().hasMore) { break }
        }
        return applied
    }

    /// What differs between two files' canonical states (every field and
    /// causal length, tombstones included).
    func differences(_ a: Database, _ b: Database) throws -> [String] {
        let states = [try SyncFuzzState.canonicalState(of: a), try SyncFuzzState.canonicalState(of: b)]
        let union = SyncFuzzState.union(states)
        return SyncFuzzState.differences(states[0].over(union), states[1].over(union))
    }

    @Test func oneLargeTransactionComesInPagesOfAtMostTheLimit() throws {
        let a = try files.open("a.strata")
        let b = try files.open("b.strata")
        try a.write { tx in for id in 1 ... 2_500 { try tx.insert(NoteV1(id: id, title: "n\(id)", stars: id % 7)) } }
        let pages = try pull(a, into: b, limit: 100).map { try $0.summary() }
        #expect(pages.count >= 25)
        #expect(pages.allSatisfy { $0.entryCount <= 100 }, "\(pages.map(\.entryCount))")
        // Every object once: no page repeats the last object of the one
        // before, none skips the rest of the transaction.
        #expect(pages.map(\.entryCount).reduce(0, +) == 2_500)
        #expect(pages.dropLast().allSatisfy { $0.hasMore && !$0.toKey.isEmpty })
        #expect(pages.dropFirst().allSatisfy { !$0.fromKey.isEmpty })
        #expect(pages.last.map { !$0.hasMore && $0.toKey.isEmpty } == true)
        #expect(try files.notes(b) == files.notes(a))
        #expect(try differences(a, b) == [])
        let cursor = try b.sync.cursor(of: try a.sync.site)
        #expect(cursor == SyncCursor(since: try a.sync.lastSequenceNumber(), after: try a.sync.lastSequenceNumber()))
    }

    /// A pull stopped inside a transaction's sequence number, resumed after
    /// the sender changed objects of the pages taken, the object at the
    /// split point, objects of the split transaction not taken yet, and
    /// made new ones: every field arrives, those an object had before it
    /// moved past the walk included.
    @Test func anInterruptedSplitPullResumesAfterMoreWritesAndLosesNoField() throws {
        let a = try files.open("a.strata")
        let b = try files.open("b.strata")
        try a.write { tx in for id in 1 ... 300 { try tx.insert(NoteV1(id: id, title: "t\(id)")) } }
        try a.sync.exchange(with: b)
        let site = try a.sync.site
        let complete = try b.sync.cursor(of: site)
        try a.write { tx in
            for id in 1 ... 300 { try tx.update("Note", key: .int(Int64(id)), ["title": .string("u\(id)")]) }
        }
        let taken = try pull(a, into: b, limit: 50, pages: 3)
        #expect(try taken.allSatisfy { try $0.summary().hasMore })
        let cursor = try b.sync.cursor(of: site)
        #expect(cursor.since == complete.since && cursor.after > complete.since && !cursor.afterKey.isEmpty)
        #expect(try files.notes(b).values.filter { $0.title.hasPrefix("u") }.map(\.id).sorted() == Array(1 ... 150))
        try a.write { tx in
            for id in [10, 150, 151, 299] { try tx.update("Note", key: .int(Int64(id)), ["stars": .int(Int64(id))]) }
            try tx.delete(NoteV1.self, primaryKey: 20)
            for id in 301 ... 310 { try tx.insert(NoteV1(id: id, title: "new\(id)")) }
        }
        try a.write { tx in try tx.update("Note", key: 12, ["title": "again"]) }
        let rest = try pull(a, into: b, limit: 50).map { try $0.summary() }
        #expect(rest.allSatisfy { $0.entryCount <= 50 })
        #expect(try files.notes(b)[151] == NoteV1(id: 151, title: "u151", stars: 151))
        #expect(try files.notes(b)[299] == NoteV1(id: 299, title: "u299", stars: 299))
        #expect(try files.notes(b)[20] == nil)
        #expect(try files.notes(b) == files.notes(a))
        #expect(try differences(a, b) == [])
        let end = try b.sync.cursor(of: site)
        #expect(end.since == end.after && end.afterKey.isEmpty)
    }

    /// Within one pull: a page applied again leaves the cursor where the
    /// later pages put it, and so does the last page applied again.
    @Test func aPageAppliedTwiceLeavesTheCursor() throws {
        let a = try files.open("a.strata")
        let b = try files.open("b.strata")
        try a.write { tx in for id in 1 ... 10 { try tx.insert(NoteV1(id: id)) } }
        let site = try a.sync.site
        let pages = try pull(a, into: b, limit: 3, pages: 2)
        let second = try b.sync.cursor(of: site)
        #expect(!second.afterKey.isEmpty)
        for page in pages {
            try b.sync.apply(page)
            #expect(try b.sync.cursor(of: site) == second)
        }
        let rest = try pull(a, into: b, limit: 3)
        let end = try b.sync.cursor(of: site)
        #expect(end.since == end.after && end.afterKey.isEmpty)
        for page in pages + rest {
            try b.sync.apply(page)
            #expect(try b.sync.cursor(of: site) == end)
        }
        #expect(try files.notes(b) == files.notes(a))
    }

    /// Pages of one walk, made ahead and delivered in another order: each
    /// one merges, and the cursor moves only with a page that starts at or
    /// before where it is.
    @Test func pagesOutOfOrderMergeAndMoveTheCursorOnlyInOrder() throws {
        let a = try files.open("a.strata")
        let c = try files.open("c.strata")
        try a.write { tx in for id in 1 ... 10 { try tx.insert(NoteV1(id: id, title: "t\(id)")) } }
        let site = try a.sync.site
        var pages: [Changeset] = []
        var walk = SyncCursor.start
        while true {
            let page = try a.sync.changes(from: walk, limit: 3)
            let summary = try page.summary()
            pages.append(page)
            if !summary.hasMore { break }
            walk = SyncCursor(since: 0, after: summary.toSeq, afterKey: summary.toKey)
        }
        try #require(pages.count == 4)
        func end(_ index: Int) throws -> SyncCursor {
            let summary = try pages[index].summary()
            return SyncCursor(since: 0, after: summary.toSeq, afterKey: summary.toKey)
        }
        try c.sync.apply(pages[1])
        try c.sync.apply(pages[2])
        #expect(try c.sync.cursor(of: site) == .start)
        #expect(try files.notes(c).count == 6)
        try c.sync.apply(pages[0])
        #expect(try c.sync.cursor(of: site) == end(0))
        try c.sync.apply(pages[2])
        #expect(try c.sync.cursor(of: site) == end(0))
        try c.sync.apply(pages[1])
        #expect(try c.sync.cursor(of: site) == end(1))
        try c.sync.apply(pages[3])
        #expect(try c.sync.cursor(of: site) == end(1))
        try c.sync.apply(pages[2])
        try c.sync.apply(pages[3])
        let last = try a.sync.lastSequenceNumber()
        #expect(try c.sync.cursor(of: site) == SyncCursor(since: last, after: last))
        #expect(try files.notes(c) == files.notes(a))
    }

    /// The last page of an earlier pull, applied again in the middle of
    /// the next one, must not end it: an object the next pull's walk
    /// passed had changed again and moved past it, and its fields from
    /// before that come only with a later page.
    @Test func anEarlierPullsLastPageAppliedAgainDoesNotEndTheNextPull() throws {
        let a = try files.open("a.strata")
        let b = try files.open("b.strata")
        try a.write { tx in for id in 1 ... 3 { try tx.insert(NoteV1(id: id)) } }
        let earlier = try pull(a, into: b, limit: 100)
        #expect(earlier.count == 1)
        let site = try a.sync.site
        let complete = try b.sync.cursor(of: site)
        try a.write { tx in try tx.insert(NoteV1(id: 10, title: "first")) }
        try a.write { tx in try tx.insert(NoteV1(id: 11)) }
        try a.write { tx in try tx.update("Note", key: 10, ["stars": 7]) }
        try pull(a, into: b, limit: 1, pages: 1)
        #expect(try files.notes(b)[11] != nil && files.notes(b)[10] == nil)
        try b.sync.apply(earlier[0])
        #expect(try b.sync.cursor(of: site).since == complete.since)
        try pull(a, into: b, limit: 1)
        #expect(try files.notes(b)[10] == NoteV1(id: 10, title: "first", stars: 7))
        #expect(try differences(a, b) == [])
    }

    /// A cursor inside a sequence number is stored with the peer entry: a
    /// reopened file goes on from it, taking each object once.
    @Test func theCursorInsideATransactionSurvivesReopening() throws {
        let a = try files.open("a.strata")
        var b: Database? = try files.open("b.strata")
        try a.write { tx in for id in 1 ... 250 { try tx.insert(NoteV1(id: id, title: "n\(id)")) } }
        let site = try a.sync.site
        let first = try pull(a, into: b!, limit: 100, pages: 2)
        let cursor = try b!.sync.cursor(of: site)
        #expect(!cursor.afterKey.isEmpty && cursor.description.contains("walked into"))
        b!.close()
        b = nil
        let reopened = try files.open("b.strata")
        #expect(try reopened.sync.cursor(of: site) == cursor)
        let rest = try pull(a, into: reopened, limit: 100)
        #expect(try (first + rest).map { try $0.summary().entryCount }.reduce(0, +) == 250)
        #expect(try files.notes(reopened) == files.notes(a))
        #expect(try reopened.sync.status().peers.first?.cursor.since == a.sync.lastSequenceNumber())
    }

    /// A cursor whose key no change-log key can be is refused before a
    /// changeset is made of it (the receiver would refuse that).
    @Test func aCursorWithAKeyOfNoLogKeysLengthIsRefused() throws {
        let a = try files.open("a.strata")
        try a.write { tx in try tx.insert(NoteV1(id: 1)) }
        let cursor = SyncCursor(since: 0, after: 1, afterKey: Data([1, 2, 3]))
        let error = #expect(throws: StrataError.self) { try a.sync.changes(from: cursor) }
        #expect(error?.code == .invalidValue)
        #expect(error?.message.contains("afterKey of 3 bytes") == true)
    }

    /// A peer entry of a length no entry has, or whose key cannot be a
    /// change-log position, is a damaged file.
    @Test(arguments: [31, 39, 43, 41 + LogPosition.maxKeyLength])
    func aDamagedPeerEntryIsACorruptFile(length: Int) throws {
        let b = try files.open("b.strata")
        let peer = SiteID(high: 5, low: 6)
        let handles = try #require(b.syncHandles)
        var bytes = [UInt8](repeating: 0, count: length)
        // since 0, after 1: a key is possible there.
        if length >= 16 { bytes[15] = 1 }
        try b.write { tx in _ = try tx.context.lmdb.put(handles.peers, peer.bytes, bytes) }
        let error = #expect(throws: StrataError.self) { try b.sync.cursor(of: peer) }
        #expect(error?.code == .corruptFile)
        #expect(error?.message.contains("peer entry") == true)
    }
}
