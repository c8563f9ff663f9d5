import Foundation
import Testing

@testable import Strata

/// `tx.object(_:primaryKey:)` of a model with an `Int` key encodes the key
/// on the stack, not through the encoder: every key, of either sign, must
/// find its object, in read and write transactions alike.
@Suite(.temporaryFolder) struct TypedLookupTests {
    let folder = TemporaryFolder.current

    static let ids = [Int.min, Int.min + 1, -300, -1, 0, 1, 127, 128, 65_536, Int.max - 1, Int.max]

    func open(_ mode: Database.Mode) throws -> Database {
        var config = Database.Configuration(path: folder.path(), models: [HandPerson.self])
        config.durability = .noSync
        config.mode = mode
        return try Database(configuration: config)
    }

    static func person(_ id: Int) -> HandPerson {
        HandPerson(id: id, firstName: "First\(id % 1000)", lastName: "Last\(id)", age: abs(id % 90))
    }

    @Test(arguments: Fixtures.modes)
    func everyIntKeyFindsItsObjectAndNoOther(mode: Database.Mode) throws {
        let db = try open(mode)
        let stored = Self.ids.filter { $0 != 128 }
        try db.write { tx in
            for id in stored { try tx.insert(Self.person(id)) }
            #expect(try tx.object(HandPerson.self, primaryKey: -300) == Self.person(-300))
            #expect(try tx.object(HandPerson.self, primaryKey: 128) == nil)
        }
        try db.read { tx throws in
            for id in stored {
                #expect(try tx.object(HandPerson.self, primaryKey: id) == Self.person(id))
                // The dynamic API encodes the same key through the encoder.
                #expect(try tx.object("Person", key: .int(Int64(id)))?["lastName"] == .string("Last\(id)"))
            }
            #expect(try tx.object(HandPerson.self, primaryKey: 128) == nil)
            #expect(try tx.object(HandPerson.self, primaryKey: 2) == nil)
        }
    }
}
