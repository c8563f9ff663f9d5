import Foundation
import Testing

@testable import Strata

/// Misuse stops the program with a message instead of reading freed or
/// moved memory. Each case runs in a child process.
@Suite(.temporaryFolder) struct MisuseTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    @Test(arguments: Fixtures.modes) func anObjectUsedAfterItsReadTransactionStopsTheProgram(_ mode: Database.Mode)
        async throws
    {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [mode = mode as Database.Mode] in
            let folder = try TemporaryFolder()
            let db = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
            try db.write { tx in try tx.insert("Person", Fixtures.person(1)) }
            var escaped: DynamicObject?
            try db.read { tx in escaped = try tx.object("Person", key: 1) }
            _ = escaped?["firstName"]
        }
        let stderr = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(stderr.contains("used after its transaction ended"), "stderr: \(stderr)")
    }

    @Test(arguments: Fixtures.modes) func anObjectUsedAfterItsWriteTransactionStopsTheProgram(_ mode: Database.Mode)
        async throws
    {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [mode = mode as Database.Mode] in
            let folder = try TemporaryFolder()
            let db = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
            var escaped: DynamicObject?
            try db.write { tx in
                try tx.insert("Person", Fixtures.person(1))
                escaped = try tx.object("Person", key: 1)
            }
            _ = escaped?.schemaVersion
        }
        let stderr = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(stderr.contains("used after its transaction ended"), "stderr: \(stderr)")
    }

    @Test(arguments: Fixtures.modes) func aWriteNestedInAWriteOnOneThreadStopsTheProgram(_ mode: Database.Mode)
        async throws
    {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [mode = mode as Database.Mode] in
            let folder = try TemporaryFolder()
            let db = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
            try db.write { _ in
                try db.write { tx in try tx.insert("Person", Fixtures.person(1)) }
            }
        }
        let stderr = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(stderr.contains("nested write transactions are not supported"), "stderr: \(stderr)")
    }

    @Test(arguments: Fixtures.modes) func anUnknownPropertyNameInASubscriptStopsTheProgram(_ mode: Database.Mode)
        async throws
    {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            [mode = mode as Database.Mode] in
            let folder = try TemporaryFolder()
            let db = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
            try db.write { tx in try tx.insert("Person", Fixtures.person(1)) }
            try db.read { tx in _ = try tx.object("Person", key: 1)?["nickname"] }
        }
        let stderr = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(stderr.contains("has no property 'nickname'"), "stderr: \(stderr)")
    }

    @Test(arguments: Fixtures.modes) func objectsStayReadableForTheWholeTransaction(_ mode: Database.Mode) throws {
        let db = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
        try db.write { tx in
            for id in 1 ... 50 { try tx.insert("Person", Fixtures.person(Int64(id), "P\(id)")) }
        }
        // Objects kept across the whole closure, and across later writes in a
        // write transaction, still read their own values.
        let names = try db.read { tx in
            let kept = try tx.objects("Person").map { $0 }
            return kept.map { $0["firstName"].string! }
        }
        #expect(names == (1 ... 50).map { "P\($0)" })
        try db.write { tx in
            let first = try #require(try tx.object("Person", key: 1))
            for id in 51 ... 300 {
                try tx.insert("Person", Fixtures.person(Int64(id), String(repeating: "x", count: id)))
            }
            try tx.update("Person", key: 1, ["firstName": "Changed"])
            #expect(first["firstName"] == "P1")
        }
    }
}
