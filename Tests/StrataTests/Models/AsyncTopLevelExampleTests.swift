import Foundation
import Testing

/// docs/Models.md's example of async reads and writes in `main.swift`,
/// type-checked as top-level code: Swift picks the synchronous `write` and
/// `read` there even after `await`, and warns at every call, unless the
/// calls sit in an `async` function as the example shows.
@Suite(.temporaryFolder) struct AsyncTopLevelExampleTests {
    let folder = TemporaryFolder.current

    static let model = """
        import Foundation
        import Strata

        @Model struct Trip {
            @PrimaryKey var id: Int
            @Indexed var name: String
            var start: Date
            var nights = 1
        }

        """

    /// The `swift` block of docs/Models.md that starts with `// main.swift`.
    static func example() throws -> String {
        let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/Models.md")
        let text = try String(contentsOf: models, encoding: .utf8)
        let start = try #require(text.range(of: "```swift\n// main.swift\n"))
        let end = try #require(text.range(of: "\n```", range: start.upperBound ..< text.endIndex))
        return String(text[start.upperBound ..< end.lowerBound])
    }

    @Test func theDocsExampleCompilesWithoutWarningsInMainSwift() throws {
        let example = try Self.example()
        #expect(example.contains("try await db.write"))
        let result = try SwiftCompiler.typecheck(Self.model + example, in: folder)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.errors.isEmpty)
        #expect(result.warnings.isEmpty, "\(result.warnings)")
    }

    @Test func awaitedCallsInTopLevelCodeGetTheSynchronousOverload() throws {
        let source =
            Self.model + """
                let db = try Database(configuration: Database.Configuration(path: "trips.strata", models: [Trip.self]))
                try await db.write { tx in try tx.insert(Trip(id: 1, name: "Lisbon", start: .now)) }
                """
        let result = try SwiftCompiler.typecheck(source, in: folder)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.warnings == ["no 'async' operations occur within 'await' expression"])
    }
}
