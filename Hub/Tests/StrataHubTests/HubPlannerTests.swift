import Foundation
import PostgresNIO
import Testing

@testable import StrataHub

/// How PostgreSQL plans a push's lookups by key for a tenant its
/// statistics have not seen (docs/Hub.md, "Upgrading to schema version 6").
@Suite("The hub's plans")
struct HubPlannerTests {
    /// After ANALYZE saw one large tenant, a new tenant's object and ruled
    /// value are read through the primary keys, one seek per key: with
    /// statistics of `tenant_id`, the new tenant was estimated at one row
    /// and read through `objects_by_seq` and `sync_attrs_by_order`, every
    /// row of the tenant per key.
    @Test func aNewTenantIsReadByKeyWhateverAnalyzeSaw() async throws {
        try await TestCluster.withHub { hub, _ in
            let (old, new) = (UUID(), UUID())
            let logger = TestCluster.logger
            try await hub.asOwner(of: old) { connection in
                try await connection.query(
                    """
                    INSERT INTO objects (tenant_id, type_name, object_key, cl, hlc, origin, max_writer_version, seq)
                    SELECT \(old), 'Note', int8send(g), 1, g, \(UUID()), 1, g / 100 FROM generate_series(1, 20000) g
                    """, logger: logger)
                try await connection.query(
                    """
                    INSERT INTO sync_attrs (tenant_id, type_name, object_key, field, value, ord, seq)
                    SELECT \(old), 'Note', int8send(g), 'owner', int8send(g % 7), int8send(g % 7), g / 100
                    FROM generate_series(1, 20000) g
                    """, logger: logger)
            }
            try await hub.client.query("ANALYZE objects, sync_attrs", logger: logger)
            let kept = try await hub.client.query(
                """
                SELECT count(*) FROM pg_stats WHERE attname = 'tenant_id'
                  AND tablename IN ('objects', 'fields', 'sync_attrs', 'sync_moves')
                """, logger: logger)
            for try await count in kept.decode(Int64.self) { #expect(count == 0) }

            let plans = try await hub.asOwner(of: new) { connection in
                var plans: [String] = []
                for lookup in [
                    "SELECT cl FROM objects o WHERE o.tenant_id = '\(new)' AND o.type_name = u.t AND o.object_key = u.k",
                    """
                    SELECT value FROM sync_attrs a WHERE a.tenant_id = '\(new)' AND a.type_name = u.t
                      AND a.object_key = u.k AND a.field = 'owner'
                    """,
                ] {
                    let query = PostgresQuery(
                        unsafeSQL: """
                            EXPLAIN SELECT * FROM unnest(ARRAY['Note', 'Note'], ARRAY['\\x01'::bytea, '\\x02']) AS u(t, k)
                            CROSS JOIN LATERAL (\(lookup) LIMIT 1) AS s
                            """)
                    var lines: [String] = []
                    for try await line in try await connection.query(query, logger: logger).decode(String.self) {
                        lines.append(line)
                    }
                    plans.append(lines.joined(separator: "\n"))
                }
                return plans
            }
            #expect(plans[0].contains("objects_pkey") && !plans[0].contains("objects_by_seq"), "\(plans[0])")
            #expect(plans[1].contains("sync_attrs_pkey") && !plans[1].contains("by_order"), "\(plans[1])")
        }
    }

    /// The index of ordered values holds only values that have an order,
    /// so that no lookup of one object's value can be planned through it
    /// (a rule's test of a value walked every value of the field there
    /// when the costs tied), and a range, which implies an order, still
    /// reads it.
    @Test func onlyARangeReadsTheOrderedValues() async throws {
        try await TestCluster.withHub { hub, _ in
            let tenant = UUID()
            let logger = TestCluster.logger
            let predicate = try await hub.client.query(
                "SELECT pg_get_expr(indpred, indrelid) FROM pg_index WHERE indexrelid = 'sync_attrs_by_order'::regclass",
                logger: logger)
            for try await text in predicate.decode(String?.self) { #expect(text == "(ord IS NOT NULL)") }
            let plans = try await hub.asOwner(of: tenant) { connection in
                try await connection.query(
                    """
                    INSERT INTO sync_attrs (tenant_id, type_name, object_key, field, value, ord, seq)
                    SELECT \(tenant), 'Note', int8send(g), 'owner', int8send(g % 7), int8send(g % 7), g / 100
                    FROM generate_series(1, 20000) g
                    """, logger: logger)
                try await connection.query("SET LOCAL enable_seqscan = off", logger: logger)
                var plans: [String] = []
                for condition in [
                    "object_key = '\\x01' AND value = '\\x02'", "ord >= '\\x03' AND ord < '\\x04'",
                ] {
                    let query = PostgresQuery(
                        unsafeSQL: """
                            EXPLAIN SELECT object_key FROM sync_attrs WHERE tenant_id = '\(tenant)'
                              AND type_name = 'Note' AND field = 'owner' AND \(condition)
                            """)
                    var lines: [String] = []
                    for try await line in try await connection.query(query, logger: logger).decode(String.self) {
                        lines.append(line)
                    }
                    plans.append(lines.joined(separator: "\n"))
                    // A range is planned on statistics (without them every
                    // condition is one row, and any index of the field ties).
                    try await connection.query("ANALYZE sync_attrs", logger: logger)
                }
                return plans
            }
            #expect(!plans[0].contains("by_order"), "\(plans[0])")
            #expect(plans[1].contains("sync_attrs_by_order"), "\(plans[1])")
        }
    }
}
