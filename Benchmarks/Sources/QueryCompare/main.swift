// Each query kind of issue 25 asked of Strata's typed API and of GRDB's
// query interface, on the same data with the same indexes, in one process:
// the two engines interleaved (their order alternating each round), best of
// ROUNDS (5) trials each, then GRDB's time over Strata's (above 1, Strata
// is faster). Every pair checks that both engines found the same values.
//
//     swift build -c release --product QueryCompare
//     ROUNDS=5 ONLY=backlink $(swift build -c release --show-bin-path)/QueryCompare [objects]
//
// Both write without syncing: Strata with `durability = .noSync`, GRDB
// (SQLite's default rollback journal, not WAL) with `PRAGMA synchronous =
// OFF`. ONLY=text runs the kinds whose label contains text (for callgrind).

import Foundation
import GRDB
import Strata

func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

func timed<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let start = ContinuousClock.now
    let result = try body()
    return (result, seconds(ContinuousClock.now - start))
}

func milliseconds(_ s: Double) -> String {
    s >= 0.1 ? String(format: "%.0f ms", s * 1000) : String(format: "%.2f ms", s * 1000)
}

func run() throws {
    let n = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 1_000_000
    let environment = ProcessInfo.processInfo.environment
    let rounds = Int(environment["ROUNDS"] ?? "") ?? 5
    let only = environment["ONLY"]
    let data = Dataset(n: n)
    let kinds = data.kinds.filter { only == nil || $0.label.contains(only!) }

    let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("querycompare-\(getpid())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }

    var config = Strata.Database.Configuration(
        path: folder.appendingPathComponent("people.strata").path, models: [Person.self, Pet.self])
    config.durability = .noSync
    let db = try Strata.Database(configuration: config)
    var grdbConfig = GRDB.Configuration()
    grdbConfig.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
    let queue = try DatabaseQueue(path: folder.appendingPathComponent("people.sqlite").path, configuration: grdbConfig)

    print("\(n) people and \(n) pets, best of \(rounds) rounds, interleaved")
    let strataLoad = try timed { try data.load(db) }.1
    let grdbLoad = try timed { try data.load(queue) }.1
    print(String(format: "load: Strata %.2f s, GRDB %.2f s (ratio %.2f)", strataLoad, grdbLoad, grdbLoad / strataLoad))

    var times = [(strata: [Double], grdb: [Double])](repeating: ([], []), count: kinds.count)
    var answers = [Answer](repeating: Answer(), count: kinds.count)
    for round in 0 ..< rounds {
        for (k, kind) in kinds.enumerated() {
            func strata() throws -> Answer {
                let (answer, time) = try timed {
                    try db.read { tx in try (0 ..< kind.queries).reduce(Answer()) { try $0 + kind.strata(tx, $1) } }
                }
                times[k].strata.append(time)
                return answer
            }
            func grdb() throws -> Answer {
                let (answer, time) = try timed {
                    try queue.read { db in try (0 ..< kind.queries).reduce(Answer()) { try $0 + kind.grdb(db, $1) } }
                }
                times[k].grdb.append(time)
                return answer
            }
            let a: Answer
            let b: Answer
            if round % 2 == 0 {
                a = try strata()
                b = try grdb()
            } else {
                b = try grdb()
                a = try strata()
            }
            // fatalError, not precondition: a release build drops the message.
            if a != b { fatalError("\(kind.label): Strata found \(a), GRDB \(b)") }
            if a.count == 0 { fatalError("\(kind.label): both found nothing; use 100,000 objects or more") }
            answers[k] = a
        }
    }

    // The best trial of each is the table; the ratio of the medians shows
    // how much a noisy machine moved it.
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    print("| Query kind | Queries | Values per query | Strata | GRDB | GRDB / Strata | of medians |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (k, kind) in kinds.enumerated() {
        let perQuery = Double(answers[k].count) / Double(kind.queries)
        let best = (strata: times[k].strata.min()!, grdb: times[k].grdb.min()!)
        print(
            "| \(kind.label) | \(kind.queries) | \(String(format: perQuery < 10 ? "%.1f" : "%.0f", perQuery)) | "
                + "\(milliseconds(best.strata)) | \(milliseconds(best.grdb)) | "
                + String(
                    format: "%.2f | %.2f |", best.grdb / best.strata,
                    median(times[k].grdb) / median(times[k].strata)))
    }
    try queue.close()
}

try run()
