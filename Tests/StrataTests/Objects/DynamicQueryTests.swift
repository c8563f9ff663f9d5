import Foundation
import Testing

@testable import Strata

/// The dynamic collection's query operators beyond what the oracle asks:
/// the errors they throw, the values they accept, and a walk that writes.
@Suite(.temporaryFolder) struct DynamicQueryTests {
    let folder = TemporaryFolder.current

    func open(_ mode: Database.Mode) throws -> Database {
        let schema = Schema([
            ObjectSchema("Reading", primaryKey: "id") {
                Property("id", .int)
                Property("celsius", .double)
                Property("station", .string, indexed: true)
                Property("note", .string, optional: true)
            }
        ])
        let db = try Database(configuration: Fixtures.configuration(folder.path(), schema: schema, mode: mode))
        try db.write { tx in
            for id in 1 ... 20 {
                try tx.insert(
                    "Reading",
                    ["id": .int(Int64(id)), "celsius": .double(Double(id) / 2), "station": .string("s\(id % 4)")])
            }
        }
        return db
    }

    @Test(arguments: Fixtures.modes)
    func anIntegerRangeSelectsDoubles(mode: Database.Mode) throws {
        let db = try open(mode)
        let ids = try db.read { tx in
            try tx.objects("Reading").where("celsius", in: 2 ..< 4).map { $0["id"].int! }
        }
        #expect(ids == [4, 5, 6, 7])
    }

    @Test(arguments: Fixtures.modes)
    func anIndexedRangeComesInIndexOrderAndSortsAndCuts(mode: Database.Mode) throws {
        let db = try open(mode)
        try db.read { tx in
            let stations = try tx.objects("Reading").where("station", in: "s1" ... "s2").map { $0["station"].string! }
            #expect(stations == Array(repeating: "s1", count: 5) + Array(repeating: "s2", count: 5))
            let top = try tx.objects("Reading").where("station", equals: "s3").sorted(by: "celsius", ascending: false)
                .limit(2).array().map { $0["id"].int! }
            #expect(top == [19, 15])
            #expect(try tx.objects("Reading").sorted(by: "id", ascending: false).first()?["id"] == 20)
        }
    }

    @Test(arguments: Fixtures.modes)
    func mistakesThrowWhenTheQueryRuns(mode: Database.Mode) throws {
        let db = try open(mode)
        try db.read { tx in
            let readings = try tx.objects("Reading")
            let built = readings.sorted(by: "kelvin").where("kelvin", in: 1...)
            let unknown = try #require(throws: StrataError.self) { try built.count }
            #expect(unknown.code == .unknownProperty)
            let ranged = try #require(throws: StrataError.self) { try readings.where("station", in: 1 ... 3).count }
            #expect(ranged.code == .invalidValue)
            #expect(ranged.message.contains("'Reading.station' is string"))
            let missing = try #require(throws: StrataError.self) { try readings.where("kelvin", in: 1...).count }
            #expect(missing.code == .unknownProperty)
        }
    }

    @Test(arguments: Fixtures.modes)
    func aWalkThatInsertsStopsAtTheObjectThatWasLast(mode: Database.Mode) throws {
        let db = try open(mode)
        try db.write { tx in
            var seen = 0
            try tx.objects("Reading").where("station", in: "s0"...).sorted(by: "station").forEach { reading in
                seen += 1
                let id = reading["id"].int! + 100
                try tx.insert("Reading", ["id": .int(id), "celsius": 0.0, "station": "s9"])
            }
            #expect(seen == 20)
            #expect(try tx.objects("Reading").count == 40)
        }
    }
}
