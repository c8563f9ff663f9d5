// One #Predicate query against the same question asked by key path, each
// run 200 times per trial, interleaved, best of ROUNDS (9). ONLY=text runs
// the comparisons whose label contains text (for callgrind).
import Foundation
import Strata

@Model(name: "Person") struct Person {
    @PrimaryKey var id: Int
    var name: String
    @Indexed var age: Int
    var score: Int
}

let n = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 1_000_000
let rounds = Int(ProcessInfo.processInfo.environment["ROUNDS"] ?? "") ?? 9
let only = ProcessInfo.processInfo.environment["ONLY"]
let path = NSTemporaryDirectory() + "predbench-\(getpid()).strata"
defer {
    try? FileManager.default.removeItem(atPath: path)
    try? FileManager.default.removeItem(atPath: path + "-lock")
}
var config = Database.Configuration(path: path, models: [Person.self])
config.durability = .noSync
let db = try Database(configuration: config)
try db.write { tx in
    for id in 0 ..< n { try tx.insert(Person(id: id, name: "P\(id % 1000)", age: id % 90, score: id % 1000)) }
}

func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

/// Runs each pair interleaved, `rounds` times, and prints the best time of each and their ratio.
func compare(
    _ label: String, _ a: (String, (ReadTransaction) throws -> Int), _ b: (String, (ReadTransaction) throws -> Int)
) throws {
    if let only, !label.contains(only) { return }
    var best = (Double.infinity, Double.infinity)
    var results = (0, 0)
    for _ in 0 ..< rounds {
        var start = ContinuousClock.now
        results.0 = try db.read { try a.1($0) }
        best.0 = min(best.0, seconds(ContinuousClock.now - start))
        start = ContinuousClock.now
        results.1 = try db.read { try b.1($0) }
        best.1 = min(best.1, seconds(ContinuousClock.now - start))
    }
    precondition(results.0 == results.1, "\(label): \(results.0) != \(results.1)")
    print(label)
    print("  " + a.0.padding(toLength: 56, withPad: " ", startingAt: 0), String(format: "%9.3f ms", best.0 * 1000))
    print("  " + b.0.padding(toLength: 56, withPad: " ", startingAt: 0), String(format: "%9.3f ms", best.1 * 1000))
    print(String(format: "  ratio %.3f (%d values)", best.1 / best.0, results.0))
}

let queries = 200
let ages = (0 ..< queries).map { $0 % 90 }
print("n = \(n), \(queries) queries per trial, best of \(rounds), interleaved")
var start = ContinuousClock.now
let equal = ages.map { age in #Predicate<Person> { $0.age == age } }
let both = ages.map { age in #Predicate<Person> { $0.age == age && $0.score < 500 } }
print(
    String(format: "building %d #Predicate values: %.3f ms", 2 * queries, seconds(ContinuousClock.now - start) * 1000))

try compare(
    "index equality, map(\\.id) (~11k values a query)",
    (
        "where(\\.age, equals: age)",
        { tx in try ages.reduce(0) { try $0 + tx.objects(Person.self).where(\.age, equals: $1).map(\.id).count } }
    ),
    (
        "filter(#Predicate { $0.age == age })",
        { tx in try equal.reduce(0) { try $0 + tx.objects(Person.self).filter($1).map(\.id).count } }
    ))
try compare(
    "index equality, count (reads no record)",
    (
        "where(\\.age, equals: age)",
        { tx in try ages.reduce(0) { try $0 + tx.objects(Person.self).where(\.age, equals: $1).count } }
    ),
    (
        "filter(#Predicate { $0.age == age })",
        { tx in try equal.reduce(0) { try $0 + tx.objects(Person.self).filter($1).count } }
    ))
try compare(
    "index equality and a plain range, map(\\.id)",
    (
        "where(\\.age, equals:).where(\\.score, in: ..<500)",
        { tx in
            try ages.reduce(0) {
                try $0 + tx.objects(Person.self).where(\.age, equals: $1).where(\.score, in: ..<500).map(\.id).count
            }
        }
    ),
    (
        "#Predicate { $0.age == age && $0.score < 500 }",
        { tx in try both.reduce(0) { try $0 + tx.objects(Person.self).filter($1).map(\.id).count } }
    ))
try compare(
    "a set of three ages, map(\\.id)",
    (
        "filter { [a, a+1, a+2].contains($0.age) } (closure)",
        { tx in
            try ages.prefix(20).reduce(0) { s, a in
                try s + tx.objects(Person.self).filter { [a, a + 1, a + 2].contains($0.age) }.map(\.id).count
            }
        }
    ),
    (
        "where(\\.age, in: [a, a+1, a+2])",
        { tx in
            try ages.prefix(20).reduce(0) { s, a in
                try s + tx.objects(Person.self).where(\.age, in: [a, a + 1, a + 2]).map(\.id).count
            }
        }
    ))
