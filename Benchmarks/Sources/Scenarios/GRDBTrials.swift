import Foundation
import GRDB

/// The scenarios as a GRDB app would write them: a table `person`, its
/// schema changes as `DatabaseMigrator` migrations. Row by row means a Row
/// cursor and an UPDATE (or INSERT) per row from Swift; pure SQL means one
/// statement doing the whole job, where SQL can express it.
struct GRDBTrials {
    let n: Int
    let folder: URL
    let pureSQL: Bool

    var path: String { folder.appendingPathComponent("people.sqlite").path }

    static let createV1 =
        "CREATE TABLE person (id INTEGER PRIMARY KEY, firstName TEXT NOT NULL, lastName TEXT NOT NULL, age INTEGER NOT NULL)"
    static let createAgeText =
        "CREATE TABLE person (id INTEGER PRIMARY KEY, firstName TEXT NOT NULL, lastName TEXT NOT NULL, age TEXT NOT NULL)"

    /// The migrator of the app: version 1 creates the table; `next` is the
    /// migration under test.
    func migrator(v1: String, index: Bool = false, next: (@Sendable (GRDB.Database) throws -> Void)? = nil)
        -> DatabaseMigrator
    {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: v1)
            if index { try db.execute(sql: "CREATE INDEX person_lastName ON person(lastName)") }
        }
        if let next { migrator.registerMigration("v2", migrate: next) }
        return migrator
    }

    func queue() throws -> DatabaseQueue { try DatabaseQueue(path: path) }

    // MARK: Migrations

    @Sendable static func fullNameSQL(_ db: GRDB.Database) throws {
        try db.execute(sql: "ALTER TABLE person ADD COLUMN fullName TEXT NOT NULL DEFAULT ''")
        try db.execute(sql: "UPDATE person SET fullName = firstName || ' ' || lastName")
        try db.execute(sql: "ALTER TABLE person DROP COLUMN firstName")
        try db.execute(sql: "ALTER TABLE person DROP COLUMN lastName")
    }

    @Sendable static func fullNameRowByRow(_ db: GRDB.Database) throws {
        try db.execute(sql: "ALTER TABLE person ADD COLUMN fullName TEXT NOT NULL DEFAULT ''")
        let update = try db.makeStatement(sql: "UPDATE person SET fullName = ? WHERE id = ?")
        let rows = try Row.fetchCursor(db, sql: "SELECT id, firstName, lastName FROM person")
        while let row = try rows.next() {
            let id: Int64 = row[0]
            let first: String = row[1]
            let last: String = row[2]
            try update.execute(arguments: [first + " " + last, id])
        }
        try db.execute(sql: "ALTER TABLE person DROP COLUMN firstName")
        try db.execute(sql: "ALTER TABLE person DROP COLUMN lastName")
    }

    /// SQLite cannot change a column's type: the table is rebuilt.
    static let createNew =
        "CREATE TABLE person_new (id INTEGER PRIMARY KEY, firstName TEXT NOT NULL, lastName TEXT NOT NULL, age INTEGER NOT NULL)"

    @Sendable static func ageSQL(_ db: GRDB.Database) throws {
        try db.execute(sql: createNew)
        try db.execute(sql: "INSERT INTO person_new SELECT id, firstName, lastName, CAST(age AS INTEGER) FROM person")
        try db.execute(sql: "DROP TABLE person")
        try db.execute(sql: "ALTER TABLE person_new RENAME TO person")
    }

    @Sendable static func ageRowByRow(_ db: GRDB.Database) throws {
        try db.execute(sql: createNew)
        let insert = try db.makeStatement(
            sql: "INSERT INTO person_new (id, firstName, lastName, age) VALUES (?, ?, ?, ?)")
        let rows = try Row.fetchCursor(db, sql: "SELECT id, firstName, lastName, age FROM person")
        while let row = try rows.next() {
            let id: Int64 = row[0]
            let first: String = row[1]
            let last: String = row[2]
            let age: String = row[3]
            try insert.execute(arguments: [id, first, last, Int64(age)!])
        }
        try db.execute(sql: "DROP TABLE person")
        try db.execute(sql: "ALTER TABLE person_new RENAME TO person")
    }

    func trial(_ scenario: Scenario) -> Trial? {
        switch scenario {
        case .closureMigration:
            let migration: @Sendable (GRDB.Database) throws -> Void = pureSQL ? Self.fullNameSQL : Self.fullNameRowByRow
            return Trial(
                setup: { try input("v1", Self.createV1) },
                run: { try migrator(v1: Self.createV1, next: migration).migrate(queue()) },
                verify: { try checksum(sql: "SELECT fullName FROM person ORDER BY id") },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .additiveMigration:
            guard !pureSQL else { return nil }
            let migration: @Sendable (GRDB.Database) throws -> Void = { db in
                try db.execute(sql: "ALTER TABLE person ADD COLUMN nickname TEXT NOT NULL DEFAULT '-'")
                try db.execute(sql: "ALTER TABLE person DROP COLUMN firstName")
            }
            return Trial(
                setup: { try input("v1", Self.createV1) },
                run: { try migrator(v1: Self.createV1, next: migration).migrate(queue()) },
                verify: { try checksum(sql: "SELECT lastName, nickname FROM person ORDER BY id") },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .typeChange:
            let migration: @Sendable (GRDB.Database) throws -> Void = pureSQL ? Self.ageSQL : Self.ageRowByRow
            return Trial(
                setup: { try input("ageText", Self.createAgeText) },
                run: { try migrator(v1: Self.createAgeText, next: migration).migrate(queue()) },
                verify: { try sumOfAges() },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .openUpToDate:
            guard !pureSQL else { return nil }
            return Trial(
                setup: { try input("v1", Self.createV1) },
                run: {
                    let queue = try queue()
                    try migrator(v1: Self.createV1).migrate(queue)
                    try queue.close()
                },
                verify: {
                    UInt64(try queue().read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM person")! })
                },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .insert:
            guard !pureSQL else { return nil }
            return Trial(
                setup: { removeFiles(in: folder, keepingTemplates: true) },
                run: { try create(at: path, Self.createV1, ageText: false) },
                verify: { try sumOfAges() },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .scan, .lookups, .indexLookups:
            guard !pureSQL else { return nil }
            return readTrial(scenario)
        case .followLinks, .ownerLookups, .backlinks, .cascadeDelete, .directDelete, .addLink, .addInt:
            return nil  // makeTrial gives the relationships to their own trials
        }
    }

    private func readTrial(_ scenario: Scenario) -> Trial {
        let box = ResultBox<DatabaseQueue>()
        let result = ResultBox<UInt64>()
        let keys = scenario == .lookups ? Dataset.lookupKeys(n) : []
        let names = scenario == .indexLookups ? Dataset.lookupNames(n) : []
        return Trial(
            setup: {
                try input(scenario == .indexLookups ? "indexed" : "v1", Self.createV1)
                box.value = try queue()
            },
            run: {
                result.value = try box.value!.read { db in
                    var sum: Int64 = 0
                    switch scenario {
                    case .scan:
                        let ages = try Int64.fetchCursor(db, sql: "SELECT age FROM person")
                        while let age = try ages.next() { sum &+= age }
                    case .lookups:
                        let statement = try db.cachedStatement(sql: "SELECT age FROM person WHERE id = ?")
                        for key in keys { sum &+= try Int64.fetchOne(statement, arguments: [key])! }
                    default:
                        let statement = try db.cachedStatement(sql: "SELECT age FROM person WHERE lastName = ?")
                        for name in names {
                            let ages = try Int64.fetchCursor(statement, arguments: [name])
                            while let age = try ages.next() { sum &+= age }
                        }
                    }
                    return UInt64(sum)
                }
            },
            verify: { result.value ?? 0 },
            cleanup: {
                try? box.value?.close()
                box.value = nil
                removeFiles(in: folder, keepingTemplates: true)
            })
    }

    func input(_ kind: String, _ create: String) throws {
        let template = folder.appendingPathComponent("template-grdb-\(kind)-\(n).sqlite")
        if !FileManager.default.fileExists(atPath: template.path) {
            try self.create(at: template.path, create, ageText: kind == "ageText", index: kind == "indexed")
        }
        removeFiles(in: folder, keepingTemplates: true)
        try copyInput(template, to: path)
    }

    /// Runs migration v1 and inserts `n` people in one transaction with a
    /// prepared statement.
    func create(at file: String, _ create: String, ageText: Bool, index: Bool = false) throws {
        let queue = try DatabaseQueue(path: file)
        try migrator(v1: create, index: index).migrate(queue)
        try queue.write { db in
            let insert = try db.makeStatement(
                sql: "INSERT INTO person (id, firstName, lastName, age) VALUES (?, ?, ?, ?)")
            for id in 0 ..< n {
                let age: DatabaseValueConvertible = ageText ? Dataset.ageText(id) : Dataset.age(id)
                try insert.execute(arguments: [id, Dataset.firstName(id), Dataset.lastName(id), age])
            }
        }
        try queue.close()
    }

    func checksum(sql: String) throws -> UInt64 {
        try queue().read { db in
            var hash = Checksum()
            let rows = try Row.fetchCursor(db, sql: sql)
            while let row = try rows.next() {
                for index in 0 ..< row.count { hash.add(row[index] as String) }
            }
            return hash.value
        }
    }

    func sumOfAges() throws -> UInt64 {
        try queue().read { db in UInt64(try Int64.fetchOne(db, sql: "SELECT SUM(age) FROM person") ?? 0) }
    }
}
