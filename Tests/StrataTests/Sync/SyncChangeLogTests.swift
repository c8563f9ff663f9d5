import Foundation
import Testing

@_spi(Hub) @testable import Strata

/// The change log (``SyncChangeLog``): runs of neighbouring clock rows,
/// each object in the run of its last change. What a peer is sent and
/// what `sync-status` counts are read from it, so it must hold every
/// object's last change exactly once, whatever order objects are written
/// in, and stay as small as the file's objects whatever they go through.
@Suite(.temporaryFolder) struct SyncChangeLogTests {
    let folder = TemporaryFolder.current
    static let dataset = UUID(uuidString: "6A0E4C21-93B5-4F7D-A812-5C3E9D0B7F14")!

    static let schema = Schema([
        ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property("value", .int)
        },
        ObjectSchema("Tag", primaryKey: "name") {
            Property("name", .string)
            Property("value", .int)
        },
    ])

    func open(_ name: String = "log.strata") throws -> Database {
        var config = Database.Configuration(
            path: folder.path(name), schemaVersion: 1, schema: SyncChangeLogTests.schema)
        config.durability = .noSync
        config.mode = .synced
        config.sync = .init(dataset: SyncChangeLogTests.dataset)
        return try Database(configuration: config)
    }

    /// The entries of the change log.
    func logEntries(_ db: Database) throws -> Int {
        let log = try #require(db.syncHandles).log
        return try db.read { tx in try tx.context.lmdb.entryCount(log) }
    }

    /// The objects `changes(since:)` sends, as "Type key".
    func sent(_ db: Database, since: UInt64, limit: Int = .max) throws -> [String] {
        let content = try db.sync.content(since: since, limit: limit)
        return content.entries.map { "\(content.types[$0.type].name) \($0.key)" }
    }

    /// A transaction of random writes in one of the orders apps write in,
    /// each one changing the object (a value no write used before).
    struct Writer {
        var random: SplitMix64
        var lastChange: [String: UInt64] = [:]
        var live: Set<String> = []
        var next: Int64 = 1

        mutating func transaction(_ db: Database) throws {
            var changed: Set<String> = []
            let pattern = random.below(7)
            try db.write { tx in
                func write(_ type: String, _ key: Value) throws {
                    let name = "\(type) \(key)"
                    next += 1
                    if live.contains(name) {
                        if random.below(8) == 0 {
                            _ = try tx.delete(type, key: key)
                            live.remove(name)
                        } else {
                            try tx.update(type, key: key, ["value": .int(next)])
                        }
                    } else {
                        let keyName = type == "Item" ? "id" : "name"
                        _ = try tx.insert(type, [keyName: key, "value": .int(next)])
                        live.insert(name)
                    }
                    changed.insert(name)
                }
                let count = 1 + random.below(40)
                let start = random.below(300)
                switch pattern {
                case 0:  // ascending, every key: appends, then updates in order
                    for k in start ..< start + count { try write("Item", .int(Int64(k))) }
                case 1:  // descending
                    for k in (start ..< start + count).reversed() { try write("Item", .int(Int64(k))) }
                case 2:  // every third key, ascending: rows between stay behind
                    for k in stride(from: start, to: start + 3 * count, by: 3) { try write("Item", .int(Int64(k))) }
                case 3:  // random keys
                    for _ in 0 ..< count { try write("Item", .int(Int64(random.below(400)))) }
                case 4:  // string keys of several lengths, random
                    for _ in 0 ..< count {
                        try write(
                            "Tag", .string(String(repeating: "t", count: 1 + random.below(6)) + "\(random.below(50))"))
                    }
                case 5:  // both types, interleaved
                    for k in start ..< start + count {
                        try write("Item", .int(Int64(k)))
                        try write("Tag", .string("t\(k % 60)"))
                    }
                default:  // one object, again and again in one transaction
                    let key = Value.int(Int64(start))
                    for _ in 0 ..< 3 { try write("Item", key) }
                }
            }
            let seq = try db.sync.lastSequenceNumber()
            for name in changed { lastChange[name] = seq }
        }
    }

    /// Every transaction's writes, in every order, leave each object in
    /// the run of its last change: `verify` is clean, and the changes
    /// after any sequence number are exactly the objects last changed
    /// after it, in pages that split no sequence number.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func theLogHoldsEachObjectsLastChangeOnce(seed: UInt64) throws {
        let db = try open()
        defer { db.close() }
        var writer = Writer(random: SplitMix64(seed: seed))
        for round in 0 ..< 150 {
            try writer.transaction(db)
            guard round % 10 == 9 else { continue }
            #expect(try db.verify() == [], "seed \(seed), round \(round)")
            let last = try db.sync.lastSequenceNumber()
            for since in [0, last / 2, last - 1, last] {
                let expected = writer.lastChange.filter { $0.value > since }.keys.sorted()
                let objects = try sent(db, since: since)
                #expect(objects.sorted() == expected, "seed \(seed), round \(round), since \(since)")
                #expect(Set(objects).count == objects.count, "an object sent twice")
            }
            #expect(try db.sync.status().pendingObjects == writer.lastChange.count)
            // Pages of at most 7 objects cover the same objects once.
            var pages: [String] = []
            var after = LogPosition(seq: 0)
            while true {
                let page = try db.sync.content(since: 0, after: after, limit: 7)
                pages += page.entries.map { "\(page.types[$0.type].name) \($0.key)" }
                #expect(page.entries.count <= 7)
                if !page.hasMore { break }
                let next = LogPosition(seq: page.toSeq, key: page.toKey)
                #expect(next > after)
                after = next
            }
            #expect(pages.sorted() == writer.lastChange.keys.sorted())
        }
    }

    /// One object updated 10,000 times, in as many transactions, is one
    /// entry of the log throughout, sent once and counted once.
    @Test func repeatedUpdatesOfOneObjectKeepOneEntry() throws {
        let db = try open()
        defer { db.close() }
        try db.write { tx in _ = try tx.insert("Item", ["id": 1, "value": 0]) }
        for value in 1 ... 10_000 {
            try db.write { tx in try tx.update("Item", key: 1, ["value": .int(Int64(value))]) }
        }
        #expect(try logEntries(db) == 1)
        #expect(try sent(db, since: 0) == ["Item 1"])
        #expect(try sent(db, since: db.sync.lastSequenceNumber() - 1) == ["Item 1"])
        #expect(try db.sync.status().pendingObjects == 1)
        #expect(try db.verify() == [])
    }

    /// A bulk insert of ascending keys is one entry, and so is an update of
    /// a range of them in key order; objects updated in random order each
    /// cost at most one, and the log never outgrows the objects.
    @Test func neighbouringWritesShareAnEntry() throws {
        let db = try open()
        defer { db.close() }
        try db.write { tx in
            for id in 0 ..< 5_000 { _ = try tx.insert("Item", ["id": .int(Int64(id)), "value": 0]) }
        }
        #expect(try logEntries(db) == 1)
        try db.write { tx in
            for id in 1_000 ..< 2_000 { try tx.update("Item", key: .int(Int64(id)), ["value": 1]) }
        }
        // Before the range, the range, after it.
        #expect(try logEntries(db) == 3)
        var random = SplitMix64(seed: 7)
        for round in 0 ..< 50 {
            try db.write { tx in
                for _ in 0 ..< 100 {
                    try tx.update("Item", key: .int(Int64(random.below(5_000))), ["value": .int(Int64(round + 2))])
                }
            }
        }
        #expect(try logEntries(db) <= 5_000)
        #expect(try db.sync.status().pendingObjects == 5_000)
        #expect(try db.verify() == [])
    }

    /// A new object whose key falls between two objects of one run cuts
    /// the run in two; one between two objects of its own transaction's
    /// run joins it.
    @Test func anObjectInsertedInsideARunCutsIt() throws {
        let db = try open()
        defer { db.close() }
        try db.write { tx in
            for id in stride(from: 0, to: 100, by: 10) {
                _ = try tx.insert("Item", ["id": .int(Int64(id)), "value": 0])
            }
        }
        let first = try db.sync.lastSequenceNumber()
        try db.write { tx in _ = try tx.insert("Item", ["id": 55, "value": 1]) }
        #expect(try logEntries(db) == 3)
        #expect(try sent(db, since: first) == ["Item \(Value.int(55))"])
        #expect(try sent(db, since: 0).count == 11)
        try db.write { tx in
            for id in stride(from: 200, to: 210, by: 2) {
                _ = try tx.insert("Item", ["id": .int(Int64(id)), "value": 2])
            }
            _ = try tx.insert("Item", ["id": 205, "value": 3])
        }
        #expect(try db.verify() == [])
        // The transaction's own run took the object inserted inside it.
        #expect(try logEntries(db) == 4)
    }

    /// A key the change log cannot name (LMDB's 511 bytes less the log's
    /// 12) is refused with the other keys' error, and nothing of the
    /// transaction is written; one at the limit is taken.
    @Test func aKeyTooLongForTheLogIsRefused() throws {
        let db = try open()
        defer { db.close() }
        let longest = String(repeating: "k", count: SyncLog.maxKeySize - 1)
        #expect(throws: StrataError.self) {
            try db.write { tx in
                _ = try tx.insert("Tag", ["name": .string(longest), "value": 1])
                _ = try tx.insert("Tag", ["name": .string(longest + "kk"), "value": 2])
            }
        }
        do {
            try db.write { tx in _ = try tx.insert("Tag", ["name": .string(longest + "kk"), "value": 2]) }
        } catch let error as StrataError {
            #expect(error.code == .keyTooLarge)
            #expect(error.message.contains("sync-enabled"), "\(error.message)")
        }
        #expect(try db.read { tx in try tx.objects("Tag").count } == 0)
        try db.write { tx in _ = try tx.insert("Tag", ["name": .string(longest), "value": 1]) }
        #expect(try sent(db, since: 0).count == 1)
        #expect(try db.verify() == [])
    }

    /// `verify` notices an object whose change the log lost.
    @Test func verifyFindsAnObjectMissingFromTheLog() throws {
        let db = try open()
        defer { db.close() }
        try db.write { tx in _ = try tx.insert("Item", ["id": 1, "value": 0]) }
        try db.write { tx in _ = try tx.insert("Item", ["id": 5, "value": 0]) }
        let log = try #require(db.syncHandles).log
        try db.write { tx in
            let lmdb = tx.context.lmdb
            let key = try lmdb.withCursor(log) { try #require(try $0.last()).key }
            try lmdb.delete(log, Array(key))
        }
        let problems = try db.verify()
        #expect(problems.count == 1)
        #expect(problems.first?.contains("missing from the sync change log") == true, "\(problems)")
    }
}
