// swift-tools-version: 6.1
import PackageDescription

// A #Predicate against the matching key-path query (docs/Benchmarks.md,
// "A #Predicate against where"). From the repository root:
//   swift run -c release --package-path Benchmarks/PredicateQuery PredicateQuery 1000000
let package = Package(
    name: "PredicateQuery",
    // Foundation's Predicate needs macOS 14.
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "Strata", path: "../..")],
    targets: [
        .executableTarget(name: "PredicateQuery", dependencies: [.product(name: "Strata", package: "Strata")])
    ]
)
