import Foundation
import Testing
@testable import Strata

/// Misuse stops the program with a message instead of reading freed or
/// moved memory. Each case runs in a child process.
@Suite struct MisuseTests {
    @Test func anObjectUsedAfterItsReadTransactionStopsTheProgram() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let folder = try TemporaryFolder()
            let db = try Database(configuration: Fixtures.configuration(folder.path()))
            try db.write { tx in try tx.insert("Person", Fixtures.person(1)) }
            var escaped: DynamicObject?
            try db.read { tx in escaped = try tx.object("Person", key: 1) }
            _ = escaped?["firstName"]
        }
        let stderr = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(stderr.contains("used after its transaction ended"), "stderr: \(stderr)")
    }

    @Test func anObjectUsedAfterItsWriteTransactionStopsTheProgram() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let folder = try TemporaryFolder()
            let db = try Database(configuration: Fixtures.configuration(folder.path()))
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

    @Test func aWriteNestedInAWriteOnOneThreadStopsTheProgram() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let folder = try TemporaryFolder()
            let db = try Database(configuration: Fixtures.configuration(folder.path()))
            try db.write { _ in
                try db.write { tx in try tx.insert("Person", Fixtures.person(1)) }
            }
        }
        let stderr = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(stderr.contains("nested write transactions are not supported"), "stderr: \(stderr)")
    }

    @Test func anUnknownPropertyNameInASubscriptStopsTheProgram() async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let folder = try TemporaryFolder()
            let db = try Database(configuration: Fixtures.configuration(folder.path()))
            try db.write { tx in try tx.insert("Person", Fixtures.person(1)) }
            try db.read { tx in _ = try tx.object("Person", key: 1)?["nickname"] }
        }
        let stderr = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        #expect(stderr.contains("has no property 'nickname'"), "stderr: \(stderr)")
    }

    @Test func objectsStayReadableForTheWholeTransaction() throws {
        let folder = try TemporaryFolder()
        let db = try Database(configuration: Fixtures.configuration(folder.path()))
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
            for id in 51 ... 300 { try tx.insert("Person", Fixtures.person(Int64(id), String(repeating: "x", count: id))) }
            try tx.update("Person", key: 1, ["firstName": "Changed"])
            #expect(first["firstName"] == "P1")
        }
    }
}

#if os(Linux)
/// A map that cannot grow leaves a database that refuses transactions with
/// an error, never one that crashes. Runs in a child process, because it
/// limits the process's address space; the child reports each way it can
/// fail with its own exit code.
@Suite struct MapGrowthFailureTests {
    @Test(.disabled(if: Sanitizer.address, "AddressSanitizer maps memory of its own as the process runs (shadow, fake stacks): under a tight address-space limit its runtime fails before Strata's map does."))
    func aFailedGrowthIsAnErrorAndLaterTransactionsAreRefusedNotCrashed() async {
        await #expect(processExitsWith: .exitCode(42)) {
            #if canImport(Glibc)
            let resource = __rlimit_resource_t(RLIMIT_AS.rawValue)
            #else
            let resource = RLIMIT_AS
            #endif
            let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmSize:") }),
                  case let fields = line.split(whereSeparator: \.isWhitespace), fields.count > 1,
                  let kilobytes = Int(fields[1]) else { exit(10) }
            var limit = rlimit()
            guard getrlimit(resource, &limit) == 0 else { exit(11) }
            limit.rlim_cur = rlim_t((kilobytes << 10) + (96 << 20))
            guard setrlimit(resource, &limit) == 0 else { exit(12) }

            let folder = try TemporaryFolder()
            var config = Fixtures.configuration(folder.path(), schema: MapGrowthTests.blobs)
            config.initialMapSize = 8 << 20
            let db = try Database(configuration: config)
            var growthFailed = false
            for id in 0 ..< 400 where !growthFailed {
                do {
                    try db.write { tx in try tx.insert("Blob", ["id": .int(Int64(id)), "payload": .data(MapGrowthTests.payload(id, size: 1 << 20))]) }
                } catch let error as StrataError {
                    guard error.message.contains("Could not grow the memory map") else { exit(13) }
                    growthFailed = true
                }
            }
            guard growthFailed else { exit(14) }
            do {
                _ = try db.read { tx in try tx.objects("Blob").count }
                exit(15)
            } catch let error as StrataError {
                guard error.message.contains("could not be restored") else { exit(16) }
            }
            exit(42)
        }
    }
}
#endif
