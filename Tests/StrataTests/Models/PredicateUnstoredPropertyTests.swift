import Foundation
import Testing

@testable import Strata

/// A model with a `@Transient` property and a computed one, as in the
/// issue: Foundation reads either from the decoded value (the transient's
/// initial value), so a predicate that names one must fail, not answer.
@Model(name: "Counted") struct CountedItem {
    @PrimaryKey var id: Int
    var n = 0
    var label = ""
    @Transient var scratch = 0
    var doubled: Int { n * 2 }
}

/// Where an unstored property may hide in a `#Predicate`: either side of
/// `||` and `&&`, inside `!`, beside a part that cannot be planned, inside
/// an expression that is not planned at all.
@Suite(.temporaryFolder) struct PredicateUnstoredPropertyTests {
    let folder = TemporaryFolder.current

    func seeded(_ mode: Database.Mode) throws -> Database {
        var config = Database.Configuration(path: folder.path(), models: [CountedItem.self])
        config.durability = .noSync
        config.mode = mode
        let db = try Database(configuration: config)
        try db.write { tx in
            for id in 0 ..< 40 { try tx.insert(CountedItem(id: id, n: id, label: "l\(id % 4)")) }
        }
        return db
    }

    @Test(arguments: Fixtures.modes)
    func anUnstoredPropertyAnywhereInTheTreeThrowsBeforeAnythingRuns(mode: Database.Mode) throws {
        let db = try seeded(mode)
        try db.read { tx in
            let items = try tx.objects(CountedItem.self)
            let predicates: [(String, Predicate<CountedItem>)] = [
                ("right of || after an unplanned part", #Predicate { $0.n % 2 == 0 || $0.scratch == 0 }),
                ("inside ! of an ||", #Predicate { !($0.n % 2 == 0 || $0.doubled > 3) }),
                ("left of ||", #Predicate { $0.scratch == 0 || $0.n == 1 }),
                ("right of || after a planned part", #Predicate { $0.n == 1 || $0.doubled == 4 }),
                ("inside ! of an &&", #Predicate { $0.n > 3 && !($0.label == "l1" && $0.scratch != 1) }),
                ("inside an unplanned expression", #Predicate { $0.label.count == $0.scratch + 2 }),
                ("compared with a stored property", #Predicate { $0.n == $0.doubled }),
                ("in a comparison of two conditions", #Predicate { ($0.n > 30) == ($0.scratch == 0) }),
            ]
            for (place, predicate) in predicates {
                let query = items.filter(predicate)
                // Nothing of it is planned or left to Foundation: it fails.
                #expect(query.plan.conditions.isEmpty, "\(place)")
                #expect(query.predicates.isEmpty, "\(place)")
                let error = expectStrataError(.unknownProperty) { _ = try query.array() }
                #expect(error?.message.contains("filter(_:) with a #Predicate") == true, "\(place)")
                #expect(error?.message.contains("Counted") == true, "\(place)")
                _ = expectStrataError(.unknownProperty) { _ = try query.count }
                _ = expectStrataError(.unknownProperty) { _ = try query.first() }
                // Another filter after it does not hide the error.
                _ = expectStrataError(.unknownProperty) {
                    _ = try query.filter(#Predicate { $0.n > 0 }).array()
                }
            }
            // The transient's name is in the message, as at the top level.
            let error = expectStrataError(.unknownProperty) {
                _ = try items.filter(#Predicate { $0.n % 2 == 0 || $0.scratch == 0 }).array()
            }
            #expect(error?.message.contains("scratch") == true)
        }
    }

    @Test func storedPropertiesBesideUnplannedPartsStillAnswer() throws {
        let db = try seeded(.local)
        try db.read { tx in
            let items = try tx.objects(CountedItem.self)
            // Only stored properties: planned where it can be, the rest
            // evaluated by Foundation, as before.
            let query = items.filter(#Predicate { $0.n % 2 == 0 || $0.label.count > 5 })
            #expect(try query.map(\.id) == (0 ..< 40).filter { $0 % 2 == 0 })
            let negated = items.filter(#Predicate { !($0.n % 2 == 0 || $0.n > 3) })
            #expect(try negated.map(\.id) == [1, 3])
        }
    }
}
