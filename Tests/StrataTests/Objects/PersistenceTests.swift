import Foundation
import Testing

@testable import Strata

@Suite(.temporaryFolder) struct PersistenceTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    @Test(arguments: Fixtures.modes) func objectsSurviveReopen(_ mode: Database.Mode) throws {
        let config = Fixtures.configuration(folder.path(), mode: mode)
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

    /// The counter that migration tests use to prove which operations
    /// rewrite records: one per record written or deleted by a committed
    /// transaction, none for reads, index entries, refused inserts or
    /// rolled-back writes.
    @Test(arguments: Fixtures.modes) func recordWritesCountEachRecordWrittenOrDeletedAndNothingElse(
        _ mode: Database.Mode
    ) throws {
        let path = folder.path()
        let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
        var counts: [Int] = []
        func count(_ body: (WriteTransaction) throws -> Void) throws {
            let before = Instrumentation.recordWrites(in: path)
            try db.write(body)
            counts.append(Instrumentation.recordWrites(in: path) - before)
        }
        try count { tx in for id in 1 ... 3 { try tx.insert("Person", Fixtures.person(Int64(id))) } }
        try count { tx in
            try tx.update("Person", key: 1, ["age": 40])
            try tx.upsert("Person", Fixtures.person(2, "Changed"))
        }
        try count { tx in
            try tx.delete("Person", key: 3)
            _ = try tx.delete("Person", key: 99)
            _ = try tx.objects("Person").count
        }
        try count { tx in _ = try tx.objects("Person").count }
        // An insert refused for a taken key writes nothing.
        try count { tx in
            #expect(throws: StrataError.self) { try tx.insert("Person", Fixtures.person(1)) }
        }
        struct Rollback: Error {}
        let before = Instrumentation.recordWrites(in: path)
        #expect(throws: Rollback.self) {
            try db.write { tx in
                try tx.insert("Person", Fixtures.person(4))
                throw Rollback()
            }
        }
        counts.append(Instrumentation.recordWrites(in: path) - before)
        #expect(counts == [3, 2, 1, 0, 0, 0])
    }
}
