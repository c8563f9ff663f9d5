// swift-tools-version: 6.1
import CompilerPluginSupport
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
        // Any swift-syntax an app's other macro packages may need, from the oldest
        // this builds and passes with to the newest checked (603.0.1, which also
        // ends the "Internal Error" lines of swiftlang/swift#86833).
        .package(url: "https://github.com/swiftlang/swift-syntax", "602.0.0" ..< "604.0.0"),
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
                "StrataMacros",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The compiler plug-in behind @Model: it only writes source code, so
        // it depends on swift-syntax and nothing of Strata's.
        .macro(
            name: "StrataMacros",
            dependencies: [
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
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
            // Database files written by earlier versions of Strata, and the
            // C source of a library that tests compile and preload into a child.
            exclude: ["Fixtures", "Support/WriteRecorder.c"]
        ),
        .testTarget(
            name: "StrataMacrosTests",
            dependencies: [
                "StrataMacros",
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                // The assertions without XCTest, so that the tests use Swift Testing.
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
