import ArgumentParser
import Foundation
import Logging
import StrataHub

/// `strata-hub`: the sync hub's server and its administration
/// (docs/Hub.md).
@main
struct StrataHubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-hub",
        abstract: "The Strata sync hub: devices' changes merged in PostgreSQL.",
        subcommands: [Serve.self, Migrate.self, DeviceCommand.self, EpochCommand.self])
}

/// Where PostgreSQL is; libpq's environment variables by default.
struct DatabaseOptions: ParsableArguments {
    @Option(help: "PostgreSQL host, or the folder of its Unix socket (default: $PGHOST, else localhost).")
    var pgHost: String?
    @Option(help: "PostgreSQL port (default: $PGPORT, else 5432).")
    var pgPort: Int?
    @Option(help: "PostgreSQL user (default: $PGUSER, else strata).")
    var pgUser: String?
    @Option(help: "PostgreSQL database (default: $PGDATABASE, else the user's name).")
    var pgDatabase: String?

    var settings: PostgresSettings {
        PostgresSettings(host: pgHost, port: pgPort, user: pgUser, database: pgDatabase)
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the hub's protocol over HTTP.")
    @OptionGroup var database: DatabaseOptions
    @Option(help: "The address to listen on.") var host = "127.0.0.1"
    @Option(help: "The port to listen on (0: any free port, printed).") var port = 8080
    @Option(help: "The most connections to PostgreSQL.") var connections = 20
    @Option(help: "Seconds a request may wait for PostgreSQL before the answer is 503 unavailable.")
    var requestTimeout = 30

    func run() async throws {
        let logger = Logger(label: "strata-hub")
        try await database.settings.checkReachable(logger: logger)
        let hub = Hub(
            client: database.settings.client(maximumConnections: connections), logger: logger,
            requestTimeout: .seconds(requestTimeout))
        let app = HubServer.application(
            hub, host: host, port: port,
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                // Unbuffered: a script waiting for this line reads it at once.
                FileHandle.standardOutput.write(Data("strata-hub listening on http://\(host):\(port)\n".utf8))
            }, logger: logger)
        try await app.runService()
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create or upgrade the hub's PostgreSQL schema (versioned; run it before serve).")
    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let logger = Logger(label: "strata-hub")
        let ran = try await database.settings.withClient(logger: logger) { client in
            try await HubSchema.migrate(client, logger: logger)
        }
        print(
            ran.isEmpty
                ? "The schema is current (version \(HubSchema.currentVersion))."
                : "Migrated to version \(HubSchema.currentVersion) (ran \(ran.map(String.init).joined(separator: ", ")))."
        )
    }
}

struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device", abstract: "Add or revoke devices.", subcommands: [Add.self, Revoke.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a device to a tenant and print its token, once: the hub keeps only its hash.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The tenant: the dataset's UUID (made when new).") var tenant: String
        @Option(help: "A name for people.") var name = "device"

        func run() async throws {
            guard let tenant = UUID(uuidString: tenant) else {
                throw ValidationError("--tenant must be the dataset's UUID, not '\(self.tenant)'.")
            }
            let logger = Logger(label: "strata-hub")
            let name = self.name
            let (device, token) = try await database.settings.withClient(logger: logger) { client in
                try await Hub(client: client, logger: logger).addDevice(tenant: tenant, name: name)
            }
            print("device \(device.uuidString)")
            print("token  \(token)")
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a device: its token is refused from now on.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The device's id, as `device add` printed it.") var device: String

        func run() async throws {
            guard let id = UUID(uuidString: device) else {
                throw ValidationError("The device id must be a UUID, not '\(device)'.")
            }
            let logger = Logger(label: "strata-hub")
            let revoked = try await database.settings.withClient(logger: logger) { client in
                try await Hub(client: client, logger: logger).revokeDevice(id)
            }
            guard revoked else { throw ValidationError("No live device has the id \(id.uuidString).") }
            print("revoked \(id.uuidString)")
        }
    }
}

struct EpochCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "epoch",
        abstract: "After restoring the hub's database from a backup: give a tenant a new epoch, so devices re-baseline."
    )
    @OptionGroup var database: DatabaseOptions
    @Option(help: "The tenant's UUID.") var tenant: String

    func run() async throws {
        guard let tenant = UUID(uuidString: tenant) else {
            throw ValidationError("--tenant must be a UUID, not '\(self.tenant)'.")
        }
        let logger = Logger(label: "strata-hub")
        let epoch = try await database.settings.withClient(logger: logger) { client in
            try await Hub(client: client, logger: logger).renewEpoch(tenant: tenant)
        }
        print("epoch \(epoch.uuidString)")
    }
}
