import Foundation
import Testing

@testable import Strata

/// The dynamic API as people write it: these shapes must compile as they
/// are, without `_ =`, `.int(Int64(i))` or type annotations.
@Suite(.temporaryFolder) struct DynamicAPIShapeTests {
    let folder = TemporaryFolder.current

    @Test func valuesComeFromSwiftValuesDirectly() {
        let i = 42
        #expect(Value(i) == .int(42))
        #expect(Value(Int64(7)) == .int(7))
        #expect(Value("Ada") == .string("Ada"))
        #expect(Value(2.5) == .double(2.5))
        #expect(Value(true) == .bool(true))
        #expect(Value(nil as String?) == .null)
        #expect(Value(Optional(3)) == .int(3))
    }

    @Test func aWriteWhoseLastStatementIsAnInsertCompiles() throws {
        let db = try Database(configuration: Fixtures.configuration(folder.path()))
        try db.write { tx in
            try tx.insert("Person", Fixtures.ada)
        }
        try db.write { tx in
            try tx.update("Person", key: 1, ["age": 37])
            try tx.insert("Person", Fixtures.charles)
        }
        try db.write { tx in
            for id in 10 ..< 13 { try tx.insert("Person", Fixtures.person(Int64(id))) }
            try tx.upsert("Person", Fixtures.annabella)
        }
        #expect(try db.read { tx in try tx.objects("Person").count } == 6)
    }

    @Test func dictionaryLiteralsInsideMapClosuresTypeCheck() throws {
        let db = try Database(configuration: Fixtures.configuration(folder.path()))
        let people = (1 ... 50).map { i in
            ["id": Value(i), "firstName": Value("First \(i)"), "lastName": "Last", "age": Value(i % 90)]
        }
        try db.write { tx in
            for person in people { try tx.insert("Person", person) }
        }
        let ages = try db.read { tx in try tx.objects("Person").map { $0["age"].int ?? -1 } }
        #expect(ages == (1 ... 50).map { Int64($0 % 90) })
    }
}
