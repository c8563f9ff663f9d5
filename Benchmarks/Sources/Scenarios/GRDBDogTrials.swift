import Foundation
import GRDB

/// The relationships' dog as a GRDB record: `ownerId` is a foreign key to
/// `person` with `ON DELETE CASCADE` and an index, which GRDB's
/// associations find in the schema.
struct DogRecord: FetchableRecord, PersistableRecord {
    static let databaseTableName = "dog"
    static let owner = belongsTo(PersonRecord.self)
    var id: Int64
    var name: String
    var ownerId: Int64?

    init(row: Row) {
        id = row[0]
        name = row[1]
        ownerId = row[2]
    }

    func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["name"] = name
        container["ownerId"] = ownerId
    }
}

extension PersonRecord {
    static let dogs = hasMany(DogRecord.self)
}

/// The relationships (scenarios i to o) as a GRDB app writes them: SQL on
/// rows (`records: false`), or record types and their associations
/// (`records: true`): `belongsTo` for i, `hasMany` for k and m.
struct GRDBDogTrials {
    let n: Int
    let folder: URL
    let records: Bool

    var path: String { folder.appendingPathComponent("dogs.sqlite").path }

    static let createDog =
        "CREATE TABLE dog (id INTEGER PRIMARY KEY, name TEXT NOT NULL, ownerId INTEGER REFERENCES person(id) ON DELETE CASCADE)"

    /// Writes the input file once per kind and copies it for each trial.
    func input(_ file: Dogs.File) throws {
        let template = folder.appendingPathComponent("template-grdb-dogs-\(file.rawValue)-\(n).sqlite")
        if !FileManager.default.fileExists(atPath: template.path) {
            let queue = try DatabaseQueue(path: template.path)
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1") { db in
                try db.execute(sql: GRDBTrials.createV1)
                try db.execute(sql: Self.createDog)
                try db.execute(sql: "CREATE INDEX dog_ownerId ON dog(ownerId)")
            }
            try migrator.migrate(queue)
            try queue.write { db in
                let person = try db.makeStatement(
                    sql: "INSERT INTO person (id, firstName, lastName, age) VALUES (?, ?, ?, ?)")
                for id in 0 ..< n {
                    try person.execute(arguments: [id, Dataset.firstName(id), Dataset.lastName(id), Dataset.age(id)])
                }
                let dog = try db.makeStatement(sql: "INSERT INTO dog (id, name, ownerId) VALUES (?, ?, ?)")
                for id in 0 ..< n {
                    try dog.execute(arguments: [id, Dogs.name(id), Dogs.owner(id, n: n, in: file)])
                }
            }
            try queue.close()
        }
        removeFiles(in: folder, keepingTemplates: true)
        try copyInput(template, to: path)
    }

    func trial(_ scenario: Scenario) -> Trial? {
        switch scenario {
        case .followLinks:
            return records ? linkTrial(follow: true) : nil
        case .ownerLookups:
            return linkTrial(follow: false)
        case .backlinks:
            return backlinkTrial()
        case .cascadeDelete, .directDelete:
            return deleteTrial(cascade: scenario == .cascadeDelete)
        case .addLink, .addInt:
            return records ? nil : addColumnTrial(link: scenario == .addLink)
        default:
            return nil
        }
    }

    /// A read trial on an open queue.
    private func readTrial(
        _ file: Dogs.File, prepare: @escaping (DatabaseQueue) throws -> Void = { _ in },
        run body: @escaping (GRDB.Database) throws -> UInt64
    ) -> Trial {
        let box = ResultBox<DatabaseQueue>()
        let result = ResultBox<UInt64>()
        return Trial(
            setup: {
                try input(file)
                box.value = try DatabaseQueue(path: path)
                try prepare(box.value!)
            },
            run: { result.value = try box.value!.read(body) },
            verify: { result.value ?? 0 },
            cleanup: {
                try? box.value?.close()
                box.value = nil
                removeFiles(in: folder, keepingTemplates: true)
            })
    }

    /// Scenario i (`follow`, records only): the dogs are fetched before the
    /// run, then each one's `request(for: DogRecord.owner).fetchOne(db)`;
    /// or j: the same people by `PersonRecord.fetchOne(db, key:)` (records),
    /// or by `SELECT age FROM person WHERE id = ?` (rows).
    private func linkTrial(follow: Bool) -> Trial {
        let ids = Dogs.followedDogs(n)
        let dogs = ResultBox<[DogRecord]>()
        return readTrial(
            .owners,
            prepare: { queue in
                dogs.value = try queue.read { db in try ids.map { try DogRecord.fetchOne(db, key: $0)! } }
            },
            run: { db in
                var sum: Int64 = 0
                if follow {
                    for dog in dogs.value! { sum &+= try dog.request(for: DogRecord.owner).fetchOne(db)!.age }
                } else if records {
                    for key in dogs.value!.map(\.ownerId!) { sum &+= try PersonRecord.fetchOne(db, key: key)!.age }
                } else {
                    let statement = try db.cachedStatement(sql: "SELECT age FROM person WHERE id = ?")
                    for key in dogs.value!.map(\.ownerId!) { sum &+= try Int64.fetchOne(statement, arguments: [key])! }
                }
                return UInt64(sum)
            })
    }

    /// Scenario k: the dogs of 10,000 people through the index on
    /// `dog.ownerId`: `person.request(for: PersonRecord.dogs).fetchAll(db)`
    /// on people fetched before the run (records), or
    /// `SELECT id, name FROM dog WHERE ownerId = ?` (rows).
    private func backlinkTrial() -> Trial {
        let ids = Dogs.queriedOwners(n)
        let people = ResultBox<[PersonRecord]>()
        return readTrial(
            .owners,
            prepare: { queue in
                people.value = try queue.read { db in try ids.map { try PersonRecord.fetchOne(db, key: $0)! } }
            },
            run: { db in
                var sum: UInt64 = 0
                if records {
                    for person in people.value! {
                        for dog in try person.request(for: PersonRecord.dogs).fetchAll(db) {
                            sum &+= Dogs.backlinkSum(id: Int(dog.id), name: dog.name)
                        }
                    }
                } else {
                    let statement = try db.cachedStatement(sql: "SELECT id, name FROM dog WHERE ownerId = ?")
                    for id in ids {
                        let rows = try Row.fetchCursor(statement, arguments: [id])
                        while let row = try rows.next() { sum &+= Dogs.backlinkSum(id: row[0], name: row[1]) }
                    }
                }
                return sum
            })
    }

    /// Scenario l (`cascade`): delete person 0, whose 100k dogs go by
    /// `ON DELETE CASCADE` (`PersonRecord.deleteOne(db, key: 0)`, or
    /// `DELETE FROM person WHERE id = 0`); or m: delete the same dogs
    /// directly, with `person.request(for: PersonRecord.dogs).deleteAll(db)`
    /// (records: `DELETE FROM dog WHERE ownerId = 0`), or by key with a
    /// prepared `DELETE FROM dog WHERE id = ?` (rows), as Strata does.
    private func deleteTrial(cascade: Bool) -> Trial {
        let box = ResultBox<DatabaseQueue>()
        let children = Dogs.childIDs(n)
        return Trial(
            setup: {
                try input(.kennel)
                box.value = try DatabaseQueue(path: path)
            },
            run: {
                try box.value!.write { db in
                    switch (cascade, records) {
                    case (true, true):
                        guard try PersonRecord.deleteOne(db, key: 0) else { throw ScenarioError("no person 0") }
                    case (true, false):
                        try db.execute(sql: "DELETE FROM person WHERE id = 0")
                    case (false, true):
                        let person = try PersonRecord.fetchOne(db, key: 0)!
                        try person.request(for: PersonRecord.dogs).deleteAll(db)
                    case (false, false):
                        let statement = try db.makeStatement(sql: "DELETE FROM dog WHERE id = ?")
                        for id in children { try statement.execute(arguments: [id]) }
                    }
                }
            },
            verify: {
                try box.value!.read { db in
                    let row = try Row.fetchOne(db, sql: "SELECT COUNT(*), COALESCE(SUM(id), 0) FROM dog")!
                    let linking = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM dog WHERE ownerId = 0")!
                    return Dogs.afterDelete(count: row[0], idSum: row[1], linkingToZero: linking)
                }
            },
            cleanup: {
                try? box.value?.close()
                box.value = nil
                removeFiles(in: folder, keepingTemplates: true)
            })
    }

    /// Scenario n (`link`): a migration adds `bestFriendId`, a foreign key
    /// to `person`, with the index that makes its "has many" side fast (the
    /// index is Strata's backlinks table); or o: one adds `luckyNumber`, an
    /// int column. Both new columns are null.
    private func addColumnTrial(link: Bool) -> Trial {
        let people = GRDBTrials(n: n, folder: folder, pureSQL: false)
        let column = link ? "bestFriendId" : "luckyNumber"
        let statements =
            link
            ? [
                "ALTER TABLE person ADD COLUMN bestFriendId INTEGER REFERENCES person(id) ON DELETE SET NULL",
                "CREATE INDEX person_bestFriendId ON person(bestFriendId)",
            ]
            : ["ALTER TABLE person ADD COLUMN luckyNumber INTEGER"]
        let migration: @Sendable (GRDB.Database) throws -> Void = { db in
            for sql in statements { try db.execute(sql: sql) }
        }
        return Trial(
            setup: { try people.input("v1", GRDBTrials.createV1) },
            run: { try people.migrator(v1: GRDBTrials.createV1, next: migration).migrate(people.queue()) },
            verify: {
                try people.queue().read { db in
                    let sum = try Int64.fetchOne(db, sql: "SELECT SUM(age) FROM person WHERE \(column) IS NULL") ?? 0
                    let linking = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM person WHERE \(column) = 0")!
                    return UInt64(sum) &+ UInt64(linking) << 60
                }
            },
            cleanup: { removeFiles(in: folder, keepingTemplates: true) })
    }
}
