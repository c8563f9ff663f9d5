import CLMDBBench
import Foundation

/// The scenarios through LMDB's C API: the same keys and the same record
/// bytes as Strata writes, with the best the C API offers for each job
/// (`MDB_APPEND` for keys in order, `MDB_CURRENT` to rewrite in place). The
/// floor Strata is measured against.
struct LMDBTrials {
    let n: Int
    let folder: URL

    var path: String { folder.appendingPathComponent("people.lmdb").path }

    func trial(_ scenario: Scenario) -> Trial? {
        switch scenario {
        case .closureMigration:
            return Trial(
                setup: { try input("v1") },
                run: {
                    try rewrite { record, out in
                        let fields = RawRecord.fields(record)
                        RawRecord.begin(&out, version: 2, count: 3)
                        RawRecord.int(&out, id: 1, fields.0.int)
                        RawRecord.int(&out, id: 4, fields.3.int)
                        RawRecord.varint(&out, 5)
                        out.append(5)
                        RawRecord.varint(&out, UInt64(fields.1.bytes.count + 1 + fields.2.bytes.count))
                        out.append(contentsOf: fields.1.bytes)
                        out.append(0x20)
                        out.append(contentsOf: fields.2.bytes)
                    }
                },
                verify: { try checksum { hash, record in hash.add(RawRecord.fields3(record).2.bytes) } },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .additiveMigration:
            return Trial(
                setup: { try input("v1") },
                run: {
                    try withEnvironment { env in
                        try write(env) { txn, _, meta in try putCatalog(txn, meta, version: 2) }
                    }
                },
                verify: {
                    try checksum { hash, record in
                        hash.add(RawRecord.fields(record).2.bytes)
                        hash.add("-")
                    }
                },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .typeChange:
            return Trial(
                setup: { try input("ageText") },
                run: {
                    try rewrite { record, out in
                        let fields = RawRecord.fields(record)
                        var age: Int64 = 0
                        for digit in fields.3.bytes { age = age * 10 + Int64(digit - 0x30) }
                        RawRecord.begin(&out, version: 2, count: 4)
                        RawRecord.int(&out, id: 1, fields.0.int)
                        RawRecord.string(&out, id: 2, fields.1.bytes)
                        RawRecord.string(&out, id: 3, fields.2.bytes)
                        RawRecord.int(&out, id: 5, age)
                    }
                },
                verify: { try sumOfAges() },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .openUpToDate:
            return Trial(
                setup: { try input("v1") },
                run: {
                    try withEnvironment { env in
                        var txn: OpaquePointer?
                        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
                        var people: MDB_dbi = 0
                        var meta: MDB_dbi = 0
                        try check(mdb_dbi_open(txn, "people", 0, &people), "mdb_dbi_open")
                        try check(mdb_dbi_open(txn, "meta", 0, &meta), "mdb_dbi_open")
                        var key = MDB_val(
                            mv_size: 7,
                            mv_data: UnsafeMutableRawPointer(mutating: ("catalog" as StaticString).utf8Start))
                        var value = MDB_val()
                        try check(mdb_get(txn, meta, &key, &value), "mdb_get")
                        try check(mdb_txn_commit(txn), "mdb_txn_commit")
                    }
                },
                verify: {
                    try withEnvironment { env in
                        try read(env) { txn, people in
                            var stat = MDB_stat()
                            try check(mdb_stat(txn, people, &stat), "mdb_stat")
                            return UInt64(stat.ms_entries)
                        }
                    }
                },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .insert:
            return Trial(
                setup: { removeFiles(in: folder, keepingTemplates: true) },
                run: { try create(at: path, ageText: false) },
                verify: { try sumOfAges() },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .scan, .lookups, .indexLookups:
            return readTrial(scenario)
        case .followLinks, .ownerLookups, .backlinks, .cascadeDelete, .directDelete, .addLink, .addInt:
            return nil  // makeTrial gives the relationships to their own trials
        }
    }

    // MARK: Reads

    private func readTrial(_ scenario: Scenario) -> Trial {
        let environment = ResultBox<OpaquePointer>()
        let result = ResultBox<UInt64>()
        let keys = scenario == .lookups ? Dataset.lookupKeys(n) : []
        let names = scenario == .indexLookups ? Dataset.lookupNames(n) : []
        return Trial(
            setup: {
                try input(scenario == .indexLookups ? "indexed" : "v1")
                environment.value = try openEnvironment()
            },
            run: {
                result.value = try read(environment.value!) { txn, people in
                    var sum: Int64 = 0
                    switch scenario {
                    case .scan:
                        var cursor: OpaquePointer?
                        try check(mdb_cursor_open(txn, people, &cursor), "mdb_cursor_open")
                        defer { mdb_cursor_close(cursor) }
                        var key = MDB_val()
                        var value = MDB_val()
                        var rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
                        while rc == 0 {
                            sum &+= RawRecord.age(value)
                            rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
                        }
                    case .lookups:
                        for id in keys {
                            var bytes = RawRecord.key(id)
                            try withUnsafeMutableBytes(of: &bytes) { raw in
                                var key = MDB_val(mv_size: 8, mv_data: raw.baseAddress)
                                var value = MDB_val()
                                try check(mdb_get(txn, people, &key, &value), "mdb_get")
                                sum &+= RawRecord.age(value)
                            }
                        }
                    default:
                        var index: MDB_dbi = 0
                        try check(mdb_dbi_open(txn, "people.lastName", UInt32(MDB_DUPSORT), &index), "mdb_dbi_open")
                        var cursor: OpaquePointer?
                        try check(mdb_cursor_open(txn, index, &cursor), "mdb_cursor_open")
                        defer { mdb_cursor_close(cursor) }
                        for name in names {
                            var indexKey = RawRecord.indexKey(name)
                            try indexKey.withUnsafeMutableBytes { raw in
                                var key = MDB_val(mv_size: raw.count, mv_data: raw.baseAddress)
                                var objectKey = MDB_val()
                                var rc = mdb_cursor_get(cursor, &key, &objectKey, MDB_SET_KEY)
                                while rc == 0 {
                                    var value = MDB_val()
                                    try check(mdb_get(txn, people, &objectKey, &value), "mdb_get")
                                    sum &+= RawRecord.age(value)
                                    rc = mdb_cursor_get(cursor, &key, &objectKey, MDB_NEXT_DUP)
                                }
                            }
                        }
                    }
                    return UInt64(sum)
                }
            },
            verify: { result.value ?? 0 },
            cleanup: {
                if let env = environment.value { mdb_env_close(env) }
                environment.value = nil
                removeFiles(in: folder, keepingTemplates: true)
            })
    }

    // MARK: Files

    func input(_ kind: String) throws {
        let template = folder.appendingPathComponent("template-lmdb-\(kind)-\(n).lmdb")
        if !FileManager.default.fileExists(atPath: template.path) {
            try create(at: template.path, ageText: kind == "ageText", indexed: kind == "indexed", durable: false)
            try? FileManager.default.removeItem(atPath: template.path + "-lock")
        }
        removeFiles(in: folder, keepingTemplates: true)
        try copyInput(template, to: path)
    }

    /// Writes `n` people in one transaction, keys in order with `MDB_APPEND`.
    func create(at file: String, ageText: Bool, indexed: Bool = false, durable: Bool = true) throws {
        try withEnvironment(at: file, durable: durable) { env in
            try write(env) { txn, people, meta in
                var index: MDB_dbi = 0
                if indexed {
                    try check(
                        mdb_dbi_open(txn, "people.lastName", UInt32(MDB_CREATE | MDB_DUPSORT), &index), "mdb_dbi_open")
                }
                var record: [UInt8] = []
                record.reserveCapacity(64)
                for id in 0 ..< n {
                    record.removeAll(keepingCapacity: true)
                    RawRecord.begin(&record, version: 1, count: 4)
                    RawRecord.int(&record, id: 1, Int64(id))
                    var first = Dataset.firstName(id)
                    var last = Dataset.lastName(id)
                    first.withUTF8 { RawRecord.string(&record, id: 2, UnsafeRawBufferPointer($0)) }
                    last.withUTF8 { RawRecord.string(&record, id: 3, UnsafeRawBufferPointer($0)) }
                    if ageText {
                        var text = Dataset.ageText(id)
                        text.withUTF8 { RawRecord.string(&record, id: 4, UnsafeRawBufferPointer($0)) }
                    } else {
                        RawRecord.int(&record, id: 4, Int64(Dataset.age(id)))
                    }
                    var keyBytes = RawRecord.key(id)
                    try withUnsafeMutableBytes(of: &keyBytes) { rawKey in
                        try record.withUnsafeMutableBytes { rawRecord in
                            var key = MDB_val(mv_size: 8, mv_data: rawKey.baseAddress)
                            var value = MDB_val(mv_size: rawRecord.count, mv_data: rawRecord.baseAddress)
                            try check(mdb_put(txn, people, &key, &value, UInt32(MDB_APPEND)), "mdb_put")
                            if indexed {
                                var indexKey = RawRecord.indexKey(last)
                                try indexKey.withUnsafeMutableBytes { rawIndex in
                                    var ikey = MDB_val(mv_size: rawIndex.count, mv_data: rawIndex.baseAddress)
                                    var ivalue = MDB_val(mv_size: 8, mv_data: rawKey.baseAddress)
                                    try check(mdb_put(txn, index, &ikey, &ivalue, 0), "mdb_put")
                                }
                            }
                        }
                    }
                }
                try putCatalog(txn, meta, version: 1)
            }
        }
    }

    /// Rewrites every record in place through a write cursor.
    func rewrite(_ transform: (MDB_val, inout [UInt8]) -> Void) throws {
        try withEnvironment { env in
            try write(env) { txn, people, meta in
                var cursor: OpaquePointer?
                try check(mdb_cursor_open(txn, people, &cursor), "mdb_cursor_open")
                defer { mdb_cursor_close(cursor) }
                var out: [UInt8] = []
                out.reserveCapacity(64)
                var key = MDB_val()
                var value = MDB_val()
                var rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
                while rc == 0 {
                    out.removeAll(keepingCapacity: true)
                    transform(value, &out)
                    // The put may move the page the key points into.
                    var keyCopy = (0 ..< 8).reduce(UInt64(0)) {
                        $0 | UInt64(key.mv_data.load(fromByteOffset: $1, as: UInt8.self)) << (8 * UInt64($1))
                    }
                    try withUnsafeMutableBytes(of: &keyCopy) { rawKey in
                        try out.withUnsafeMutableBytes { rawOut in
                            var k = MDB_val(mv_size: 8, mv_data: rawKey.baseAddress)
                            var v = MDB_val(mv_size: rawOut.count, mv_data: rawOut.baseAddress)
                            try check(mdb_cursor_put(cursor, &k, &v, UInt32(MDB_CURRENT)), "mdb_cursor_put")
                        }
                    }
                    rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
                }
                guard rc == MDB_NOTFOUND else {
                    throw ScenarioError("mdb_cursor_get: \(String(cString: mdb_strerror(rc)))")
                }
                try putCatalog(txn, meta, version: 2)
            }
        }
    }

    func putCatalog(_ txn: OpaquePointer?, _ meta: MDB_dbi, version: Int) throws {
        var catalog = Array("{\"schemaVersion\":\(version),\"types\":[]}".utf8)
        try catalog.withUnsafeMutableBytes { raw in
            var key = MDB_val(
                mv_size: 7, mv_data: UnsafeMutableRawPointer(mutating: ("catalog" as StaticString).utf8Start))
            var value = MDB_val(mv_size: raw.count, mv_data: raw.baseAddress)
            try check(mdb_put(txn, meta, &key, &value, 0), "mdb_put")
        }
    }

    func checksum(_ add: (inout Checksum, MDB_val) -> Void) throws -> UInt64 {
        try withEnvironment { env in
            try read(env) { txn, people in
                var hash = Checksum()
                try walk(txn, people) { add(&hash, $0) }
                return hash.value
            }
        }
    }

    func sumOfAges() throws -> UInt64 {
        try withEnvironment { env in
            try read(env) { txn, people in
                var sum: Int64 = 0
                try walk(txn, people) { sum += RawRecord.age($0) }
                return UInt64(sum)
            }
        }
    }

    func walk(_ txn: OpaquePointer?, _ dbi: MDB_dbi, _ body: (MDB_val) -> Void) throws {
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var value = MDB_val()
        var rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
        while rc == 0 {
            body(value)
            rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
        }
    }

    // MARK: Environment

    func openEnvironment(at file: String? = nil, durable: Bool = true) throws -> OpaquePointer {
        var env: OpaquePointer?
        try check(mdb_env_create(&env), "mdb_env_create")
        try check(mdb_env_set_maxdbs(env, 8), "mdb_env_set_maxdbs")
        try check(mdb_env_set_mapsize(env, 8 << 30), "mdb_env_set_mapsize")
        let flags = MDB_NOSUBDIR | MDB_NOTLS | (durable ? 0 : MDB_NOSYNC)
        let rc = mdb_env_open(env, file ?? path, UInt32(flags), 0o644)
        if rc != 0 {
            mdb_env_close(env)
            try check(rc, "mdb_env_open")
        }
        return env!
    }

    func withEnvironment<T>(at file: String? = nil, durable: Bool = true, _ body: (OpaquePointer) throws -> T) throws
        -> T
    {
        let env = try openEnvironment(at: file, durable: durable)
        defer { mdb_env_close(env) }
        return try body(env)
    }

    func write(_ env: OpaquePointer, _ body: (OpaquePointer?, MDB_dbi, MDB_dbi) throws -> Void) throws {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
        do {
            var people: MDB_dbi = 0
            var meta: MDB_dbi = 0
            try check(mdb_dbi_open(txn, "people", UInt32(MDB_CREATE), &people), "mdb_dbi_open")
            try check(mdb_dbi_open(txn, "meta", UInt32(MDB_CREATE), &meta), "mdb_dbi_open")
            try body(txn, people, meta)
            try check(mdb_txn_commit(txn), "mdb_txn_commit")
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
    }

    func read<T>(_ env: OpaquePointer, _ body: (OpaquePointer?, MDB_dbi) throws -> T) throws -> T {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin")
        defer { mdb_txn_abort(txn) }
        var people: MDB_dbi = 0
        try check(mdb_dbi_open(txn, "people", 0, &people), "mdb_dbi_open")
        return try body(txn, people)
    }
}

func check(_ rc: Int32, _ call: String) throws {
    guard rc == 0 else { throw ScenarioError("\(call): \(String(cString: mdb_strerror(rc)))") }
}

/// Strata's record layout, written and read by hand (docs/FileFormat.md).
enum RawRecord {
    struct Field {
        var int: Int64 = 0
        var bytes = UnsafeRawBufferPointer(start: nil, count: 0)
    }

    static func key(_ id: Int) -> UInt64 { (UInt64(bitPattern: Int64(id)) ^ (1 << 63)).bigEndian }

    /// The index key of a string: Strata's order-preserving tag and bytes.
    static func indexKey(_ string: String) -> [UInt8] { [0x05] + Array(string.utf8) }

    static func varint(_ out: inout [UInt8], _ value: UInt64) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    static func begin(_ out: inout [UInt8], version: UInt64, count: Int) {
        out.append(1)
        varint(&out, version)
        varint(&out, UInt64(count))
    }

    static func int(_ out: inout [UInt8], id: UInt64, _ value: Int64) {
        varint(&out, id)
        out.append(3)
        varint(&out, UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    static func string(_ out: inout [UInt8], id: UInt64, _ bytes: UnsafeRawBufferPointer) {
        varint(&out, id)
        out.append(5)
        varint(&out, UInt64(bytes.count))
        out.append(contentsOf: bytes)
    }

    static func readVarint(_ base: UnsafeRawPointer, _ p: inout Int) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = base.load(fromByteOffset: p, as: UInt8.self)
            p += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// The four fields of a version-1 record, in order (ints decoded,
    /// strings as views).
    static func fields(_ value: MDB_val) -> (Field, Field, Field, Field) {
        let base = UnsafeRawPointer(value.mv_data!)
        var p = 1
        _ = readVarint(base, &p)
        _ = readVarint(base, &p)
        return (field(base, &p), field(base, &p), field(base, &p), field(base, &p))
    }

    /// The three fields of a record after the closure migration.
    static func fields3(_ value: MDB_val) -> (Field, Field, Field) {
        let base = UnsafeRawPointer(value.mv_data!)
        var p = 1
        _ = readVarint(base, &p)
        _ = readVarint(base, &p)
        return (field(base, &p), field(base, &p), field(base, &p))
    }

    @inline(__always)
    static func field(_ base: UnsafeRawPointer, _ p: inout Int) -> Field {
        _ = readVarint(base, &p)
        let tag = base.load(fromByteOffset: p, as: UInt8.self)
        p += 1
        var field = Field()
        if tag == 3 {
            let raw = readVarint(base, &p)
            field.int = Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
        } else {
            let length = Int(readVarint(base, &p))
            field.bytes = UnsafeRawBufferPointer(start: base + p, count: length)
            p += length
        }
        return field
    }

    /// The age: the int field with id 4 (or 5 after a type change).
    static func age(_ value: MDB_val) -> Int64 {
        let base = UnsafeRawPointer(value.mv_data!)
        var p = 1
        _ = readVarint(base, &p)
        let count = Int(readVarint(base, &p))
        for _ in 0 ..< count {
            let id = readVarint(base, &p)
            let tag = base.load(fromByteOffset: p, as: UInt8.self)
            p += 1
            if tag == 3 {
                let raw = readVarint(base, &p)
                if id >= 4 { return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1) }
            } else {
                p += Int(readVarint(base, &p))
            }
        }
        return 0
    }
}
