// Strata, the C floor, raw LMDB from Swift and GRDB doing the same jobs on
// the same data, in one process, interleaved over several rounds; prints the
// medians and the ratios, then the peak memory of each trial run once more
// in a child process of its own, and writes everything as JSON. Every run
// checks its result against the expected checksum, so a fast wrong answer
// fails.
//
//     swift run -c release StrataCompare [--objects N] [--rounds R] [--json PATH] [--only a,b,...]
//         [--engines strata,c,c-append,lmdb,grdb,grdb-sql,strata-typed,grdb-record] [--memory yes|no] [--layout yes|no]
//         [--drop-files yes|no]
//
// `c-append` runs the migrations a and c into a fresh tree (the migration
// floor, `MDB_APPEND`). `strata-typed` runs scenarios a (a typed step), e, f and g, `grdb-record` e and f: typed models
// against GRDB's record types. Their scan (f) and Strata typed's lookups (g)
// decode every object into the struct, where the other engines read one
// property. Scenarios i to o are
// the relationships (links, backlinks, cascades, adding a link property),
// for strata, strata-typed (i to k), grdb and grdb-record (GRDB's
// associations); their own ratios follow the main table.

import Foundation
import Scenarios

struct Options {
    var objects = 1_000_000
    var rounds = 3
    var json: String?
    var only: Set<Scenario> = Set(Scenario.allCases)
    var engines: [Engine] = Engine.allCases
    /// Measure each trial's peak memory in a child process.
    var memory = true
    /// Time the rewrite of scenario a on Strata's records and on fixed
    /// records, from C and from Swift.
    var layout = true
    /// Delete each engine's files, input templates included, after each of
    /// its trials: slower (the inputs are written again), for disks that
    /// cannot hold every engine's files at once.
    var dropFiles = false
    /// The child's side of the memory measurement: `engine:scenario`.
    var isolate: (Engine, Scenario)?
    var folder: String?

    init(_ arguments: ArraySlice<String>) throws {
        var rest = arguments
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { throw ScenarioError("\(flag) needs a value") }
            switch flag {
            case "--objects": objects = Int(value) ?? 0
            case "--rounds": rounds = Int(value) ?? 0
            case "--json": json = value
            case "--only": only = Set(value.split(separator: ",").compactMap { Scenario(rawValue: String($0)) })
            case "--engines": engines = value.split(separator: ",").compactMap { Engine(rawValue: String($0)) }
            case "--memory": memory = value == "yes"
            case "--layout": layout = value == "yes"
            case "--drop-files": dropFiles = value == "yes"
            case "--folder": folder = value
            case "--isolate":
                let parts = value.split(separator: ":").map(String.init)
                guard parts.count == 2, let engine = Engine(rawValue: parts[0]),
                    let scenario = Scenario(rawValue: parts[1])
                else { throw ScenarioError("--isolate takes engine:scenario, not \(value)") }
                isolate = (engine, scenario)
            default: throw ScenarioError("unknown option \(flag)")
            }
        }
        guard objects > 0, rounds > 0, !only.isEmpty, !engines.isEmpty else {
            throw ScenarioError(
                "--objects and --rounds must be positive, --only must name scenarios a to o, --engines strata, c, c-append, lmdb, grdb, grdb-sql, strata-typed or grdb-record"
            )
        }
    }
}

func milliseconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func machine() -> String {
    let cpu =
        (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
        .split(separator: "\n").first { $0.hasPrefix("model name") }?
        .split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
    return "\(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores"
}

/// Prints rows as a table, the first column left-aligned, the others right.
func printTable(_ header: [String], _ rows: [[String]]) {
    let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max()! }
    for (index, row) in ([header] + rows).enumerated() {
        print(
            row.enumerated().map { column, text in
                column == 0
                    ? text.padding(toLength: widths[0], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - text.count) + text
            }.joined(separator: "  "))
        if index == 0 { print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
    }
}

func cell(_ value: Double?) -> String { value.map { String(format: "%.1f", $0) } ?? "-" }
func ratio(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "-" }

/// A trial whose run threw: the engine could not do the job at all. The
/// table shows it as failed and the run goes on; a wrong result (a bad
/// checksum) still stops everything.
struct TrialFailed: Error {
    let error: any Error
}

/// The bytes of the files a trial left in `folder` (input templates and
/// lock files aside): for a migration, the file's size after it.
func filesSize(in folder: URL) -> Int {
    let manager = FileManager.default
    let names = (try? manager.contentsOfDirectory(atPath: folder.path)) ?? []
    return names.filter { !$0.hasPrefix("template-") && !$0.hasSuffix("-lock") }.reduce(0) { total, name in
        let size = (try? manager.attributesOfItem(atPath: folder.appendingPathComponent(name).path)[.size]) as? Int
        return total + (size ?? 0)
    }
}

/// Runs one trial in `folder`: sets up, times the run, checks the result,
/// and passes the size of the files it left to `sized`. Returns nil when
/// the engine has no such trial.
func timeTrial(
    _ trial: Trial?, expected: UInt64, what: String, folder: URL? = nil, sized: (Int) -> Void = { _ in }
) throws -> Double? {
    guard let trial else { return nil }
    defer { trial.cleanup() }
    try trial.setup()
    trial.split?.milliseconds = nil
    let whole = try milliseconds {
        do { try trial.run() } catch { throw TrialFailed(error: error) }
    }
    let elapsed = trial.split?.milliseconds ?? whole
    let checksum = try trial.verify()
    guard checksum == expected else {
        throw ScenarioError("\(what) got a wrong result: checksum \(checksum), expected \(expected)")
    }
    if let folder { sized(filesSize(in: folder)) }
    return elapsed
}

func rotated<T>(_ items: [T], by round: Int) -> [T] {
    Array(items[(round % items.count)...] + items[..<(round % items.count)])
}

func run() throws {
    let options = try Options(CommandLine.arguments.dropFirst())
    let n = options.objects
    if let isolate = options.isolate {
        guard let folder = options.folder else { throw ScenarioError("--isolate needs --folder") }
        return try runIsolated(isolate.0, isolate.1, n: n, folder: URL(fileURLWithPath: folder))
    }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-compare-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    func engineFolder(_ name: String) throws -> URL {
        let url = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
    let scenarios = Scenario.allCases.filter { options.only.contains($0) }
    let engines = options.engines
    let expected = Dictionary(uniqueKeysWithValues: scenarios.map { ($0, Dataset.expected($0, n: n)) })
    let layoutExpected = Dataset.expected(.closureMigration, n: n)
    var times: [Scenario: [Engine: [Double]]] = [:]
    var layoutTimes: [RecordLayoutVariant: [Double]] = [:]
    /// The size of each migration's files after its last run.
    var sizes: [Scenario: [Engine: Int]] = [:]
    var failures: [Scenario: [Engine: String]] = [:]
    print(
        "\(engines.map(\.title).joined(separator: ", ")) on \(n) objects, \(options.rounds) rounds, \(machine()). Median milliseconds:"
    )
    for round in 0 ..< options.rounds {
        for scenario in scenarios {
            // Rotate the order each round, so no engine always runs first.
            for engine in rotated(engines, by: round) {
                let place = try engineFolder(engine.rawValue)
                defer { if options.dropFiles { try? FileManager.default.removeItem(at: place) } }
                let trial = makeTrial(engine, scenario, n: n, folder: place)
                let what = "\(engine.title) in \(scenario.title)"
                do {
                    let sized = { (bytes: Int) in sizes[scenario, default: [:]][engine] = bytes }
                    if let elapsed = try timeTrial(
                        trial, expected: expected[scenario]!, what: what,
                        folder: scenario.isMigration ? place : nil, sized: sized)
                    {
                        times[scenario, default: [:]][engine, default: []].append(elapsed)
                    }
                } catch let failure as TrialFailed {
                    failures[scenario, default: [:]][engine] = "\(failure.error)"
                }
            }
        }
        if options.layout {
            for variant in rotated(RecordLayoutVariant.allCases, by: round) {
                let place = try engineFolder("layout")
                defer { if options.dropFiles { try? FileManager.default.removeItem(at: place) } }
                let trial = makeRecordLayoutTrial(variant, n: n, folder: place)
                if let elapsed = try timeTrial(trial, expected: layoutExpected, what: variant.title) {
                    layoutTimes[variant, default: []].append(elapsed)
                }
            }
        }
        FileHandle.standardError.write(Data("round \(round + 1) of \(options.rounds) done\n".utf8))
    }

    // Ratios: the C floor's time over Strata's (the share of the floor's
    // speed Strata reaches), GRDB's over Strata's, and the C floor's over the
    // Swift raw trial's.
    let ratios: [(String, Engine, Engine)] = [
        ("C/Strata", .c, .strata), ("GRDB/Strata", .grdb, .strata), ("GRDB SQL/Strata", .grdbSQL, .strata),
        ("C/LMDB (Swift)", .c, .lmdb), ("C/Strata typed", .c, .strataTyped),
        ("C append/Strata", .cAppend, .strata), ("C append/Strata typed", .cAppend, .strataTyped),
        ("GRDB records/Strata typed", .grdbRecord, .strataTyped), ("GRDB SQL/Strata typed", .grdbSQL, .strataTyped),
    ].filter { engines.contains($0.1) && engines.contains($0.2) }
    var rows: [[String]] = []
    var json: [[String: Any]] = []
    for scenario in scenarios {
        let medians = times[scenario, default: [:]].mapValues(median)
        let over = { (top: Engine, bottom: Engine) -> Double? in
            guard let a = medians[top], let b = medians[bottom], b > 0 else { return nil }
            return a / b
        }
        rows.append(
            [scenario.title]
                + engines.map { failures[scenario]?[$0] != nil ? "failed" : cell(medians[$0]) }
                + ratios.map { ratio(over($0.1, $0.2)) })
        var entry: [String: Any] = ["scenario": scenario.rawValue, "title": scenario.title, "objects": n]
        for (engine, values) in times[scenario, default: [:]] {
            entry[engine.rawValue] = ["medianMilliseconds": median(values), "runs": values]
        }
        for (name, top, bottom) in ratios { entry[name] = over(top, bottom) }
        for (engine, message) in failures[scenario, default: [:]] { entry[engine.rawValue] = ["error": message] }
        json.append(entry)
    }
    printTable(["scenario"] + engines.map(\.title) + ratios.map(\.0), rows)
    for scenario in scenarios {
        for engine in engines {
            if let message = failures[scenario]?[engine] {
                print("Failed: \(engine.title) in \(scenario.title): \(message)")
            }
        }
    }
    print(
        "Ratios are one time over another: C/Strata is the share of the C floor's speed Strata reaches; above 1, GRDB/Strata means Strata is faster."
    )
    let sized = scenarios.filter { sizes[$0] != nil }
    if !sized.isEmpty {
        print("\nFile size after each migration, MB (the last round's run):")
        printTable(
            ["scenario"] + engines.map(\.title),
            sized.map { scenario in
                [scenario.title]
                    + engines.map { engine in
                        sizes[scenario]?[engine].map { String(format: "%.1f", Double($0) / 1_048_576) } ?? "-"
                    }
            })
    }
    var document: [String: Any] = ["objects": n, "rounds": options.rounds, "machine": machine(), "results": json]
    document["fileBytesAfter"] = sized.flatMap { scenario in
        engines.compactMap { engine in
            sizes[scenario]?[engine].map { ["scenario": scenario.rawValue, "engine": engine.rawValue, "bytes": $0] }
        }
    }
    if let relationships = relationshipTargets(times, failures, engines: engines) {
        document["relationships"] = relationships
    }

    if options.layout && !layoutTimes.isEmpty {
        print("\nThe rewrite of a, by language and record layout (median ms, and over the C floor on fixed records):")
        let floor = layoutTimes[.cFixedRecords].map(median)
        let layoutRows = RecordLayoutVariant.allCases.compactMap { variant -> [String]? in
            guard let values = layoutTimes[variant] else { return nil }
            return [variant.title, cell(median(values)), ratio(floor.map { median(values) / $0 })]
        }
        printTable(["rewrite", "ms", "/ C fixed"], layoutRows)
        document["recordLayout"] = RecordLayoutVariant.allCases.compactMap { variant -> [String: Any]? in
            guard let values = layoutTimes[variant] else { return nil }
            return [
                "variant": variant.rawValue, "title": variant.title, "medianMilliseconds": median(values),
                "runs": values,
            ]
        }
    }

    if options.memory {
        // The memory pass can take as long as the rounds: show the times now.
        fflush(nil)
        FileHandle.standardError.write(Data("measuring peak memory, one child per trial\n".utf8))
        var peaks: [Scenario: [Engine: MemoryPeak]] = [:]
        for scenario in scenarios {
            for engine in engines where makeTrial(engine, scenario, n: n, folder: folder) != nil {
                let place = try engineFolder(engine.rawValue)
                defer { if options.dropFiles { try? FileManager.default.removeItem(at: place) } }
                peaks[scenario, default: [:]][engine] = try measureMemory(
                    engine, scenario, n: n, folder: place, expected: expected[scenario]!)
            }
        }
        func mb(_ kB: Int) -> String { String(format: "%.0f", Double(kB) / 1024) }
        print("\nPeak memory during the timed part, MB: anonymous / file-backed (smaps_rollup sampled every 2 ms),")
        print("and [VmHWM, the kernel's peak resident set]. Baseline before the run in the JSON.")
        printTable(
            ["scenario"] + engines.map(\.title),
            scenarios.map { scenario in
                [scenario.title]
                    + engines.map { engine in
                        guard let peak = peaks[scenario]?[engine] else { return "-" }
                        return "\(mb(peak.anonymousKB)) / \(mb(peak.fileBackedKB)) [\(mb(peak.residentKB))]"
                    }
            })
        document["memory"] = scenarios.flatMap { scenario in
            engines.compactMap { engine -> [String: Any]? in
                guard let peak = peaks[scenario]?[engine] else { return nil }
                return [
                    "scenario": scenario.rawValue, "engine": engine.rawValue,
                    "peakAnonymousKB": peak.anonymousKB, "peakFileBackedKB": peak.fileBackedKB,
                    "peakResidentKB": peak.residentKB, "baselineAnonymousKB": peak.baselineAnonymousKB,
                    "baselineFileBackedKB": peak.baselineFileBackedKB, "samples": peak.samples,
                ]
            }
        }
    }

    if let path = options.json {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys]).write(to: url)
        print("Wrote \(path)")
    }
}

/// Prints each engine's ratios for the relationship targets
/// (docs/Benchmarks.md, "Relationships") and returns them for the JSON, or
/// nil when no relationship scenario ran.
func relationshipTargets(
    _ times: [Scenario: [Engine: [Double]]], _ failures: [Scenario: [Engine: String]], engines: [Engine]
) -> [[String: Any]]? {
    func over(_ top: Scenario, _ bottom: Scenario, _ engine: Engine) -> Double? {
        guard let a = times[top]?[engine].map(median), let b = times[bottom]?[engine].map(median), b > 0 else {
            return nil
        }
        return a / b
    }
    func shown(_ top: Scenario, _ bottom: Scenario, _ engine: Engine) -> String {
        failures[top]?[engine] != nil || failures[bottom]?[engine] != nil ? "failed" : ratio(over(top, bottom, engine))
    }
    let perQuery = { (engine: Engine) in times[.backlinks]?[engine].map { median($0) * 1000 / 10_000 } }
    let present = engines.filter { engine in
        times.contains { $0.key.isRelationship && $0.value[engine] != nil }
            || failures.contains { $0.key.isRelationship && $0.value[engine] != nil }
    }
    guard !present.isEmpty else { return nil }
    print("\nRelationships, each engine against itself (i/j: target <= 1.2, l/m: target <= 2, n/o: target about 1):")
    printTable(
        ["engine", "i/j follow/PK", "k us per query", "l/m cascade/direct", "n/o add link/add int"],
        present.map { engine in
            [
                engine.title, shown(.followLinks, .ownerLookups, engine), cell(perQuery(engine)),
                shown(.cascadeDelete, .directDelete, engine), shown(.addLink, .addInt, engine),
            ]
        })
    return present.map { engine in
        var entry: [String: Any] = ["engine": engine.rawValue]
        entry["followOverLookup"] = over(.followLinks, .ownerLookups, engine)
        entry["backlinkQueryMicroseconds"] = perQuery(engine)
        entry["cascadeOverDirect"] = over(.cascadeDelete, .directDelete, engine)
        entry["addLinkOverAddInt"] = over(.addLink, .addInt, engine)
        return entry
    }
}

do {
    try run()
} catch {
    FileHandle.standardError.write(Data("StrataCompare: \(error)\n".utf8))
    exit(1)
}
