// swift-tools-version: 6.1
import PackageDescription

// The write workload of `make bench-observe`'s first item, alone with
// Strata: the cost of a write that no one observes, measured against the
// revision before observation. STRATA_ROOT names the Strata checkout to
// build against (default: this repository), so that one source builds
// against both revisions; it uses only API both have. Build each revision in
// a build path of its own.
let strataRoot = Context.environment["STRATA_ROOT"] ?? "../.."

let package = Package(
    name: "ObservationWriteCost",
    platforms: [.macOS(.v13)],
    dependencies: [.package(name: "Strata", path: strataRoot)],
    targets: [
        .executableTarget(
            name: "ObservationWriteCost",
            dependencies: [.product(name: "Strata", package: "Strata")]
        )
    ],
    swiftLanguageModes: [.v6]
)
