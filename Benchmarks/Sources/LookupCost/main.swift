// Primary-key lookups, Strata against the C floor, in one process, for
// callgrind (issue 40, "lookups at 10M"): each side's lookups are one
// function of their own that is never inlined, so that
//   valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*measuredStrataLookups*' \
//       LookupCost strata N FOLDER
// counts exactly the lookups (`measuredCLookups` for `c`,
// `measuredDynamicLookups` for `dynamic`). The input files are written
// once into FOLDER, outside the measured part, and kept: a 10M file is
// made natively, then read under valgrind.
//
//     LookupCost strata|dynamic|c N FOLDER
//
// Prints: SIDE N LOOKUPS NANOSECONDS CHECKSUM
//
//     LookupCost pairs N FOLDER ROUNDS
//
// times, in one process on files already written, the C floor's lookups
// and Strata's typed ones back to back, ROUNDS times, the first of each
// pair alternating, after one untimed pass of each (so no page fault is
// timed): on a loaded machine the two halves of a pair see about the same
// load. Prints each round's two times, then the medians and minimums of
// the times and the median of the rounds' C/Strata ratios.
import CLMDBFloor
import Foundation
import Scenarios
import Strata

// They take the transaction, and hold no closure: a closure's symbol
// carries its function's name, and would toggle the collection off again.
@inline(never)
func measuredStrataLookups(_ tx: ReadTransaction, _ keys: [Int]) throws -> UInt64 {
    var sum = 0
    for key in keys { sum &+= try tx.object(TypedPerson.self, primaryKey: key)!.age }
    return UInt64(sum)
}

@inline(never)
func measuredDynamicLookups(_ tx: ReadTransaction, _ keys: [Int]) throws -> UInt64 {
    var sum: Int64 = 0
    for key in keys { sum &+= try tx.object("Person", key: .int(Int64(key)))!["age"].int! }
    return UInt64(sum)
}

@inline(never)
func measuredCLookups(_ env: OpaquePointer?, _ keys: [Int64]) -> UInt64 {
    var sum: UInt64 = 0
    var failed: UnsafePointer<CChar>?
    let rc = keys.withUnsafeBufferPointer { floor_lookups(env, $0.baseAddress, $0.count, &sum, &failed) }
    precondition(rc == 0, "floor_lookups failed: \(rc)")
    return sum
}

func strataConfiguration(_ path: String) -> Database.Configuration {
    var config = Database.Configuration(path: path, schemaVersion: 1, models: [TypedPerson.self])
    config.durability = .noSync
    config.initialMapSize = 1 << 34
    return config
}

func nanoseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// `pairs`: the C floor and Strata typed, back to back, on open files.
func runPairs(n: Int, folder: String, rounds: Int) throws {
    let keys = Dataset.lookupKeys(n)
    let ids = keys.map(Int64.init)
    let expected = keys.reduce(UInt64(0)) { $0 + UInt64(Dataset.age($1)) }
    var failed: UnsafePointer<CChar>?
    var env: OpaquePointer?
    precondition(floor_open(folder + "/c-\(n).lmdb", 0, &env, &failed) == 0, "floor_open failed")
    defer { floor_close(env) }
    let db = try Database(configuration: strataConfiguration(folder + "/strata-\(n).strata"))
    defer { db.close() }
    func timeC() -> Double {
        let start = ContinuousClock.now
        precondition(measuredCLookups(env, ids) == expected, "C read a wrong sum")
        return Double(nanoseconds(start.duration(to: .now))) / 1e6
    }
    func timeStrata() throws -> Double {
        let start = ContinuousClock.now
        let sum = try db.read { tx in try measuredStrataLookups(tx, keys) }
        precondition(sum == expected, "Strata read a wrong sum")
        return Double(nanoseconds(start.duration(to: .now))) / 1e6
    }
    _ = timeC()
    _ = try timeStrata()
    var cTimes: [Double] = []
    var strataTimes: [Double] = []
    for round in 0 ..< rounds {
        if round % 2 == 0 {
            cTimes.append(timeC())
            strataTimes.append(try timeStrata())
        } else {
            strataTimes.append(try timeStrata())
            cTimes.append(timeC())
        }
        print(String(format: "round %d: c %.1f ms, strata %.1f ms", round + 1, cTimes[round], strataTimes[round]))
    }
    let ratios = zip(cTimes, strataTimes).map { $0 / $1 }
    print(
        String(
            format: "pairs %d: c median %.1f min %.1f, strata median %.1f min %.1f, C/Strata median of rounds %.2f",
            n, median(cTimes), cTimes.min()!, median(strataTimes), strataTimes.min()!, median(ratios)))
}

let arguments = CommandLine.arguments
if arguments.count == 5, arguments[1] == "pairs", let n = Int(arguments[2]), let rounds = Int(arguments[4]), rounds > 0
{
    try runPairs(n: n, folder: arguments[3], rounds: rounds)
    exit(0)
}
guard arguments.count == 4, ["strata", "dynamic", "c"].contains(arguments[1]), let n = Int(arguments[2]) else {
    FileHandle.standardError.write(
        Data("usage: LookupCost strata|dynamic|c N FOLDER, or LookupCost pairs N FOLDER ROUNDS\n".utf8))
    exit(2)
}
let side = arguments[1]
let folder = arguments[3]
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
let keys = Dataset.lookupKeys(n)
let expected = keys.reduce(UInt64(0)) { $0 + UInt64(Dataset.age($1)) }
let start: ContinuousClock.Instant
let sum: UInt64
if side == "c" {
    let path = folder + "/c-\(n).lmdb"
    var failed: UnsafePointer<CChar>?
    if !FileManager.default.fileExists(atPath: path) {
        precondition(floor_create(path, Int64(n), 0, 0, 0, &failed) == 0, "floor_create failed")
    }
    var env: OpaquePointer?
    precondition(floor_open(path, 0, &env, &failed) == 0, "floor_open failed")
    let ids = keys.map(Int64.init)
    start = .now
    sum = measuredCLookups(env, ids)
    floor_close(env)
} else {
    let path = folder + "/strata-\(n).strata"
    let exists = FileManager.default.fileExists(atPath: path)
    let db = try Database(configuration: strataConfiguration(path))
    if !exists {
        for first in stride(from: 0, to: n, by: 1_000_000) {
            try db.write { tx in
                for id in first ..< min(n, first + 1_000_000) { try tx.insert(TypedPerson(id)) }
            }
        }
    }
    start = .now
    sum = try db.read { tx in
        side == "strata" ? try measuredStrataLookups(tx, keys) : try measuredDynamicLookups(tx, keys)
    }
    db.close()
}
let elapsed = start.duration(to: .now)
precondition(sum == expected, "\(side) read \(sum), expected \(expected)")
print("\(side) \(n) \(keys.count) \(nanoseconds(elapsed)) \(sum)")
