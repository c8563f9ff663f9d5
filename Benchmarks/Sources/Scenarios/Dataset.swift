import Foundation

/// The data every engine stores: `Person(id: int primary key, firstName,
/// lastName: string, age: int)`, generated from the id alone so that every
/// engine, and every check, agrees on it.
public enum Dataset {
    public static func firstName(_ id: Int) -> String { firstNames[id % 1000] }
    public static func lastName(_ id: Int) -> String { lastNames[id % 10_000] }

    /// The names, made once: inserts take them in their timed loops, and
    /// Swift's string interpolation (`"First\(id % 1000)"`) costs about
    /// 1,000 instructions per object, more than half of the C floor's whole
    /// insert, which formats its names in C. Every name is at most 15 UTF-8
    /// bytes, so a copy is a small string held inline: no allocation.
    /// ``expected(_:n:)`` makes them, before anything is timed.
    private static let firstNames = (0 ..< 1000).map { "First\($0)" }
    private static let lastNames = (0 ..< 10_000).map { "Last\($0)" }
    public static func age(_ id: Int) -> Int { id % 90 }
    /// Scenario c stores the age as a string first.
    public static func ageText(_ id: Int) -> String { String(age(id)) }
    public static func fullName(_ id: Int) -> String { firstName(id) + " " + lastName(id) }

    /// The seeded primary keys scenario g looks up.
    public static func lookupKeys(_ n: Int) -> [Int] {
        var generator = SplitMix64(seed: 42)
        return (0 ..< 100_000).map { _ in Int(generator.next() % UInt64(n)) }
    }

    /// The last names scenario h looks up through the index.
    public static func lookupNames(_ n: Int) -> [String] {
        var generator = SplitMix64(seed: 7)
        return (0 ..< 1000).map { _ in lastName(Int(generator.next() % UInt64(min(n, 10_000)))) }
    }

    /// The checksum each scenario must reproduce.
    public static func expected(_ scenario: Scenario, n: Int) -> UInt64 {
        precondition(firstNames.count + lastNames.count == 11_000)
        switch scenario {
        case .closureMigration:
            var hash = Checksum()
            for id in 0 ..< n { hash.add(fullName(id)) }
            return hash.value
        case .additiveMigration:
            var hash = Checksum()
            for id in 0 ..< n {
                hash.add(lastName(id))
                hash.add("-")
            }
            return hash.value
        case .typeChange, .scan, .insert:
            return UInt64((0 ..< n).reduce(0) { $0 + age($1) })
        case .openUpToDate:
            return UInt64(n)
        case .lookups:
            return UInt64(lookupKeys(n).reduce(0) { $0 + age($1) })
        case .indexLookups:
            var perName: [String: Int] = [:]
            for id in 0 ..< n { perName[lastName(id), default: 0] += age(id) }
            return UInt64(lookupNames(n).reduce(0) { $0 + (perName[$1] ?? 0) })
        case .followLinks, .ownerLookups, .backlinks, .cascadeDelete, .directDelete, .addLink, .addInt:
            return Dogs.expected(scenario, n: n)
        }
    }
}

/// FNV-1a over strings, each followed by a zero byte.
public struct Checksum {
    public private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    public init() {}

    public mutating func add(_ string: String) {
        var copy = string
        copy.withUTF8 { add(UnsafeRawBufferPointer($0)) }
    }

    public mutating func add(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes { value = (value ^ UInt64(byte)) &* 0x100_0000_01b3 }
        value = (value ^ 0) &* 0x100_0000_01b3
    }
}

/// SplitMix64: a tiny seeded generator.
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The scenarios of the comparison (docs/Benchmarks.md).
public enum Scenario: String, CaseIterable, Sendable {
    case closureMigration = "a"
    case additiveMigration = "b"
    case typeChange = "c"
    case openUpToDate = "d"
    case insert = "e"
    case scan = "f"
    case lookups = "g"
    case indexLookups = "h"
    // Relationships (docs/Benchmarks.md, "Relationships"): the people and
    // `n` dogs linking to them (``Dogs``).
    case followLinks = "i"
    case ownerLookups = "j"
    case backlinks = "k"
    case cascadeDelete = "l"
    case directDelete = "m"
    case addLink = "n"
    case addInt = "o"

    public var title: String {
        switch self {
        case .closureMigration: "a. closure migration (fullName)"
        case .additiveMigration: "b. additive migration"
        case .typeChange: "c. type change (age string -> int)"
        case .openUpToDate: "d. open an up-to-date file"
        case .insert: "e. insert N in one transaction"
        case .scan: "f. full scan reading one property"
        case .lookups: "g. 100k random primary-key lookups"
        case .indexLookups: "h. 1,000 index equality lookups"
        case .followLinks: "i. follow 100k to-one links (dog.owner)"
        case .ownerLookups: "j. the same 100k owners by primary key"
        case .backlinks: "k. 10,000 backlink queries, 10 dogs each"
        case .cascadeDelete: "l. delete a person, cascading to 100k dogs"
        case .directDelete: "m. delete the same 100k dogs directly"
        case .addLink: "n. add a link property (schema version 2)"
        case .addInt: "o. add an int property (schema version 2)"
        }
    }

    /// Whether the scenario rewrites a file's records (a, c): the compare
    /// run reports the file's size after it.
    public var isMigration: Bool { self == .closureMigration || self == .typeChange }

    /// Whether the scenario works on the relationships' data (i to o).
    public var isRelationship: Bool {
        switch self {
        case .followLinks, .ownerLookups, .backlinks, .cascadeDelete, .directDelete, .addLink, .addInt: true
        default: false
        }
    }
}

/// Who does the work.
public enum Engine: String, CaseIterable, Sendable {
    case strata
    /// LMDB's C API doing the same byte work, from C: the floor.
    case c
    /// The migration floor, from C: the migrations (a, c) write the new
    /// records into a fresh tree, appended in key order (`MDB_APPEND`)
    /// after emptying the old one, in one transaction.
    case cAppend = "c-append"
    /// LMDB's C API doing the same byte work, from Swift.
    case lmdb
    /// GRDB, row by row from Swift (a Row cursor and an UPDATE by id).
    case grdb
    /// GRDB running one SQL statement where one exists (migrations only).
    case grdbSQL = "grdb-sql"
    /// Strata through typed models (`Model` structs): insert (e) and a full
    /// scan decoding every object into the struct (f).
    case strataTyped = "strata-typed"
    /// GRDB through record types (`FetchableRecord`, `PersistableRecord`):
    /// `insert(db)` per object (e) and `fetchCursor` decoding every row
    /// into the struct (f).
    case grdbRecord = "grdb-record"

    /// The engine's name in tables.
    public var title: String {
        switch self {
        case .strata: "Strata"
        case .c: "C"
        case .cAppend: "C append"
        case .lmdb: "LMDB (Swift)"
        case .grdb: "GRDB"
        case .grdbSQL: "GRDB SQL"
        case .strataTyped: "Strata typed"
        case .grdbRecord: "GRDB records"
        }
    }
}

/// One measurable run: `setup` builds the input (not timed), `run` is the
/// work that is timed, `verify` reads the result back and returns its
/// checksum (not timed).
public struct Trial {
    public let setup: () throws -> Void
    public let run: () throws -> Void
    public let verify: () throws -> UInt64
    public let cleanup: () -> Void
    /// When set, `run` times the part that counts itself, and this holds
    /// that time: for the runs whose objects are valid only inside the
    /// transaction that reads them, which must read them first.
    public var split: Split? = nil
}

/// The time of the measured part of a run, for a ``Trial`` whose run does
/// untimed work first.
public final class Split {
    public var milliseconds: Double?

    public init() {}

    /// Runs `body`, keeping its time.
    public func measure<T>(_ body: () throws -> T) rethrows -> T {
        let start = DispatchTime.now().uptimeNanoseconds
        defer { milliseconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 }
        return try body()
    }
}

public struct ScenarioError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The trial of `scenario` for `engine` on `n` objects in `folder`, or nil
/// when the engine has no such form (pure SQL exists for migrations only).
public func makeTrial(_ engine: Engine, _ scenario: Scenario, n: Int, folder: URL) -> Trial? {
    if scenario.isRelationship {
        return switch engine {
        case .strata: StrataDogTrials(n: n, folder: folder, typed: false).trial(scenario)
        case .strataTyped: StrataDogTrials(n: n, folder: folder, typed: true).trial(scenario)
        case .grdb: GRDBDogTrials(n: n, folder: folder, records: false).trial(scenario)
        case .grdbRecord: GRDBDogTrials(n: n, folder: folder, records: true).trial(scenario)
        case .c, .cAppend, .lmdb, .grdbSQL: nil
        }
    }
    return switch engine {
    case .strata: StrataTrials(n: n, folder: folder).trial(scenario)
    case .c: CFloorTrials(n: n, folder: folder).trial(scenario)
    case .cAppend: CFloorTrials(n: n, folder: folder, appending: true).trial(scenario)
    case .lmdb: LMDBTrials(n: n, folder: folder).trial(scenario)
    case .grdb: GRDBTrials(n: n, folder: folder, pureSQL: false).trial(scenario)
    case .grdbSQL: GRDBTrials(n: n, folder: folder, pureSQL: true).trial(scenario)
    case .strataTyped: StrataTypedTrials(n: n, folder: folder).trial(scenario)
    case .grdbRecord: GRDBRecordTrials(n: n, folder: folder).trial(scenario)
    }
}

/// Copies an input file into place and flushes it to disk, so that the
/// timed run does not pay for writing back the copy's pages when it syncs.
func copyInput(_ template: URL, to path: String) throws {
    try FileManager.default.copyItem(atPath: template.path, toPath: path)
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw ScenarioError("cannot open \(path) to sync it") }
    defer { close(fd) }
    guard fsync(fd) == 0 else { throw ScenarioError("fsync of \(path) failed") }
}
