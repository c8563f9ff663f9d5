import Foundation
import Testing

@testable import Strata

/// A damage done to a sound file (given its path), and the error opening
/// it must give.
typealias FileDamage = Refusal<String>

extension Refusal where Subject == String {
    /// A damage done through the storage layer, past Strata's checks.
    init(
        _ name: String, _ code: StrataError.Code, _ fragment: String,
        raw: @escaping @Sendable (LMDBTransaction) throws -> Void
    ) {
        self.init(name, code, fragment) { path in _ = try RawFile.withWrite(path, raw) }
    }

    /// A change to the catalog's JSON.
    init(
        _ name: String, _ code: StrataError.Code, _ fragment: String,
        catalog: @escaping @Sendable (inout [String: Any]) throws -> Void
    ) {
        self.init(name, code, fragment) { path in try RawFile.rewriteCatalog(path, catalog) }
    }

    static func meta(_ txn: LMDBTransaction) throws -> DatabaseHandle {
        try #require(try txn.openDatabase(FileLayout.meta, create: false))
    }

    static func firstType(_ json: inout [String: Any], _ change: (inout [String: Any]) -> Void) throws {
        var types = try #require(json["types"] as? [[String: Any]])
        change(&types[0])
        json["types"] = types
    }

    /// Damages that FileOpeningTests does not already cover.
    static var all: [FileDamage] {
        [
            FileDamage("catalog with another magic", .corruptFile, "The catalog of") { $0["magic"] = "sqlite" },
            FileDamage("catalog without a format version", .corruptFile, "The catalog of") {
                $0["formatVersion"] = nil
            },
            FileDamage("catalog with an unknown mode", .corruptFile, "is damaged") { $0["mode"] = "shared" },
            FileDamage(
                "catalog with a type id past its counter", .corruptFile,
                "type id 9 of 'Person' is repeated or out of range"
            ) { json in
                try firstType(&json) { $0["id"] = 9 }
            },
            FileDamage(
                "catalog whose schema is invalid", .corruptFile,
                "Primary key 'nope' of 'Person' is not one of its properties"
            ) { json in
                try firstType(&json) { $0["primaryKey"] = "nope" }
            },
            FileDamage(
                "catalog of random bytes", .corruptFile, "The catalog of",
                raw: { txn in
                    var generator = SplitMix64(seed: 11)
                    try txn.put(
                        meta(txn), FileLayout.MetaKey.catalog,
                        (0 ..< 300).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
                }),
            FileDamage(
                "empty catalog", .corruptFile, "The catalog of",
                raw: { txn in
                    try txn.put(meta(txn), FileLayout.MetaKey.catalog, [])
                }),
            FileDamage(
                "generation of the wrong length", .corruptFile, "generation of",
                raw: { txn in
                    try txn.put(meta(txn), FileLayout.MetaKey.generation, [0, 0, 1])
                }),
            FileDamage(
                "records database missing", .corruptFile, "The records of 'Person' are missing",
                raw: { txn in
                    try txn.empty(
                        try #require(try txn.openDatabase(FileLayout.records(TypeID(1)), create: false)), delete: true)
                }),
            FileDamage(
                "index database missing", .corruptFile, "The index on 'Person.age' is missing",
                raw: { txn in
                    try txn.empty(
                        try #require(try txn.openDatabase(FileLayout.index(TypeID(1), PropertyID(4)), create: false)),
                        delete: true)
                }),
        ]
    }

    /// An index database made again without `MDB_DUPSORT`. LMDB 0.9.24's
    /// `mdb_dbi_open` does not report the difference, so today the open
    /// succeeds and the first index lookup fails with `MDB_INCOMPATIBLE`.
    static var indexWithOtherFlags: FileDamage {
        FileDamage(
            "index database with other flags", .corruptFile, "'__strata.t1.i4' in",
            raw: { txn in
                try txn.empty(
                    try #require(try txn.openDatabase(FileLayout.index(TypeID(1), PropertyID(4)), create: false)),
                    delete: true)
                _ = try txn.openDatabase(
                    NamedDatabase(name: FileLayout.index(TypeID(1), PropertyID(4)).name, duplicateKeys: false),
                    create: true)
            })
    }
}

/// Damaged files: each gives a StrataError that names the file and says
/// what is wrong, leaves the file as it was, and crashes nothing.
@Suite(.temporaryFolder) struct DamagedFileTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    @Test(arguments: FileDamage.all, Fixtures.modes)
    func aDamagedFileIsRefusedWithAClearError(_ damage: FileDamage, _ mode: Database.Mode) throws {
        try expectRefused(damage, mode: mode)
    }

    /// mdb_dbi_open does not check an existing database's flags; Strata
    /// compares them itself.
    @Test(arguments: Fixtures.modes) func anIndexDatabaseWithOtherFlagsIsRefusedAtOpen(_ mode: Database.Mode) throws {
        try expectRefused(FileDamage.indexWithOtherFlags, mode: mode)
    }

    func expectRefused(_ damage: FileDamage, mode: Database.Mode, sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        try damage.act(path)
        let before = try RawFile.contents(path)
        let error = expectStrataError(damage.code) {
            _ = try Database(configuration: Fixtures.configuration(path, mode: mode))
        }
        #expect(error?.message.contains(damage.fragment) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        // The plan reads the file the same way, and neither writes to it.
        let planError = expectStrataError(damage.code) {
            _ = try Database.migrationPlan(for: Fixtures.configuration(path, mode: mode))
        }
        #expect(planError?.message == error?.message)
        #expect(try RawFile.contents(path) == before)
    }

    // MARK: Records

    /// 300 people, every record damaged by one to three flipped bytes
    /// (seeded): each read either gives values or `.corruptFile` naming
    /// the type, the object and the file.
    @Test(arguments: Fixtures.modes) func recordsWithFlippedBytesReadOrAreReportedOneByOne(_ mode: Database.Mode) throws
    {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 300, mode: mode)
        var generator = SplitMix64(seed: 12)
        try RawFile.withWrite(path) { txn in
            let records = try #require(try txn.openDatabase(FileLayout.records(TypeID(1)), create: false))
            for id in 1 ... 300 as ClosedRange<Int64> {
                let key = RawFile.key(id)
                var record = try #require(try txn.get(records, key).map { Array($0) })
                for _ in 0 ..< Int.random(in: 1 ... 3, using: &generator) {
                    record[Int.random(in: 0 ..< record.count, using: &generator)] ^= UInt8.random(
                        in: 1 ... 255, using: &generator)
                }
                try txn.put(records, key, record)
            }
        }
        let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
        var damaged = 0
        for id in 1 ... 300 as ClosedRange<Int64> {
            do {
                let values = try db.read { tx in try tx.object("Person", key: .int(id))?.values }
                #expect(values?.count == 5, "person \(id)")
            } catch let error as StrataError {
                damaged += 1
                #expect(error.code == .corruptFile, "\(error.message)")
                #expect(error.message.contains("'Person' with key \(id) in \(path) is damaged"), "\(error.message)")
            }
        }
        // Most single flips hit a length, a tag or an id; some only change a value.
        #expect(damaged > 30 && damaged < 300, "\(damaged) of 300 damaged")
        // A scan stops at the first damaged object with the same error.
        expectStrataError(.corruptFile) { _ = try db.read { tx in try tx.objects("Person").map(\.values) } }
        #expect(try FileVerifier.verify(path).problems.contains { $0.contains("is damaged") })
    }

    @Test(arguments: Fixtures.modes) func aRecordCutAtEveryLengthIsReportedAndTheOthersStillRead(_ mode: Database.Mode)
        throws
    {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        let key = RawFile.key(1)
        func records(_ txn: LMDBTransaction) throws -> DatabaseHandle {
            try #require(try txn.openDatabase(FileLayout.records(TypeID(1)), create: false))
        }
        let record = try RawFile.withWrite(path) { txn in try #require(try txn.get(records(txn), key).map { Array($0) })
        }
        for length in 0 ..< record.count {
            _ = try RawFile.withWrite(path) { txn in try txn.put(records(txn), key, Array(record.prefix(length))) }
            let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
            let error = expectStrataError(.corruptFile) { _ = try db.read { tx in try tx.object("Person", key: 1) } }
            #expect(error?.message.contains("'Person' with key 1") == true, "length \(length): \(error?.message ?? "")")
            #expect(try db.read { tx in try tx.object("Person", key: 2)?.values } == Fixtures.charles)
            db.close()
        }
    }

    // MARK: Lock files

    @Test(arguments: Fixtures.modes) func aLockFileOfRandomBytesLeftBehindIsRebuilt(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        var generator = SplitMix64(seed: 13)
        var people = [Fixtures.ada, Fixtures.charles, Fixtures.annabella]
        for size in [0, 3, 8192, 100_000] {
            let garbage = Data((0 ..< size).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
            try garbage.write(to: URL(fileURLWithPath: path + "-lock"))
            let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
            #expect(try Fixtures.people(db) == people)
            try db.write { tx in try tx.update("Person", key: 1, ["age": .int(Int64(size))]) }
            people[0]["age"] = .int(Int64(size))
            db.close()
        }
        try expectFileVerified(path)
    }

    @Test(arguments: Fixtures.modes) func aLockFileThatIsAFolderIsAFileSystemError(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        try FileManager.default.removeItem(atPath: path + "-lock")
        try FileManager.default.createDirectory(atPath: path + "-lock", withIntermediateDirectories: false)
        let error = expectStrataError(.fileSystem) {
            _ = try Database(configuration: Fixtures.configuration(path, mode: mode))
        }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
    }

    /// A process that dies inside a read transaction leaves its slot in the
    /// reader table while another process keeps the lock file in use. The
    /// next process to open the file clears it, so old pages are reused
    /// again and the file stops growing.
    @Test(.timeLimit(.minutes(2)), arguments: Fixtures.modes)
    func aReaderKilledInAnotherProcessIsClearedByTheNextOpen(_ mode: Database.Mode) async throws {
        let path = folder.path()
        let schema = Blobs.schema
        let holder = try Database(configuration: Fixtures.configuration(path, schema: schema, mode: mode))
        try Self.rewriteBlob(holder, times: 1)
        await #expect(processExitsWith: .signal(SIGKILL)) { [path = path as String, mode = mode as Database.Mode] in
            let db = try Database(configuration: Fixtures.configuration(path, schema: Blobs.schema, mode: mode))
            try db.read { tx in
                _ = try tx.object("Blob", key: 1)
                killSelf()
            }
        }
        await #expect(processExitsWith: .success) { [path = path as String, mode = mode as Database.Mode] in
            _ = try Database(configuration: Fixtures.configuration(path, schema: Blobs.schema, mode: mode))
        }
        // 200 rewrites of a 256 KiB value: 50 MiB if no page could be reused.
        try Self.rewriteBlob(holder, times: 200)
        // The file grows only when no free page can be reused.
        let size = try holder.fileSize.total
        #expect(size < 8 << 20, "the file grew to \(size) bytes: old pages are not being reused")
        holder.close()
        try expectFileVerified(path)
    }

    static func rewriteBlob(_ db: Database, times: Int) throws {
        for round in 0 ..< times {
            try db.write { tx in
                try tx.upsert("Blob", ["id": 1, "payload": .data(Blobs.payload(round, size: 256 << 10))])
            }
        }
    }

    /// A process that dies holding the write lock, while another process
    /// keeps the lock file in use: the next writer gets the lock (LMDB's
    /// robust mutex), and nothing of the dead transaction is in the file.
    @Test(.timeLimit(.minutes(2)), arguments: Fixtures.modes)
    func aWriterKilledHoldingTheWriteLockDoesNotBlockTheNextWriter(_ mode: Database.Mode) async throws {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        let holder = try Database(configuration: Fixtures.configuration(path, mode: mode))
        #expect(try await holder.read { tx in try tx.objects("Person").count } == 3)
        await #expect(processExitsWith: .signal(SIGKILL)) { [path = path as String, mode = mode as Database.Mode] in
            let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
            try db.write { tx in
                try tx.insert("Person", Fixtures.person(99, "Dead", "Writer"))
                try tx.delete("Person", key: 1)
                killSelf()
            }
        }
        try await holder.write { tx in _ = try tx.insert("Person", Fixtures.person(4, "Next", "Writer")) }
        #expect(try await holder.read { tx in try tx.objects("Person").map(\.primaryKey) } == [1, 2, 3, 4])
        holder.close()
        try expectFileVerified(path)
    }

    // MARK: Files that Strata itself must not damage

    /// An index dropped while another Database of the process has the file
    /// open is emptied and listed as orphaned, to be deleted by the next open
    /// that has the file alone. Added again before that, it must leave the
    /// list: otherwise that open deletes an index the catalog uses, and the
    /// file is refused as damaged from then on.
    @Test(arguments: Fixtures.modes)
    func anIndexDroppedAndAddedAgainWhileTheFileIsSharedSurvivesTheNextOpen(_ mode: Database.Mode) throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 20, mode: mode)
        let unindexed = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("firstName", .string)
            Property("lastName", .string)
            Property("age", .int, default: 0)
            Property("email", .string, optional: true)
        }
        let indexed = Migrations.configuration(path, version: 1, [Migrations.personV1], mode: mode)
        let holder = try Database(configuration: indexed)
        let dropped = try Database(configuration: Migrations.configuration(path, version: 1, [unindexed], mode: mode))
        let readded = try Database(configuration: indexed)
        for db in [holder, dropped, readded] { db.close() }
        try expectFileVerified(path)
        let db = try Database(configuration: indexed)
        #expect(try db.read { tx in try tx.objects("Person").where("age", equals: 5).count } == 1)
        db.close()
        try expectFileVerified(path)
    }
}
