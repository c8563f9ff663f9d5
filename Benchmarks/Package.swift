// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package so that the library stays free of
// their dependencies. From the repository root:
//   make bench          package-benchmark: wall clock, mallocs, peak memory
//   make bench-compare  Strata, raw LMDB and GRDB side by side (N=1000000)
//   make bench-observe  observation: latency, fan-out, cost of an unobserved write
//   make bench-queries  each query kind of issue 25, Strata's typed API against GRDB's query interface
let package = Package(
    name: "StrataBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "Strata", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLMDBBench",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        // The floor: every scenario through LMDB's C API, written in C.
        .target(
            name: "CLMDBFloor",
            linkerSettings: [.linkedLibrary("lmdb")]
        ),
        // The scenarios, for Strata, raw LMDB (in C and in Swift) and GRDB,
        // each checking its result.
        .target(
            name: "Scenarios",
            dependencies: [
                .product(name: "Strata", package: "Strata"),
                .product(name: "GRDB", package: "GRDB.swift"),
                "CLMDBBench",
                "CLMDBFloor",
            ]
        ),
        // `make bench-compare`: the engines interleaved in one process.
        .executableTarget(
            name: "StrataCompare",
            dependencies: ["Scenarios"]
        ),
        // Primary-key lookups, Strata against the C floor, one function
        // each, for callgrind (docs/Benchmarks.md, "Lookups at 10M").
        .executableTarget(
            name: "LookupCost",
            dependencies: ["Scenarios", "CLMDBFloor"]
        ),
        // `make bench-observe`: observation latency, fan-out and poll cost,
        // beside GRDB's ValueObservation.
        .executableTarget(
            name: "ObservationBench",
            dependencies: [
                .product(name: "Strata", package: "Strata"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // `make bench-queries`: each query kind at N objects, Strata's
        // typed API against GRDB's query interface, interleaved.
        .executableTarget(
            name: "QueryCompare",
            dependencies: [
                .product(name: "Strata", package: "Strata"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // `make bench-sync`: sync's costs, with and without sync enabled.
        .executableTarget(
            name: "SyncBench",
            dependencies: [.product(name: "Strata", package: "Strata")]
        ),
        // `make bench`: package-benchmark's suite.
        .executableTarget(
            name: "StrataBenchmarks",
            dependencies: [
                "Scenarios",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/StrataBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
