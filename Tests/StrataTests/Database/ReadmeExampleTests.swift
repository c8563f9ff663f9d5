import Foundation
import Strata
import Testing

/// The README's model, declared as the README declares it.
enum ReadmeModels {
    // README model begin
    @Model
    struct Person {
        @PrimaryKey var id: Int
        var firstName: String
        var lastName: String
        @Indexed var age: Int = 0
        var email: String?
    }
    // README model end
}

/// The README's next app version, declared as the README declares it.
enum ReadmeNextVersion {
    // README next models begin
    @Model(name: "Person")
    struct PersonV1 {
        @PrimaryKey var id: Int
        var firstName: String
        var lastName: String
        @Indexed var age: Int = 0
        var email: String?
    }

    @Model
    struct Person {
        @PrimaryKey var id: Int
        var fullName: String
        @Indexed var age: Int = 0
        var email: String?
    }

    enum AppV1: VersionedSchema {
        static let version: UInt64 = 1
        static let models: [any Model.Type] = [PersonV1.self]
    }

    enum AppV2: VersionedSchema {
        static let version: UInt64 = 2
        static let models: [any Model.Type] = [Person.self]
    }
    // README next models end

    static func migrate() throws -> Database {
        // README next example begin
        let configV2 = Database.Configuration(
            path: "people.strata", schema: AppV2.self, versions: [AppV1.self],
            migrations: [
                .step(from: AppV1.self, to: AppV2.self) {
                    $0.map(PersonV1.self, to: Person.self) { old in
                        Person(id: old.id, fullName: "\(old.firstName) \(old.lastName)", age: old.age, email: old.email)
                    }
                }
            ])
        let migrated = try Database(configuration: configV2)
        // README next example end
        return migrated
    }
}

/// The README's first two examples, compiled and run. `readmeShowsThisExample`
/// keeps the README's first two code blocks identical to the lines between
/// the markers. Serialized: the examples use relative paths, and the
/// current directory the tests change is the whole process's.
@Suite(.temporaryFolder, .serialized) struct ReadmeExampleTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    typealias Person = ReadmeModels.Person

    static func example(in folder: String) throws -> (adults: Int, oldestFirst: [String]) {
        _ = FileManager.default.changeCurrentDirectoryPath(folder)
        // README example begin
        let config = Database.Configuration(path: "people.strata", models: [Person.self])
        let db = try Database(configuration: config)

        try db.write { tx in
            try tx.insert(Person(id: 1, firstName: "Ada", lastName: "Lovelace", age: 36))
            try tx.insert(Person(id: 2, firstName: "Alan", lastName: "Turing", age: 41))
            try tx.insert(Person(id: 3, firstName: "Ada", lastName: "Byron", age: 8))
        }
        let adults = try db.read { tx in
            try tx.objects(Person.self).where(\.age, in: 18...).count
        }
        let oldestFirst = try db.read { tx in
            try tx.objects(Person.self).sorted(by: \.age, ascending: false).map(\.lastName)
        }
        // README example end
        return (adults, oldestFirst)
    }

    @Test func readmeExampleRuns() throws {
        let previous = FileManager.default.currentDirectoryPath
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        let result = try Self.example(in: folder.url.path)
        #expect(result.adults == 2)
        #expect(result.oldestFirst == ["Turing", "Lovelace", "Byron"])
        #expect(FileManager.default.fileExists(atPath: folder.path("people.strata")))
    }

    @Test func readmeNextVersionMigratesTheFirstExamplesFile() throws {
        let previous = FileManager.default.currentDirectoryPath
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        _ = try Self.example(in: folder.url.path)
        let migrated = try ReadmeNextVersion.migrate()
        defer { migrated.close() }
        let names = try migrated.read { tx in try tx.objects(ReadmeNextVersion.Person.self).map(\.fullName) }
        #expect(names == ["Ada Lovelace", "Alan Turing", "Ada Byron"])
        #expect(migrated.fileSchemaVersion == 2)
    }

    @Test func readmeShowsThisExample() throws {
        let testFile = URL(fileURLWithPath: #filePath)
        // Tests/StrataTests/Database/ReadmeExampleTests.swift
        let root = testFile.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: testFile, encoding: .utf8)

        let blocks = readme.components(separatedBy: "```swift\n").dropFirst().map {
            $0.components(separatedBy: "```").first ?? ""
        }
        func readmeLines(_ block: String) -> [String] {
            block.split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && $0 != "import Strata" }
        }
        try #require(blocks.count >= 2)

        let lines = source.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        func marked(_ name: String) throws -> [String] {
            let begin = try #require(lines.firstIndex(of: "// README \(name) begin"))
            let end = try #require(lines.firstIndex(of: "// README \(name) end"))
            return lines[(begin + 1) ..< end].filter { !$0.isEmpty }
        }
        #expect(readmeLines(blocks[0]) == (try marked("model") + marked("example")))
        #expect(readmeLines(blocks[1]) == (try marked("next models") + marked("next example")))
    }
}
