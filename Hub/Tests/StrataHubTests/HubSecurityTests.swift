import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import PostgresNIO
@_spi(Hub) import Strata
import Testing

@testable import StrataHub

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Tenants kept apart, tokens checked, bad bodies refused with nothing
/// written, over HTTP where the check is HTTP's.
@Suite("The hub's fences")
struct HubSecurityTests {
    /// A device's file of `tenant` with notes `ids` titled `title`, and its
    /// first changeset.
    static func changeset(tenant: UUID, folder: TemporaryFolder, name: String, notes: [(Int, String)]) throws
        -> (Database, Changeset)
    {
        let db = try folder.open(name, tenant: tenant)
        try db.write { tx in
            for (id, title) in notes { try tx.insert(Note(id: id, title: title)) }
        }
        return (db, try db.sync.changes())
    }

    static func rowCounts(_ settings: PostgresSettings) async throws -> [Int64] {
        try await settings.withClient(logger: TestCluster.logger) { client in
            var counts: [Int64] = []
            for table in ["objects", "fields", "batches", "object_types", "schema_registry"] {
                let rows = try await client.query(
                    PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)"), logger: TestCluster.logger)
                for try await count in rows.decode(Int64.self) { counts.append(count) }
            }
            return counts
        }
    }

    @Test func tenantsWithCollidingKeysNeverSeeEachOther() async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let (tenantA, tenantB) = (UUID(), UUID())
            let a = try await hub.addDevice(tenant: tenantA, name: "a")
            let b = try await hub.addDevice(tenant: tenantB, name: "b")
            let deviceA = try #require(try await hub.device(token: a.token))
            let deviceB = try #require(try await hub.device(token: b.token))
            let (dbA, fromA) = try Self.changeset(
                tenant: tenantA, folder: folder, name: "a.strata", notes: [(1, "secret of A"), (2, "A2")])
            let (dbB, fromB) = try Self.changeset(tenant: tenantB, folder: folder, name: "b.strata", notes: [(1, "B1")])
            defer {
                dbA.close()
                dbB.close()
            }
            #expect(try await hub.push(fromA.data, device: deviceA).status == 200)
            #expect(try await hub.push(fromB.data, device: deviceB).status == 200)
            // A's changeset with B's token: refused, nothing of it written.
            let error = await #expect(throws: HubError.self) { try await hub.push(fromA.data, device: deviceB) }
            #expect(error?.code == .wrongDataset)
            // Each tenant's pull holds its own note 1 and nothing of the other's.
            let stateA = try await CanonicalState(of: hub, device: deviceA)
            let stateB = try await CanonicalState(of: hub, device: deviceB)
            #expect(stateA == (try CanonicalState(of: dbA)))
            #expect(stateB == (try CanonicalState(of: dbB)))
            #expect(!stateB.lines.contains { $0.contains(Self.hex("secret of A")) })
            #expect(stateB.lines.filter { $0.hasPrefix("Note ") && $0.hasSuffix("cl 1") }.count == 1)
        }
    }

    @Test func rowLevelSecurityHidesOtherTenantsFromTheTenantRole() async throws {
        try await TestCluster.withHub { hub, settings in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let (tenantA, tenantB) = (UUID(), UUID())
            let a = try await hub.addDevice(tenant: tenantA, name: "a")
            _ = try await hub.addDevice(tenant: tenantB, name: "b")
            let deviceA = try #require(try await hub.device(token: a.token))
            let (db, changeset) = try Self.changeset(
                tenant: tenantA, folder: folder, name: "a.strata", notes: [(1, "x")])
            defer { db.close() }
            _ = try await hub.push(changeset.data, device: deviceA)
            try await settings.withClient(logger: TestCluster.logger) { client in
                try await client.withTransaction(logger: TestCluster.logger) { connection in
                    try await connection.query("SET LOCAL ROLE strata_tenant", logger: TestCluster.logger)
                    // No tenant set: no rows at all.
                    try await connection.query(
                        "SELECT set_config('strata.tenant', '', true)", logger: TestCluster.logger)
                    #expect(try await Self.count("objects", connection) == 0)
                    #expect(try await Self.count("tenants", connection) == 0)
                    // Tenant B's setting: none of A's rows, and writing one of A's fails.
                    try await connection.query(
                        "SELECT set_config('strata.tenant', \(tenantB.uuidString), true)", logger: TestCluster.logger)
                    #expect(try await Self.count("objects", connection) == 0)
                    #expect(try await Self.count("fields", connection) == 0)
                    #expect(try await Self.count("tenants", connection) == 1)
                }
                await #expect(throws: (any Error).self) {
                    try await client.withTransaction(logger: TestCluster.logger) { connection in
                        try await connection.query("SET LOCAL ROLE strata_tenant", logger: TestCluster.logger)
                        try await connection.query(
                            "SELECT set_config('strata.tenant', \(tenantB.uuidString), true)",
                            logger: TestCluster.logger)
                        try await connection.query(
                            """
                            INSERT INTO objects (tenant_id, type_name, object_key, cl, hlc, origin, max_writer_version, seq)
                            VALUES (\(tenantA), 'Note', '\\x00'::bytea, 1, 0, \(UUID()), 1, 1)
                            """, logger: TestCluster.logger)
                    }
                }
            }
        }
    }

    @Test func tokensAreCheckedOnEveryRoute() async throws {
        try await TestCluster.withHub { hub, settings in
            let tenant = UUID()
            let added = try await hub.addDevice(tenant: tenant, name: "phone")
            let site = SiteID.random().bytes.map { String(format: "%02x", $0) }.joined()
            try await Self.application(hub).test(.live) { client in
                let good: HTTPFields = [.authorization: "Bearer \(added.token)"]
                #expect(
                    try await client.execute(uri: "/v1/session?site=\(site)", method: .get, headers: good).status == .ok
                )
                for headers: HTTPFields in [
                    [:], [.authorization: "Bearer"], [.authorization: "Bearer sth1_forged"],
                    [.authorization: added.token],
                ] {
                    let session = try await client.execute(
                        uri: "/v1/session?site=\(site)", method: .get, headers: headers)
                    #expect(session.status == .unauthorized)
                    #expect(String(buffer: session.body).contains("\"error\":\"unauthorized\""))
                    let push = try await client.execute(
                        uri: "/v1/push", method: .post, headers: headers, body: ByteBuffer(bytes: [1, 2, 3]))
                    #expect(push.status == .unauthorized)
                    let pull = try await client.execute(uri: "/v1/pull?since=0", method: .get, headers: headers)
                    #expect(pull.status == .unauthorized)
                }
                #expect(try await hub.revokeDevice(added.device))
                let revoked = try await client.execute(uri: "/v1/session?site=\(site)", method: .get, headers: good)
                #expect(revoked.status == .unauthorized)
                #expect(try await hub.revokeDevice(added.device) == false)
            }
            #expect(try await Self.rowCounts(settings) == [0, 0, 0, 0, 0])
        }
    }

    @Test func malformedAndOversizedBodiesWriteNothing() async throws {
        try await TestCluster.withHub(maxBodyBytes: 64 << 10) { hub, settings in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenant = UUID()
            let added = try await hub.addDevice(tenant: tenant, name: "phone")
            let (db, changeset) = try Self.changeset(
                tenant: tenant, folder: folder, name: "phone.strata",
                notes: (0 ..< 3_000).map { ($0, String(repeating: "n", count: 40)) })
            defer { db.close() }
            #expect(changeset.data.count > 64 << 10)
            let headers: HTTPFields = [.authorization: "Bearer \(added.token)"]
            try await Self.application(hub).test(.live) { client in
                // Malformed: random bytes, a truncated changeset, one bit flipped.
                var flipped = Array(
                    try Self.changeset(
                        tenant: tenant, folder: folder, name: "small.strata", notes: [(1, "one")]
                    ).1.data)
                flipped[flipped.count / 2] ^= 0x40
                for body in [Array("hello".utf8), Array(changeset.data.prefix(500)), flipped] {
                    let response = try await client.execute(
                        uri: "/v1/push", method: .post, headers: headers, body: ByteBuffer(bytes: body))
                    #expect(response.status == .badRequest)
                    #expect(String(buffer: response.body).contains("\"error\":\"invalidChangeset\""))
                }
                // Oversized, announced by Content-Length: refused before reading.
                let announced = try await client.execute(
                    uri: "/v1/push", method: .post, headers: headers, body: ByteBuffer(bytes: changeset.data))
                #expect(announced.status == .contentTooLarge)
                #expect(String(buffer: announced.body).contains("\"limit\":65536"))
                // Oversized and streamed without a length (chunked): refused
                // at the limit.
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(client.port!)/v1/push")!)
                request.httpMethod = "POST"
                request.setValue("Bearer \(added.token)", forHTTPHeaderField: "Authorization")
                request.httpBodyStream = InputStream(data: changeset.data)
                let (body, response) = try await URLSession.shared.data(for: request)
                #expect((response as? HTTPURLResponse)?.statusCode == 413)
                #expect(String(decoding: body, as: UTF8.self).contains("\"error\":\"bodyTooLarge\""))
            }
            #expect(try await Self.rowCounts(settings) == [0, 0, 0, 0, 0])
        }
    }

    /// A well-formed changeset that names an object, or one of its fields,
    /// twice (no Strata file makes one) is refused whole.
    @Test func aChangesetNamingAnObjectTwiceIsRefusedWhole() async throws {
        try await TestCluster.withHub { hub, settings in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenant = UUID()
            let device = try #require(
                try await hub.device(token: try await hub.addDevice(tenant: tenant, name: "odd").token))
            let (db, changeset) = try Self.changeset(
                tenant: tenant, folder: folder, name: "odd.strata", notes: [(1, "one"), (2, "two")])
            defer { db.close() }
            let content = try ChangesetCodec.decode(changeset.data)
            var twice = content
            twice.entries.append(content.entries[0])
            var fieldTwice = content
            fieldTwice.entries[0].fields.append(content.entries[0].fields[0])
            for odd in [twice, fieldTwice] {
                let error = await #expect(throws: HubError.self) {
                    try await hub.push(ChangesetCodec.encode(odd), device: device)
                }
                #expect(error?.code == .invalidChangeset)
                // The codec refuses a second entry; the hub, a second register.
                let message = error?.message ?? ""
                #expect(message.contains("second entry") || message.contains("twice"), "\(message)")
            }
            #expect(try await Self.rowCounts(settings) == [0, 0, 0, 0, 0])
        }
    }

    /// A file's changes pushed with another device's token (a copied
    /// file, a token moved between devices) are refused: they would move
    /// the owner's cursor.
    @Test func aFileSyncsAsTheDeviceThatFirstPushedIt() async throws {
        try await TestCluster.withHub { hub, settings in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let devices = try await TwoDevices(hub, in: folder)
            defer { devices.close() }
            try await devices.phone.write { tx in try tx.insert(Note(id: 1, title: "phone's")) }
            let changeset = try devices.phone.sync.changes()
            #expect(try await hub.push(changeset.data, device: devices.phoneDevice).status == 200)
            try await devices.phone.write { tx in try tx.insert(Note(id: 2, title: "phone's too")) }
            let more = try devices.phone.sync.changes()
            let before = try await Self.rowCounts(settings)
            let error = await #expect(throws: HubError.self) {
                try await hub.push(more.data, device: devices.laptopDevice)
            }
            #expect(error?.code == .siteOfAnotherDevice)
            #expect(error?.status == .forbidden)
            #expect(try await Self.rowCounts(settings) == before)
            #expect(try await hub.push(more.data, device: devices.phoneDevice).status == 200)
        }
    }

    /// The hub connected as a role that is no superuser, owning its
    /// database (as on a managed PostgreSQL): row-level security then
    /// binds the hub's own statements too, and every one still works.
    @Test func aHubThatIsNoSuperuserWorks() async throws {
        _ = try TestCluster.folder
        let suffix = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
        let (role, database) = ("hub_owner_\(suffix)", "t_owned_\(suffix)")
        try await TestCluster.admin("CREATE ROLE \(role) LOGIN CREATEROLE")
        try await TestCluster.admin("CREATE DATABASE \(database) OWNER \(role)")
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let settings = PostgresSettings(user: role, database: database)
        let outcome: Result<Void, any Error> = await Result { try await Self.useOwnedHub(settings, folder) }
        try? await TestCluster.admin("DROP DATABASE \(database) WITH (FORCE)")
        try? await TestCluster.admin("DROP ROLE \(role)")
        try outcome.get()
    }

    static func useOwnedHub(_ settings: PostgresSettings, _ folder: TemporaryFolder) async throws {
        try await settings.withClient(logger: TestCluster.logger) { client in
            try await HubSchema.migrate(client, logger: TestCluster.logger)
            let hub = Hub(client: client, logger: TestCluster.logger)
            let tenant = UUID()
            let added = try await hub.addDevice(tenant: tenant, name: "phone")
            let device = try #require(try await hub.device(token: added.token))
            let (db, changeset) = try Self.changeset(
                tenant: tenant, folder: folder, name: "phone.strata", notes: [(1, "one"), (2, "two")])
            defer { db.close() }
            #expect(try await hub.push(changeset.data, device: device).status == 200)
            #expect(try await CanonicalState(of: hub, device: device) == (try CanonicalState(of: db)))
            let epoch = try await hub.renewEpoch(tenant: tenant)
            #expect(try await hub.session(device: device, site: db.sync.site).epoch == epoch)
            let unknown = await #expect(throws: HubError.self) { try await hub.renewEpoch(tenant: UUID()) }
            #expect(unknown?.code == .unknownTenant)
            #expect(try await hub.revokeDevice(added.device))
            #expect(try await hub.device(token: added.token) == nil)
        }
    }

    static func application(_ hub: Hub) -> some ApplicationProtocol {
        let router = HubServer.router(hub)
        return Application(
            router: router, server: .http1WebSocketUpgrade(webSocketRouter: router),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: TestCluster.logger)
    }

    static func count(_ table: String, _ connection: PostgresConnection) async throws -> Int64 {
        let rows = try await connection.query(
            PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)"), logger: TestCluster.logger)
        for try await count in rows.decode(Int64.self) { return count }
        return -1
    }

    static func hex(_ text: String) -> String { text.utf8.map { String(format: "%02x", $0) }.joined() }
}
