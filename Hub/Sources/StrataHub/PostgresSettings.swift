import Foundation
import Logging
import PostgresNIO

/// Where the hub's PostgreSQL is, from libpq's environment variables
/// (`PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`) unless given:
/// a `host` that starts with `/` is the folder of a Unix socket, as for
/// `psql`.
public struct PostgresSettings: Sendable {
    /// A host name, or the folder of a Unix socket (starting with `/`).
    public var host: String
    /// The port (with a socket folder, the socket's number).
    public var port: Int
    /// The user the hub connects as: its database's owner (docs/Hub.md).
    public var user: String
    /// The password, if the server asks for one.
    public var password: String?
    /// The hub's database.
    public var database: String

    /// Settings from the arguments, each missing one from its variable.
    public init(
        host: String? = nil, port: Int? = nil, user: String? = nil, password: String? = nil, database: String? = nil
    ) {
        let environment = ProcessInfo.processInfo.environment
        self.host = host ?? environment["PGHOST"] ?? "localhost"
        self.port = port ?? environment["PGPORT"].flatMap { Int($0) } ?? 5432
        self.user = user ?? environment["PGUSER"] ?? "strata"
        self.password = password ?? environment["PGPASSWORD"]
        self.database = database ?? environment["PGDATABASE"] ?? self.user
    }

    /// Where the settings reach, as a person reads it: `localhost:5432` or
    /// `the socket /tmp/pg/.s.PGSQL.5432`, with the user and database.
    public var target: String {
        let place = host.hasPrefix("/") ? "the socket \(host)/.s.PGSQL.\(port)" : "\(host):\(port)"
        return "\(place) (user \(user), database \(database))"
    }

    /// Connects once and closes, within `timeout`: a pool
    /// (``client(maximumConnections:)``) retries an unreachable server
    /// for a minute and then fails without naming it, so each command
    /// asks first.
    ///
    /// - Throws: ``PostgresUnreachableError`` naming ``target``, why the
    ///   connection failed and what to set.
    public func checkReachable(timeout: Duration = .seconds(5), logger: Logger) async throws {
        var configuration: PostgresConnection.Configuration
        if host.hasPrefix("/") {
            configuration = PostgresConnection.Configuration(
                unixSocketPath: "\(host)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        } else {
            configuration = PostgresConnection.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: .disable)
        }
        configuration.options.connectTimeout = .milliseconds(
            timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        do {
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            try? await connection.close()
        } catch {
            throw PostgresUnreachableError(settings: self, cause: error)
        }
    }

    /// A client of the database (run it: `client.run()`, or as a service).
    public func client(maximumConnections: Int = 20) -> PostgresClient {
        var configuration: PostgresClient.Configuration
        if host.hasPrefix("/") {
            configuration = PostgresClient.Configuration(
                unixSocketPath: "\(host)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        } else {
            configuration = PostgresClient.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: .disable)
        }
        configuration.options.maximumConnections = maximumConnections
        return PostgresClient(configuration: configuration)
    }

    /// Runs `body` with a running client of the database, once a first
    /// connection shows the server can be reached.
    ///
    /// - Throws: ``PostgresUnreachableError`` within seconds when it
    ///   cannot; what `body` throws.
    public func withClient<T: Sendable>(
        logger: Logger, _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        try await checkReachable(logger: logger)
        let client = client(maximumConnections: 2)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}

/// PostgreSQL could not be reached, or refused the hub's login: the
/// message names where the settings point and what to set.
public struct PostgresUnreachableError: Error, CustomStringConvertible, Sendable {
    /// Where the hub tried to connect (``PostgresSettings/target``).
    public var target: String
    /// Why the connection failed, as PostgreSQL or the system said it.
    public var reason: String
    /// Whether the host came from the defaults: neither `--pg-host` nor
    /// `PGHOST` was set.
    public var hostIsDefault: Bool

    init(settings: PostgresSettings, cause: any Error) {
        target = settings.target
        hostIsDefault = settings.host == "localhost" && ProcessInfo.processInfo.environment["PGHOST"] == nil
        if let error = cause as? PSQLError {
            // PSQLError's description hides its parts; the server's message
            // and the socket's error are what a person needs.
            if let message = error.serverInfo?[.message] {
                reason = message
            } else if let underlying = error.underlying {
                reason = String(describing: underlying)
            } else {
                reason = error.code.description
            }
        } else {
            reason = String(describing: cause)
        }
    }

    /// What failed, where, and what to set.
    public var description: String {
        "Cannot reach PostgreSQL at \(target)\(hostIsDefault ? ", the default: PGHOST is not set" : ""): \(reason). "
            + "Set PGHOST (or --pg-host) to the server's host or the folder of its Unix socket, and PGPORT, "
            + "PGUSER, PGPASSWORD and PGDATABASE (or --pg-port, --pg-user, --pg-database) where they differ; "
            + "`make hub` prints the variables of its cluster."
    }
}
