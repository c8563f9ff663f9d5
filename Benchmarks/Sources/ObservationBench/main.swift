import Foundation
import Strata

// `make bench-observe`: the observation benchmarks of docs/Benchmarks.md,
// "Observation". Usage:
//   ObservationBench [all]                   every scenario, as a table
//   ObservationBench fanout N ROUNDS         item 2: 100 observations, one write
//   ObservationBench latency KIND N ROUNDS   items 3 and 4, KIND one of Kind
//   ObservationBench poll CALLS              item 5
//   ObservationBench grdb whole|object N ROUNDS
//   ObservationBench child-update FOLDER N ID SCORE   (used by KIND external)
// OBSBENCH_FOLDER sets where the files go; OBSBENCH_ROUNDS the writes per
// scenario of `all` (default 200); OBSBENCH_LARGE=0 skips the 1M objects.

let environment = ProcessInfo.processInfo.environment
let folder = environment["OBSBENCH_FOLDER"] ?? NSTemporaryDirectory() + "strata-observation"
let arguments = Array(CommandLine.arguments.dropFirst())

func argument(_ index: Int, _ fallback: Int) -> Int {
    index < arguments.count ? Int(arguments[index]) ?? fallback : fallback
}

func row(_ name: String, _ n: Int, _ result: LatencyResult) {
    let fromWrite = Summary(nanoseconds: result.fromWrite)
    let fromReturn = Summary(nanoseconds: result.fromReturn)
    print(
        name.padding(toLength: 34, withPad: " ", startingAt: 0)
            + String(
                format: "%9d %11.2f %10.1f %10.1f %10.1f %10.1f %5d", n, Double(result.initial) / 1e6,
                fromWrite.median, fromWrite.p90, fromReturn.median, fromReturn.p90, fromWrite.count))
}

func header() {
    let columns = ["objects", "initial ms", "write µs", "p90", "return µs", "p90"]
    print(
        "scenario".padding(toLength: 34, withPad: " ", startingAt: 0)
            + zip(columns, [9, 12, 11, 11, 11, 11]).map { String(repeating: " ", count: $1 - $0.count) + $0 }
            .joined() + "     n")
    print(
        "  write: from just before the write (commit included) to the last consumer's element;"
            + " return: from the write's return")
}

/// The command; it runs in a task while the main thread waits, since
/// valgrind stops on the signal wait of an `async` main. Detached: top-level
/// code is on the main actor, whose thread waits.
func run() async throws {
    switch arguments.first ?? "all" {
    case "child-update":
        let n = argument(2, 0)
        let db = try openItems(n, in: arguments[1], reuse: true)
        try update(db, id: argument(3, 0), of: n, score: argument(4, 0))
        db.close()
    case "fanout":
        let n = argument(1, 10_000)
        header()
        row("100 observations (fan-out)", n, try await fanout(n: n, rounds: argument(2, 200), folder: folder))
    case "latency":
        guard arguments.count > 1, let kind = Kind(rawValue: arguments[1]) else {
            print("kinds: " + Kind.allCases.map(\.rawValue).joined(separator: ", "))
            exit(2)
        }
        let n = argument(2, 100_000)
        header()
        row(kind.title, n, try await latency(kind, n: n, rounds: argument(3, 200), folder: folder))
    case "poll":
        let calls = argument(1, 1_000_000)
        print(
            String(
                format: "checkForExternalChanges(), nothing new: %.0f ns per call",
                try await poll(calls: calls, folder: folder)))
    case "grdb":
        let object = arguments.count > 1 && arguments[1] == "object"
        let n = argument(2, 100_000)
        header()
        row(
            "GRDB ValueObservation " + (object ? "fetchOne" : "fetchAll"), n,
            try await grdbLatency(object: object, n: n, rounds: argument(3, 200), folder: folder))
    case "all":
        let rounds = Int(environment["OBSBENCH_ROUNDS"] ?? "") ?? 200
        let large = environment["OBSBENCH_LARGE"] != "0"
        header()
        row("100 observations (fan-out)", 10_000, try await fanout(n: 10_000, rounds: rounds, folder: folder))
        for n in large ? [100_000, 1_000_000] : [100_000] {
            for kind in [Kind.whole, .object] {
                row(kind.title, n, try await latency(kind, n: n, rounds: rounds, folder: folder))
            }
        }
        for kind in [Kind.sortedIndexed, .sortedPlain, .rangeFilter, .limit] {
            row(kind.title, 100_000, try await latency(kind, n: 100_000, rounds: rounds, folder: folder))
        }
        row(Kind.external.title, 100_000, try await latency(.external, n: 100_000, rounds: 50, folder: folder))
        row(
            "GRDB ValueObservation fetchAll", 100_000,
            try await grdbLatency(object: false, n: 100_000, rounds: rounds, folder: folder))
        row(
            "GRDB ValueObservation fetchOne", 100_000,
            try await grdbLatency(object: true, n: 100_000, rounds: rounds, folder: folder))
        print(
            String(
                format: "checkForExternalChanges(), nothing new: %.0f ns per call",
                try await poll(calls: 1_000_000, folder: folder)))
        try? FileManager.default.removeItem(atPath: folder)
    default:
        print(
            "usage: ObservationBench [all | fanout N ROUNDS | latency KIND N ROUNDS | poll CALLS | grdb whole|object N ROUNDS]"
        )
        exit(2)
    }
}

let done = DispatchSemaphore(value: 0)
Task.detached {
    do {
        try await run()
    } catch {
        fatalError("\(error)")
    }
    done.signal()
}
done.wait()
