import Foundation
import Testing
@testable import Strata

@Suite struct PersistenceTests {
    @Test func objectsSurviveReopen() throws {
        let folder = try TemporaryFolder()
        let config = Fixtures.configuration(folder.path())
        do {
            let db = try Database(configuration: config)
            try db.write { tx in
                try tx.insert("Person", Fixtures.person(1, "Ada", "Lovelace", age: 36, email: "ada@example.org"))
                try tx.insert("Person", Fixtures.person(2, "Charles", "Babbage", age: 79))
            }
        }
        let db = try Database(configuration: config)
        let (ada, count) = try db.read { tx in
            (try tx.object("Person", key: 1)?.values, try tx.objects("Person").count)
        }
        #expect(count == 2)
        #expect(ada == Fixtures.person(1, "Ada", "Lovelace", age: 36, email: "ada@example.org"))
    }

    /// The internal counter that migration tests will use to prove which
    /// operations rewrite records: one per record written, none for deletes
    /// or reads.
    @Test func recordWritesCountEachRecordWrittenAndNothingElse() throws {
        let folder = try TemporaryFolder()
        let db = try Database(configuration: Fixtures.configuration(folder.path()))
        let counts = try db.write { tx -> [Int] in
            var counts: [Int] = []
            for id in 1 ... 3 { try tx.insert("Person", Fixtures.person(Int64(id))) }
            counts.append(tx.recordWrites)
            try tx.update("Person", key: 1, ["age": 40])
            try tx.upsert("Person", Fixtures.person(2, "Changed"))
            counts.append(tx.recordWrites)
            try tx.delete("Person", key: 3)
            _ = try tx.objects("Person").count
            counts.append(tx.recordWrites)
            return counts
        }
        #expect(counts == [3, 5, 5])
    }
}
