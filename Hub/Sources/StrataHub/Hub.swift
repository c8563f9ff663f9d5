import Crypto
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
@_spi(Hub) import Strata

/// The hub's work, apart from HTTP: devices and their tokens, pushes
/// merged in PostgreSQL, pulls served from it. It holds no state but the
/// connection pool and the subscribers of each tenant's commits, so any
/// number of hub processes can serve one database: each commit is
/// announced through PostgreSQL (`NOTIFY`), and every process's
/// ``CommitListener`` pokes its own subscribers.
public final class Hub: Sendable {
    /// The pool of connections to the hub's database; the application
    /// runs it as a service.
    public let client: PostgresClient
    let logger: Logger
    /// The largest body a push may have.
    public let maxBodyBytes: Int
    /// How far ahead of the hub's clock a stamp may be.
    public let maxClockDrift: UInt64
    /// How long a request may wait for PostgreSQL before the hub answers
    /// 503 `unavailable` (a database that is down queues requests, it does
    /// not fail them).
    public let requestTimeout: Duration
    /// The subscribers of each tenant's commits.
    public let commits = CommitBroadcaster()
    /// The sync rules and rule schemas this process has read.
    let rulesCache = RulesCache()
    /// The PostgreSQL channel on which each commit is announced, with the
    /// payload `TENANT:SEQ`, to every hub process on the database.
    public static let commitChannel = "strata_commits"
    /// The pull cursors devices acknowledged since the last
    /// ``flushAcknowledgements()``, by device: written in batches, not a
    /// commit per pull (a stored cursor lower than a device's is safe: it
    /// only holds compaction back).
    let acknowledged = NIOLockedValueBox<[UUID: Acknowledgement]>([:])

    /// A device's acknowledged pull cursor, in the epoch it pulled from.
    struct Acknowledgement {
        var tenant: UUID
        var epoch: UUID
        var since: Int64
    }

    /// A hub on `client`'s database (migrated: ``HubSchema/migrate(_:logger:)``).
    public init(
        client: PostgresClient, logger: Logger, maxBodyBytes: Int = 16 << 20,
        maxClockDriftMilliseconds: UInt64 = 300_000,
        requestTimeout: Duration = .seconds(30)
    ) {
        self.requestTimeout = requestTimeout
        self.client = client
        self.logger = logger
        self.maxBodyBytes = maxBodyBytes
        self.maxClockDrift = maxClockDriftMilliseconds
    }

    /// A device the token names: its id and tenant.
    public struct Device: Sendable, Equatable {
        /// The device's id, as `strata-hub device add` printed it.
        public var id: UUID
        /// The tenant (dataset) the device's token belongs to.
        public var tenant: UUID
        /// Who the device acts for, as the dataset's sync rules read it.
        public var claims: HubClaims

        /// A device of `tenant`, with `claims`.
        public init(id: UUID, tenant: UUID, claims: HubClaims = HubClaims()) {
            self.id = id
            self.tenant = tenant
            self.claims = claims
        }
    }

    /// Runs `body` in a transaction that sees and writes only `tenant`'s
    /// rows: as the role `strata_tenant`, under row-level security.
    func inTenant<T: Sendable>(
        _ tenant: UUID, readOnly: Bool = false, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            return try await client.withConnection { connection in
                try await connection.withTransaction(logger: logger) { connection in
                    if readOnly {
                        try await connection.query(
                            "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
                    }
                    try await connection.query("SET LOCAL ROLE strata_tenant", logger: logger)
                    // A cancelled task does not stop a running query: the
                    // server does, past the request's deadline.
                    try await connection.query(
                        "SELECT set_config('statement_timeout', \(statementTimeout), true)", logger: logger)
                    try await connection.query(
                        "SELECT set_config('strata.tenant', \(tenant.uuidString), true)", logger: logger)
                    return try await body(connection)
                }
            }
        } catch let error as PostgresTransactionError {
            throw error.closureError ?? error
        }
    }

    // MARK: Devices

    /// `requestTimeout` in milliseconds, as PostgreSQL's `statement_timeout`.
    var statementTimeout: String {
        let (seconds, attoseconds) = requestTimeout.components
        return String(max(1, seconds * 1_000 + attoseconds / 1_000_000_000_000_000))
    }

    /// The device of `token`, nil when no device has it or it is revoked.
    /// Marks it seen, at most once a minute: a write per request would
    /// cost a commit (an fsync) per request.
    public func device(token: String) async throws -> Device? {
        let hash = ByteBuffer(bytes: Array(SHA256.hash(data: Data(token.utf8))))
        let rows = try await client.query(
            """
            SELECT id, tenant_id, coalesce(last_seen < now() - interval '1 minute', true) FROM devices
            WHERE token_sha256 = \(hash) AND revoked_at IS NULL
            """, logger: logger)
        var found: (Device, Bool)?
        for try await (id, tenant, stale) in rows.decode((UUID, UUID, Bool).self) {
            found = (Device(id: id, tenant: tenant), stale)
        }
        guard let (device, stale) = found else { return nil }
        if stale {
            try await client.query("UPDATE devices SET last_seen = now() WHERE id = \(device.id)", logger: logger)
        }
        return device
    }

    /// Adds a device to `tenant` (the dataset's UUID; made when new) and
    /// returns it with its token: 256 random bits, which the hub keeps only
    /// as a SHA-256.
    public func addDevice(tenant: UUID, name: String) async throws -> (device: UUID, token: String) {
        var bytes = [UInt8](repeating: 0, count: 32)
        var generator = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = generator.next() }
        let token =
            "sth1_"
            + Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let hash = ByteBuffer(bytes: Array(SHA256.hash(data: Data(token.utf8))))
        let id = UUID()
        try await asOwner(of: tenant) { connection in
            try await connection.query(
                "INSERT INTO tenants (id, epoch) VALUES (\(tenant), \(UUID())) ON CONFLICT DO NOTHING", logger: logger)
            try await connection.query(
                "INSERT INTO devices (id, tenant_id, name, token_sha256) VALUES (\(id), \(tenant), \(name), \(hash))",
                logger: logger)
        }
        return (id, token)
    }

    /// Revokes the device `id`: its token is refused from now on. Returns
    /// whether a device of that id was live.
    @discardableResult
    public func revokeDevice(_ id: UUID) async throws -> Bool {
        let rows = try await client.query(
            "UPDATE devices SET revoked_at = now() WHERE id = \(id) AND revoked_at IS NULL RETURNING id",
            logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Gives `tenant` a new epoch: for an operator who restored the hub's
    /// database from a backup, so that devices, whose cursors are past what
    /// the backup holds, pull everything again (docs/Hub.md).
    ///
    /// - Throws: ``HubError`` `unknownTenant` when no device was ever added
    ///   to `tenant`.
    public func renewEpoch(tenant: UUID) async throws -> UUID {
        let epoch = UUID()
        let renewed = try await asOwner(of: tenant) { connection in
            let rows = try await connection.query(
                "UPDATE tenants SET epoch = \(epoch) WHERE id = \(tenant) RETURNING id", logger: self.logger)
            var found = false
            for try await _ in rows { found = true }
            // Cursors of the old epoch say nothing of the new one's data.
            if found {
                try await connection.query(
                    "UPDATE devices SET pulled_seq = 0 WHERE tenant_id = \(tenant)", logger: self.logger)
            }
            return found
        }
        guard renewed else { throw HubError.unknownTenant(tenant) }
        return epoch
    }

    /// Runs `body` in a transaction with the hub's own rights (not the
    /// tenant role's), with `tenant` set: row-level security is forced on
    /// `tenants`, for the tables' owner too, and lets through only the
    /// rows of the tenant set.
    func asOwner<T: Sendable>(of tenant: UUID, _ body: (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await client.withConnection { connection in
                try await connection.withTransaction(logger: logger) { connection in
                    try await connection.query(
                        "SELECT set_config('strata.tenant', \(tenant.uuidString), true)", logger: logger)
                    return try await body(connection)
                }
            }
        } catch let error as PostgresTransactionError {
            throw error.closureError ?? error
        }
    }

    /// The hub's clock, in milliseconds since 1970.
    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }
}

/// The subscribers of each tenant's commits: the WebSocket connections and
/// long polls of its devices, poked with the hub sequence number after
/// each commit, whichever process made it. A commit is heard twice in the
/// process that made it (at once, and through PostgreSQL): a sequence
/// number the tenant's subscribers were just poked with is not passed on
/// again. A lower one is (a restored database numbers its commits from
/// where the backup ends), so a poke may come twice when this process's
/// own commit is heard before another process's earlier one.
public final class CommitBroadcaster: Sendable {
    private struct State {
        var subscribers: [UUID: [UUID: AsyncStream<Int64>.Continuation]] = [:]
        /// Per tenant with subscribers, the sequence number last passed on.
        var published: [UUID: Int64] = [:]
    }

    private let state = NIOLockedValueBox(State())

    /// No subscribers yet.
    public init() {}

    /// A stream of `tenant`'s commits, until the caller drops it.
    public func subscribe(_ tenant: UUID) -> AsyncStream<Int64> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Int64>.makeStream(bufferingPolicy: .bufferingNewest(1))
        state.withLockedValue { $0.subscribers[tenant, default: [:]][id] = continuation }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLockedValue { state in
                state.subscribers[tenant]?[id] = nil
                if state.subscribers[tenant]?.isEmpty ?? false {
                    state.subscribers[tenant] = nil
                    state.published[tenant] = nil
                }
            }
        }
        return stream
    }

    /// The tenants that have subscribers in this process.
    var subscribedTenants: [UUID] { state.withLockedValue { Array($0.subscribers.keys) } }

    /// Pokes `tenant`'s subscribers with `seq`, unless it is the one they
    /// were last poked with.
    func publish(_ tenant: UUID, seq: Int64) {
        let subscribers = state.withLockedValue { state -> [AsyncStream<Int64>.Continuation] in
            guard let subscribers = state.subscribers[tenant], seq != state.published[tenant] else { return [] }
            state.published[tenant] = seq
            return Array(subscribers.values)
        }
        for subscriber in subscribers { subscriber.yield(seq) }
    }

    /// Pokes the subscribers of the commit a `NOTIFY` announced: its
    /// payload is `TENANT:SEQ` (``Hub/commitChannel``). False for a payload
    /// of another form, which pokes no one.
    @discardableResult
    func publish(notification payload: String) -> Bool {
        let parts = payload.split(separator: ":")
        guard parts.count == 2, let tenant = UUID(uuidString: String(parts[0])), let seq = Int64(parts[1]) else {
            return false
        }
        publish(tenant, seq: seq)
        return true
    }
}
