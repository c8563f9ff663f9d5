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

    /// Runs `body` with a running client of the database.
    public func withClient<T: Sendable>(
        logger: Logger, _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
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
