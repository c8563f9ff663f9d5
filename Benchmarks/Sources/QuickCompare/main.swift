// A quick, informal comparison of Strata with raw LMDB doing the same work:
// the same keys, the same record bytes, one transaction. Each figure is the
// best of several runs. Every scenario checks its result, so a fast wrong
// answer fails.
//
//     swift run -c release QuickCompare [objects] [runs]

import CLMDBBench
import Foundation
import Strata

struct Options {
    var objects = 1_000_000
    var runs = 3

    init(_ arguments: [String]) {
        if arguments.count > 1, let n = Int(arguments[1]), n > 0 { objects = n }
        if arguments.count > 2, let r = Int(arguments[2]), r > 0 { runs = r }
    }
}

let firstNames = ["Kim", "Sam", "Alex", "Robin", "Jo", "Max"]
let lastNames = ["Ng", "Okafor", "Silva", "Novak", "Larsen"]

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func freshFolder() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-quick-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

struct Figures {
    var insert = Double.infinity
    /// Raw LMDB only: the same inserts with `MDB_APPEND`, which skips the
    /// search of the tree since the keys come in order. Strata appends too
    /// when it sees keys arrive in order.
    var appendInsert = Double.infinity
    var scan = Double.infinity
    var lookups = Double.infinity

    mutating func keepBest(_ other: Figures) {
        insert = min(insert, other.insert)
        appendInsert = min(appendInsert, other.appendInsert)
        scan = min(scan, other.scan)
        lookups = min(lookups, other.lookups)
    }
}

/// The sum of every age, which every scan must reproduce.
func expectedAgeSum(_ n: Int) -> Int { (0 ..< n).reduce(0) { $0 + $1 % 90 } }

/// Random keys for the lookup scenario, the same for both engines.
func lookupKeys(_ n: Int) -> [Int] {
    var generator = SystemRandomNumberGenerator()
    return (0 ..< min(n, 100_000)).map { _ in Int.random(in: 0 ..< n, using: &generator) }
}

// MARK: Strata

func strataRun(_ n: Int, keys: [Int], folder: URL) throws -> Figures {
    var config = Database.Configuration(path: folder.appendingPathComponent("people.strata").path, schema: Schema([
        ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("firstName", .string)
            Property("lastName", .string)
            Property("age", .int)
        },
    ]))
    config.durability = .noSync
    config.initialMapSize = 1 << 30
    let db = try Database(configuration: config)
    var figures = Figures()
    figures.insert = try seconds {
        try db.write { tx in
            for i in 0 ..< n {
                try tx.insert("Person", ["id": .int(Int64(i)), "firstName": .string(firstNames[i % 6]),
                                         "lastName": .string(lastNames[i % 5]), "age": .int(Int64(i % 90))])
            }
        }
    }
    var sum: Int64 = 0
    figures.scan = try seconds {
        try db.read { tx in try tx.objects("Person").forEach { sum &+= $0["age"].int! } }
    }
    precondition(Int(sum) == expectedAgeSum(n), "Strata scan returned a wrong sum")
    var found = 0
    figures.lookups = try seconds {
        try db.read { tx in
            for key in keys where try tx.object("Person", key: .int(Int64(key)))?["age"].int == Int64(key % 90) { found += 1 }
        }
    }
    precondition(found == keys.count, "Strata lookups found \(found) of \(keys.count)")
    return figures
}

/// What the caller of `insert` spends building its dictionaries alone.
@inline(never) func consume(_ values: [String: Value]) -> Int { values.count }

func dictionaryBuilding(_ n: Int) -> Double {
    var total = 0
    let time = seconds {
        for i in 0 ..< n {
            total &+= consume(["id": .int(Int64(i)), "firstName": .string(firstNames[i % 6]),
                               "lastName": .string(lastNames[i % 5]), "age": .int(Int64(i % 90))])
        }
    }
    precondition(total == 4 * n)
    return time
}

// MARK: Raw LMDB

/// The record Strata writes for person `i`, built by hand: the same bytes.
func rawRecord(_ i: Int, into bytes: inout [UInt8]) {
    func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 { bytes.append(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
        bytes.append(UInt8(v))
    }
    func zigzag(_ v: Int64) -> UInt64 { UInt64(bitPattern: (v << 1) ^ (v >> 63)) }
    bytes.removeAll(keepingCapacity: true)
    bytes.append(1); varint(1); varint(4)
    varint(1); bytes.append(3); varint(zigzag(Int64(i)))
    varint(2); bytes.append(5); varint(UInt64(firstNames[i % 6].utf8.count)); bytes.append(contentsOf: firstNames[i % 6].utf8)
    varint(3); bytes.append(5); varint(UInt64(lastNames[i % 5].utf8.count)); bytes.append(contentsOf: lastNames[i % 5].utf8)
    varint(4); bytes.append(3); varint(zigzag(Int64(i % 90)))
}

/// The age: the record's last field, a zigzag varint of one or two bytes.
@inline(__always)
func rawAge(_ record: MDB_val) -> Int {
    let last = Int(record.mv_data.load(fromByteOffset: record.mv_size - 1, as: UInt8.self))
    let before = Int(record.mv_data.load(fromByteOffset: record.mv_size - 2, as: UInt8.self))
    let zigzag = before & 0x80 != 0 ? (before & 0x7F) | (last << 7) : last
    return zigzag >> 1
}

func key(_ i: Int) -> UInt64 { (UInt64(bitPattern: Int64(i)) ^ (1 << 63)).bigEndian }

func check(_ rc: Int32, _ call: String) {
    precondition(rc == 0, "\(call): \(String(cString: mdb_strerror(rc)))")
}

/// Inserts every person in one transaction into a new named database.
func rawInsert(_ n: Int, env: OpaquePointer?, name: String, flags: Int32) -> (MDB_dbi, Double) {
    var dbi: MDB_dbi = 0
    var record: [UInt8] = []
    record.reserveCapacity(64)
    let time = seconds {
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
        check(mdb_dbi_open(txn, name, UInt32(MDB_CREATE), &dbi), "mdb_dbi_open")
        for i in 0 ..< n {
            var k = key(i)
            rawRecord(i, into: &record)
            withUnsafeMutableBytes(of: &k) { keyBytes in
                record.withUnsafeMutableBytes { recordBytes in
                    var kv = MDB_val(mv_size: 8, mv_data: keyBytes.baseAddress)
                    var vv = MDB_val(mv_size: recordBytes.count, mv_data: recordBytes.baseAddress)
                    check(mdb_put(txn, dbi, &kv, &vv, UInt32(flags)), "mdb_put")
                }
            }
        }
        check(mdb_txn_commit(txn), "mdb_txn_commit")
    }
    return (dbi, time)
}

func rawRun(_ n: Int, keys: [Int], folder: URL) -> Figures {
    var env: OpaquePointer?
    check(mdb_env_create(&env), "mdb_env_create")
    check(mdb_env_set_maxdbs(env, 4), "mdb_env_set_maxdbs")
    check(mdb_env_set_mapsize(env, 2 << 30), "mdb_env_set_mapsize")
    check(mdb_env_open(env, folder.appendingPathComponent("raw.lmdb").path, UInt32(MDB_NOSUBDIR | MDB_NOTLS | MDB_NOSYNC), 0o644), "mdb_env_open")
    defer { mdb_env_close(env) }
    var figures = Figures()
    let (dbi, insertTime) = rawInsert(n, env: env, name: "people", flags: MDB_NOOVERWRITE)
    figures.insert = insertTime
    figures.appendInsert = rawInsert(n, env: env, name: "appended", flags: MDB_APPEND).1
    var sum = 0
    figures.scan = seconds {
        var txn: OpaquePointer?
        var cursor: OpaquePointer?
        check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
        check(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open")
        var k = MDB_val(), v = MDB_val()
        var rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST)
        while rc == 0 {
            sum &+= rawAge(v)
            rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)
        }
        mdb_cursor_close(cursor)
        mdb_txn_abort(txn)
    }
    precondition(sum == expectedAgeSum(n), "raw scan returned a wrong sum")
    var found = 0
    figures.lookups = seconds {
        var txn: OpaquePointer?
        check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
        for i in keys {
            var k = key(i)
            var v = MDB_val()
            let rc = withUnsafeMutableBytes(of: &k) { keyBytes -> Int32 in
                var kv = MDB_val(mv_size: 8, mv_data: keyBytes.baseAddress)
                return mdb_get(txn, dbi, &kv, &v)
            }
            if rc == 0, rawAge(v) == i % 90 { found += 1 }
        }
        mdb_txn_abort(txn)
    }
    precondition(found == keys.count, "raw lookups found \(found) of \(keys.count)")
    return figures
}

// MARK: Report

func run() throws {
    let options = Options(CommandLine.arguments)
    let n = options.objects
    let keys = lookupKeys(n)
    var raw = Figures(), strata = Figures()
    var dictionaries = Double.infinity
    for _ in 0 ..< options.runs {
        let folder = try freshFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        raw.keepBest(rawRun(n, keys: keys, folder: folder))
        strata.keepBest(try strataRun(n, keys: keys, folder: folder))
        dictionaries = min(dictionaries, dictionaryBuilding(n))
    }
    func row(_ name: String, _ raw: Double, _ strata: Double, count: Int) {
        let rate = { (t: Double) in String(format: "%8.0f k/s", Double(count) / t / 1000) }
        print(name.padding(toLength: 34, withPad: " ", startingAt: 0),
              String(format: "%9.1f ms", raw * 1000), rate(raw),
              String(format: "%9.1f ms", strata * 1000), rate(strata),
              String(format: "%6.2f", raw / strata))
    }
    print("QuickCompare: \(n) objects, best of \(options.runs) runs (release build)")
    print("scenario".padding(toLength: 34, withPad: " ", startingAt: 0), "      raw LMDB            ", "       Strata             ", "raw/Strata")
    row("insert (raw: mdb_put)", raw.insert, strata.insert, count: n)
    row("insert (raw: mdb_put, MDB_APPEND)", raw.appendInsert, strata.insert, count: n)
    row("insert less dictionary building", raw.insert, strata.insert - dictionaries, count: n)
    row("  the same, raw with MDB_APPEND", raw.appendInsert, strata.insert - dictionaries, count: n)
    row("scan, read one int", raw.scan, strata.scan, count: n)
    row("primary-key lookups", raw.lookups, strata.lookups, count: keys.count)
    print(String(format: "(building the %d [String: Value] dictionaries alone takes %.1f ms)", n, dictionaries * 1000))
}

try run()
