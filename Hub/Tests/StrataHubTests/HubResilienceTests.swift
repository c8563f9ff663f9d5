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
            // A new hub takes the retry whole. It may take a while with the
            // suite's other tests on the cluster: what is checked is that
            // it lands, not how fast.
            let again = try await HubProcess(settings: settings, arguments: ["--request-timeout", "240"])
            defer { Task { await again.kill() } }
            let retry = try await again.request(
                "v1/push", method: "POST", token: added.token, body: changeset.data, timeout: 300)
            #expect(retry.status == 200, "\(String(decoding: retry.body, as: UTF8.self))")
            #expect(try await Self.count("SELECT count(*) FROM objects", settings) == 30_000)
            #expect(try await CanonicalState(of: hub, device: device) == (try CanonicalState(of: db)))
        }
    }

    /// Two `strata-hub serve` processes on one database and eight devices
    /// of two tenants writing notes and exchanging through either, at
    /// random, as behind a load balancer. One process is killed (SIGKILL)
    /// while a large push is in flight on it, among the devices' small
    /// ones; the devices go on with the survivor, then with the killed one
    /// started again. Every note every device wrote is on the hub as it
    /// last wrote it, and every device holds its tenant's hub state.
    @Test func oneOfTwoHubProcessesKilledMidPushUnderLoadLosesNothing() async throws {
        try await TestCluster.withHub { hub, settings in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenants = [UUID(), UUID()]
            var devices: [(db: Database, token: String, tenant: Int)] = []
            for index in 0 ..< 8 {
                let tenant = index % 2
                let token = try await hub.addDevice(tenant: tenants[tenant], name: "device \(index)").token
                devices.append((try folder.open("device\(index).strata", tenant: tenants[tenant]), token, tenant))
            }
            defer { for device in devices { device.db.close() } }
            let first = try await HubProcess(settings: settings)
            let processes = HubProcesses([first, try await HubProcess(settings: settings)])
            defer { Task { await processes.killAll() } }
            let failures = CallCounter()
            let devicesNow = devices
            let written = try await withThrowingTaskGroup(of: [Int: String].self) { group in
                for (index, device) in devicesNow.enumerated() {
                    group.addTask {
                        // Notes of its own (ids from (index + 1) * 100,000),
                        // which it alone writes, and ten notes of the tenant
                        // that every device of it rewrites.
                        var own: [Int: String] = [:]
                        var random = SystemRandomNumberGenerator()
                        for round in 0 ..< 8 {
                            let large = index == 0 && round == 3
                            let ids = (0 ..< (large ? 5_000 : Int.random(in: 5 ... 40, using: &random))).map { n in
                                (index + 1) * 100_000 + (large ? 1_000 + n : Int.random(in: 0 ..< 60, using: &random))
                            }
                            let title = "device \(index) round \(round)"
                            try await device.db.write { tx in
                                for id in ids { try tx.upsert(Note(id: id, title: title, body: "\(id)")) }
                                try tx.upsert(Note(id: round, title: title))
                            }
                            for id in ids { own[id] = title }
                            if large { processes.largePushSent() }
                            try await Self.exchange(
                                device.db, token: device.token, through: large ? first.url : nil, processes, failures)
                        }
                        return own
                    }
                }
                // Once the large push is on its way to the first process
                // and a push is writing: SIGKILL, and a new process on the
                // database a second later.
                group.addTask {
                    try await HubClientTests.waitUntil("the large push was sent") { processes.isLargePushSent }
                    let writing = """
                        SELECT count(*) FROM pg_stat_activity
                        WHERE datname = '\(settings.database)' AND backend_xid IS NOT NULL
                        """
                    let deadline = Date().addingTimeInterval(60)
                    while try await Self.count(writing, settings) == 0 {
                        guard Date() < deadline else { throw HubTestError("no push ever started writing") }
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    await processes.kill(first)
                    try await Task.sleep(for: .seconds(1))
                    processes.add(try await HubProcess(settings: settings))
                    return [:]
                }
                var written: [Int: String] = [:]
                for try await own in group { written.merge(own) { a, _ in a } }
                return written
            }
            for _ in 0 ..< 2 {
                for device in devices {
                    try await Self.exchange(device.db, token: device.token, through: nil, processes, failures)
                }
            }
            #expect(failures.next() > 0, "the kill cut no exchange short")
            for tenant in tenants.indices {
                let members = devices.filter { $0.tenant == tenant }
                let device = try #require(try await hub.device(token: members[0].token))
                let state = try await CanonicalState(of: hub, device: device)
                for (index, member) in members.enumerated() {
                    let file = try CanonicalState(of: member.db)
                    #expect(file == state, "tenant \(tenant), device \(index)\n\(file.difference(from: state))")
                }
                // The hub's state is the files': every note as its writer
                // last wrote it.
                let titles = try await members[0].db.read { tx in
                    Dictionary(uniqueKeysWithValues: try tx.objects(Note.self).array().map { ($0.id, $0.title) })
                }
                let mine = written.filter { (($0.key / 100_000) - 1) % 2 == tenant }
                let lost = mine.filter { titles[$0.key] != $0.value }
                // The first tenant's include the large push's.
                #expect(mine.count > (tenant == 0 ? 5_000 : 100), "\(mine.count) notes")
                #expect(
                    lost.isEmpty,
                    "tenant \(tenant): \(lost.count) notes lost or stale, e.g. \(lost.first.map { "\($0)" } ?? "")")
            }
        }
    }

    /// One exchange of `db` with a hub process, `through` the given one or
    /// any serving at random, tried again through any serving until it
    /// completes (within a minute); each failure counted.
    static func exchange(
        _ db: Database, token: String, through: URL?, _ processes: HubProcesses, _ failures: CallCounter
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        var url = through ?? processes.anyURL
        while true {
            do {
                try await db.sync.exchange(with: HTTPHub(url: url, token: token), pageSize: 10_000)
                return
            } catch {
                _ = failures.next()
                guard ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(50))
                url = processes.anyURL
            }
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

// @unchecked: every property is read and written only while holding `lock`.
/// The hub processes serving a test (whose URLs its devices use), and
/// whether the test's large push was sent, from any task.
final class HubProcesses: @unchecked Sendable {
    private let lock = NSLock()
    private var serving: [HubProcess]
    private var sent = false

    init(_ processes: [HubProcess]) { serving = processes }

    /// The URL of a process serving, chosen at random.
    var anyURL: URL { lock.withLock { serving.randomElement()!.url } }

    func add(_ process: HubProcess) {
        lock.withLock { serving.append(process) }
    }

    /// Takes `process` out of those serving, then SIGKILLs it.
    func kill(_ process: HubProcess) async {
        lock.withLock { serving.removeAll { $0 === process } }
        await process.kill()
    }

    /// SIGKILLs every process still serving (a killed one's pid may be
    /// another process's by now).
    func killAll() async {
        for process in lock.withLock({ serving }) { await process.kill() }
    }

    func largePushSent() { lock.withLock { sent = true } }
    var isLargePushSent: Bool { lock.withLock { sent } }
}
