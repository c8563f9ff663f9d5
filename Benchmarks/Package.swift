// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package so that the library stays free of
// their dependencies. Run them from the repository root with `make bench-quick`.
let package = Package(
    name: "StrataBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "Strata", path: ".."),
    ],
    targets: [
        .systemLibrary(
            name: "CLMDBBench",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        .executableTarget(
            name: "QuickCompare",
            dependencies: [
                .product(name: "Strata", package: "Strata"),
                "CLMDBBench",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
