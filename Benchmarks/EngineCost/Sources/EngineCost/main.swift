// The engine's write path, per object: the cost of each scenario below,
// before and after the write path became one object-write primitive.
//   EngineCost SCENARIO [N] [ROUNDS]
// Each round makes its files (outside the measured part), then runs the
// scenario's measured function once and prints one line:
//   SCENARIO N NANOSECONDS [FIELD CHANGES]
// The measured part of each scenario is one function that is never
// inlined, holds no closure (a closure's symbol carries its function's
// name, and would toggle callgrind's collection off again) and has a name
// of its own: `measuredApply`, `measuredInsert` (the three insert
// scenarios), `measuredUpdateKept`, `measuredMigration`, `measuredScan`,
// `measuredDynamicScan`, `measuredLookups`, `measuredDynamicLookups`. So
//   valgrind --tool=callgrind --collect-atstart=no \
//       --toggle-collect='*measuredApply*' EngineCost apply 20000
// counts only the apply (run.sh does this for every scenario).
//
// Scenarios (N objects each, one write transaction for the writes):
//   apply         one changeset (a page of N objects, one field changed
//                 in each) applied to a synced file, sync enabled, that
//                 holds the N objects
//   insert        N typed inserts, local mode
//   insert-synced N typed inserts, synced mode, sync not enabled
//   insert-sync   N typed inserts, synced mode, sync enabled (the change
//                 recorder runs)
//   update-kept   N typed updates of one field, in a synced file written by
//                 a newer app version (ItemV2, with `rank`) and opened by
//                 the older one (Item): every object carries a kept field
//   update-kept-sync  the same with sync enabled (the recorder runs)
//   migration     the open of a local file at version 1 holding N objects
//                 at version 2 (ItemV2 adds `rank`), with a migration
//                 closure that sets `rank` on every object
//   scan          a typed query reading every one of the N objects
//                 (each decoded whole)
//   scan-dynamic  a dynamic query reading one property (`score`) of every
//                 one of the N objects
//   lookup        N typed lookups by primary key, each object decoded whole
//   lookup-dynamic  N dynamic lookups by primary key, one property read
import Foundation
import Strata

@Model(name: "Item") struct Item {
    @PrimaryKey var id: Int
    var name: String
    @Indexed var group: Int
    var score: Int
    var note: String?
}

/// `Item` as a newer app version declares it: one more property.
@Model(name: "Item") struct ItemV2 {
    @PrimaryKey var id: Int
    var name: String
    @Indexed var group: Int
    var score: Int
    var note: String?
    var rank = 0
}

let dataset = UUID(uuidString: "5D0A3C71-88E2-4B0F-9C4A-6B1E2F7D9A10")!
let folder =
    ProcessInfo.processInfo.environment["ENGINE_COST_FOLDER"]
    ?? NSTemporaryDirectory() + "enginecost-\(getpid())"

enum Mode { case local, synced, sync }

func path(_ name: String) -> String { folder + "/" + name }

func open(
    _ name: String, _ mode: Mode, version: UInt64 = 1, models: [any Model.Type] = [Item.self]
) throws -> Database {
    try Database(configuration: configuration(name, mode, version: version, models: models))
}

func configuration(
    _ name: String, _ mode: Mode, version: UInt64 = 1, models: [any Model.Type] = [Item.self]
) -> Database.Configuration {
    var config = Database.Configuration(path: path(name), schemaVersion: version, models: models)
    config.durability = .noSync
    config.initialMapSize = 1 << 30
    if mode != .local { config.mode = .synced }
    if mode == .sync { config.sync = .init(dataset: dataset) }
    return config
}

func resetFolder() throws {
    try? FileManager.default.removeItem(atPath: folder)
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
}

func item(_ id: Int) -> Item { Item(id: id, name: "item \(id)", group: id % 100, score: id, note: nil) }

func items(_ n: Int) -> [Item] { (0 ..< n).map(item) }

func insertAll(_ db: Database, _ objects: [Item]) throws {
    try db.write { tx in for object in objects { try tx.insert(object) } }
}

func updateAll(_ db: Database, _ objects: [Item]) throws {
    try db.write { tx in for object in objects { try tx.update(object) } }
}

func sumOfScores(_ db: Database) throws -> Int {
    try db.read { tx in
        var sum = 0
        try tx.objects(Item.self).forEach { sum &+= $0.score }
        return sum
    }
}

func sumOfScoresDynamic(_ db: Database) throws -> Int {
    try db.read { tx in
        var sum = 0
        try tx.objects("Item").forEach { sum &+= Int($0["score"].int!) }
        return sum
    }
}

func sumOfLookups(_ db: Database, _ n: Int) throws -> Int {
    try db.read { tx in
        var sum = 0
        for id in 0 ..< n { sum &+= try tx.object(Item.self, primaryKey: id)!.score }
        return sum
    }
}

func sumOfLookupsDynamic(_ db: Database, _ ids: Range<Int>) throws -> Int {
    try db.read { tx in
        var sum = 0
        for id in ids { sum &+= Int(try tx.object("Item", key: .int(Int64(id)))!["score"].int!) }
        return sum
    }
}

func count(_ db: Database) throws -> Int { try db.read { tx in try tx.objects(Item.self).count } }

// MARK: - The measured functions

@inline(never)
func measuredApply(_ db: Database, _ changeset: Changeset) throws -> SyncApplyReport {
    try db.sync.apply(changeset)
}

/// The three insert scenarios: one function, since each process runs one
/// scenario (three of the same body could be merged into one by the
/// optimizer, under another symbol).
@inline(never)
func measuredInsert(_ db: Database, _ objects: [Item]) throws { try insertAll(db, objects) }

@inline(never)
func measuredUpdateKept(_ db: Database, _ objects: [Item]) throws { try updateAll(db, objects) }

@inline(never)
func measuredMigration(_ config: Database.Configuration) throws -> Database {
    try Database(configuration: config)
}

@inline(never)
func measuredScan(_ db: Database) throws -> Int { try sumOfScores(db) }

@inline(never)
func measuredDynamicScan(_ db: Database) throws -> Int { try sumOfScoresDynamic(db) }

@inline(never)
func measuredLookups(_ db: Database, _ n: Int) throws -> Int { try sumOfLookups(db, n) }

/// Takes a range where `measuredLookups` takes a count: two functions of
/// one signature would be merged by the optimizer into one symbol.
@inline(never)
func measuredDynamicLookups(_ db: Database, _ ids: Range<Int>) throws -> Int { try sumOfLookupsDynamic(db, ids) }

// MARK: - The scenarios: setup, the measured call, a check

func nanoseconds(since start: ContinuousClock.Instant) -> Int64 {
    let d = ContinuousClock.now - start
    return d.components.seconds * 1_000_000_000 + d.components.attoseconds / 1_000_000_000
}

/// A page of `n` objects, each with one field (`score`) changed, and a
/// file that holds the `n` objects as they were before.
func applySetup(_ n: Int) throws -> (receiver: Database, changeset: Changeset) {
    let sender = try open("sender.strata", .sync)
    try insertAll(sender, items(n))
    let receiver = try open("receiver.strata", .sync)
    try sender.sync.exchange(with: receiver)
    try sender.write { tx in
        for id in 0 ..< n { try tx.update("Item", key: .int(Int64(id)), ["score": .int(Int64(id + 1))]) }
    }
    let changeset = try sender.sync.changes(from: try receiver.sync.cursor(of: try sender.sync.site), limit: n)
    let summary = try changeset.summary()
    precondition(!summary.hasMore, "the changes of \(n) objects do not fit one page")
    FileHandle.standardError.write(
        Data("page: \(changeset.data.count) bytes, \(changeset.data.count / n) per object\n".utf8))
    sender.close()
    return (receiver, changeset)
}

func runApply(_ n: Int) throws -> (Int64, Int) {
    let (receiver, changeset) = try applySetup(n)
    let start = ContinuousClock.now
    let report = try measuredApply(receiver, changeset)
    let elapsed = nanoseconds(since: start)
    precondition(report.changedObjects == n, "applied \(report.changedObjects) objects, expected \(n)")
    precondition(report.changedFields == n, "applied \(report.changedFields) field changes, expected \(n)")
    let sum = try sumOfScores(receiver)
    precondition(sum == n * (n + 1) / 2, "the applied scores do not read back")
    receiver.close()
    return (elapsed, report.changedFields)
}

func runInsert(_ n: Int, _ mode: Mode) throws -> Int64 {
    let db = try open("insert.strata", mode)
    let objects = items(n)
    let start = ContinuousClock.now
    try measuredInsert(db, objects)
    let elapsed = nanoseconds(since: start)
    let stored = try count(db)
    precondition(stored == n, "expected \(n) objects, found \(stored)")
    db.close()
    return elapsed
}

/// A synced file of `n` objects written at version 2 (with `rank`), opened
/// at version 1; then one field of each object changed by a typed update.
func runUpdateKept(_ n: Int, _ mode: Mode) throws -> Int64 {
    let newer = try open("kept.strata", mode, version: 2, models: [ItemV2.self])
    try newer.write { tx in
        for id in 0 ..< n {
            try tx.insert(ItemV2(id: id, name: "item \(id)", group: id % 100, score: id, note: nil, rank: id + 7))
        }
    }
    newer.close()
    let older = try open("kept.strata", mode, version: 1)
    var objects = try older.read { tx in try tx.objects(Item.self).array() }
    precondition(objects.count == n, "expected \(n) objects")
    for index in objects.indices { objects[index].score += 1 }
    let start = ContinuousClock.now
    try measuredUpdateKept(older, objects)
    let elapsed = nanoseconds(since: start)
    let sum = try sumOfScores(older)
    precondition(sum == n * (n + 1) / 2, "the updates do not read back")
    older.close()
    let check = try open("kept.strata", mode, version: 2, models: [ItemV2.self])
    let ranks = try check.read { tx in try tx.objects(ItemV2.self).where(\.id, in: 0 ..< 3).map(\.rank) }
    precondition(ranks == [7, 8, 9], "the kept field did not survive the updates: \(ranks)")
    check.close()
    return elapsed
}

/// A local file at version 1 holding `n` objects, opened at version 2 with
/// a migration closure that sets the added property on every object.
func runMigration(_ n: Int) throws -> Int64 {
    let old = try open("migration.strata", .local)
    try insertAll(old, items(n))
    old.close()
    var config = configuration("migration.strata", .local, version: 2, models: [ItemV2.self])
    config.migration = { migration, oldSchemaVersion in
        if oldSchemaVersion < 2 {
            try migration.enumerateObjects(ofType: "Item") { old, new in
                new?["rank"] = .int(old!["score"].int! + 7)
            }
        }
    }
    let start = ContinuousClock.now
    let db = try measuredMigration(config)
    let elapsed = nanoseconds(since: start)
    let ranks = try db.read { tx in try tx.objects(ItemV2.self).where(\.id, in: 0 ..< 3).map(\.rank) }
    precondition(ranks == [7, 8, 9], "the migration did not set rank: \(ranks)")
    let stored = try db.read { tx in try tx.objects(ItemV2.self).count }
    precondition(stored == n, "expected \(n) objects, found \(stored)")
    db.close()
    return elapsed
}

/// A local file of `n` objects, then one read scenario over it.
func runRead(_ n: Int, _ scenario: String) throws -> Int64 {
    let db = try open("scan.strata", .local)
    try insertAll(db, items(n))
    let start = ContinuousClock.now
    let sum =
        switch scenario {
        case "scan-dynamic": try measuredDynamicScan(db)
        case "lookup": try measuredLookups(db, n)
        case "lookup-dynamic": try measuredDynamicLookups(db, 0 ..< n)
        default: try measuredScan(db)
        }
    let elapsed = nanoseconds(since: start)
    precondition(sum == n * (n - 1) / 2, "the scan read \(sum)")
    db.close()
    return elapsed
}

let scenarios = [
    "apply", "insert", "insert-synced", "insert-sync", "update-kept", "update-kept-sync", "migration", "scan",
    "scan-dynamic", "lookup", "lookup-dynamic",
]
let arguments = CommandLine.arguments
guard arguments.count >= 2, scenarios.contains(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: EngineCost \(scenarios.joined(separator: "|")) [N] [ROUNDS]\n".utf8))
    exit(2)
}
let scenario = arguments[1]
let n = arguments.count > 2 ? Int(arguments[2]) ?? 20_000 : 20_000
let rounds = arguments.count > 3 ? Int(arguments[3]) ?? 1 : 1

for _ in 0 ..< rounds {
    try resetFolder()
    switch scenario {
    case "apply":
        let (elapsed, fields) = try runApply(n)
        print("\(scenario) \(n) \(elapsed) \(fields)")
    case "insert": print("\(scenario) \(n) \(try runInsert(n, .local))")
    case "insert-synced": print("\(scenario) \(n) \(try runInsert(n, .synced))")
    case "insert-sync": print("\(scenario) \(n) \(try runInsert(n, .sync))")
    case "update-kept": print("\(scenario) \(n) \(try runUpdateKept(n, .synced))")
    case "update-kept-sync": print("\(scenario) \(n) \(try runUpdateKept(n, .sync))")
    case "migration": print("\(scenario) \(n) \(try runMigration(n))")
    default: print("\(scenario) \(n) \(try runRead(n, scenario))")
    }
}
try? FileManager.default.removeItem(atPath: folder)
