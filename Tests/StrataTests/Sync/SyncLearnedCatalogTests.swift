import Foundation
import Testing

@_spi(Hub) @testable import Strata

/// What a peer teaches a file (kept types and fields) raises the catalog's
/// generation, as every change of the catalog does, and leaves every open
/// `Database` of the file working; a change of the declared schema still
/// ends them.
@Suite(.temporaryFolder) struct SyncLearnedCatalogTests {
    let folder = TemporaryFolder.current

    static func configuration(_ path: String, version: UInt64, _ models: [any Model.Type]) -> Database.Configuration {
        var config = Database.Configuration(path: path, schemaVersion: version, models: models)
        config.durability = .noSync
        config.mode = .synced
        config.sync = .init(dataset: SyncExchangeTests.dataset)
        return config
    }

    func open(_ name: String, version: UInt64, _ models: [any Model.Type]) throws -> Database {
        try Database(configuration: Self.configuration(folder.path(name), version: version, models))
    }

    /// A newer app's file holding a note with a `tag` and a label: what
    /// an older app (`NoteV1` only) learns a type and a field from.
    func newerFile() throws -> Database {
        let newer = try open("newer.strata", version: 2, [NoteV2.self, Label.self])
        try newer.write { tx in
            try tx.insert(NoteV2(id: 1, title: "n", stars: 2, tag: "home"))
            try tx.insert(Label(name: "red", color: 0xFF0000))
        }
        return newer
    }

    func generation(_ db: Database) throws -> UInt64 {
        try db.read { tx in try db.store.generation(tx.context.lmdb) }
    }

    @Test func theApplyingDatabaseAndAnotherOpenBeforeItKeepWorkingAfterLearning() throws {
        let newer = try newerFile()
        let older = try open("older.strata", version: 1, [NoteV1.self])
        let second = try open("older.strata", version: 1, [NoteV1.self])
        #expect(try second.read { tx in try tx.objects(NoteV1.self).count } == 0)

        let report = try older.sync.apply(newer.sync.changes())
        #expect(report.learnedTypes == ["Label"])
        #expect(report.learnedFields == ["Note.tag", "Label.color"])

        for db in [older, second] {
            #expect(
                try db.read { tx in try tx.object(NoteV1.self, primaryKey: 1) } == NoteV1(id: 1, title: "n", stars: 2))
            let status = try db.sync.status()
            #expect(status.keptTypes == ["Label"])
            #expect(status.keptFields == ["Note.tag: string?"])
        }
        try second.write { tx in try tx.update(NoteV1(id: 1, title: "n (second)", stars: 3)) }
        try older.write { tx in try tx.insert(NoteV1(id: 2, title: "o")) }
        // The second database sends what the first one learned, with its own edit.
        try second.sync.exchange(with: newer)
        #expect(
            try newer.read { tx in try tx.object(NoteV2.self, primaryKey: 1) }
                == NoteV2(id: 1, title: "n (second)", stars: 3, tag: "home"))
        #expect(try newer.read { tx in try tx.object(NoteV2.self, primaryKey: 2) }?.title == "o")
        #expect(try older.read { tx in try tx.objects(NoteV1.self).count } == 2)
    }

    /// An observation of the other `Database` goes on through the apply,
    /// and sees the object it brought.
    @Test func anObservationOfAnotherDatabaseGoesOnThroughALearningApply() async throws {
        let newer = try newerFile()
        let older = try open("older.strata", version: 1, [NoteV1.self])
        let second = try open("older.strata", version: 1, [NoteV1.self])
        try await withTimeout {
            var follower = Follower(second.observe(NoteV1.self))
            #expect(try #require(try await follower.next()).results.isEmpty)
            try older.sync.apply(newer.sync.changes())
            let next = try #require(try await follower.next())
            #expect(next.results.map(\.id) == [1])
        }
    }

    /// Another process learns from a changeset while this one has the file
    /// open: this process's `Database` goes on, and sees what was learned.
    @Test func aDatabaseOfThisProcessKeepsWorkingWhenAnotherProcessLearns() async throws {
        let newer = try newerFile()
        let path = folder.path("older.strata")
        let changeset = folder.path("changeset.scs")
        try newer.sync.changes().data.write(to: URL(fileURLWithPath: changeset))
        let older = try Database(configuration: Self.configuration(path, version: 1, [NoteV1.self]))
        let before = try generation(older)

        await #expect(processExitsWith: .success) { [path = path as String, changeset = changeset as String] in
            let db = try Database(configuration: SyncLearnedCatalogTests.configuration(path, version: 1, [NoteV1.self]))
            let report = try db.sync.apply(Changeset(data: try Data(contentsOf: URL(fileURLWithPath: changeset))))
            guard report.learnedTypes == ["Label"], report.learnedFields == ["Note.tag", "Label.color"] else { exit(2) }
        }

        #expect(try generation(older) == before + 1)
        #expect(try await older.read { tx in try tx.object(NoteV1.self, primaryKey: 1) }?.title == "n")
        try await older.write { tx in try tx.update(NoteV1(id: 1, title: "here", stars: 1)) }
        let status = try older.sync.status()
        #expect(status.keptTypes == ["Label"] && status.keptFields == ["Note.tag: string?"])
        try older.sync.exchange(with: newer)
        #expect(
            try await newer.read { tx in try tx.object(NoteV2.self, primaryKey: 1) }
                == NoteV2(id: 1, title: "here", stars: 1, tag: "home"))
    }

    @Test func aChangeOfTheDeclaredSchemaByAnotherDatabaseStillEndsIt() throws {
        let newer = try newerFile()
        let older = try open("older.strata", version: 1, [NoteV1.self])
        try older.sync.apply(newer.sync.changes())
        #expect(try older.read { tx in try tx.objects(NoteV1.self).count } == 1)
        // Another app version declares the learned field: a change of the
        // declared schema, which the learning did not make.
        let upgraded = try open("older.strata", version: 2, [NoteV2.self, Label.self])
        #expect(try upgraded.read { tx in try tx.object(NoteV2.self, primaryKey: 1) }?.tag == "home")
        let error = expectStrataError(.schemaChanged) { try older.read { tx in _ = try tx.objects(NoteV1.self).count } }
        #expect(error?.message.contains("now at schema version 2") == true, "\(error?.message ?? "")")
        expectStrataError(.schemaChanged) { try older.write { tx in _ = try tx.insert(NoteV1(id: 9)) } }
        expectStrataError(.schemaChanged) { _ = try older.sync.status() }
    }

    @Test func onlyAnApplyThatLearnsRaisesTheGeneration() throws {
        let newer = try newerFile()
        let older = try open("older.strata", version: 1, [NoteV1.self])
        let start = try generation(older)
        try older.sync.apply(newer.sync.changes())
        #expect(try generation(older) == start + 1)
        // The same changes again, and a change of a declared field only:
        // nothing learned, the catalog unchanged.
        #expect(try older.sync.apply(newer.sync.changes()).learnedTypes.isEmpty)
        try newer.write { tx in try tx.update(NoteV2(id: 1, title: "again", stars: 5, tag: "home")) }
        let report = try older.sync.apply(newer.sync.changes())
        #expect(report.changedObjects == 1 && report.learnedTypes.isEmpty && report.learnedFields.isEmpty)
        #expect(try generation(older) == start + 1)
        // New objects of a learned type learn nothing either.
        try newer.write { tx in try tx.insert(Label(name: "blue", color: 0x0000FF)) }
        try older.sync.apply(newer.sync.changes())
        #expect(try generation(older) == start + 1)
    }
}

/// The catalog's learning: the only ids it hands out outside evolution,
/// and what tells learning from a change of the declared schema.
@Suite struct CatalogLearningTests {
    static let schema = Schema([
        ObjectSchema("Note", primaryKey: "id", properties: [Property("id", .int), Property("title", .string)])
    ])

    @Test func learningGivesNewIdsAndChangesNothingDeclared() throws {
        let opened = Catalog(schema: Self.schema, schemaVersion: 1, mode: .synced)
        var learned = opened
        let label = learned.learnType(name: "Label", key: Property("name", .string))
        #expect(label.id == opened.nextTypeID && label.isKept && label.primaryKeyProperty?.id == opened.nextPropertyID)
        let first = learned.learnEmbeddedType(named: "Address")
        let again = learned.learnEmbeddedType(named: "Address")
        #expect(first && !again)
        let note = try #require(opened[type: "Note"])
        let tag = learned.learnProperty(Property("tag", .string, optional: true), in: note.id)
        #expect(tag == opened.nextPropertyID.successor)
        #expect(learned.nextTypeID.rawValue == opened.nextTypeID.rawValue + 2)
        #expect(learned.consistencyProblem() == nil)
        #expect(learned.learnsOnly(since: opened))
        #expect(opened.learnsOnly(since: opened))
        let found = learned[type: "Note"]?.storedProperty(
            named: "tag", sameFieldAs: Property("tag", .string, optional: true))
        #expect(found?.id == tag)
        #expect(learned[type: "Note"]?.storedProperty(named: "tag", sameFieldAs: Property("tag", .string)) == nil)
    }

    @Test func anyOtherChangeIsNotLearning() {
        let opened = Catalog(schema: Self.schema, schemaVersion: 1, mode: .synced)
        var added = opened
        added.addType(ObjectSchema("Pin", primaryKey: "id", properties: [Property("id", .int)]))
        #expect(!added.learnsOnly(since: opened))
        var newer = opened
        newer.fileSchemaVersion = 2
        #expect(!newer.learnsOnly(since: opened))
        var removed = opened
        removed.types[0].keptProperties = [removed.types[0].properties.removeLast()]
        #expect(!removed.learnsOnly(since: opened))
        var orphans = opened
        orphans.orphanedDatabases = ["__strata.t1.i4"]
        #expect(opened.learnsOnly(since: orphans))
    }
}
