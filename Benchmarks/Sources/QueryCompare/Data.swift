import Foundation
import GRDB
import Strata

/// A person of the query benchmark: `name` and `age` are indexed in both
/// engines, `score` in neither.
@Model(name: "Person") struct Person {
    @PrimaryKey var id: Int
    @Indexed var name: String
    @Indexed var age: Int
    var score: Int
}

/// A pet, linking to its owner: the backlinks table in Strata, an indexed
/// foreign key in GRDB.
@Model(name: "Pet") struct Pet {
    @PrimaryKey var id: Int
    var name: String
    var owner: Link<Person>?
    var weight: Int
}

/// The same person as a GRDB record, columns by position (the fastest form
/// GRDB documents).
struct PersonRecord: FetchableRecord, PersistableRecord {
    static let databaseTableName = "person"
    var id: Int
    var name: String
    var age: Int
    var score: Int
}

// In an extension, so that the struct keeps its memberwise initializer.
extension PersonRecord {
    init(row: Row) {
        id = row[0]
        name = row[1]
        age = row[2]
        score = row[3]
    }

    func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["name"] = name
        container["age"] = age
        container["score"] = score
    }
}

/// The same pet as a GRDB record; `ownerId` is the foreign key that
/// `belongsTo` declares, with its index.
struct PetRecord: FetchableRecord, PersistableRecord {
    static let databaseTableName = "pet"
    var id: Int
    var name: String
    var ownerId: Int?
    var weight: Int
}

extension PetRecord {
    init(row: Row) {
        id = row[0]
        name = row[1]
        ownerId = row[2]
        weight = row[3]
    }

    func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["name"] = name
        container["ownerId"] = ownerId
        container["weight"] = weight
    }
}

/// The data both engines hold, generated from each object's id: `n` people
/// and `n` pets.
///
/// - Person `id`: `name = "n" + id % (n / 20)` (20 people share a name),
///   `age = id % 100` (n / 100 people per age), `score = id / 100 % 1000`
///   (so that half of each age has a score under 500).
/// - Pet `id`: owned by person `id % (n / 10)`, so the first tenth of the
///   people own ten pets each, spread over the table; `weight = id / (n /
///   10) * 3`, so each owner's pets weigh 0, 3, ... 27.
struct Dataset {
    let n: Int

    static let ages = 100
    var names: Int { max(1, n / 20) }
    var owners: Int { max(1, n / 10) }

    func person(_ id: Int) -> (name: String, age: Int, score: Int) {
        ("n\(id % names)", id % Self.ages, id / Self.ages % 1000)
    }

    func pet(_ id: Int) -> (name: String, owner: Int, weight: Int) {
        ("pet\(id % 1000)", id % owners, id / owners * 3)
    }

    /// Writes the people and pets with Strata, in one transaction.
    func load(_ db: Strata.Database) throws {
        try db.write { tx in
            for id in 0 ..< n {
                let p = person(id)
                try tx.insert(Person(id: id, name: p.name, age: p.age, score: p.score))
            }
            for id in 0 ..< n {
                let p = pet(id)
                try tx.insert(Pet(id: id, name: p.name, owner: Link(p.owner), weight: p.weight))
            }
        }
    }

    /// Creates GRDB's tables and indexes with its schema builder, then
    /// writes the same people and pets as records, in one transaction.
    func load(_ queue: DatabaseQueue) throws {
        try queue.write { db in
            try db.create(table: "person") { t in
                t.primaryKey("id", .integer)
                t.column("name", .text).notNull().indexed()
                t.column("age", .integer).notNull().indexed()
                t.column("score", .integer).notNull()
            }
            try db.create(table: "pet") { t in
                t.primaryKey("id", .integer)
                t.column("name", .text).notNull()
                t.belongsTo("owner", inTable: "person")
                t.column("weight", .integer).notNull()
            }
            for id in 0 ..< n {
                let p = person(id)
                try PersonRecord(id: id, name: p.name, age: p.age, score: p.score).insert(db)
            }
            for id in 0 ..< n {
                let p = pet(id)
                try PetRecord(id: id, name: p.name, ownerId: p.owner, weight: p.weight).insert(db)
            }
        }
    }
}
