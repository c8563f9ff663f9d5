// Sync's costs (docs/Benchmarks.md, "Sync"): the same work with and
// without sync enabled, interleaved, best of ROUNDS; then what sync adds
// on disk and on the wire, how fast a changeset applies, and how fast a
// file holding learned fields opens after the app is upgraded.
//   swift run -c release SyncBench [N]        N objects (default 1,000,000)
// ONLY=capture stops after the inserts and updates (for callgrind, with
// --toggle-collect on the functions insert and update); ONLY=observers
// runs only the apply with observers live.
import Foundation
import Strata

@Model(name: "Item") struct Item {
    @PrimaryKey var id: Int
    var name: String
    @Indexed var group: Int
    var score: Int
    var note: String?
}

@Model(name: "Item") struct ItemV2 {
    @PrimaryKey var id: Int
    var name: String
    @Indexed var group: Int
    var score: Int
    var note: String?
    var rank = 0
}

@Model(name: "Owner") struct Owner {
    @PrimaryKey var id: Int
    var name: String
}

/// Objects with an index and a link (backlinks), for apply with observers.
@Model(name: "Tracked") struct Tracked {
    @PrimaryKey var id: Int
    @Indexed var group: Int
    var score: Int
    var owner: Link<Owner>?
}

let dataset = UUID(uuidString: "0DDC1F9C-5A0C-4E0B-8E36-3B4C9E1D2A77")!
let folder = NSTemporaryDirectory() + "syncbench-\(getpid())"

func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

func time(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    return seconds(ContinuousClock.now - start)
}

func open(_ name: String, sync: Bool, version: UInt64 = 1, models: [any Model.Type] = [Item.self]) throws -> Database {
    var config = Database.Configuration(path: folder + "/" + name, schemaVersion: version, models: models)
    config.mode = .synced
    config.durability = .noSync
    if sync { config.sync = .init(dataset: dataset) }
    return try Database(configuration: config)
}

func remove(_ name: String) {
    for suffix in ["", "-lock"] { try? FileManager.default.removeItem(atPath: folder + "/" + name + suffix) }
}

func fileSize(_ name: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: folder + "/" + name))?[.size] as? Int) ?? 0
}

func item(_ id: Int) -> Item { Item(id: id, name: "item \(id)", group: id % 100, score: id, note: nil) }

/// Inserts `n` items in one transaction; returns the seconds.
func insert(_ db: Database, _ n: Int) throws -> Double {
    try time { try db.write { tx in for id in 0 ..< n { try tx.insert(item(id)) } } }
}

/// Changes one field of `count` items in one transaction.
func update(_ db: Database, _ count: Int, round: Int) throws -> Double {
    try time {
        try db.write { tx in
            for id in 0 ..< count {
                try tx.update("Item", key: .int(Int64(id)), ["score": .int(Int64(id + round + 1))])
            }
        }
    }
}

func report(_ label: String, plain: Double, synced: Double, target: String) {
    print(
        label.padding(toLength: 46, withPad: " ", startingAt: 0),
        String(format: "%9.3f s %9.3f s   %.2f ×  (target %@)", plain, synced, synced / plain, target))
}

func main() throws {
    let n = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 1_000_000
    let rounds = Int(ProcessInfo.processInfo.environment["ROUNDS"] ?? "") ?? 3
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    print("n = \(n), best of \(rounds), interleaved; without sync, with sync, ratio")
    if ProcessInfo.processInfo.environment["ONLY"] == "observers" {
        return try applyWithObservers(n, updates: min(n, 100_000))
    }

    // Capture: inserts and one-field updates.
    var best = (insert: (Double.infinity, Double.infinity), update: (Double.infinity, Double.infinity))
    let updates = min(n, 100_000)
    for round in 0 ..< rounds {
        remove("plain.strata")
        remove("synced.strata")
        let plain = try open("plain.strata", sync: false)
        let synced = try open("synced.strata", sync: true)
        best.insert.0 = min(best.insert.0, try insert(plain, n))
        best.insert.1 = min(best.insert.1, try insert(synced, n))
        best.update.0 = min(best.update.0, try update(plain, updates, round: round))
        best.update.1 = min(best.update.1, try update(synced, updates, round: round))
        plain.close()
        synced.close()
    }
    report("insert \(n) objects", plain: best.insert.0, synced: best.insert.1, target: "≤ 1.3")
    report("update one field of \(updates)", plain: best.update.0, synced: best.update.1, target: "≤ 1.5")
    if ProcessInfo.processInfo.environment["ONLY"] == "capture" { return }

    // At rest: the clock rows and the change log, per object.
    let before = (fileSize("plain.strata"), fileSize("synced.strata"))
    _ = try Database.compact(path: folder + "/plain.strata")
    _ = try Database.compact(path: folder + "/synced.strata")
    let after = (fileSize("plain.strata"), fileSize("synced.strata"))
    print(
        String(
            format: "at rest (compacted): %d B without sync, %d B with, %.1f B per object (before compaction %.1f)",
            after.0, after.1, Double(after.1 - after.0) / Double(n), Double(before.1 - before.0) / Double(n)))

    // The wire and apply: every object to an empty file, then one field of
    // `updates` objects to a file that has them all, in pages of 1,000.
    let sender = try open("synced.strata", sync: true)
    remove("receiver.strata")
    let receiver = try open("receiver.strata", sync: true)
    var bytes = 0
    var fields = 0
    var pages = 0
    let initial = try time {
        let site = try sender.sync.site
        while true {
            let changes = try sender.sync.changes(from: try receiver.sync.cursor(of: site), limit: 1_000)
            bytes += changes.data.count
            pages += 1
            fields += try receiver.sync.apply(changes).changedFields
            if !(try changes.summary().hasMore) { break }
        }
    }
    print(
        String(
            format:
                "first sync of %d objects: %.2f s, %.0f objects/s, %.0f field changes/s; %.1f B per field on the wire (%d pages)",
            n, initial, Double(n) / initial, Double(fields) / initial, Double(bytes) / Double(fields), pages))
    _ = try update(sender, updates, round: 99)
    var updateBytes = 0
    var updateFields = 0
    let senderSite = try sender.sync.site
    let incremental = try time {
        while true {
            let changes = try sender.sync.changes(from: try receiver.sync.cursor(of: senderSite), limit: 1_000)
            updateBytes += changes.data.count
            updateFields += try receiver.sync.apply(changes).changedFields
            if !(try changes.summary().hasMore) { break }
        }
    }
    print(
        String(
            format:
                "apply one-field changes of %d objects into %d: %.3f s, %.0f field changes/s, %.1f B per change on the wire",
            updates, n, incremental, Double(updateFields) / incremental,
            Double(updateBytes) / Double(max(updateFields, 1))))
    sender.close()
    receiver.close()

    try applyWithObservers(n, updates: updates)

    // Upgrade: a version-1 file that learned a field from a version-2 peer
    // opens at version 2.
    let upgradeObjects = min(n, 100_000)
    remove("v2.strata")
    remove("v1.strata")
    let newer = try open("v2.strata", sync: true, version: 2, models: [ItemV2.self])
    try newer.write { tx in
        for id in 0 ..< upgradeObjects {
            try tx.insert(ItemV2(id: id, name: "item \(id)", group: id % 100, score: id, note: nil, rank: id))
        }
    }
    var older: Database? = try open("v1.strata", sync: true)
    try newer.sync.exchange(with: older!)
    older!.close()
    older = nil
    newer.close()
    let opening = try time { try open("v1.strata", sync: true, version: 2, models: [ItemV2.self]).close() }
    let check = try open("v1.strata", sync: true, version: 2, models: [ItemV2.self])
    let ranks = try check.read { tx in try tx.objects(ItemV2.self).where(\.id, in: 0 ..< 10).map(\.rank) }
    precondition(ranks == Array(0 ..< 10), "the learned field does not read after the upgrade: \(ranks)")
    check.close()
    print(
        String(
            format: "upgrade: a file of %d objects holding a learned field opens at version 2 in %.1f ms (target ≤ 50)",
            upgradeObjects, opening * 1000))
}

/// Apply into a file of `n` objects with an index and backlinks, with and
/// without observers live (a query observation on an indexed range and
/// one on the owners, each consumed by a task): the changes of `updates`
/// objects, each moving to another group (the index) and another owner
/// (the backlinks), in pages of 1,000.
func applyWithObservers(_ n: Int, updates: Int) throws {
    let models: [any Model.Type] = [Tracked.self, Owner.self]
    for name in ["t-sender.strata", "t-plain.strata", "t-observed.strata"] { remove(name) }
    let sender = try open("t-sender.strata", sync: true, models: models)
    try sender.write { tx in
        for id in 0 ..< 1_000 { try tx.insert(Owner(id: id, name: "owner \(id)")) }
        for id in 0 ..< n { try tx.insert(Tracked(id: id, group: id % 100, score: id, owner: Link(id % 1_000))) }
    }
    let receivers = try ["t-plain.strata", "t-observed.strata"].map { try open($0, sync: true, models: models) }
    for receiver in receivers { try sender.sync.exchange(with: receiver) }
    try sender.write { tx in
        for id in 0 ..< updates {
            try tx.update(
                "Tracked", key: .int(Int64(id)),
                ["group": .int(Int64(id % 97)), "owner": .link(.int(Int64((id + 1) % 1_000)))])
        }
    }
    let observed = receivers[1]
    let seen = Counter()
    let watchers = [
        Task {
            for try await change in observed.observe(Tracked.self, { $0.where(\.group, in: 0 ..< 5) }) {
                seen.add(change.results.count)
            }
        },
        Task { for try await change in observed.observe(Owner.self) { seen.add(change.results.count) } },
    ]
    while seen.value == 0 { Thread.sleep(forTimeInterval: 0.01) }
    let site = try sender.sync.site
    var results: [(Double, Int)] = []
    for receiver in receivers {
        var fields = 0
        let seconds = try time {
            while true {
                let page = try sender.sync.changes(from: try receiver.sync.cursor(of: site), limit: 1_000)
                fields += try receiver.sync.apply(page).changedFields
                if !(try page.summary().hasMore) { break }
            }
        }
        results.append((seconds, fields))
    }
    for watcher in watchers { watcher.cancel() }
    for (label, (seconds, fields)) in zip(["without observers", "with 2 observers live"], results) {
        print(
            String(
                format:
                    "apply %d field changes (index and backlinks) into %d objects, %@: %.3f s, %.0f field changes/s",
                fields, n, label, seconds, Double(fields) / seconds))
    }
    for db in [sender] + receivers { db.close() }
}

/// A count that tasks add to.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var total = 0
    func add(_ amount: Int) { lock.withLock { total += amount } }
    var value: Int { lock.withLock { total } }
}

try main()
