import Foundation
import Logging
import NIOCore
import PostgresNIO
@_spi(Hub) import Strata
import StrataHub
import Testing

/// The PostgreSQL cluster `make hub-test` starts (scripts/hub-test.sh):
/// each test makes a database of its own in it, migrated, and drops it.
enum TestCluster {
    static let logger = Logger(label: "strata-hub-test")

    /// The cluster's folder; the tests fail with the remedy without it.
    static var folder: String {
        get throws {
            guard let folder = ProcessInfo.processInfo.environment["HUB_TEST_CLUSTER"] else {
                throw HubTestError(
                    "No PostgreSQL cluster for the hub's tests: run them with `make hub-test`, which starts one.")
            }
            return folder
        }
    }

    /// Runs `body` with a hub on a new, migrated database, dropped after.
    static func withHub<T: Sendable>(
        maxBodyBytes: Int = 16 << 20, jwt: JWTSettings? = nil,
        _ body: @Sendable (Hub, PostgresSettings) async throws -> T
    ) async throws -> T {
        _ = try folder
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try await admin("CREATE DATABASE \(name)")
        let settings = PostgresSettings(database: name)
        let client = settings.client()
        do {
            let result = try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask {
                    await client.run()
                    return nil
                }
                defer { group.cancelAll() }
                try await HubSchema.migrate(client, logger: logger)
                return try await body(
                    Hub(client: client, logger: logger, maxBodyBytes: maxBodyBytes, jwt: jwt), settings)
            }
            try? await admin("DROP DATABASE \(name) WITH (FORCE)")
            return result
        } catch {
            try? await admin("DROP DATABASE \(name) WITH (FORCE)")
            throw error
        }
    }

    /// Runs `sql` on the cluster's `postgres` database.
    static func admin(_ sql: String) async throws {
        try await PostgresSettings(database: "postgres").withClient(logger: logger) { client in
            try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        }
    }
}

struct HubTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A Strata file of the hub tests' dataset.
struct Device {
    let database: Database
    let hub: Hub
    let device: Hub.Device

    /// Pushes every change the hub lacks, then pulls every change it has:
    /// the protocol's calls on ``Hub`` directly, without HTTP.
    func exchange() async throws {
        let site = try database.sync.site
        var cursor = try await hub.session(device: device, site: site).pushCursor
        while true {
            let changeset = try database.sync.changes(from: cursor, limit: 500)
            let (status, data) = try await hub.push(changeset.data, device: device)
            #expect(status == 200)
            cursor = try JSONDecoder().decode(HubPushAnswer.self, from: data).acceptedThrough
            if !(try changeset.summary().hasMore) { break }
        }
        try await Self.pullAll(into: database, from: hub, as: device)
    }

    /// Pulls into `database` every change the hub has for `device`, pages
    /// of 500 objects, on ``Hub`` directly.
    static func pullAll(into database: Database, from hub: Hub, as device: Hub.Device) async throws {
        let epoch = try await hub.session(device: device, site: try database.sync.site).epoch
        let epochSite = SiteID(uuid: epoch)
        while true {
            let position = try database.sync.cursor(of: epochSite)
            let data = try await hub.pull(
                device: device, since: position.since, after: position.after, epoch: epoch, limit: 500, leaves: true)
            let changeset = Changeset(data: data)
            try database.sync.apply(changeset, from: epochSite)
            if !(try changeset.summary().hasMore) { break }
        }
    }
}

extension TemporaryFolder {
    /// A synced-mode file `name` of the dataset `tenant` in the folder.
    func open(_ name: String, tenant: UUID, models: [any Model.Type] = [Note.self]) throws -> Database {
        var config = Database.Configuration(path: file(name), schemaVersion: 1, models: models)
        config.mode = .synced
        config.durability = .noSync
        config.sync = .init(dataset: tenant)
        return try Database(configuration: config)
    }
}

/// Two files of a new tenant, a phone and a laptop, each a device of the
/// hub with a token of its own.
struct TwoDevices {
    let tenant: UUID
    let phone: Database
    let laptop: Database
    let phoneToken: String
    let laptopToken: String
    let phoneDevice: Hub.Device
    let laptopDevice: Hub.Device

    init(_ hub: Hub, in folder: TemporaryFolder) async throws {
        tenant = UUID()
        phone = try folder.open("phone.strata", tenant: tenant)
        laptop = try folder.open("laptop.strata", tenant: tenant)
        phoneToken = try await hub.addDevice(tenant: tenant, name: "phone").token
        laptopToken = try await hub.addDevice(tenant: tenant, name: "laptop").token
        guard let phoneDevice = try await hub.device(token: phoneToken),
            let laptopDevice = try await hub.device(token: laptopToken)
        else { throw HubTestError("the hub does not know the tokens it made") }
        self.phoneDevice = phoneDevice
        self.laptopDevice = laptopDevice
    }

    func close() {
        phone.close()
        laptop.close()
    }
}

/// A temporary folder, removed by `remove()`.
struct TemporaryFolder {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "strata-hub-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func file(_ name: String) -> String { "\(path)/\(name)" }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

extension Result where Failure == any Error {
    /// The value `body` returns, or the error it throws.
    init(_ body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

/// A PostgreSQL cluster of a test's own, for the tests that pause or
/// restart PostgreSQL under a hub (doing so to the shared one would fail
/// the tests running beside them): started with its database migrated;
/// the test stops it (``stop()``).
struct OwnCluster {
    let script: String
    let folder: String
    let settings: PostgresSettings

    init() async throws {
        guard let script = ProcessInfo.processInfo.environment["HUB_CLUSTER_SCRIPT"] else {
            throw HubTestError("HUB_CLUSTER_SCRIPT is not set: run the tests with `make hub-test`.")
        }
        self.script = script
        folder = "/tmp/strata-hub-own-\(UUID().uuidString.prefix(8))"
        settings = PostgresSettings(host: folder, port: 5432, user: "strata", database: "strata")
        try await ChildProcess.run(script, "start", folder)
        do {
            try await settings.withClient(logger: TestCluster.logger) { client in
                try await HubSchema.migrate(client, logger: TestCluster.logger)
            }
        } catch {
            stop()
            throw error
        }
    }

    /// Runs the cluster script's `command` on it: `pause`, `resume` or
    /// `restart`.
    func run(_ command: String) async throws { try await ChildProcess.run(script, command, folder) }

    /// Stops it and removes its folder, without waiting.
    func stop() { _ = try? ChildProcess(script, ["stop", folder]) }

    /// A new device's token for each of `names`, all of `tenant`.
    func addDevices(_ names: [String], tenant: UUID) async throws -> [String] {
        try await settings.withClient(logger: TestCluster.logger) { client in
            let hub = Hub(client: client, logger: TestCluster.logger)
            var tokens: [String] = []
            for name in names { tokens.append(try await hub.addDevice(tenant: tenant, name: name).token) }
            return tokens
        }
    }
}
