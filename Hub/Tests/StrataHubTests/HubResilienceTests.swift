import Foundation
import Logging
import NIOCore
import PostgresNIO
@_spi(Hub) import Strata
import Testing

@testable import StrataHub

/// The hub killed, its PostgreSQL restarted, a device months behind.
@Suite("The hub under failure")
struct HubResilienceTests {
    static func notes(_ folder: TemporaryFolder, _ name: String, tenant: UUID, count: Int) throws -> Database {
        let db = try folder.open(name, tenant: tenant)
        try db.write { tx in
            for id in 0 ..< count { try tx.insert(Note(id: id, title: "note \(id)", body: "of a large push")) }
        }
        return db
    }

    static func count(_ sql: String, _ settings: PostgresSettings) async throws -> Int64 {
        try await settings.withClient(logger: TestCluster.logger) { client in
            for try await count in try await client.query(PostgresQuery(unsafeSQL: sql), logger: TestCluster.logger)
                .decode(Int64.self)
            {
                return count
            }
            return -1
        }
    }

    @Test func hubKilledDuringALargePushLosesNothingAndTheRetryLands() async throws {
        try await TestCluster.withHub { hub, settings in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenant = UUID()
            let added = try await hub.addDevice(tenant: tenant, name: "phone")
            let device = try #require(try await hub.device(token: added.token))
            let db = try Self.notes(folder, "phone.strata", tenant: tenant, count: 30_000)
            defer { db.close() }
            let changeset = try db.sync.changes(limit: 30_000)
            let server = try await HubProcess(settings: settings)
            let push = Task {
                try? await server.request("v1/push", method: "POST", token: added.token, body: changeset.data)
            }
            // Kill it once the push's transaction has written: it holds a
            // transaction id.
            let writing = """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = '\(settings.database)' AND backend_xid IS NOT NULL
                """
            let deadline = Date().addingTimeInterval(120)
            while try await Self.count(writing, settings) == 0 {
                guard Date() < deadline else { throw HubTestError("the push never started writing") }
                try await Task.sleep(for: .milliseconds(5))
            }
            await server.kill()
            #expect(await push.value == nil, "the killed hub answered")
            // PostgreSQL rolls the transaction back when its connection goes.
            while try await Self.count(writing, settings) > 0 { try await Task.sleep(for: .milliseconds(20)) }
            let objects = try await Self.count("SELECT count(*) FROM objects", settings)
            let batches = try await Self.count("SELECT count(*) FROM batches", settings)
            #expect(objects == 0 && batches == 0, "a killed push left \(objects) objects, \(batches) batches")
            // A new hub takes the retry whole.
            let again = try await HubProcess(settings: settings)
            defer { Task { await again.kill() } }
            let retry = try await again.request("v1/push", method: "POST", token: added.token, body: changeset.data)
            #expect(retry.status == 200, "\(String(decoding: retry.body, as: UTF8.self))")
            #expect(try await Self.count("SELECT count(*) FROM objects", settings) == 30_000)
            #expect(try await CanonicalState(of: hub, device: device) == (try CanonicalState(of: db)))
        }
    }

    @Test func postgresStoppedAndRestartedUnderARunningHub() async throws {
        let cluster = try await OwnCluster()
        defer { cluster.stop() }
        let token = try await cluster.addDevices(["phone"], tenant: UUID())[0]
        let server = try await HubProcess(settings: cluster.settings, arguments: ["--request-timeout", "3"])
        defer { Task { await server.kill() } }
        let site = SiteID.random().bytes.map { String(format: "%02x", $0) }.joined()
        #expect(try await server.request("v1/session?site=\(site)", token: token).status == 200)
        try await cluster.run("pause")
        let down = try await server.request("v1/session?site=\(site)", token: token)
        #expect(down.status == 503, "\(String(decoding: down.body, as: UTF8.self))")
        #expect(String(decoding: down.body, as: UTF8.self).contains("\"error\":\"unavailable\""))
        try await cluster.run("resume")
        // The hub's pool connects again by itself.
        let deadline = Date().addingTimeInterval(60)
        while try await server.request("v1/session?site=\(site)", token: token).status != 200 {
            guard Date() < deadline else { throw HubTestError("the hub never reconnected") }
            try await Task.sleep(for: .milliseconds(200))
        }
        try await cluster.run("restart")
        let after = Date().addingTimeInterval(60)
        while try await server.request("v1/session?site=\(site)", token: token).status != 200 {
            guard Date() < after else { throw HubTestError("the hub never reconnected after a restart") }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// A device that synced once, then a million changes of other devices
    /// (written straight into the hub's tables, in 1,000 commits): it
    /// catches up in pages, with no epoch change and no reset.
    @Test func aDeviceAMillionChangesBehindCatchesUpInPages() async throws {
        try await TestCluster.withHub { hub, settings in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenant = UUID()
            let added = try await hub.addDevice(tenant: tenant, name: "tablet")
            let device = try #require(try await hub.device(token: added.token))
            let db = try Self.notes(folder, "tablet.strata", tenant: tenant, count: 1)
            defer { db.close() }
            try await Device(database: db, hub: hub, device: device).exchange()
            let total = 1_000_000
            try await Self.writeChanges(total, tenant: tenant, settings)
            let epoch = try await hub.session(device: device, site: db.sync.site).epoch
            let epochSite = SiteID(uuid: epoch)
            var pages = 0
            while true {
                let cursor = try db.sync.cursor(of: epochSite)
                let changeset = Changeset(
                    data: try await hub.pull(
                        device: device, since: cursor.since, after: cursor.after, epoch: epoch, limit: 20_000))
                try db.sync.apply(changeset, from: epochSite)
                pages += 1
                if !(try changeset.summary().hasMore) { break }
            }
            #expect(pages == total / 20_000)
            #expect(try await db.read { try $0.objects(Note.self).count } == total + 1)
            #expect(try await db.read { try $0.object(Note.self, primaryKey: 1_777_777)?.title } == "far 777777")
        }
    }

    /// `count` new notes (ids from 1,000,000), as pushes of another device
    /// would leave them: 1,000 objects per hub commit.
    static func writeChanges(_ count: Int, tenant: UUID, _ settings: PostgresSettings) async throws {
        try await settings.withClient(logger: TestCluster.logger) { client in
            let logger = TestCluster.logger
            var descriptor = ""
            for try await value in try await client.query(
                "SELECT descriptor FROM schema_registry WHERE tenant_id = \(tenant) AND path = 'title'",
                logger: logger
            ).decode(String.self) {
                descriptor = value
            }
            var start: Int64 = 0
            for try await value in try await client.query(
                "SELECT next_seq FROM tenants WHERE id = \(tenant)", logger: logger
            ).decode(Int64.self) {
                start = value
            }
            let origin = UUID()
            let time = Int64(HybridTime(milliseconds: UInt64(Date().timeIntervalSince1970 * 1000), counter: 0).rawValue)
            let batch = 100_000
            for first in stride(from: 0, to: count, by: batch) {
                let ids = (first ..< min(first + batch, count)).map { 1_000_000 + $0 }
                let keys = ids.map { ByteBuffer(bytes: ChangesetCodec.valueBytes(.int(Int64($0)))) }
                let titles = ids.map { ByteBuffer(bytes: ChangesetCodec.valueBytes(.string("far \($0 - 1_000_000)"))) }
                let seqs = ids.map { start + 1 + Int64(($0 - 1_000_000) / 1_000) }
                try await client.query(
                    """
                    INSERT INTO objects (tenant_id, type_name, object_key, cl, hlc, origin, max_writer_version, seq)
                    SELECT \(tenant), 'Note', u.k, 1, \(time), \(origin), 1, u.s
                    FROM unnest(\(keys)::bytea[], \(seqs)::int8[]) AS u(k, s)
                    """, logger: logger)
                try await client.query(
                    """
                    INSERT INTO fields (tenant_id, type_name, object_key, path, descriptor, rank, value, hlc, origin, cl, seq)
                    SELECT \(tenant), 'Note', u.k, 'title', \(descriptor), 0, u.v, \(time), \(origin), 1, u.s
                    FROM unnest(\(keys)::bytea[], \(titles)::bytea[], \(seqs)::int8[]) AS u(k, v, s)
                    """, logger: logger)
            }
            try await client.query(
                "UPDATE tenants SET next_seq = \(start + Int64(count / 1_000)) WHERE id = \(tenant)", logger: logger)
        }
    }
}
