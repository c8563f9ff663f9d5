// swift-tools-version: 6.1
import PackageDescription

// The engine's write path, object by object, before and after its refactor
// into one object-write primitive: callgrind instruction counts per object
// and wall time for each scenario of main.swift. STRATA_ROOT names the
// Strata checkout to build against (default: this repository), so that one
// source builds against both revisions; it uses only API both have. Build
// each revision in a scratch path of its own (run.sh does).
let strataRoot = Context.environment["STRATA_ROOT"] ?? "../.."

let package = Package(
    name: "EngineCost",
    platforms: [.macOS(.v13)],
    dependencies: [.package(name: "Strata", path: strataRoot)],
    targets: [
        .executableTarget(
            name: "EngineCost",
            dependencies: [.product(name: "Strata", package: "Strata")]
        )
    ],
    swiftLanguageModes: [.v6]
)
