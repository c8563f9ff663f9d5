import Foundation
import Strata
import Testing

/// The README's example, compiled and run. `readmeShowsThisExample` keeps
/// the README's code block and the lines between the markers identical.
@Suite(.temporaryFolder) struct ReadmeExampleTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    static func example(in folder: String) throws -> (adults: Int, lovelaces: [String]) {
        _ = FileManager.default.changeCurrentDirectoryPath(folder)
        // README example begin
        let person = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("firstName", .string)
            Property("lastName", .string)
            Property("age", .int, default: 0, indexed: true)
            Property("email", .string, optional: true)
        }

        let config = Database.Configuration(
            path: "people.strata",
            schemaVersion: 1,
            schema: Schema([person]))
        let db = try Database(configuration: config)

        try db.write { tx in
            try tx.insert("Person", ["id": 1, "firstName": "Ada", "lastName": "Lovelace", "age": 36])
        }
        let adults = try db.read { tx in
            try tx.objects("Person").filter { $0["age"].int! >= 18 }.count
        }
        let lovelaces = try db.read { tx in
            try tx.objects("Person").where("age", equals: 36).map { $0["lastName"].string! }
        }
        // README example end
        return (adults, lovelaces)
    }

    @Test func readmeExampleRuns() throws {
        let previous = FileManager.default.currentDirectoryPath
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        let result = try Self.example(in: folder.url.path)
        #expect(result.adults == 1)
        #expect(result.lovelaces == ["Lovelace"])
        #expect(FileManager.default.fileExists(atPath: folder.path("people.strata")))
    }

    @Test func readmeShowsThisExample() throws {
        let testFile = URL(fileURLWithPath: #filePath)
        // Tests/StrataTests/Database/ReadmeExampleTests.swift
        let root = testFile.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: testFile, encoding: .utf8)

        let block = try #require(
            readme.components(separatedBy: "```swift\n").dropFirst().first?.components(separatedBy: "```").first)
        let readmeLines = block.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && $0 != "import Strata" }

        let lines = source.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        let begin = try #require(lines.firstIndex(of: "// README example begin"))
        let end = try #require(lines.firstIndex(of: "// README example end"))
        let testLines = lines[(begin + 1) ..< end].filter { !$0.isEmpty }

        #expect(readmeLines == Array(testLines))
    }
}
