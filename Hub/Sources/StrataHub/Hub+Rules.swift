import Foundation
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
@_spi(Hub) import Strata

/// The rules a process has read, by tenant, and the schema they compare
/// with: a version's rules never change, and neither does a field's
/// registered type, so both are read from PostgreSQL once.
final class RulesCache: Sendable {
    private struct State {
        var rules: [UUID: (version: Int64, rules: SyncRules?)] = [:]
        var schemas: [UUID: RuleSchema] = [:]
    }

    private let state = NIOLockedValueBox(State())

    func rules(_ tenant: UUID, version: Int64) -> SyncRules?? {
        state.withLockedValue { state in
            guard let cached = state.rules[tenant], cached.version == version else { return nil }
            return .some(cached.rules)
        }
    }

    func keep(_ rules: SyncRules?, tenant: UUID, version: Int64) {
        state.withLockedValue { $0.rules[tenant] = (version, rules) }
    }

    func schema(_ tenant: UUID) -> RuleSchema? { state.withLockedValue { $0.schemas[tenant] } }

    func keep(_ schema: RuleSchema, tenant: UUID) { state.withLockedValue { $0.schemas[tenant] = schema } }
}

/// A dataset's rules as they stand: the version in force and its text
/// (nil: no rules).
public struct HubRulesVersion: Sendable, Equatable {
    /// The version: 0 before any rules were set, then 1, 2, ...
    public var version: Int64
    /// The rules' text; nil when the dataset has none (it is open).
    public var source: String?

    /// A version from its parts.
    public init(version: Int64, source: String?) {
        self.version = version
        self.source = source
    }
}

extension Hub {
    /// The rules of `tenant` at `version` (the tenant row's
    /// `rules_version`), nil when the dataset has none.
    func rules(_ tenant: UUID, version: Int64, _ connection: PostgresConnection) async throws -> SyncRules? {
        guard version > 0 else { return nil }
        if let cached = rulesCache.rules(tenant, version: version) { return cached }
        let rows = try await connection.query(
            "SELECT source FROM sync_rules WHERE tenant_id = \(tenant) AND version = \(version)", logger: logger)
        var source: String?
        for try await text in rows.decode(String?.self) { source = text }
        let rules = try source.map { text throws(HubError) in try SyncRules(parsing: text) }
        rulesCache.keep(rules, tenant: tenant, version: version)
        return rules
    }

    /// The keys and field types `rules` compare with, from the dataset's
    /// registry (read again only while something they name is missing).
    func ruleSchema(_ tenant: UUID, for rules: SyncRules, _ connection: PostgresConnection) async throws
        -> RuleSchema
    {
        if let cached = rulesCache.schema(tenant), cached.covers(rules) { return cached }
        var schema = RuleSchema()
        let types = Array(rules.types.keys)
        let keyRows = try await connection.query(
            "SELECT type_name, key_name, key_descriptor FROM object_types WHERE type_name = ANY(\(types)::text[])",
            logger: logger)
        for try await (type, name, descriptor) in keyRows.decode((String, String, String).self) {
            schema.keys[type] = (name, descriptor)
        }
        let fields = Array(Set(rules.ruledFields.values.flatMap { $0 }))
        let fieldRows = try await connection.query(
            """
            SELECT type_name, path, descriptor FROM schema_registry
            WHERE type_name = ANY(\(types)::text[]) AND path = ANY(\(fields)::text[])
            """, logger: logger)
        for try await (type, path, descriptor) in fieldRows.decode((String, String, String).self) {
            schema.fields[type, default: [:]][path] = descriptor
        }
        rulesCache.keep(schema, tenant: tenant)
        return schema
    }

    /// The fields `rules` read whose values the merge copies to
    /// `sync_attrs`: every ruled field but the primary keys, which
    /// `objects` holds.
    func extractedFields(_ rules: SyncRules?, _ schema: RuleSchema) -> [String: Set<String>] {
        guard let rules else { return [:] }
        var fields = rules.ruledFields
        for (type, key) in schema.keys { fields[type]?.remove(key.name) }
        return fields.filter { !$0.value.isEmpty }
    }

    /// The dataset's rules in force: their version (0 when none were ever
    /// set) and text (nil when none are in force).
    ///
    /// - Throws: ``HubError`` `unknownTenant` when no device was ever
    ///   added to `tenant`.
    public func rules(tenant: UUID) async throws -> HubRulesVersion {
        try await asOwner(of: tenant) { connection in
            let rows = try await connection.query(
                """
                SELECT t.rules_version, r.source FROM tenants t
                LEFT JOIN sync_rules r ON r.tenant_id = t.id AND r.version = t.rules_version
                WHERE t.id = \(tenant)
                """, logger: logger)
            for try await (version, source) in rows.decode((Int64, String?).self) {
                return HubRulesVersion(version: version, source: source)
            }
            throw HubError.unknownTenant(tenant)
        }
    }

    /// Puts `source` in force as the dataset's rules (nil: none, every
    /// device reads and writes everything), as a new version: pushes and
    /// pulls after it commits use it. The values of the fields the new
    /// rules read are copied to `sync_attrs` in the same transaction, for
    /// every object the dataset has (those deleted before have none: a
    /// device that could read them under the new rules does not get their
    /// tombstones).
    ///
    /// - Throws: ``HubError`` `invalidRules` when the text does not parse,
    ///   `unknownTenant` when no device was ever added to `tenant`.
    @discardableResult
    public func setRules(tenant: UUID, source: String?) async throws -> Int64 {
        let rules = try source.map { text throws(HubError) in try SyncRules(parsing: text) }
        let version: Int64 = try await asOwner(of: tenant) { connection in
            // The tenant's row is the lock pushes take: no push merges
            // between the copy below and the new version.
            let rows = try await connection.query(
                "SELECT rules_version FROM tenants WHERE id = \(tenant) FOR UPDATE", logger: logger)
            var current: Int64?
            for try await value in rows.decode(Int64.self) { current = value }
            guard let current else { throw HubError.unknownTenant(tenant) }
            let version = current + 1
            try await connection.query(
                "INSERT INTO sync_rules (tenant_id, version, source) VALUES (\(tenant), \(version), \(source))",
                logger: logger)
            if let rules {
                let schema = try await self.ruleSchema(tenant, for: rules, connection)
                for (type, fields) in self.extractedFields(rules, schema) {
                    var text = SQLText()
                    text.sql = """
                        INSERT INTO sync_attrs (tenant_id, type_name, object_key, field, value, seq)
                        SELECT tenant_id, type_name, object_key, path, \(AttrValue.sql("value")), seq
                        FROM fields WHERE tenant_id = \(text.bind(tenant)) AND type_name = \(text.bind(type))
                          AND path = ANY(\(text.bind(Array(fields)))::text[])
                        ON CONFLICT (tenant_id, type_name, object_key, field)
                        DO UPDATE SET value = excluded.value, ord = NULL, seq = excluded.seq
                        """
                    try await connection.query(text.query, logger: logger)
                }
                try await HubSchema.orderValues(tenant: tenant, connection, logger: logger)
            }
            try await connection.query(
                "UPDATE tenants SET rules_version = \(version) WHERE id = \(tenant)", logger: logger)
            return version
        }
        // Statistics of what the copy wrote, for the rules' first queries.
        try await client.query("ANALYZE sync_attrs", logger: logger)
        return version
    }
}

extension Hub {
    /// Merges `rows` as far as the dataset's `rules` let the device write:
    /// an object the push would change is refused, and not merged, when
    /// the device may not write it as it stands on the hub or as the merge
    /// would leave it (the rest merges). An object the push leaves as it
    /// was (the device sending back what it pulled) is never refused.
    ///
    /// When the device's claims decide its write rule of every type the
    /// push names as `true`, no object can be refused and the rows merge
    /// as they are. Otherwise the objects whose rule reads their fields
    /// are tested as they stand, in one statement, and the merge runs in a
    /// savepoint; one statement then names the objects it changed that are
    /// outside the rules, and while there are some the savepoint is rolled
    /// back and the rest merged again.
    func mergeWithinRules(
        _ rows: ChangeRows, rules: SyncRules, device: Device, seq: Int64, _ connection: PostgresConnection
    ) async throws -> (changed: Bool, refused: Set<ChangeRows.ObjectRef>) {
        let tenant = device.tenant
        let schema = try await ruleSchema(tenant, for: rules, connection)
        let extract = extractedFields(rules, schema)
        let rule = RuleCompiler(rules: rules, claims: device.claims, schema: schema)
        let decided = Dictionary(
            uniqueKeysWithValues: Set(rows.objects.map(\.type)).map { ($0, rule.decided(.write, $0)) })
        guard decided.values.contains(where: { $0 != true }) else {
            return (try await merge(rows, seq: seq, tenant: tenant, connection, extract: extract), [])
        }
        // The objects on the hub already that the device may not write as
        // they stand (those of a type it may never write are outside the
        // rules whatever they hold: the test after the merge names them).
        // Each pushed key is looked up alone: the tenant's objects are
        // never scanned, whatever PostgreSQL's statistics say of them.
        var standing = Set<ChangeRows.ObjectRef>()
        let undecided = Set(decided.filter { $0.value == nil }.keys)
        let tested = rows.objects.filter { undecided.contains($0.type) }
        if !tested.isEmpty {
            var compiler = rule
            let (tenantBind, types, keys) = (
                compiler.text.bind(tenant), compiler.text.bind(tested.map(\.type)),
                compiler.text.bind(tested.map(\.key))
            )
            let allowed = compiler.allows(.write, "o")
            compiler.text.sql = """
                SELECT u.t, u.k FROM unnest(\(types)::text[], \(keys)::bytea[]) AS u(t, k)
                CROSS JOIN LATERAL (SELECT \(allowed) AS allowed FROM objects o
                    WHERE o.tenant_id = \(tenantBind) AND o.type_name = u.t AND o.object_key = u.k LIMIT 1) AS s
                WHERE NOT s.allowed
                """
            standing = try await objectRefs(compiler.text.query, connection)
        }
        // The objects the merge changes: refused when they were outside the
        // rules before it, or are after it.
        var refused = Set<ChangeRows.ObjectRef>()
        try await connection.query("SAVEPOINT within_rules", logger: logger)
        while true {
            let kept = rows.without(refused)
            guard try await merge(kept, seq: seq, tenant: tenant, connection, extract: extract) else {
                try await connection.query("RELEASE SAVEPOINT within_rules", logger: logger)
                return (false, refused)
            }
            var compiler = rule
            let (tenantBind, seqBind) = (compiler.text.bind(tenant), compiler.text.bind(seq))
            let allowed = compiler.allows(.write, "o")
            var outside = "NOT s.allowed"
            if !standing.isEmpty {
                let (types, keys) = (compiler.text.bind(standing.map(\.type)), compiler.text.bind(standing.map(\.key)))
                outside +=
                    " OR (o.type_name, o.object_key) IN (SELECT * FROM unnest(\(types)::text[], \(keys)::bytea[]))"
            }
            // The rule is evaluated per object (OFFSET 0 keeps its lookups
            // from being turned into scans of every value of the field).
            compiler.text.sql = """
                SELECT o.type_name, o.object_key FROM objects o
                CROSS JOIN LATERAL (SELECT \(allowed) AS allowed OFFSET 0) AS s
                WHERE o.tenant_id = \(tenantBind) AND o.seq = \(seqBind) AND (\(outside))
                """
            let refusedNow = try await objectRefs(compiler.text.query, connection)
            if refusedNow.isEmpty {
                try await connection.query("RELEASE SAVEPOINT within_rules", logger: logger)
                return (true, refused)
            }
            // Each pass refuses at least one more object: it ends.
            try await connection.query("ROLLBACK TO SAVEPOINT within_rules", logger: logger)
            refused.formUnion(refusedNow)
        }
    }

    /// The objects a query's rows name, `(type_name, object_key)`.
    private func objectRefs(_ query: PostgresQuery, _ connection: PostgresConnection) async throws
        -> Set<ChangeRows.ObjectRef>
    {
        var refs = Set<ChangeRows.ObjectRef>()
        let rows = try await connection.query(query, logger: logger)
        for try await (type, key) in rows.decode((String, ByteBuffer).self) {
            refs.insert(ChangeRows.ObjectRef(type: type, key: key))
        }
        return refs
    }
}
