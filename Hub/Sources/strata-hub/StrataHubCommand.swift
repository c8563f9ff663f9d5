import ArgumentParser
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import StrataHub

/// `strata-hub`: the sync hub's server and its administration
/// (docs/Hub.md).
@main
struct StrataHubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-hub",
        abstract: "The Strata sync hub: devices' changes merged in PostgreSQL.",
        subcommands: [
            Serve.self, Migrate.self, DeviceCommand.self, SubjectCommand.self, EpochCommand.self, RulesCommand.self,
            Compact.self, Status.self,
        ])
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
    @OptionGroup var retention: RetentionOptions
    @Option(help: "Minutes between compactions of every tenant (0: none; run `strata-hub compact`).")
    var compactEvery = 60
    @OptionGroup var jwt: JWTOptions
    @Option(help: "Serve GET /metrics (Prometheus) on this port, apart from the protocol's (none without it).")
    var metricsPort: Int?
    @Option(help: "The address the metrics port listens on.") var metricsHost = "127.0.0.1"
    @Option(
        help:
            "The least level logged: trace, debug, info (a line per request), notice (refusals), warning, error or critical."
    )
    var logLevel = "info"

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("--log-level must be trace, debug, info, notice, warning, error or critical.")
        }
        var logger = Logger(label: "strata-hub")
        logger.logLevel = level
        let jwtSettings = try jwt.settings()
        try await database.settings.checkReachable(logger: logger)
        guard compactEvery >= 0 else { throw ValidationError("--compact-every must be 0 or more minutes.") }
        let hub = Hub(
            client: database.settings.client(maximumConnections: connections), logger: logger,
            requestTimeout: .seconds(requestTimeout), jwt: jwtSettings)
        let maintenance = HubMaintenance(
            hub: hub, retention: try retention.duration,
            compactEvery: compactEvery == 0 ? nil : .seconds(compactEvery * 60))
        let host = self.host
        let app = HubServer.application(
            hub, host: host, port: port, maintenance: maintenance,
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                // Unbuffered: a script waiting for this line reads it at once.
                FileHandle.standardOutput.write(Data("strata-hub listening on http://\(host):\(port)\n".utf8))
            }, logger: logger)
        guard let metricsPort else {
            try await app.runService()
            return
        }
        let metricsHost = self.metricsHost
        let metrics = Application(
            router: HubServer.metricsRouter(hub),
            configuration: .init(address: .hostname(metricsHost, port: metricsPort), serverName: "strata-hub-metrics"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                FileHandle.standardOutput.write(
                    Data("strata-hub metrics on http://\(metricsHost):\(port)/metrics\n".utf8))
            }, logger: logger)
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: app), .init(service: metrics)], gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
    }
}

/// The app's own identity provider, whose JWTs devices may present.
struct JWTOptions: ParsableArguments {
    @Option(help: "Take JWTs of this issuer (iss) beside the hub's device tokens; needs --jwt-audience and one key.")
    var jwtIssuer: String?
    @Option(help: "The audience (aud) a JWT must name.") var jwtAudience: String?
    @Option(help: "A file holding the HMAC secret (HS256) shared with the identity provider.")
    var jwtHmacKeyFile: String?
    @Option(help: "A file holding the identity provider's PEM public key (EC: ES256/384/512; RSA: RS256).")
    var jwtPublicKeyFile: String?
    @Option(help: "A file holding the identity provider's JSON Web Key Set.") var jwtJwksFile: String?
    @Option(help: "The URL of the identity provider's JSON Web Key Set, fetched and refreshed.") var jwtJwksUrl: String?
    @Option(help: "Seconds after which the JWKS of --jwt-jwks-url is fetched again.") var jwtJwksRefresh = 3600
    @Option(help: "The claim holding the tenant: the dataset's UUID.") var jwtTenantClaim = "tenant"
    @Option(help: "The claim naming the device (an app install), if the identity provider issues one.")
    var jwtDeviceClaim: String?
    @Option(help: "Seconds exp and nbf may be off the hub's clock.") var jwtLeeway = 60

    /// The settings the options give; nil without --jwt-issuer.
    func settings() throws -> JWTSettings? {
        let sources = [jwtHmacKeyFile, jwtPublicKeyFile, jwtJwksFile, jwtJwksUrl].compactMap { $0 }
        guard let issuer = jwtIssuer else {
            guard sources.isEmpty, jwtAudience == nil else {
                throw ValidationError("The --jwt-… options need --jwt-issuer.")
            }
            return nil
        }
        guard let audience = jwtAudience else { throw ValidationError("--jwt-issuer needs --jwt-audience.") }
        guard sources.count == 1 else {
            throw ValidationError(
                "--jwt-issuer needs exactly one of --jwt-hmac-key-file, --jwt-public-key-file, --jwt-jwks-file and --jwt-jwks-url."
            )
        }
        func read(_ path: String) throws -> String {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("Cannot read \(path).")
            }
            return String(decoding: data, as: UTF8.self)
        }
        let keys: JWTSettings.Keys
        if let path = jwtHmacKeyFile {
            let secret = try read(path).trimmingCharacters(in: .whitespacesAndNewlines)
            guard secret.utf8.count >= 32 else {
                throw ValidationError("The HMAC secret in \(path) is shorter than 32 bytes.")
            }
            keys = .hmac(secret: secret)
        } else if let path = jwtPublicKeyFile {
            keys = .publicKeyPEM(try read(path))
        } else if let path = jwtJwksFile {
            keys = .jwks(json: try read(path))
        } else {
            guard let text = jwtJwksUrl, let url = URL(string: text), url.scheme == "https" || url.scheme == "http"
            else { throw ValidationError("--jwt-jwks-url must be an http(s) URL.") }
            keys = .jwksURL(url, refresh: .seconds(jwtJwksRefresh))
        }
        return JWTSettings(
            keys: keys, issuer: issuer, audience: audience, tenantClaim: jwtTenantClaim, deviceClaim: jwtDeviceClaim,
            leewaySeconds: Double(jwtLeeway))
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
        @Option(
            name: .customLong("claim"),
            help:
                "A claim sync rules read, name=value (repeatable): a value with a comma is an array of strings (projects=a,b; projects=a, is [\"a\"]), any other a string."
        )
        var claims: [String] = []

        func run() async throws {
            guard let tenant = UUID(uuidString: tenant) else {
                throw ValidationError("--tenant must be the dataset's UUID, not '\(self.tenant)'.")
            }
            var parsed = DeviceClaims()
            for claim in claims {
                do {
                    let (name, value) = try DeviceClaims.parse(assignment: claim)
                    guard parsed[name] == nil else { throw ValidationError("The claim \(name) is given twice.") }
                    parsed.values[name] = value
                } catch let error as HubError {
                    throw ValidationError(error.message)
                }
            }
            let logger = Logger(label: "strata-hub")
            let (name, claims) = (self.name, parsed)
            let (device, token) = try await database.settings.withClient(logger: logger) { client in
                try await Hub(client: client, logger: logger).addDevice(tenant: tenant, name: name, claims: claims)
            }
            print("device \(device.uuidString)")
            print("token  \(token)")
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Revoke a device: its token is refused from now on, its open streams closed in every hub process.")
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

struct SubjectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subject", abstract: "Revoke a user of the app's identity provider.", subcommands: [Revoke.self])

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Refuse the subject's JWTs issued until now (iat) and close their open streams in every hub process; later JWTs are taken."
        )
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The JWTs' issuer (iss).") var issuer: String
        @Option(help: "The subject (sub).") var subject: String

        func run() async throws {
            let logger = Logger(label: "strata-hub")
            let (issuer, subject) = (self.issuer, self.subject)
            let devices = try await database.settings.withClient(logger: logger) { client in
                try await Hub(client: client, logger: logger).revokeSubject(issuer: issuer, subject: subject)
            }
            print("revoked \(subject) of \(issuer) (\(devices) device(s))")
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

struct RulesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "A dataset's sync rules: which objects each device may read and write (docs/Hub.md).",
        subcommands: [Check.self, Set.self, Show.self, Clear.self])

    /// The text of the rules file `path` ("-": standard input).
    static func source(_ path: String) throws -> String {
        let data =
            path == "-"
            ? FileHandle.standardInput.readDataToEndOfFile()
            : try Data(contentsOf: URL(fileURLWithPath: path))
        guard let text = String(data: data, encoding: .utf8) else {
            throw ValidationError("\(path) is not UTF-8 text.")
        }
        return text
    }

    static func tenant(_ text: String) throws -> UUID {
        guard let tenant = UUID(uuidString: text) else {
            throw ValidationError("--tenant must be the dataset's UUID, not '\(text)'.")
        }
        return tenant
    }

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read a rules file and say what it allows, or what is wrong in it (no database needed).")
        @Argument(help: "The rules file ('-': standard input).") var file: String

        func run() async throws {
            let rules = try SyncRules(parsing: try RulesCommand.source(file))
            for (type, typeRules) in rules.types.sorted(by: { $0.key < $1.key }) {
                print(
                    "\(type): read \(typeRules.read == nil ? "denied" : "by rule"), write \(typeRules.write == nil ? "denied" : "by rule")"
                )
            }
            print("Every other type: denied.")
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put a rules file in force for a dataset, as its next version.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The tenant: the dataset's UUID.") var tenant: String
        @Argument(help: "The rules file ('-': standard input).") var file: String

        func run() async throws {
            let tenant = try RulesCommand.tenant(self.tenant)
            let source = try RulesCommand.source(file)
            _ = try SyncRules(parsing: source)
            let logger = Logger(label: "strata-hub")
            let version = try await database.settings.withClient(logger: logger) { client in
                try await Hub(client: client, logger: logger).setRules(tenant: tenant, source: source)
            }
            print("rules version \(version) in force for \(tenant.uuidString)")
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the rules in force for a dataset.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The tenant: the dataset's UUID.") var tenant: String

        func run() async throws {
            let tenant = try RulesCommand.tenant(self.tenant)
            let logger = Logger(label: "strata-hub")
            let rules = try await database.settings.withClient(logger: logger) { client in
                try await Hub(client: client, logger: logger).rules(tenant: tenant)
            }
            guard let source = rules.source else {
                print("# version \(rules.version): no rules; every device reads and writes everything")
                return
            }
            print("# version \(rules.version)")
            print(source, terminator: source.hasSuffix("\n") ? "" : "\n")
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Take a dataset's rules away (a new version without rules): every device reads and writes everything."
        )
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The tenant: the dataset's UUID.") var tenant: String

        func run() async throws {
            let tenant = try RulesCommand.tenant(self.tenant)
            let logger = Logger(label: "strata-hub")
            let version = try await database.settings.withClient(logger: logger) { client in
                try await Hub(client: client, logger: logger).setRules(tenant: tenant, source: nil)
            }
            print("rules version \(version): none in force for \(tenant.uuidString)")
        }
    }
}

/// How long a device may go unseen and still hold compaction back.
struct RetentionOptions: ParsableArguments {
    @Option(
        help:
            "Hours a device may go unseen and still hold compaction back; also how long push answers (batches) are kept."
    )
    var retentionHours = 720.0

    var duration: Duration {
        get throws {
            guard retentionHours >= 0, retentionHours.isFinite else {
                throw ValidationError("--retention-hours must be 0 or more, not \(retentionHours).")
            }
            return .milliseconds(Int64(retentionHours * 3_600_000))
        }
    }
}

/// A dataset's UUID from the command line.
func datasetID(_ text: String, option: String) throws -> UUID {
    guard let id = UUID(uuidString: text) else {
        throw ValidationError("--\(option) must be the dataset's UUID, not '\(text)'.")
    }
    return id
}

struct Compact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Remove tombstones and push answers every active device has acknowledged (serve does it periodically).")
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var retention: RetentionOptions
    @Option(help: "Only this dataset (default: every one).") var dataset: String?

    func run() async throws {
        let logger = Logger(label: "strata-hub")
        let only = try dataset.map { try datasetID($0, option: "dataset") }
        let retention = try self.retention.duration
        let reports = try await database.settings.withClient(logger: logger) { client in
            let hub = Hub(client: client, logger: logger)
            var reports: [CompactionReport] = []
            var tenants = only.map { [$0] } ?? []
            if only == nil { tenants = try await hub.tenants() }
            for tenant in tenants {
                reports.append(try await hub.compact(tenant: tenant, retention: retention))
            }
            return reports
        }
        for report in reports {
            print(
                report.ran
                    ? "\(report.tenant.uuidString.lowercased()): removed \(report.removedTombstones) tombstones, \(report.removedBatches) batches (through \(report.horizon); compacted through \(report.compactedSeq))"
                    : "\(report.tenant.uuidString.lowercased()): skipped, another process is compacting it")
        }
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A dataset's figures and devices: their pull and push cursors, lag, last seen.")
    @OptionGroup var database: DatabaseOptions
    @Option(help: "The dataset's UUID.") var dataset: String
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        let logger = Logger(label: "strata-hub")
        let tenant = try datasetID(dataset, option: "dataset")
        let status = try await database.settings.withClient(logger: logger) { client in
            try await Hub(client: client, logger: logger).status(tenant: tenant)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            encoder.dateEncodingStrategy = .iso8601
            print(String(decoding: try encoder.encode(status), as: UTF8.self))
        } else {
            print(status.text)
        }
    }
}
