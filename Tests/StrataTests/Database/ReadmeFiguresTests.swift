import Foundation
import Testing

/// docs/Benchmarks.md is the one source of Strata's figures: every row of
/// a table in the README's "Performance" section is a row of it, word for
/// word, so the README cannot quote figures the benchmarks no longer give.
@Suite(.temporaryFolder) struct ReadmeFiguresTests {
    static func text(_ path: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test func theReadmesPerformanceTablesQuoteDocsBenchmarks() throws {
        let readme = try Self.text("README.md")
        let start = try #require(readme.range(of: "\n## Performance\n"))
        let end = readme.range(of: "\n## ", range: start.upperBound ..< readme.endIndex)?.lowerBound ?? readme.endIndex
        let rows = readme[start.upperBound ..< end].split(separator: "\n").filter {
            $0.hasPrefix("| ") && !$0.hasPrefix("| scenario ")
        }
        #expect(rows.count >= 8)
        let benchmarks = Set(try Self.text("docs/Benchmarks.md").split(separator: "\n"))
        let missing = rows.filter { !benchmarks.contains($0) }
        #expect(missing.isEmpty, "README rows not in docs/Benchmarks.md:\n\(missing.joined(separator: "\n"))")
    }
}
