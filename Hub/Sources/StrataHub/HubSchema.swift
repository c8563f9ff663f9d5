import Foundation
import Logging
import PostgresNIO

/// The hub's PostgreSQL schema, in numbered steps: `strata-hub migrate`
/// runs those a database has not run yet, each in a transaction of its own
/// with its number in `strata_hub_schema`, so that a hub of any version
/// upgrades any older database and refuses a newer one.
public enum HubSchema {
    /// One step: its number and its statements.
    struct Step {
        var version: Int
        var statements: [String]
    }

    /// The version this hub runs on.
    public static var currentVersion: Int { steps.last!.version }

    static let steps: [Step] = [
        Step(
            version: 1,
            statements: [
                """
                CREATE TABLE tenants (
                    id uuid PRIMARY KEY,
                    epoch uuid NOT NULL,
                    next_seq bigint NOT NULL DEFAULT 0,
                    created_at timestamptz NOT NULL DEFAULT now())
                """,
                """
                CREATE TABLE devices (
                    id uuid PRIMARY KEY,
                    tenant_id uuid NOT NULL REFERENCES tenants,
                    name text NOT NULL,
                    token_sha256 bytea UNIQUE NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    last_seen timestamptz,
                    revoked_at timestamptz)
                """,
                // How far the hub has each site's changes (PeerProgress).
                """
                CREATE TABLE site_cursors (
                    tenant_id uuid NOT NULL REFERENCES tenants,
                    site uuid NOT NULL,
                    since bigint NOT NULL,
                    after bigint NOT NULL,
                    after_key bytea NOT NULL,
                    walked_at bigint NOT NULL,
                    -- The device whose pushes made the site's changes:
                    -- another device's pushes of them are refused.
                    device_id uuid NOT NULL,
                    PRIMARY KEY (tenant_id, site))
                """,
                // Object types: their key's name and descriptor.
                """
                CREATE TABLE object_types (
                    tenant_id uuid NOT NULL REFERENCES tenants,
                    type_name text NOT NULL,
                    key_name text NOT NULL,
                    key_descriptor text NOT NULL,
                    PRIMARY KEY (tenant_id, type_name))
                """,
                // One descriptor per field path (`home.street`) of a type:
                // the first writer's.
                """
                CREATE TABLE schema_registry (
                    tenant_id uuid NOT NULL REFERENCES tenants,
                    type_name text NOT NULL,
                    path text NOT NULL,
                    descriptor text NOT NULL,
                    first_seen timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (tenant_id, type_name, path))
                """,
                """
                CREATE TABLE objects (
                    tenant_id uuid NOT NULL,
                    type_name text NOT NULL,
                    object_key bytea NOT NULL,
                    cl bigint NOT NULL,
                    hlc bigint NOT NULL,
                    origin uuid NOT NULL,
                    max_writer_version bigint NOT NULL,
                    seq bigint NOT NULL,
                    PRIMARY KEY (tenant_id, type_name, object_key))
                """,
                "CREATE INDEX objects_by_seq ON objects (tenant_id, seq)",
                // A field's register. `path` names a field inside an
                // embedded object with its holders and their lives
                // (`home/1/street`); `rank` is a holder's life (0 for
                // other fields); `cl` the object's life it belongs to.
                """
                CREATE TABLE fields (
                    tenant_id uuid NOT NULL,
                    type_name text NOT NULL,
                    object_key bytea NOT NULL,
                    path text NOT NULL,
                    descriptor text NOT NULL,
                    rank bigint NOT NULL,
                    value bytea NOT NULL,
                    hlc bigint NOT NULL,
                    origin uuid NOT NULL,
                    cl bigint NOT NULL,
                    seq bigint NOT NULL,
                    PRIMARY KEY (tenant_id, type_name, object_key, path))
                """,
                // Idempotent pushes: a body sent again gets its first answer.
                """
                CREATE TABLE batches (
                    device_id uuid NOT NULL REFERENCES devices,
                    body_sha256 bytea NOT NULL,
                    tenant_id uuid NOT NULL,
                    hub_seq bigint NOT NULL,
                    status int NOT NULL,
                    answer text NOT NULL,
                    received_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (device_id, body_sha256))
                """,
            ] + rowLevelSecurity(tenantTables) + tenantRole

        ),
        // Sync rules (docs/Hub.md, "Sync rules").
        Step(
            version: 2,
            statements: [
                // Each version of a tenant's rules; a null source is "no
                // rules" (everything open). The tenant's row names the one
                // in force, so a push or pull reads it with the tenant.
                """
                CREATE TABLE sync_rules (
                    tenant_id uuid NOT NULL REFERENCES tenants,
                    version bigint NOT NULL,
                    source text,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (tenant_id, version))
                """,
                "ALTER TABLE tenants ADD COLUMN rules_version bigint NOT NULL DEFAULT 0",
                // The values of the fields rules read, kept when an object
                // is deleted (its tombstone goes to the devices that could
                // read it) and indexed for the rules' lookups.
                """
                CREATE TABLE sync_attrs (
                    tenant_id uuid NOT NULL,
                    type_name text NOT NULL,
                    object_key bytea NOT NULL,
                    field text NOT NULL,
                    value bytea NOT NULL,
                    seq bigint NOT NULL,
                    PRIMARY KEY (tenant_id, type_name, object_key, field))
                """,
                // With the key last: a rule's lookup of one object's value
                // then seeks either index exactly (without it, a table not
                // yet analyzed had PostgreSQL walk every value of the field
                // through this index, for each object).
                "CREATE INDEX sync_attrs_by_value ON sync_attrs (tenant_id, type_name, field, value, object_key)",
                "GRANT SELECT, INSERT, UPDATE, DELETE ON \(laterTenantTables.joined(separator: ", ")) TO strata_tenant",
            ] + rowLevelSecurity(laterTenantTables)
        ),
        // Compaction (docs/Hub.md, "Compaction"): each device's
        // acknowledged pull cursor, and how far the tenant's tombstones
        // were removed.
        Step(
            version: 3,
            statements: [
                "ALTER TABLE devices ADD COLUMN pulled_seq bigint NOT NULL DEFAULT 0",
                "ALTER TABLE tenants ADD COLUMN compacted_seq bigint NOT NULL DEFAULT 0",
                "CREATE INDEX batches_by_tenant ON batches (tenant_id, received_at)",
            ]),
        // Devices of the app's identity provider (JWT), claims, revoked
        // subjects, and the sequence number of a pull's epoch renewal.
        Step(
            version: 4,
            statements: [
                // A JWT device has no token of the hub's: it is named by
                // its issuer, subject and device key (the configured device
                // claim's value, "" without one) in its tenant.
                "ALTER TABLE devices ALTER COLUMN token_sha256 DROP NOT NULL",
                "ALTER TABLE devices ADD COLUMN issuer text",
                "ALTER TABLE devices ADD COLUMN subject text",
                "ALTER TABLE devices ADD COLUMN device_key text",
                // The device's claims (Hub.Device.claims): set by
                // `device add --claim`, or the last JWT's.
                "ALTER TABLE devices ADD COLUMN claims jsonb NOT NULL DEFAULT '{}'",
                """
                ALTER TABLE devices ADD CONSTRAINT devices_token_or_identity
                    CHECK ((token_sha256 IS NULL) = (issuer IS NOT NULL AND subject IS NOT NULL AND device_key IS NOT NULL))
                """,
                "CREATE UNIQUE INDEX devices_by_identity ON devices (tenant_id, issuer, subject, device_key)",
                "CREATE INDEX devices_by_subject ON devices (issuer, subject)",
                // `strata-hub subject revoke`: the subject's JWTs issued
                // (`iat`) before `revoked_at` are refused.
                """
                CREATE TABLE revoked_subjects (
                    issuer text NOT NULL,
                    subject text NOT NULL,
                    revoked_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (issuer, subject))
                """,
                // The `next_seq` at which a pull last renewed the epoch: a
                // cursor of the renewed epoch past the last commit at that
                // same sequence number does not renew it again.
                "ALTER TABLE tenants ADD COLUMN renewed_at_seq bigint",
            ]
        ),
        // Objects that leave a device's view (docs/Hub.md, "Leaving a
        // view"): each earlier value of a ruled field, with the sequence
        // number of the commit that replaced it, so that a pull can tell
        // what a device could read at its cursor. Compacted with the
        // tombstones. And ranges in subscriptions: each ruled value's
        // bytes in the order of a query's `<` (`ord`; null for a type
        // without order), indexed; `migrate` fills them for the values
        // already there (``Hub/orderValues(tenant:_:)``).
        Step(
            version: 5,
            statements: [
                """
                CREATE TABLE sync_moves (
                    tenant_id uuid NOT NULL,
                    type_name text NOT NULL,
                    object_key bytea NOT NULL,
                    field text NOT NULL,
                    seq bigint NOT NULL,
                    value bytea NOT NULL,
                    ord bytea,
                    PRIMARY KEY (tenant_id, type_name, object_key, field, seq))
                """,
                "ALTER TABLE sync_attrs ADD COLUMN ord bytea",
                "CREATE INDEX sync_attrs_by_order ON sync_attrs (tenant_id, type_name, field, ord, object_key)",
                "CREATE INDEX sync_moves_by_seq ON sync_moves (tenant_id, seq)",
                "GRANT SELECT, INSERT, UPDATE, DELETE ON sync_moves TO strata_tenant",
            ] + rowLevelSecurity(["sync_moves"])
        ),
        // A ruled value replaced by another is kept in `sync_moves` by a
        // trigger, from the row the upsert of the merge's step 5 replaces:
        // a lookup of the value beside the upsert was planned through
        // `sync_attrs_by_order` while `sync_attrs` had no statistics yet,
        // walking every value of the field per object; so were the rules'
        // tests of a value. That index now holds only ordered values, and
        // only a range (which implies one) can read it.
        //
        // And every tenant looks alike to the planner. With statistics of
        // `tenant_id`, a tenant that was small or absent when ANALYZE last
        // ran is estimated at one row, and PostgreSQL then reads an
        // object's row by key through whichever index starts with
        // `tenant_id` is smallest (`objects_by_seq`, `sync_attrs_by_order`),
        // walking the tenant's rows for each key: the pushes of a new
        // tenant slowed as it grew. Without them a tenant is estimated at
        // 1/200 of a table, and a lookup by key takes the primary key. The
        // statistics ANALYZE kept are dropped where the hub may (a
        // superuser); elsewhere they stay until the operator drops them
        // (docs/Hub.md, "Upgrading").
        Step(
            version: 6,
            statements: [
                """
                CREATE FUNCTION strata_keep_move() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    INSERT INTO sync_moves (tenant_id, type_name, object_key, field, seq, value, ord)
                    VALUES (OLD.tenant_id, OLD.type_name, OLD.object_key, OLD.field, NEW.seq, OLD.value, OLD.ord)
                    ON CONFLICT DO NOTHING;
                    RETURN NULL;
                END $$
                """,
                """
                CREATE TRIGGER sync_attrs_moves AFTER UPDATE OF value ON sync_attrs FOR EACH ROW
                    WHEN (OLD.value IS DISTINCT FROM NEW.value) EXECUTE FUNCTION strata_keep_move()
                """,
                // Only a range reads it: partial, so that no lookup by
                // key is planned through it.
                "DROP INDEX sync_attrs_by_order",
                """
                CREATE INDEX sync_attrs_by_order ON sync_attrs (tenant_id, type_name, field, ord, object_key)
                    WHERE ord IS NOT NULL
                """,
            ] + plannerTables.map { "ALTER TABLE \($0) ALTER COLUMN tenant_id SET STATISTICS 0" } + [
                """
                DO $$ BEGIN
                    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
                        DELETE FROM pg_statistic s USING pg_attribute a
                        WHERE a.attrelid = s.starelid AND a.attnum = s.staattnum AND a.attname = 'tenant_id'
                          AND s.starelid = ANY(ARRAY[\(plannerTables.map { "'\($0)'::regclass" }.joined(separator: ", "))]);
                    END IF;
                END $$
                """
            ]
        ),
    ]

    /// The tables a push reads by key, whose `tenant_id` has no statistics.
    static let plannerTables = ["objects", "fields", "sync_attrs", "sync_moves"]

    /// The tables whose rows belong to one tenant.
    static let tenantTables = ["site_cursors", "object_types", "schema_registry", "objects", "fields", "batches"]
    /// The tenant tables steps after the first made.
    static let laterTenantTables = ["sync_rules", "sync_attrs"]

    /// The role every tenant's transaction runs as (`SET LOCAL ROLE`): it
    /// has no `BYPASSRLS`, so row-level security holds even when the hub
    /// connects as a superuser, as it does on a development cluster.
    static let tenantRole = [
        """
        -- Roles belong to the cluster: another database's migration may be
        -- making it at the same time. Each pass reads the committed roles
        -- again, until the role is there (made by this pass or another's).
        DO $$ BEGIN
            FOR attempt IN 1 .. 200 LOOP
                EXIT WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = 'strata_tenant');
                BEGIN
                    CREATE ROLE strata_tenant NOLOGIN;
                    EXIT;
                EXCEPTION WHEN duplicate_object OR unique_violation THEN
                    PERFORM pg_sleep(0.05);
                END;
            END LOOP;
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'strata_tenant') THEN
                RAISE EXCEPTION 'The role strata_tenant could not be made: create it (CREATE ROLE strata_tenant NOLOGIN) and run migrate again.';
            END IF;
        END $$
        """,
        "GRANT SELECT, INSERT, UPDATE, DELETE ON \(tenantTables.joined(separator: ", ")) TO strata_tenant",
        "GRANT SELECT, UPDATE ON tenants TO strata_tenant",
        // Membership belongs to the cluster too.
        """
        DO $$ BEGIN
            GRANT strata_tenant TO CURRENT_USER;
        EXCEPTION WHEN unique_violation THEN NULL;
        END $$
        """,
        "ALTER TABLE tenants ENABLE ROW LEVEL SECURITY",
        "ALTER TABLE tenants FORCE ROW LEVEL SECURITY",
        """
        CREATE POLICY tenant_only ON tenants
            USING (id = nullif(current_setting('strata.tenant', true), '')::uuid)
            WITH CHECK (id = nullif(current_setting('strata.tenant', true), '')::uuid)
        """,
    ]

    /// Row-level security on the tenant's tables: a statement sees and
    /// writes only the rows of the tenant its transaction names
    /// (`SET LOCAL strata.tenant`), whatever its `WHERE` says. Forced, so
    /// that it holds for the tables' owner, which the hub connects as.
    static func rowLevelSecurity(_ tables: [String]) -> [String] {
        tables.flatMap { table in
            [
                "ALTER TABLE \(table) ENABLE ROW LEVEL SECURITY",
                "ALTER TABLE \(table) FORCE ROW LEVEL SECURITY",
                """
                CREATE POLICY tenant_only ON \(table)
                    USING (tenant_id = nullif(current_setting('strata.tenant', true), '')::uuid)
                    WITH CHECK (tenant_id = nullif(current_setting('strata.tenant', true), '')::uuid)
                """,
            ]
        }
    }

    /// The schema version of the database `client` reaches: 0 when the hub
    /// never ran `migrate` on it.
    public static func version(_ client: PostgresClient, logger: Logger) async throws -> Int {
        let rows = try await client.query(
            "SELECT coalesce(max(version), 0) FROM strata_hub_schema", logger: logger)
        for try await version in rows.decode(Int.self) { return version }
        return 0
    }

    /// Runs the steps the database has not run: nothing when it is
    /// current. Returns the versions run.
    ///
    /// - Throws: ``HubError/schemaTooNew`` when the database was migrated
    ///   by a newer hub.
    @discardableResult
    public static func migrate(_ client: PostgresClient, logger: Logger) async throws -> [Int] {
        try await client.query(
            """
            CREATE TABLE IF NOT EXISTS strata_hub_schema (
                version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
            """, logger: logger)
        var ran: [Int] = []
        for step in steps {
            let done = try await client.withTransaction(logger: logger) { connection in
                // One migrating hub at a time.
                try await connection.query("LOCK TABLE strata_hub_schema IN EXCLUSIVE MODE", logger: logger)
                let rows = try await connection.query(
                    "SELECT coalesce(max(version), 0) FROM strata_hub_schema", logger: logger)
                var current = 0
                for try await version in rows.decode(Int.self) { current = version }
                guard current <= currentVersion else { throw HubError.schemaTooNew(current, supported: currentVersion) }
                guard current < step.version else { return false }
                for statement in step.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO strata_hub_schema (version) VALUES (\(step.version))", logger: logger)
                return true
            }
            if done { ran.append(step.version) }
        }
        // The values kept before version 5 get their order.
        if ran.contains(5), ran.first != 1 {
            let rows = try await client.query("SELECT DISTINCT tenant_id FROM devices", logger: logger)
            var tenants: [UUID] = []
            for try await tenant in rows.decode(UUID.self) { tenants.append(tenant) }
            for tenant in tenants {
                try await client.withTransaction(logger: logger) { connection in
                    try await connection.query(
                        "SELECT set_config('strata.tenant', \(tenant.uuidString), true)", logger: logger)
                    try await orderValues(tenant: tenant, connection, logger: logger)
                }
            }
        }
        return ran
    }

    /// Fills `sync_attrs.ord` where it is null, from the registers' values:
    /// the values a new version of rules copied (in SQL, which cannot
    /// order them), and those kept before schema version 5. A value of a
    /// type without order stays null; so does a deleted object's (its
    /// registers are gone).
    static func orderValues(tenant: UUID, _ connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query(
            """
            SELECT a.type_name, a.object_key, a.field, f.value FROM sync_attrs a JOIN fields f
              ON f.tenant_id = a.tenant_id AND f.type_name = a.type_name AND f.object_key = a.object_key
             AND f.path = a.field
            WHERE a.tenant_id = \(tenant) AND a.ord IS NULL
            """, logger: logger)
        var batch: (types: [String], keys: [ByteBuffer], fields: [String], ords: [ByteBuffer]) = ([], [], [], [])
        func flush() async throws {
            guard !batch.types.isEmpty else { return }
            try await connection.query(
                """
                UPDATE sync_attrs a SET ord = u.o
                FROM unnest(\(batch.types)::text[], \(batch.keys)::bytea[], \(batch.fields)::text[],
                            \(batch.ords)::bytea[]) AS u(t, k, f, o)
                WHERE a.tenant_id = \(tenant) AND a.type_name = u.t AND a.object_key = u.k AND a.field = u.f
                """, logger: logger)
            batch = ([], [], [], [])
        }
        var found: [(String, ByteBuffer, String, ByteBuffer)] = []
        for try await (type, key, field, value) in rows.decode((String, ByteBuffer, String, ByteBuffer).self) {
            guard let ord = try AttrValue.ordered(value) else { continue }
            found.append((type, key, field, ord))
        }
        for (type, key, field, ord) in found {
            batch.types.append(type)
            batch.keys.append(key)
            batch.fields.append(field)
            batch.ords.append(ord)
            if batch.types.count == 10_000 { try await flush() }
        }
        try await flush()
    }
}
