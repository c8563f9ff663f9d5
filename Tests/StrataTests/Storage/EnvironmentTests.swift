import Foundation
import Testing

@testable import Strata

/// One environment per file, whatever the path's spelling; file usage and
/// iteration that stay safe while other work goes on.
@Suite(.temporaryFolder) struct EnvironmentTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    @Test(arguments: Fixtures.modes) func aFileOpenedThroughASymbolicLinkSharesTheEnvironmentOfItsRealPath(
        _ mode: Database.Mode
    ) throws {
        let real = folder.path("real.strata")
        let link = folder.path("link.strata")
        let viaReal = try Database(configuration: Fixtures.configuration(real, mode: mode))
        try viaReal.write { tx in try tx.insert("Person", Fixtures.person(1, "Ada")) }
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)

        let viaLink = try Database(configuration: Fixtures.configuration(link, mode: mode))
        #expect(viaLink.environment === viaReal.environment)
        #expect(try viaLink.read { tx in try tx.object("Person", key: 1)?["firstName"] } == "Ada")
        #expect(!FileManager.default.fileExists(atPath: link + "-lock"))
    }

    @Test(arguments: Fixtures.modes) func aSymbolicLinkOpensAloneWithoutAFalseTruncationError(_ mode: Database.Mode)
        throws
    {
        let real = folder.path("real.strata")
        let link = folder.path("link.strata")
        do {
            let db = try Database(configuration: Fixtures.configuration(real, mode: mode))
            try db.write { tx in try tx.insert("Person", Fixtures.person(1)) }
        }
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        let db = try Database(configuration: Fixtures.configuration(link, mode: mode))
        #expect(try db.read { tx in try tx.objects("Person").count } == 1)
    }

    @Test(arguments: Fixtures.modes) func aHardLinkSharesTheEnvironmentOfTheFile(_ mode: Database.Mode) throws {
        let first = folder.path("first.strata")
        let second = folder.path("second.strata")
        let a = try Database(configuration: Fixtures.configuration(first, mode: mode))
        try FileManager.default.linkItem(atPath: first, toPath: second)
        let b = try Database(configuration: Fixtures.configuration(second, mode: mode))
        #expect(a.environment === b.environment)
        try b.write { tx in try tx.insert("Person", Fixtures.person(2)) }
        #expect(try a.read { tx in try tx.object("Person", key: 2) != nil })
    }

    @Test(arguments: Fixtures.modes) func theLastDatabaseForAFileClosesItsEnvironment(_ mode: Database.Mode) throws {
        let path = folder.path()
        var first: Database? = try Database(configuration: Fixtures.configuration(path, mode: mode))
        var second: Database? = try Database(configuration: Fixtures.configuration(path, mode: mode))
        let shared = ObjectIdentifier(first!.environment)
        #expect(ObjectIdentifier(second!.environment) == shared)
        first = nil
        try second!.write { tx in try tx.insert("Person", Fixtures.person(1)) }
        second = nil
        _ = (first, second)
        // A read-only open would be refused if a writable environment were
        // still registered; a fresh one opens and sees the data.
        var readOnly = Fixtures.configuration(path, mode: mode)
        readOnly.readOnly = true
        let reopened = try Database(configuration: readOnly)
        #expect(try reopened.read { tx in try tx.objects("Person").count } == 1)
    }

    @Test func aFailedOpenGivesItsLeaseBack() throws {
        let path = folder.path()
        _ = try Database(configuration: Fixtures.configuration(path, version: 2))
        expectStrataError(.schemaVersionTooLow) {
            _ = try Database(configuration: Fixtures.configuration(path, version: 1))
        }
        var readOnly = Fixtures.configuration(path, version: 2)
        readOnly.readOnly = true
        #expect(throws: Never.self) { _ = try Database(configuration: readOnly) }
    }

    @Test(arguments: Fixtures.modes) func fileSizeIsSafeWhileAnotherThreadGrowsTheMap(_ mode: Database.Mode) throws {
        var config = Fixtures.configuration(folder.path(), mode: mode)
        config.initialMapSize = 16 << 10
        let db = try Database(configuration: config)
        let done = Flag()
        let readings = Counter()
        let reader = Thread {
            while !done.isSet {
                if let size = try? db.fileSize, size.used > 0 { readings.increment() }
            }
        }
        reader.start()
        for batch in 0 ..< 40 {
            try db.write { tx in
                for i in 0 ..< 100 {
                    let id = Int64(batch * 100 + i)
                    try tx.insert("Person", Fixtures.person(id, String(repeating: "n", count: 200)))
                }
            }
        }
        done.set()
        #expect(db.environment.mapSize > 16 << 10)
        #expect(try db.read { tx in try tx.objects("Person").count } == 4000)
    }

    @Test(arguments: Fixtures.modes) func aLoopThatInsertsWhileItIteratesEnds(_ mode: Database.Mode) throws {
        let db = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
        try db.write { tx in
            for id in 1 ... 10 { try tx.insert("Person", Fixtures.person(Int64(id), age: 5)) }
        }
        let (scanned, indexed) = try db.write { tx -> (Int, Int) in
            var scanned = 0
            try tx.objects("Person").forEach { person in
                scanned += 1
                try tx.insert("Person", Fixtures.person(person["id"].int! + 1000, age: 5))
            }
            var indexed = 0
            try tx.objects("Person").where("age", equals: 5).forEach { person in
                indexed += 1
                try tx.insert("Person", Fixtures.person(person["id"].int! + 100_000, age: 5))
            }
            return (scanned, indexed)
        }
        #expect(scanned == 10)
        #expect(indexed == 20)
        #expect(try db.read { tx in try tx.objects("Person").count } == 40)
    }

    @Test(arguments: Fixtures.modes) func aNaNDefaultDoesNotBlockReopening(_ mode: Database.Mode) throws {
        let schema = Schema([
            ObjectSchema("Reading", primaryKey: "id") {
                Property("id", .int)
                Property("value", .double, default: .double(.nan))
                Property("offset", .double, default: .double(-0.0))
            }
        ])
        do {
            let db = try Database(configuration: Fixtures.configuration(folder.path(), schema: schema, mode: mode))
            try db.write { tx in try tx.insert("Reading", ["id": 1]) }
        }
        let db = try Database(configuration: Fixtures.configuration(folder.path(), schema: schema, mode: mode))
        #expect(try db.read { tx in try tx.object("Reading", key: 1)?["value"].double?.isNaN } == true)
    }

    @Test func aSyncedModeFileOpenedInLocalModeIsRefusedByName() throws {
        let path = folder.path()
        try Fixtures.seed(path)
        try RawFile.rewriteCatalog(path) { $0["mode"] = "synced" }
        let error = expectStrataError(.modeMismatch) { _ = try Database(configuration: Fixtures.configuration(path)) }
        #expect(error?.message.contains("synced-mode file") == true)
        #expect(error?.message.contains("Set Configuration.mode to .synced") == true)
        #expect(error?.message.contains(path) == true)
    }

    @Test(arguments: Fixtures.modes) func anExhaustedAutomaticIDCounterIsReportedAsDamage(_ mode: Database.Mode) throws
    {
        let path = folder.path()
        let schema = Schema([ObjectSchema("Note") { Property("text", .string) }])
        do {
            let db = try Database(configuration: Fixtures.configuration(path, schema: schema, mode: mode))
            try db.write { tx in try tx.insert("Note", ["text": "first"]) }
        }
        try RawFile.withWrite(path) { txn in
            let meta = try #require(try txn.openDatabase(FileLayout.meta, create: false))
            let writer = ByteWriter()
            writer.appendBigEndian(UInt64(Int64.max))
            try txn.put(meta, Array("seq.t1".utf8), writer.bytes)
        }
        let db = try Database(configuration: Fixtures.configuration(path, schema: schema, mode: mode))
        let error = expectStrataError(.corruptFile) {
            try db.write { tx in _ = try tx.insert("Note", ["text": "second"]) }
        }
        #expect(error?.message.contains("'Note'") == true)
        #expect(try db.read { tx in try tx.objects("Note").count } == 1)
    }

    @Test(arguments: Fixtures.modes) func updateWithANullPrimaryKeyNamesTheKeyType(_ mode: Database.Mode) throws {
        let db = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
        try db.write { tx in try tx.insert("Person", Fixtures.person(1)) }
        let error = expectStrataError(.invalidValue) {
            try db.write { tx in try tx.update("Person", key: 1, ["id": nil]) }
        }
        #expect(error?.message.contains("is int, but null was given") == true)
    }

    @Test(arguments: Fixtures.modes) func emptyingTheTableBeingWalkedEndsTheWalk(_ mode: Database.Mode) throws {
        let db = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
        try db.write { tx in
            for id in 1 ... 5 { try tx.insert("Person", Fixtures.person(Int64(id), age: 30)) }
        }
        let (scanned, indexed, ages) = try db.write { tx -> (Int, Int, [Int64]) in
            var scanned = 0
            try tx.objects("Person").forEach { _ in
                scanned += 1
                try tx.deleteAll("Person")
                try tx.insert("Person", Fixtures.person(1, age: 30))
            }
            var indexed = 0
            var ages: [Int64] = []
            try tx.insert("Person", Fixtures.person(2, age: 30))
            try tx.objects("Person").where("age", equals: 30).forEach { person in
                indexed += 1
                ages.append(person["age"].int!)
                try tx.deleteAll("Person")
                try tx.insert("Person", Fixtures.person(9, age: 99))
            }
            return (scanned, indexed, ages)
        }
        #expect(scanned == 1)
        #expect(indexed == 1)
        #expect(ages == [30])
        #expect(try db.read { tx in try tx.objects("Person").map { $0["id"].int! } } == [9])
    }

    @Test(arguments: Fixtures.modes) func aSecondOpenWithAnotherDurabilityIsRefused(_ mode: Database.Mode) throws {
        let path = folder.path()
        let first = try Database(configuration: Fixtures.configuration(path, mode: mode))
        var full = Fixtures.configuration(path, mode: mode)
        full.durability = .full
        let error = expectStrataError(.storage) { _ = try Database(configuration: full) }
        #expect(error?.message.contains("another durability") == true)
        _ = first
    }

    @Test(arguments: Fixtures.modes) func aFileReplacedWhileOpenIsRefusedRatherThanOpenedTwice(_ mode: Database.Mode)
        throws
    {
        let path = folder.path()
        let first = try Database(configuration: Fixtures.configuration(path, mode: mode))
        try first.write { tx in try tx.insert("Person", Fixtures.person(1)) }
        try FileManager.default.removeItem(atPath: path)
        let error = expectStrataError(.fileSystem) {
            _ = try Database(configuration: Fixtures.configuration(path, mode: mode))
        }
        #expect(error?.message.contains("replaced or deleted") == true)
        #expect(try first.read { tx in try tx.objects("Person").count } == 1)
    }

    @Test(arguments: Fixtures.modes) func aClosedDatabaseRefusesTransactionsAndTheFileReopens(_ mode: Database.Mode)
        throws
    {
        let path = folder.path()
        let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
        try db.write { tx in try tx.insert("Person", Fixtures.person(1)) }
        db.close()
        db.close()
        expectStrataError(.closed) { _ = try db.read { tx in try tx.objects("Person").count } }
        expectStrataError(.closed) { try db.write { tx in _ = try tx.insert("Person", Fixtures.person(2)) } }
        expectStrataError(.closed) { _ = try db.fileSize }
        // The file was really closed: it can be moved and opened again.
        let moved = folder.path("moved.strata")
        try FileManager.default.moveItem(atPath: path, toPath: moved)
        var readOnly = Fixtures.configuration(moved, mode: mode)
        readOnly.readOnly = true
        #expect(try Database(configuration: readOnly).read { tx in try tx.objects("Person").count } == 1)
    }

    @Test(arguments: Fixtures.modes) func closingOneOfTwoDatabasesOfAFileKeepsTheOtherWorking(_ mode: Database.Mode)
        throws
    {
        let first = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
        let second = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
        first.close()
        try second.write { tx in try tx.insert("Person", Fixtures.person(1)) }
        #expect(try second.read { tx in try tx.objects("Person").count } == 1)
    }

    @Test(arguments: Fixtures.modes) func closeWaitsForATransactionRunningOnAnotherThread(_ mode: Database.Mode) throws
    {
        let db = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
        try db.write { tx in try tx.insert("Person", Fixtures.person(1)) }
        let inside = DispatchSemaphore(value: 0)
        let finished = Flag()
        let readerDone = DispatchGroup()
        readerDone.enter()
        Thread {
            let name = try? db.read { tx -> String? in
                inside.signal()
                // Keeps the transaction open while `close` is called; not
                // a timing assertion: the test passes without the overlap.
                Thread.sleep(forTimeInterval: 0.1)
                return try tx.object("Person", key: 1)?["firstName"].string
            }
            if name == "First" { finished.set() }
            readerDone.leave()
        }.start()
        inside.wait()
        db.close()
        readerDone.wait()
        #expect(finished.isSet)
    }
}
