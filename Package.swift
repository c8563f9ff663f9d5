// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Strata",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "Strata", targets: ["Strata"]),
        .library(name: "StrataTesting", targets: ["StrataTesting"]),
        .executable(name: "strata", targets: ["strata"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        .target(
            name: "Strata",
            dependencies: [
                "CLMDB",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Helpers for testing migrations: files at old schema versions.
        .target(
            name: "StrataTesting",
            dependencies: ["Strata"]
        ),
        .executableTarget(
            name: "strata",
            dependencies: [
                "Strata",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "StrataTests",
            dependencies: [
                "Strata",
                "StrataTesting",
                .product(name: "Logging", package: "swift-log"),
            ],
            // Database files written by earlier versions of Strata.
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
