import Foundation
import Strata
import Testing

/// The "Coming from SwiftData" example of docs/Models.md, declared as the
/// page shows it.
struct SwiftDataGuide {
    // Coming from SwiftData begin
    @Model
    struct Trip {
        @PrimaryKey var id: Int
        @Indexed var name: String
        var start: Date
        var nights = 1
    }

    func longTrips(in db: Database, page: Int) throws -> [Trip] {
        try db.read { tx in
            try tx.objects(Trip.self)
                .filter(#Predicate { $0.nights >= 7 })
                .sorted(using: [SortDescriptor(\.start, order: .reverse), SortDescriptor(\.name)])
                .offset(page * 20)
                .limit(20)
                .array()
        }
    }
    // Coming from SwiftData end
}

/// The "Coming from Realm" example of docs/Models.md, declared as the page
/// shows it.
struct RealmGuide {
    // Coming from Realm begin
    @Model
    struct Owner {
        @PrimaryKey var id: Int
        var name = ""
    }

    @Model
    struct Dog {
        @PrimaryKey var id: Int
        @Indexed var name: String
        var age = 0
        var owner: Link<Owner>?
    }

    func puppies(of owner: Int, in db: Database) throws -> (count: Int, names: [String]) {
        try db.read { tx in
            let dogs = try tx.objects(Dog.self, linkingTo: owner, through: \.owner)
            return (try dogs.count, try dogs.where(\.age, in: 0 ..< 1).sorted(by: \.name).map(\.name))
        }
    }
    // Coming from Realm end
}

@Suite(.temporaryFolder) struct ComingFromTests {
    let folder = TemporaryFolder.current

    @Test func theSwiftDataExampleRuns() throws {
        var config = Database.Configuration(path: folder.path(), models: [SwiftDataGuide.Trip.self])
        config.durability = .noSync
        let db = try Database(configuration: config)
        try db.write { tx in
            for id in 0 ..< 30 {
                let start = Date(timeIntervalSinceReferenceDate: Double(id % 5) * 86_400)
                try tx.insert(SwiftDataGuide.Trip(id: id, name: "trip \(id)", start: start, nights: id % 10))
            }
        }
        let trips = try SwiftDataGuide().longTrips(in: db, page: 0)
        // Nights 7, 8 or 9; latest start first, then by name ("trip 19" < "trip 29" < "trip 9").
        #expect(trips.map(\.id) == [19, 29, 9, 18, 28, 8, 17, 27, 7])
        #expect(try SwiftDataGuide().longTrips(in: db, page: 1).isEmpty)
    }

    @Test func theRealmExampleRuns() throws {
        var config = Database.Configuration(
            path: folder.path(), models: [RealmGuide.Owner.self, RealmGuide.Dog.self])
        config.durability = .noSync
        let db = try Database(configuration: config)
        try db.write { tx in
            try tx.insert(RealmGuide.Owner(id: 1, name: "Ada"))
            try tx.insert(RealmGuide.Dog(id: 1, name: "Rex", age: 0, owner: Link(1)))
            try tx.insert(RealmGuide.Dog(id: 2, name: "Bo", age: 0, owner: Link(1)))
            try tx.insert(RealmGuide.Dog(id: 3, name: "Max", age: 4, owner: Link(1)))
            try tx.insert(RealmGuide.Dog(id: 4, name: "Ace", age: 0))
        }
        let answer = try RealmGuide().puppies(of: 1, in: db)
        #expect(answer.count == 3)
        #expect(answer.names == ["Bo", "Rex"])
    }

    /// Each "Coming from" block of docs/Models.md is the code above, line
    /// for line, so the page shows code that compiles and runs.
    @Test func theModelsPageShowsTheseExamples() throws {
        let testFile = URL(fileURLWithPath: #filePath)
        // Tests/StrataTests/Models/ComingFromTests.swift
        let root = testFile.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let page = try String(contentsOf: root.appendingPathComponent("docs/Models.md"), encoding: .utf8)
        let source = try String(contentsOf: testFile, encoding: .utf8)
        func trimmed(_ text: Substring) -> [String] {
            text.split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        }
        let sourceLines = trimmed(source[...])
        for name in ["SwiftData", "Realm"] {
            let heading = try #require(page.range(of: "## Coming from \(name)\n"))
            let rest = page[heading.upperBound...]
            let open = try #require(rest.range(of: "```swift\n"))
            let close = try #require(rest[open.upperBound...].range(of: "```"))
            let block = trimmed(rest[open.upperBound ..< close.lowerBound])
            let begin = try #require(sourceLines.firstIndex(of: "// Coming from \(name) begin"))
            let end = try #require(sourceLines.firstIndex(of: "// Coming from \(name) end"))
            #expect(block == Array(sourceLines[(begin + 1) ..< end]), "docs/Models.md, Coming from \(name)")
        }
    }
}
