// Strata, raw LMDB and GRDB doing the same jobs on the same data, in one
// process, interleaved over several rounds; prints the medians and the
// ratios, and writes them as JSON. Every run checks its result against the
// expected checksum, so a fast wrong answer fails.
//
//     swift run -c release StrataCompare [--objects N] [--rounds R] [--json PATH] [--only a,b,...] [--engines strata,lmdb,...]

import Foundation
import Scenarios

struct Options {
    var objects = 1_000_000
    var rounds = 3
    var json: String?
    var only: Set<Scenario> = Set(Scenario.allCases)
    var engines: [Engine] = Engine.allCases

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
            default: throw ScenarioError("unknown option \(flag)")
            }
        }
        guard objects > 0, rounds > 0, !only.isEmpty, !engines.isEmpty else {
            throw ScenarioError(
                "--objects and --rounds must be positive, --only must name scenarios a to h, --engines strata, lmdb, grdb or grdb-sql"
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

func run() throws {
    let options = try Options(CommandLine.arguments.dropFirst())
    let n = options.objects
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("strata-compare-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let scenarios = Scenario.allCases.filter { options.only.contains($0) }
    let expected = Dictionary(uniqueKeysWithValues: scenarios.map { ($0, Dataset.expected($0, n: n)) })
    var times: [Scenario: [Engine: [Double]]] = [:]
    print("Strata, raw LMDB and GRDB on \(n) objects, \(options.rounds) rounds, \(machine()). Median milliseconds:")
    for round in 0 ..< options.rounds {
        for scenario in scenarios {
            // Rotate the order each round, so no engine always runs first.
            let engines = options.engines
            let rotated = Array(engines[(round % engines.count)...] + engines[..<(round % engines.count)])
            for engine in rotated {
                let engineFolder = folder.appendingPathComponent(engine.rawValue)
                try FileManager.default.createDirectory(at: engineFolder, withIntermediateDirectories: true)
                guard let trial = makeTrial(engine, scenario, n: n, folder: engineFolder) else { continue }
                defer { trial.cleanup() }
                try trial.setup()
                let elapsed = try milliseconds { try trial.run() }
                let checksum = try trial.verify()
                guard checksum == expected[scenario] else {
                    throw ScenarioError(
                        "\(engine.rawValue) got a wrong result in \(scenario.title): checksum \(checksum), expected \(expected[scenario]!)"
                    )
                }
                times[scenario, default: [:]][engine, default: []].append(elapsed)
            }
        }
        FileHandle.standardError.write(Data("round \(round + 1) of \(options.rounds) done\n".utf8))
    }

    func cell(_ value: Double?) -> String { value.map { String(format: "%.1f", $0) } ?? "-" }
    func ratio(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "-" }
    let header = ["scenario", "Strata", "LMDB", "GRDB", "GRDB SQL", "LMDB/Strata", "GRDB/Strata", "GRDB SQL/Strata"]
    var rows: [[String]] = []
    var json: [[String: Any]] = []
    for scenario in scenarios {
        let medians = times[scenario, default: [:]].mapValues(median)
        let strata = medians[.strata]
        let over = { (engine: Engine) -> Double? in
            guard let strata, let other = medians[engine], strata > 0 else { return nil }
            return other / strata
        }
        rows.append([
            scenario.title, cell(strata), cell(medians[.lmdb]), cell(medians[.grdb]), cell(medians[.grdbSQL]),
            ratio(over(.lmdb)), ratio(over(.grdb)), ratio(over(.grdbSQL)),
        ])
        var entry: [String: Any] = ["scenario": scenario.rawValue, "title": scenario.title, "objects": n]
        for (engine, values) in times[scenario, default: [:]] {
            entry[engine.rawValue] = ["medianMilliseconds": median(values), "runs": values]
        }
        entry["lmdbOverStrata"] = over(.lmdb)
        entry["grdbOverStrata"] = over(.grdb)
        entry["grdbSQLOverStrata"] = over(.grdbSQL)
        json.append(entry)
    }
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
    print(
        "Ratios are time over Strata's time: above 1, Strata is faster; LMDB/Strata is the share of raw LMDB's speed Strata reaches."
    )
    if let path = options.json {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let document: [String: Any] = ["objects": n, "rounds": options.rounds, "machine": machine(), "results": json]
        try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys]).write(to: url)
        print("Wrote \(path)")
    }
}

do {
    try run()
} catch {
    FileHandle.standardError.write(Data("StrataCompare: \(error)\n".utf8))
    exit(1)
}
