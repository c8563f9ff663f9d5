import Foundation
import Testing

@testable import Strata

@Model(name: "Keeper") struct Keeper: Equatable, Sendable {
    @PrimaryKey var id: Int
    var name = ""
}

@Model(name: "Pet") struct Pet: Equatable, Sendable {
    @PrimaryKey var id: Int
    var name = ""
    @Indexed var age = 0
    var keeper: Link<Keeper>?
    var sitters: [Link<Keeper>] = []
}

/// Backlinks come back as a lazy query answered from the backlinks index:
/// every operator of a query, on those objects alone.
@Suite(.temporaryFolder) struct BacklinkQueryTests {
    let folder = TemporaryFolder.current

    func open(_ mode: Database.Mode = .local) throws -> Database {
        var config = Database.Configuration(path: folder.path(), models: [Keeper.self, Pet.self])
        config.durability = .noSync
        config.mode = mode
        return try Database(configuration: config)
    }

    /// Three keepers; pet `i` is kept by keeper `i % 3` and sat by keepers
    /// `0` and `i % 2` (twice by 0 when `i` is even: listed once).
    func seeded(_ mode: Database.Mode = .local) throws -> (Database, [Pet]) {
        let db = try open(mode)
        var pets: [Pet] = []
        try db.write { tx in
            for id in 0 ..< 3 { try tx.insert(Keeper(id: id, name: "k\(id)")) }
            for id in 0 ..< 30 {
                let pet = Pet(
                    id: id, name: ["rex", "ada", "bo"][id % 3] + "\(id % 5)", age: id % 7, keeper: Link(id % 3),
                    sitters: [Link(0), Link(id % 2)])
                pets.append(pet)
                try tx.insert(pet)
            }
        }
        return (db, pets)
    }

    @Test(arguments: Fixtures.modes)
    func everyQueryOperatorWorksOnBacklinksAsOnAnArray(mode: Database.Mode) throws {
        let (db, pets) = try seeded(mode)
        try db.read { tx in
            for keeper in 0 ..< 4 {
                let kept = pets.filter { $0.keeper == Link(keeper) }
                let query = try tx.objects(Pet.self, linkingTo: keeper, through: \.keeper)
                #expect(try query.array() == kept)
                #expect(try query.count == kept.count)
                #expect(try query.isEmpty == kept.isEmpty)
                #expect(try query.where(\.age, in: 2 ... 4).array() == kept.filter { (2 ... 4).contains($0.age) })
                #expect(try query.where(\.age, equals: 3).count == kept.filter { $0.age == 3 }.count)
                #expect(try query.filter { $0.name.hasPrefix("r") }.array() == kept.filter { $0.name.hasPrefix("r") })
                let byAge = kept.sorted { ($0.age, $1.id) < ($1.age, $0.id) }
                #expect(
                    try query.sorted(using: SortDescriptor(\.age), SortDescriptor(\.id, order: .reverse)).array()
                        == byAge)
                let gotDesc = try query.sorted(by: \.id, ascending: false).map(\.id)
                #expect(gotDesc == Array(kept.map(\.id).reversed()), "\(gotDesc) vs \(kept.map(\.id))")
                #expect(try query.offset(2).limit(3).array() == Array(kept.dropFirst(2).prefix(3)))
                #expect(try query.offset(2).limit(3).count == Array(kept.dropFirst(2).prefix(3)).count)
                // A to-many relationship lists each object once.
                let sat = pets.filter { $0.sitters.contains(Link(keeper)) }
                #expect(try tx.objects(Pet.self, linkingTo: keeper, through: \.sitters).map(\.id) == sat.map(\.id))
                // The dynamic API answers the same.
                let dynamic = try tx.objects("Pet", linkingTo: .int(Int64(keeper)), through: "keeper")
                #expect(try dynamic.map { Int($0["id"].int!) } == kept.map(\.id))
                #expect(try dynamic.where("age", in: 2 ... 4).count == kept.filter { (2 ... 4).contains($0.age) }.count)
            }
        }
    }

    /// `count` and `isEmpty` read the backlinks index alone: a damaged
    /// record of a linking object does not disturb them, while reading
    /// the objects reports it.
    @Test func countingBacklinksReadsNoRecord() throws {
        let (db, _) = try seeded()
        let pet = try #require(db.catalog[type: "Pet"])
        db.close()
        try RawFile.withWrite(folder.path()) { txn in
            let records = try #require(try txn.openDatabase(pet.recordsDatabase, create: false))
            try txn.put(records, RawFile.key(3), [0xFF, 0xFF])
        }
        let reopened = try open()
        try reopened.read { tx in
            let kept = try tx.objects(Pet.self, linkingTo: 0, through: \.keeper)
            #expect(try kept.count == 10)
            #expect(try !kept.isEmpty)
            #expect(throws: StrataError.self) { try kept.array() }
        }
    }

    @Test func aBodyThatUnlinksWhileWalkingBacklinksSeesEachObjectOnce() throws {
        let (db, pets) = try seeded()
        try db.write { tx in
            var seen: [Int] = []
            try tx.objects(Pet.self, linkingTo: 1, through: \.keeper).forEach { pet in
                seen.append(pet.id)
                var moved = pet
                moved.keeper = Link(2)
                try tx.update(moved)
            }
            #expect(seen == pets.filter { $0.keeper == Link(1) }.map(\.id))
            #expect(try tx.objects(Pet.self, linkingTo: 1, through: \.keeper).isEmpty)
        }
    }

    @Test func anObservedBacklinkQueryFollowsLinksAddedAndRemoved() async throws {
        let (db, pets) = try seeded()
        try await withTimeout {
            var changes = db.observe(Pet.self) { $0.linking(to: 1, through: \.keeper).where(\.age, in: 0 ... 3) }
                .makeAsyncIterator()
            let kept = pets.filter { $0.keeper == Link(1) && $0.age <= 3 }.map(\.id)
            #expect(try await changes.next()?.results.map(\.id) == kept)
            try await db.write { tx in
                try tx.update(Pet(id: 0, name: "new", age: 1, keeper: Link(1)))
                var gone = pets.first { $0.id == kept[0] }!
                gone.keeper = nil
                try tx.update(gone)
            }
            #expect(try await changes.next()?.results.map(\.id) == [0] + kept.dropFirst())
        }
    }

    @Test func aPropertyThatIsNotALinkOrAKeyOfTheWrongTypeIsAnError() throws {
        let (db, _) = try seeded()
        try db.read { tx in
            #expect(throws: StrataError.self) { try tx.objects("Pet", linkingTo: 1, through: "age") }
            #expect(throws: StrataError.self) { try tx.objects("Pet", linkingTo: "x", through: "keeper") }
        }
    }
}
