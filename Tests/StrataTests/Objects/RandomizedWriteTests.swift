import Foundation
import Testing

@testable import Strata

/// Seeded random sequences of writes, checked after every transaction
/// against a plain dictionary that models what the file should hold, and
/// against a brute-force scan of every index.
@Suite(.temporaryFolder) struct RandomizedWriteTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    static let longA = String(repeating: "a", count: 600) + "1"
    static let longB = String(repeating: "a", count: 600) + "2"
    static let tags: [String] = [
        "red", "blue", "", "caf\u{E9}", "cafe\u{301}", longA, longB, String(repeating: "b", count: 510),
    ]
    static let ranks: [Int64] = [-1, 0, 1, 63, 64, 1000, .min, .max]
    static let notes: [String?] = [nil, "a", "", "\u{1F600}"]
    static let refs: [UUID?] = [nil, UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))]
    static let dates: [Date] = [Items.epoch, .distantPast, Date(timeIntervalSinceReferenceDate: 0.000_1)]

    struct Abort: Error {}

    static func randomItem(_ id: Int64, using generator: inout SplitMix64) -> [String: Value] {
        Items.item(
            id, tags.randomElement(using: &generator)!, rank: ranks.randomElement(using: &generator)!,
            flag: Bool.random(using: &generator), when: dates.randomElement(using: &generator)!,
            ref: refs.randomElement(using: &generator)!, note: notes.randomElement(using: &generator)!,
            plain: String(repeating: "p", count: Int.random(in: 0 ... 40, using: &generator)))
    }

    @Test(arguments: [1, 2, 3] as [UInt64], Fixtures.modes)
    func randomWritesKeepRecordsAndIndexesExactlyAsModelled(seed: UInt64, _ mode: Database.Mode) throws {
        var generator = SplitMix64(seed: seed)
        var config = Fixtures.configuration(folder.path(), schema: Items.schema, mode: mode)
        config.initialMapSize = 64 << 10  // so that the map grows during the run
        let db = try Database(configuration: config)
        var model: [Int64: [String: Value]] = [:]

        for _ in 0 ..< 60 {
            var next = model
            let aborts = Int.random(in: 0 ..< 10, using: &generator) == 0
            do {
                try db.write { tx in
                    next = model
                    var local = generator
                    defer { generator = local }
                    for _ in 0 ..< Int.random(in: 1 ... 12, using: &local) {
                        let id = Int64.random(in: 1 ... 40, using: &local)
                        switch Int.random(in: 0 ..< 100, using: &local) {
                        case 0 ..< 35:
                            let item = Self.randomItem(id, using: &local)
                            if next[id] == nil {
                                try tx.insert("Item", item)
                                next[id] = item
                            } else {
                                do {
                                    try tx.insert("Item", item)
                                    Issue.record("insert of an existing id \(id) succeeded")
                                } catch let error as StrataError {
                                    #expect(error.code == .duplicatePrimaryKey)
                                }
                            }
                        case 35 ..< 55:
                            let item = Self.randomItem(id, using: &local)
                            try tx.upsert("Item", item)
                            next[id] = item
                        case 55 ..< 80:
                            guard var current = next[id] else {
                                #expect(throws: StrataError.self) { try tx.update("Item", key: .int(id), ["rank": 1]) }
                                break
                            }
                            let changes = Self.randomItem(id, using: &local).filter { _ in Bool.random(using: &local) }
                            try tx.update("Item", key: .int(id), changes)
                            current.merge(changes) { $1 }
                            next[id] = current
                        case 80 ..< 98:
                            #expect(try tx.delete("Item", key: .int(id)) == (next[id] != nil))
                            next[id] = nil
                        default:
                            try tx.deleteAll("Item")
                            next = [:]
                        }
                    }
                    if aborts { throw Abort() }
                }
                model = next
            } catch is Abort {
                // Rolled back: the model stays as it was.
            }
            let stored = try db.read { tx in
                try tx.objects("Item").map { ($0["id"].int!, $0.values) }
            }
            #expect(stored.map(\.0) == model.keys.sorted())
            for (id, values) in stored {
                #expect(Self.sameStored(values, model[id] ?? [:]), "item \(id)")
            }
            try IndexTests().expectIndexesMatchScan(db, probes: [])
        }
        #expect(db.environment.mapSize > 64 << 10)
    }

    static func sameStored(_ a: [String: Value], _ b: [String: Value]) -> Bool {
        a.count == b.count && a.allSatisfy { key, value in b[key].map { value.isStored(identicallyTo: $0) } ?? false }
    }
}
