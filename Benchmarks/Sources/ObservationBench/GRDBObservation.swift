import Foundation
import GRDB

/// The same items in SQLite, read through GRDB as an app would.
struct GRDBItem: FetchableRecord {
    var id: Int
    var name: String
    var rank: Int
    var score: Int

    init(row: Row) {
        id = row[0]
        name = row[1]
        rank = row[2]
        score = row[3]
    }
}

/// GRDB 7's `ValueObservation` over the same table and the same one-row
/// update: the whole table (`fetchAll`, which GRDB fetches again after each
/// commit) or one row by key.
func grdbLatency(object: Bool, n: Int, rounds: Int, folder: String) async throws -> LatencyResult {
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let path = folder + "/items-\(n)-\(object ? "one" : "all").sqlite"
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    var configuration = GRDB.Configuration()
    // As Strata's `.noSync`: no fsync.
    configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
    let pool = try DatabasePool(path: path, configuration: configuration)
    try await pool.write { db in
        try db.execute(
            sql:
                "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, rank INTEGER NOT NULL, score INTEGER NOT NULL)"
        )
        try db.execute(sql: "CREATE INDEX item_rank ON item(rank)")
        let insert = try db.makeStatement(sql: "INSERT INTO item VALUES (?, ?, ?, ?)")
        for id in 0 ..< n {
            let item = Item(id, of: n)
            try insert.execute(arguments: [item.id, item.name, item.rank, item.score])
        }
    }
    let key = n / 2
    let queue = DispatchQueue(label: "grdb-observer")
    var keys: [Int] = []
    var generator = SystemRandomNumberGenerator()
    for _ in 0 ..< 1000 { keys.append(object ? key : Int.random(in: 0 ..< n, using: &generator)) }
    var cancellable: AnyDatabaseCancellable?
    defer { cancellable?.cancel() }
    return try await measure(
        rounds: rounds,
        start: { arrivals in
            if object {
                cancellable = ValueObservation.tracking { db in
                    try Row.fetchOne(db, sql: "SELECT * FROM item WHERE id = ?", arguments: [key]).map(
                        GRDBItem.init(row:))
                }.start(
                    in: pool, scheduling: .async(onQueue: queue), onError: { fatalError("\($0)") },
                    onChange: { _ in arrivals.arrive(0) })
            } else {
                cancellable = ValueObservation.tracking { db in try GRDBItem.fetchAll(db, sql: "SELECT * FROM item") }
                    .start(
                        in: pool, scheduling: .async(onQueue: queue), onError: { fatalError("\($0)") },
                        onChange: { _ in arrivals.arrive(0) })
            }
            // `measure` counts consumers by their tasks: one, doing nothing.
            return [Task {}]
        },
        trigger: { round in
            try pool.write { db in
                try db.execute(
                    sql: "UPDATE item SET score = ? WHERE id = ?", arguments: [Int(now()), keys[round % keys.count]])
            }
        })
}
