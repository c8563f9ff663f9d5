import Foundation
import Strata

// Usage: ObservationWriteCost MODE N FOLDER [ROUNDS]
//   each    N write transactions of one insert each
//   bulk    one write transaction of N inserts
//   update  N write transactions of one update each, over N objects
// The database is made (and, for update, filled) before the timed part;
// callgrind counts only the timed part when run with
// --collect-atstart=no --toggle-collect=*ObservationWriteCost*timed*.
// Prints one line per round: mode, n, nanoseconds.

/// The workload's object: a typed model written in the shape `@Model`
/// writes, with an indexed property so that a write also updates an index.
struct Item: Model, Sendable {
    typealias Key = Int
    var id: Int
    var name: String
    var rank: Int

    static let schema = ModelSchema<Item>(
        name: "Item",
        properties: [
            .init(\.id, "id", primaryKey: true),
            .init(\.name, "name"),
            .init(\.rank, "rank", indexed: true),
        ])

    init(id: Int, name: String, rank: Int) {
        self.id = id
        self.name = name
        self.rank = rank
    }

    func encode(to encoder: inout ModelEncoder) {
        encoder.encode(id)
        encoder.encode(name)
        encoder.encode(rank)
    }

    init(from decoder: inout ModelDecoder) throws {
        id = try decoder.decode(Int.self)
        name = try decoder.decode(String.self)
        rank = try decoder.decode(Int.self)
    }
}

let names = (0 ..< 1000).map { "Item\($0)" }

func item(_ id: Int, version: Int = 0) -> Item {
    Item(id: id, name: names[id % 1000], rank: (id &* 7919 &+ version) % 100_000)
}

func open(_ folder: String) throws -> Database {
    var configuration = Database.Configuration(path: folder + "/write-cost.strata", models: [Item.self])
    configuration.durability = .noSync
    configuration.initialMapSize = 1 << 30
    return try Database(configuration: configuration)
}

@inline(never)
func timedEach(_ db: Database, _ n: Int) throws {
    for id in 0 ..< n { try db.write { tx in _ = try tx.insert(item(id)) } }
}

@inline(never)
func timedBulk(_ db: Database, _ n: Int) throws {
    try db.write { tx in for id in 0 ..< n { _ = try tx.insert(item(id)) } }
}

@inline(never)
func timedUpdate(_ db: Database, _ n: Int, round: Int) throws {
    for id in 0 ..< n { try db.write { tx in try tx.update(item(id, version: round + 1)) } }
}

let arguments = CommandLine.arguments
guard arguments.count >= 4, let n = Int(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: ObservationWriteCost each|bulk|update N FOLDER [ROUNDS]\n".utf8))
    exit(2)
}
let mode = arguments[1]
let folder = arguments[3]
let rounds = arguments.count > 4 ? Int(arguments[4]) ?? 1 : 1

for round in 0 ..< rounds {
    try? FileManager.default.removeItem(atPath: folder)
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let db = try open(folder)
    if mode == "update" { try timedBulk(db, n) }
    let start = DispatchTime.now().uptimeNanoseconds
    switch mode {
    case "each": try timedEach(db, n)
    case "bulk": try timedBulk(db, n)
    case "update": try timedUpdate(db, n, round: round)
    default:
        FileHandle.standardError.write(Data("unknown mode \(mode)\n".utf8))
        exit(2)
    }
    let elapsed = DispatchTime.now().uptimeNanoseconds - start
    let count = try db.read { tx in try tx.objects(Item.self).count }
    precondition(count == n, "expected \(n) objects, found \(count)")
    db.close()
    print("\(mode) \(n) \(elapsed)")
}
try? FileManager.default.removeItem(atPath: folder)
