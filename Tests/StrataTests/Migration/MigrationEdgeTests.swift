import Foundation
import Testing

@testable import Strata

/// Edge cases of migrations found in review: other Databases and readers
/// during a migration, map growth, renames that chain across versions.
@Suite(.temporaryFolder) struct MigrationEdgeTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    struct Stop: Error {}

    static let dog = ObjectSchema("Dog", primaryKey: "id") {
        Property("id", .int)
        Property("name", .string, indexed: true)
    }

    // MARK: LMDB handles and rollback

    /// A migration that deletes a type's data and then fails leaves other
    /// Databases of the file working: deleting a named database would close
    /// its handle for the whole process even on rollback, so migrations only
    /// empty databases and a later exclusive open deletes them.
    @Test func aFailedMigrationThatDeletedDataLeavesOtherDatabasesReadable() throws {
        let path = folder.path()
        let v1 = Migrations.configuration(path, version: 1, [Migrations.personV1, Self.dog])
        let holder = try Database(configuration: v1)
        defer { holder.close() }
        try holder.write { tx in
            try tx.insert("Person", Fixtures.person(1))
            try tx.insert("Dog", ["id": 1, "name": "Rex"])
        }
        expectStrataError(.migrationFailed) {
            _ = try Database(
                configuration: Migrations.configuration(path, version: 2, [Migrations.personV1]) { migration, _ in
                    try migration.deleteData(forType: "Dog")
                    throw Stop()
                })
        }
        // Nothing was committed: the holder is still at the file's generation.
        #expect(try holder.read { tx in try tx.objects("Dog").count } == 1)
        #expect(try holder.read { tx in try tx.objects("Dog").where("name", equals: "Rex").count } == 1)
        try holder.write { tx in try tx.insert("Dog", ["id": 2, "name": "Fido"]) }
    }

    /// When the map fills up, the migration runs again with the tables
    /// read before the first attempt: the first attempt's `deleteData` must
    /// not have closed any of their handles.
    @Test func aMigrationRetriedAfterTheMapGrowsCanStillReadARemovedType() throws {
        let path = folder.path()
        let blob = ObjectSchema("Blob", primaryKey: "id") {
            Property("id", .int)
            Property("payload", .data)
        }
        var v1 = Migrations.configuration(path, version: 1, [blob, Self.dog])
        v1.initialMapSize = 64 << 10
        let first = try Database(configuration: v1)
        try first.write { tx in try tx.insert("Dog", ["id": 1, "name": "Rex"]) }
        first.close()
        var v2 = Migrations.configuration(path, version: 2, [blob]) { migration, _ in
            var names: [String] = []
            try migration.enumerateObjects(ofType: "Dog") { old, _ in names.append(old!["name"].string!) }
            #expect(names == ["Rex"])
            try migration.deleteData(forType: "Dog")
            // Enough to fill the small map, so the transaction is retried.
            for id in 0 ..< 16 {
                try migration.create("Blob", value: ["id": .int(Int64(id)), "payload": .data(Data(count: 64 << 10))])
            }
        }
        v2.initialMapSize = 64 << 10
        // The grown map is not kept after a failed open: every launch fails.
        for _ in 0 ..< 2 {
            do {
                let db = try Database(configuration: v2)
                #expect(try db.read { tx in try tx.objects("Blob").count } == 16)
                return
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    /// The map is grown before a migration, so that the closure runs once
    /// even when the file starts with a map far smaller than the migration
    /// needs.
    @Test func aMigrationRetriedAfterTheMapGrowsRunsTheClosureOnce() throws {
        let path = folder.path()
        let blob = ObjectSchema("Blob", primaryKey: "id") {
            Property("id", .int)
            Property("payload", .data)
        }
        var v1 = Migrations.configuration(path, version: 1, [blob, Self.dog])
        v1.initialMapSize = 64 << 10
        let first = try Database(configuration: v1)
        try first.write { tx in try tx.insert("Dog", ["id": 1, "name": "Rex"]) }
        first.close()
        let runs = Recorder<Int>()
        var v2 = Migrations.configuration(path, version: 2, [blob]) { migration, _ in
            runs.append(1)
            for id in 0 ..< 16 {
                try migration.create("Blob", value: ["id": .int(Int64(id)), "payload": .data(Data(count: 64 << 10))])
            }
        }
        v2.initialMapSize = 64 << 10
        let db = try Database(configuration: v2)
        #expect(try db.read { tx in try tx.objects("Blob").count } == 16)
        #expect(runs.all.count == 1)
    }

    /// A read transaction sees one snapshot however long it runs and
    /// whatever is written meanwhile, even when another Database of the
    /// file migrates it and drops an index the reader is using.
    @Test func aReadThatBeganBeforeAMigrationStillUsesItsIndex() throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 10)
        let a = try Database(configuration: Migrations.configuration(path, version: 1, [Migrations.personV1]))
        defer { a.close() }
        let started = DispatchSemaphore(value: 0)
        let migrated = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let result = Recorder<String>()
        let thread = Thread {
            do {
                let count = try a.read { tx in
                    started.signal()
                    migrated.wait()
                    return try tx.objects("Person").where("age", equals: 5).count
                }
                result.append("\(count)")
            } catch {
                result.append("\(error)")
            }
            done.signal()
        }
        thread.start()
        started.wait()
        let unindexed = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("firstName", .string)
            Property("lastName", .string)
            Property("age", .int, default: 0)
            Property("email", .string, optional: true)
        }
        let b = try Database(configuration: Migrations.configuration(path, version: 2, [unindexed]))
        migrated.signal()
        done.wait()
        #expect(result.all == ["1"])
        b.close()
    }

    /// `deleteData` called while the same removed type is being walked:
    /// the walk reads the pre-migration snapshot, so it must go on to the
    /// end, and the data must be gone afterwards.
    @Test func deleteDataInsideTheWalkOfTheSameTypeFinishesTheWalk() throws {
        let path = folder.path()
        let first = try Database(
            configuration: Migrations.configuration(path, version: 1, [Migrations.personV1, Self.dog]))
        try first.write { tx in
            for id in 1 ... 500 {
                try tx.insert(
                    "Dog", ["id": .int(Int64(id)), "name": .string("dog \(id) " + String(repeating: "x", count: 200))])
            }
        }
        first.close()
        let seen = Recorder<Int64>()
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [Migrations.personV1, Migrations.note]) {
                migration, _ in
                try migration.enumerateObjects(ofType: "Dog") { old, _ in
                    seen.append(old!["id"].int!)
                    if old!["id"] == 1 { try migration.deleteData(forType: "Dog") }
                    // A new table opened after the drop may take the freed handle.
                    if old!["id"] == 2 { try migration.create("Note", value: ["text": "made"]) }
                    #expect(old!["name"].string!.hasPrefix("dog \(old!["id"].int!) "))
                }
            })
        #expect(seen.all == Array(1 ... 500))
        db.close()
        let again = try Database(
            configuration: Migrations.configuration(path, version: 3, [Migrations.personV1, Migrations.note, Self.dog]))
        #expect(try again.read { tx in try tx.objects("Dog").count } == 0)
        #expect(try again.read { tx in try tx.objects("Note").count } == 1)
    }

    // MARK: Rewrites and indexes

    /// DESIGN §4.5: rewrite with values that grow and shrink, with and
    /// without new keys, deleting some objects; then every index entry
    /// matches a record and every record has its entry.
    @Test(arguments: [false, true])
    func rewritesThatGrowAndShrinkKeepRecordsAndIndexesInStep(_ newKeys: Bool) throws {
        let path = folder.path()
        let v1 = ObjectSchema("Dog", primaryKey: "id") {
            Property("id", .int)
            Property("code", .string)
            Property("name", .string, indexed: true)
        }
        let v2 = ObjectSchema("Dog", primaryKey: newKeys ? "code" : "id") {
            Property("id", .int)
            Property("code", .string)
            Property("name", .string, indexed: true)
        }
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [v1]))
        try first.write { tx in
            for id in 1 ... 3000 {
                try tx.insert(
                    "Dog",
                    [
                        "id": .int(Int64(id)), "code": .string(String(format: "c%05d", 3001 - id)),
                        "name": .string(String(repeating: "n", count: id % 50)),
                    ])
            }
        }
        first.close()
        @Sendable func expectedName(_ id: Int64) -> String {
            id % 2 == 0 ? "grown \(id) " + String(repeating: "g", count: 600) : "s\(id % 5)"
        }
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [v2]) { migration, _ in
                try migration.enumerateObjects(ofType: "Dog") { old, new in
                    let id = old!["id"].int!
                    if id % 7 == 0 {
                        migration.delete(new!)
                        return
                    }
                    new!["name"] = .string(expectedName(id))
                }
            })
        let survivors = (1 ... Int64(3000)).filter { $0 % 7 != 0 }
        try db.read { tx throws in
            let records = try tx.objects("Dog").map { ($0["id"].int!, $0["name"].string!) }
            #expect(records.count == survivors.count)
            #expect(Set(records.map(\.0)) == Set(survivors))
            #expect(records.allSatisfy { $0.1 == expectedName($0.0) })
            #expect(try tx.objects("Dog").where("name", equals: .string(expectedName(10))).map { $0["id"] } == [10])
            #expect(
                try tx.objects("Dog").where("name", equals: "s3").count
                    == survivors.filter { $0 % 2 == 1 && $0 % 5 == 3 }.count)
            #expect(try tx.objects("Dog").where("name", equals: "nnn").count == 0)
        }
        let index = try #require(db.tables["Dog"]?.field(named: "name").index)
        #expect(try db.environment.withReadTransaction { try $0.entryCount(index) } == survivors.count)
    }

    // MARK: Synced mode

    /// Kept values survive update on a type with automatic ids and
    /// upsert on a type without indexes (paths the synced suite does not take).
    @Test func keptValuesSurviveUpdatesOfAutomaticIdObjectsAndUnindexedUpserts() throws {
        let path = folder.path()
        let logV1 = ObjectSchema("Log") {
            Property("text", .string)
            Property("level", .int, default: 1)
            Property("extra", .string, optional: true)
        }
        let logV2 = ObjectSchema("Log") {
            Property("text", .string)
            Property("extra", .string, optional: true)
        }
        let tagV1 = ObjectSchema("Tag", primaryKey: "id") {
            Property("id", .int)
            Property("color", .string)
            Property("name", .string)
        }
        let tagV2 = ObjectSchema("Tag", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
        }
        let first = try Database(
            configuration: Migrations.configuration(path, version: 1, [logV1, tagV1], mode: .synced))
        try first.write { tx in
            try tx.insert("Log", ["text": "a", "level": 7])
            try tx.insert("Tag", ["id": 1, "color": "red", "name": "x"])
        }
        first.close()
        let second = try Database(
            configuration: Migrations.configuration(path, version: 2, [logV2, tagV2], mode: .synced))
        try second.write { tx in
            try tx.update("Log", key: 1, ["text": "b"])
            try tx.upsert("Tag", ["id": 1, "name": "y"])
            try tx.update("Tag", key: 1, ["name": "z"])
        }
        second.close()
        let older = try Database(
            configuration: Migrations.configuration(path, version: 1, [logV1, tagV1], mode: .synced))
        #expect(
            try older.read { tx in try tx.object("Log", key: 1)?.values } == ["text": "b", "level": 7, "extra": nil])
        #expect(
            try older.read { tx in try tx.object("Tag", key: 1)?.values } == ["id": 1, "color": "red", "name": "z"])
    }

    // MARK: The generation check

    /// Two Databases of one file with the same schema, its types listed in
    /// another order: the schema did not change, so neither should tell
    /// the other to reopen (and the second open should write nothing).
    @Test(arguments: Fixtures.modes) func theSameSchemaInAnotherOrderIsNotASchemaChange(_ mode: Database.Mode) throws {
        let path = folder.path()
        let a = try Database(
            configuration: Migrations.configuration(
                path, version: 1, [Migrations.personV1, Migrations.note], mode: mode))
        defer { a.close() }
        let b = try Database(
            configuration: Migrations.configuration(
                path, version: 1, [Migrations.note, Migrations.personV1], mode: mode))
        defer { b.close() }
        #expect(b.openingPlan.action == .open, "\(b.openingPlan)")
        #expect(try a.read { tx in try tx.objects("Person").count } == 0)
    }

    // MARK: Rule classification (DESIGN §3)

    /// A kept type named again at a raised version: the plan lists its
    /// real changes (a type change, handled by the closure), not only that
    /// the type was added.
    @Test func thePlanForAReAddedKeptTypeListsItsRealChanges() throws {
        let path = folder.path()
        let first = try Database(
            configuration: Migrations.configuration(path, version: 1, [Migrations.personV1, Self.dog]))
        try first.write { tx in try tx.insert("Dog", ["id": 1, "name": "Rex"]) }
        first.close()
        try Database(configuration: Migrations.configuration(path, version: 2, [Migrations.personV1])).close()
        let dogNameInt = ObjectSchema("Dog", primaryKey: "id") {
            Property("id", .int)
            Property("name", .int, default: 0)
        }
        let plan = try Database.migrationPlan(
            for: Migrations.configuration(path, version: 3, [Migrations.personV1, dogNameInt]) { _, _ in })
        #expect(
            plan.steps.contains { $0.change.kind == .propertyTypeChanged && $0.handling == .migrationClosure },
            "\(plan)")
        #expect(!plan.description.contains("Its table is created"), "\(plan)")
    }

    /// Renaming the primary key property keeps the keys: a catalog change.
    @Test func renamingThePrimaryKeyPropertyRewritesNothing() throws {
        let path = folder.path()
        let v1 = ObjectSchema("Item", primaryKey: "id") {
            Property("id", .string)
            Property("label", .string, indexed: true)
        }
        let v2 = ObjectSchema("Item", primaryKey: "sku") {
            Property("sku", .string)
            Property("label", .string, indexed: true)
        }
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [v1]))
        try first.write { tx in
            try tx.insert("Item", ["id": "b", "label": "two"])
            try tx.insert("Item", ["id": "a", "label": "one"])
        }
        first.close()
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [v2]) { migration, _ in
                try migration.renameProperty(onType: "Item", from: "id", to: "sku")
            })
        #expect(Instrumentation.recordWritesOfLastOpen(db.path) == 0)
        #expect(try db.read { tx in try tx.object("Item", key: "b")?.values } == ["sku": "b", "label": "two"])
        #expect(try db.read { tx in try tx.objects("Item").where("label", equals: "one").map(\.primaryKey) } == ["a"])
    }

    // MARK: Rename chains

    static let dogV1 = ObjectSchema("Dog", primaryKey: "id") {
        Property("id", .int)
        Property("name", .string)
    }
    static let dogV2 = ObjectSchema("Dog", primaryKey: "id") {
        Property("id", .int)
        Property("title", .string)
    }
    static let houndV3 = ObjectSchema("Hound", primaryKey: "id") {
        Property("id", .int)
        Property("title", .string)
    }

    /// Version 2 renames a property, version 3 renames its type: the
    /// closure written version by version works for version-1 and
    /// version-2 files alike.
    @Test func aPropertyRenameFollowedByATypeRenameChainsFromVersionOne() throws {
        let migration: Database.MigrationBlock = { migration, oldVersion in
            if oldVersion < 2 { try migration.renameProperty(onType: "Dog", from: "name", to: "title") }
            if oldVersion < 3 { try migration.renameType(from: "Dog", to: "Hound") }
        }
        let path = folder.path()
        let first = try Database(configuration: Migrations.configuration(path, version: 1, [Self.dogV1]))
        try first.write { tx in try tx.insert("Dog", ["id": 1, "name": "Rex"]) }
        first.close()
        let db = try Database(
            configuration: Migrations.configuration(path, version: 3, [Self.houndV3], migration: migration))
        #expect(try db.read { tx in try tx.object("Hound", key: 1)?["title"] } == "Rex")
    }

    /// Version 2 renames the type, version 3 renames a property of it.
    @Test func aTypeRenameFollowedByAPropertyRenameChainsFromVersionOne() throws {
        let dogV1 = Self.dogV1
        let houndV2 = ObjectSchema("Hound", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
        }
        let upToThree: Database.MigrationBlock = { migration, oldVersion in
            if oldVersion < 2 { try migration.renameType(from: "Dog", to: "Hound") }
            if oldVersion < 3 { try migration.renameProperty(onType: "Hound", from: "name", to: "title") }
        }
        // Works from version 2 ...
        let fromTwo = folder.path("two.strata")
        try Database(configuration: Migrations.configuration(fromTwo, version: 1, [dogV1])).close()
        try Database(
            configuration: Migrations.configuration(fromTwo, version: 2, [houndV2]) { migration, oldVersion in
                if oldVersion < 2 { try migration.renameType(from: "Dog", to: "Hound") }
            }
        ).close()
        try Database(configuration: Migrations.configuration(fromTwo, version: 3, [Self.houndV3], migration: upToThree))
            .close()
        // ... and must from version 1, with a chain of type renames too.
        let fourth = ObjectSchema("Canine", primaryKey: "id") {
            Property("id", .int)
            Property("title", .string)
        }
        let longer: Database.MigrationBlock = { migration, oldVersion in
            try upToThree(migration, oldVersion)
            if oldVersion < 4 { try migration.renameType(from: "Hound", to: "Canine") }
        }
        let fromOne = folder.path("one.strata")
        let first = try Database(configuration: Migrations.configuration(fromOne, version: 1, [dogV1]))
        try first.write { tx in try tx.insert("Dog", ["id": 1, "name": "Rex"]) }
        first.close()
        let db = try Database(configuration: Migrations.configuration(fromOne, version: 4, [fourth], migration: longer))
        #expect(try db.read { tx in try tx.object("Canine", key: 1)?["title"] } == "Rex")
    }
}
