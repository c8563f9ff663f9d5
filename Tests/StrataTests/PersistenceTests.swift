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
}
