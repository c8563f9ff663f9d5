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
    /// The hub's logger, outside requests.
    let baseLogger: Logger
    /// The logger of the request being served (its `hb.request.id` on
    /// every line: ``HubServer``'s middleware sets it), else the hub's.
    var logger: Logger { Hub.requestLogger ?? baseLogger }
    /// The logger of the request the current task serves.
    @TaskLocal static var requestLogger: Logger?
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
    /// The open streams and long polls of each device, closed when it is
    /// revoked.
    public let revocations = RevocationBroadcaster()
    /// The JWTs the hub takes, nil when it takes only its own tokens.
    let jwt: JWTAuthenticator?
    /// The hub's metrics (`/metrics`).
    public let metrics = HubMetrics()
    /// The PostgreSQL channel on which each commit is announced, with the
    /// payload `TENANT:SEQ`, to every hub process on the database.
    /// A revocation is announced on it too, with the payload
    /// `revoked:DEVICE` (a device) or `revoked:DEVICE:SECONDS` (a subject:
    /// the streams of tokens issued up to then).
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

    /// A hub on `client`'s database (migrated: ``HubSchema/migrate(_:logger:)``),
    /// taking the JWTs `jwt` describes beside its own device tokens.
    public init(
        client: PostgresClient, logger: Logger, maxBodyBytes: Int = 16 << 20,
        maxClockDriftMilliseconds: UInt64 = 300_000,
        requestTimeout: Duration = .seconds(30), jwt: JWTSettings? = nil
    ) {
        self.requestTimeout = requestTimeout
        self.client = client
        self.baseLogger = logger
        self.maxBodyBytes = maxBodyBytes
        self.maxClockDrift = maxClockDriftMilliseconds
        self.jwt = jwt.map { JWTAuthenticator($0, logger: logger) }
    }

    /// A device the token names: its id, tenant and claims.
    public struct Device: Sendable, Equatable {
        /// The device's id, as `strata-hub device add` printed it (or the
        /// hub made at a JWT's first sight).
        public var id: UUID
        /// The tenant (dataset) the device's token belongs to.
        public var tenant: UUID
        /// What sync rules know of the device's user: those `device add
        /// --claim` gave it, or every claim of its JWT (``DeviceClaims``).
        public var claims: DeviceClaims = DeviceClaims()
        /// The JWT's `iat` (seconds since 1970); nil for the hub's tokens
        /// and JWTs without one.
        public var issuedAt: Double?

        /// A device of `tenant` acting with `claims`.
        public init(id: UUID, tenant: UUID, claims: DeviceClaims = DeviceClaims(), issuedAt: Double? = nil) {
            self.id = id
            self.tenant = tenant
            self.claims = claims
            self.issuedAt = issuedAt
        }
    }

    /// Runs `body` in a transaction that sees and writes only `tenant`'s
    /// rows: as the role `strata_tenant`, under row-level security.
    func inTenant<T: Sendable>(
        _ tenant: UUID, readOnly: Bool = false, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let asked = ContinuousClock.now
        do {
            return try await client.withConnection { connection in
                metrics.poolWait(ContinuousClock.now - asked)
                return try await connection.withTransaction(logger: logger) { connection in
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

    /// The device of `token`, nil when the token is refused (unknown,
    /// revoked, or a JWT that fails a check: ``authenticate(token:)``
    /// says which).
    public func device(token: String) async throws -> Device? {
        do {
            return try await authenticate(token: token)
        } catch let error as HubError where error.code == .unauthorized {
            return nil
        }
    }

    /// The device of `token`: a device token of the hub's (`sth1_…`) or,
    /// when the hub takes JWTs, a JWT of the app's identity provider,
    /// whose device is made at its first sight (docs/Hub.md). Marks the
    /// device seen, at most once a minute: a write per request would cost
    /// a commit (an fsync) per request.
    ///
    /// - Throws: ``HubError`` `unauthorized` saying which check failed.
    public func authenticate(token: String) async throws -> Device {
        if token.hasPrefix("sth1_") || !JWTAuthenticator.looksLikeJWT(token) {
            let hash = ByteBuffer(bytes: Array(SHA256.hash(data: Data(token.utf8))))
            let rows = try await client.query(
                """
                SELECT id, tenant_id, claims::text, coalesce(last_seen < now() - interval '1 minute', true)
                FROM devices WHERE token_sha256 = \(hash) AND revoked_at IS NULL
                """, logger: logger)
            var found: (Device, Bool)?
            for try await (id, tenant, claims, stale) in rows.decode((UUID, UUID, String, Bool).self) {
                found = (Device(id: id, tenant: tenant, claims: try DeviceClaims(json: claims)), stale)
            }
            guard let (device, stale) = found else {
                throw HubError.notAuthenticated("The device token is unknown or revoked.")
            }
            if stale {
                try await client.query("UPDATE devices SET last_seen = now() WHERE id = \(device.id)", logger: logger)
            }
            return device
        }
        guard let jwt else {
            throw HubError.notAuthenticated(
                "The token is a JWT, and this hub takes only its own device tokens (serve with --jwt-issuer to take JWTs)."
            )
        }
        return try await device(of: try await jwt.verify(token))
    }

    /// The device of a verified JWT's identity, made at its first sight:
    /// the `devices` row of its tenant, issuer, subject and device key,
    /// with the token's claims.
    func device(of identity: JWTIdentity) async throws -> Device {
        let claims = identity.claims.json
        for attempt in 0 ..< 2 {
            let rows = try await client.query(
                """
                SELECT d.id, d.revoked_at IS NOT NULL, d.claims::text,
                       coalesce(d.last_seen < now() - interval '1 minute', true),
                       r.revoked_at IS NOT NULL AND to_timestamp(\(identity.issuedAt ?? 0)) <= r.revoked_at
                FROM (SELECT 1) one
                LEFT JOIN devices d ON d.tenant_id = \(identity.tenant) AND d.issuer = \(identity.issuer)
                     AND d.subject = \(identity.subject) AND d.device_key = \(identity.deviceKey)
                LEFT JOIN revoked_subjects r ON r.issuer = \(identity.issuer) AND r.subject = \(identity.subject)
                """, logger: logger)
            var found: (UUID?, Bool?, String?, Bool, Bool?)?
            for try await row in rows.decode((UUID?, Bool?, String?, Bool, Bool?).self) { found = row }
            guard let (id, revoked, stored, stale, subjectRevoked) = found else { break }
            if subjectRevoked == true {
                throw HubError.notAuthenticated(
                    "The JWT's subject was revoked (strata-hub subject revoke) after the token was issued (iat); sign in again."
                )
            }
            guard let id else {
                guard attempt == 0 else { break }
                try await asOwner(of: identity.tenant) { connection in
                    try await connection.query(
                        "INSERT INTO tenants (id, epoch) VALUES (\(identity.tenant), \(UUID())) ON CONFLICT DO NOTHING",
                        logger: logger)
                    try await connection.query(
                        """
                        INSERT INTO devices (id, tenant_id, name, issuer, subject, device_key, claims, last_seen)
                        VALUES (\(UUID()), \(identity.tenant), \("jwt " + identity.subject), \(identity.issuer),
                                \(identity.subject), \(identity.deviceKey), \(claims)::jsonb, now())
                        ON CONFLICT (tenant_id, issuer, subject, device_key) DO NOTHING
                        """, logger: logger)
                }
                continue
            }
            if revoked == true {
                throw HubError.notAuthenticated("This device was revoked (strata-hub device revoke).")
            }
            if stale || stored.map({ try? DeviceClaims(json: $0) }) != identity.claims {
                try await client.query(
                    "UPDATE devices SET last_seen = now(), claims = \(claims)::jsonb WHERE id = \(id)", logger: logger)
            }
            return Device(id: id, tenant: identity.tenant, claims: identity.claims, issuedAt: identity.issuedAt)
        }
        throw HubError.unavailable("The device of the JWT could not be made; retry.")
    }

    /// Adds a device to `tenant` (the dataset's UUID; made when new) and
    /// returns it with its token: 256 random bits, which the hub keeps only
    /// as a SHA-256.
    public func addDevice(tenant: UUID, name: String, claims: DeviceClaims = DeviceClaims()) async throws -> (
        device: UUID, token: String
    ) {
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
                """
                INSERT INTO devices (id, tenant_id, name, token_sha256, claims)
                VALUES (\(id), \(tenant), \(name), \(hash), \(claims.json)::jsonb)
                """, logger: logger)
        }
        return (id, token)
    }

    /// Revokes the device `id`: its token (or, for a device of JWTs, its
    /// subject's tokens naming it) is refused from now on, and its open
    /// streams and long polls are closed, in every hub process. Returns
    /// whether a device of that id was live.
    @discardableResult
    public func revokeDevice(_ id: UUID) async throws -> Bool {
        let revoked = try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                "UPDATE devices SET revoked_at = now() WHERE id = \(id) AND revoked_at IS NULL RETURNING id",
                logger: logger)
            var found = false
            for try await _ in rows { found = true }
            if found {
                try await connection.query(
                    "SELECT pg_notify(\(Hub.commitChannel), \("revoked:" + id.uuidString))", logger: logger)
            }
            return found
        }
        if revoked { revocations.revoke(id, issuedUpTo: nil) }
        return revoked
    }

    /// Revokes the JWTs of `subject` of `issuer` issued until now (`iat`;
    /// a JWT without one too): refused from now on, and the streams and
    /// long polls they opened closed, in every hub process. A JWT issued
    /// later is taken. Returns the number of the subject's devices.
    @discardableResult
    public func revokeSubject(issuer: String, subject: String) async throws -> Int {
        let (devices, seconds) = try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO revoked_subjects (issuer, subject) VALUES (\(issuer), \(subject))
                ON CONFLICT (issuer, subject) DO UPDATE SET revoked_at = now()
                RETURNING extract(epoch FROM revoked_at)::float8
                """, logger: logger)
            var seconds = 0.0
            for try await value in rows.decode(Double.self) { seconds = value }
            let found = try await connection.query(
                "SELECT id FROM devices WHERE issuer = \(issuer) AND subject = \(subject)", logger: logger)
            var devices: [UUID] = []
            for try await id in found.decode(UUID.self) { devices.append(id) }
            for id in devices {
                try await connection.query(
                    "SELECT pg_notify(\(Hub.commitChannel), \("revoked:\(id.uuidString):\(seconds)"))", logger: logger)
            }
            return (devices, seconds)
        }
        for id in devices { revocations.revoke(id, issuedUpTo: seconds) }
        return devices.count
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
        let asked = ContinuousClock.now
        do {
            return try await client.withConnection { connection in
                metrics.poolWait(ContinuousClock.now - asked)
                return try await connection.withTransaction(logger: logger) { connection in
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

/// The open streams and long polls of each device, in this process:
/// closed when the device is revoked (``Hub/revokeDevice(_:)``,
/// ``Hub/revokeSubject(issuer:subject:)``), whichever process revoked it
/// (``CommitListener`` hears the announcement).
public final class RevocationBroadcaster: Sendable {
    private struct Watcher {
        var issuedAt: Double?
        var continuation: AsyncStream<Void>.Continuation
    }

    private let state = NIOLockedValueBox([UUID: [UUID: Watcher]]())

    /// No watchers yet.
    public init() {}

    /// A stream that yields once, when `device` is revoked, until the
    /// caller drops it.
    public func watch(_ device: Hub.Device) -> AsyncStream<Void> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        state.withLockedValue {
            $0[device.id, default: [:]][id] = Watcher(issuedAt: device.issuedAt, continuation: continuation)
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLockedValue { state in
                state[device.id]?[id] = nil
                if state[device.id]?.isEmpty ?? false { state[device.id] = nil }
            }
        }
        return stream
    }

    /// The devices watched in this process, with the `iat` of each
    /// watcher's token.
    var watched: [UUID: [Double?]] { state.withLockedValue { $0.mapValues { $0.values.map(\.issuedAt) } } }

    /// Closes the watchers of `device`: all of them, or with
    /// `issuedUpTo` (a subject's revocation, seconds since 1970) those of
    /// tokens issued until then, and of tokens without `iat`.
    func revoke(_ device: UUID, issuedUpTo: Double?) {
        let closed = state.withLockedValue { state -> [AsyncStream<Void>.Continuation] in
            guard let watchers = state[device] else { return [] }
            let chosen = watchers.filter { _, watcher in
                guard let issuedUpTo, let issuedAt = watcher.issuedAt else { return true }
                return issuedAt <= issuedUpTo
            }
            for key in chosen.keys { state[device]?[key] = nil }
            if state[device]?.isEmpty ?? false { state[device] = nil }
            return chosen.values.map(\.continuation)
        }
        for continuation in closed {
            continuation.yield()
            continuation.finish()
        }
    }

    /// Closes the watchers a `revoked:DEVICE[:SECONDS]` announcement
    /// names. False for a payload of another form.
    @discardableResult
    func publish(notification payload: String) -> Bool {
        let parts = payload.split(separator: ":")
        guard parts.count == 2 || parts.count == 3, parts[0] == "revoked",
            let device = UUID(uuidString: String(parts[1]))
        else { return false }
        var issuedUpTo: Double?
        if parts.count == 3 {
            guard let seconds = Double(parts[2]) else { return false }
            issuedUpTo = seconds
        }
        revoke(device, issuedUpTo: issuedUpTo)
        return true
    }
}
