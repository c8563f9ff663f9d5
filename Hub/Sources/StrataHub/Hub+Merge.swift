import Foundation
import NIOCore
import PostgresNIO

/// The merge in SQL: the same rules as a file's (docs/Sync.md, "What a
/// merge does"), set-based. Per object the higher causal length wins and a
/// new life starts empty; per register the higher rank (an embedded
/// object's life), then the later stamp (time, then origin) wins; the
/// registers of an embedded object's older lives go.
extension Hub {
    /// Merges `rows` under the hub sequence number `seq`; whether anything
    /// changed (then every changed object has `seq`).
    ///
    /// `extract` names, by type, the top-level fields whose merged values
    /// are copied to `sync_attrs` for the dataset's sync rules.
    func merge(
        _ rows: ChangeRows, seq: Int64, tenant: UUID, _ connection: PostgresConnection,
        extract: [String: Set<String>] = [:]
    ) async throws -> Bool {
        let logger = self.logger
        guard !rows.objects.isEmpty else { return false }
        let objects = rows.objects
        // 1. Objects: a higher causal length replaces the row (a new life,
        //    or a delete). The rows it wrote are those whose life changed.
        let replaced = try await connection.query(
            """
            INSERT INTO objects AS o (tenant_id, type_name, object_key, cl, hlc, origin, max_writer_version, seq)
            SELECT \(tenant), u.t, u.k, u.cl, u.hlc, u.origin, u.wv, \(seq)
            FROM unnest(\(objects.map(\.type))::text[], \(objects.map(\.key))::bytea[],
                 \(objects.map(\.causalLength))::int8[], \(objects.map(\.time))::int8[],
                 \(objects.map(\.origin))::uuid[], \(objects.map(\.writerVersion))::int8[]) AS u(t, k, cl, hlc, origin, wv)
            ON CONFLICT (tenant_id, type_name, object_key) DO UPDATE
            SET cl = excluded.cl, hlc = excluded.hlc, origin = excluded.origin, seq = excluded.seq,
                max_writer_version = greatest(o.max_writer_version, excluded.max_writer_version)
            WHERE excluded.cl > o.cl
            RETURNING o.type_name, o.object_key, o.cl
            """, logger: logger)
        var lives: (types: [String], keys: [ByteBuffer], cls: [Int64]) = ([], [], [])
        for try await (type, key, cl) in replaced.decode((String, ByteBuffer, Int64).self) {
            lives.types.append(type)
            lives.keys.append(key)
            lives.cls.append(cl)
        }
        // 2. The registers of an object's earlier life go (a delete, or a
        //    new life that starts empty). Driven by the objects step 1
        //    wrote, each looked up by its key (OFFSET 0 keeps the lookup
        //    inside the loop): a join of the tenant's registers with its
        //    objects of this commit, planned on statistics that do not know
        //    a new tenant yet, walked every register of the tenant per
        //    object.
        if !lives.types.isEmpty {
            try await connection.query(
                """
                DELETE FROM fields WHERE ctid = ANY(ARRAY(
                    SELECT f.ctid
                    FROM unnest(\(lives.types)::text[], \(lives.keys)::bytea[], \(lives.cls)::int8[]) AS u(t, k, cl)
                    CROSS JOIN LATERAL (
                        SELECT ctid FROM fields WHERE tenant_id = \(tenant) AND type_name = u.t AND object_key = u.k
                          AND cl <> u.cl OFFSET 0) AS f))
                """, logger: logger)
        }
        // 3. Registers, one level of embedded objects at a time: a field
        //    inside one is written only while its holder has the life it
        //    belongs to. The object (and holder) of each register is looked
        //    up by its key (LIMIT 1): a join would hash every object of
        //    the tenant for each push.
        for level in rows.fields where !level.isEmpty {
            let top = level[0].parent == nil
            let parents = level.map { $0.parent?.path ?? "" }
            let lives = level.map { $0.parent?.life ?? 0 }
            let holderTest =
                top
                ? ""
                : """
                CROSS JOIN LATERAL (SELECT 1 FROM fields h WHERE h.tenant_id = $1 AND h.type_name = u.t
                    AND h.object_key = u.k AND h.path = u.pp AND h.rank = u.pl LIMIT 1) AS h
                """
            var query: PostgresQuery = """
                INSERT INTO fields AS f (tenant_id, type_name, object_key, path, descriptor, rank, value, hlc, origin, cl, seq)
                SELECT \(tenant), u.t, u.k, u.p, u.d, u.r, u.v, u.hlc, u.origin, u.cl, \(seq)
                FROM unnest(\(level.map(\.type))::text[], \(level.map(\.key))::bytea[], \(level.map(\.path))::text[],
                     \(level.map(\.descriptor))::text[], \(level.map(\.rank))::int8[], \(level.map(\.value))::bytea[],
                     \(level.map(\.time))::int8[], \(level.map(\.origin))::uuid[], \(level.map(\.causalLength))::int8[],
                     \(parents)::text[], \(lives)::int8[]) AS u(t, k, p, d, r, v, hlc, origin, cl, pp, pl)
                CROSS JOIN LATERAL (SELECT 1 FROM objects o WHERE o.tenant_id = \(tenant) AND o.type_name = u.t
                    AND o.object_key = u.k AND o.cl = u.cl LIMIT 1) AS o
                HOLDER_TEST
                ON CONFLICT (tenant_id, type_name, object_key, path) DO UPDATE
                SET descriptor = excluded.descriptor, rank = excluded.rank, value = excluded.value, hlc = excluded.hlc,
                    origin = excluded.origin, seq = excluded.seq
                WHERE (excluded.rank, excluded.hlc, excluded.origin) > (f.rank, f.hlc, f.origin)
                """
            query.sql = query.sql.replacingOccurrences(of: "HOLDER_TEST", with: holderTest)
            try await connection.query(query, logger: logger)
        }
        // 4. The registers of an embedded object's earlier lives go: those
        //    under each holder's path but not under its life's, found by
        //    the holder's key.
        if !rows.holders.isEmpty {
            let holders = rows.holders
            try await connection.query(
                """
                DELETE FROM fields WHERE ctid = ANY(ARRAY(
                    SELECT f.ctid
                    FROM unnest(\(holders.map(\.type))::text[], \(holders.map(\.key))::bytea[],
                          \(holders.map(\.path))::text[]) AS u(t, k, p)
                    CROSS JOIN LATERAL (
                        SELECT rank FROM fields WHERE tenant_id = \(tenant) AND type_name = u.t AND object_key = u.k
                          AND path = u.p LIMIT 1) AS h
                    CROSS JOIN LATERAL (
                        SELECT ctid FROM fields WHERE tenant_id = \(tenant) AND type_name = u.t AND object_key = u.k
                          AND starts_with(path, u.p || '/') AND NOT starts_with(path, u.p || '/' || h.rank || '/')
                        OFFSET 0) AS f))
                """, logger: logger)
        }
        // 5. The values the sync rules read, where this commit wrote them
        //    (a deleted object's stay: its tombstone goes where it could
        //    be read), and `seq` where the value changed; a value replaced
        //    by another is kept in `sync_moves` with this commit's number
        //    by the trigger `sync_attrs_moves` (schema version 6), for the
        //    devices that could read the object before it (docs/Hub.md,
        //    "Leaving a view"). Each register is looked up by its key alone
        //    (the LIMIT keeps PostgreSQL from joining every register of a
        //    tenant its statistics do not know yet).
        let ruled = (rows.fields.first ?? []).filter { extract[$0.type]?.contains($0.path) == true }
        if !ruled.isEmpty {
            var text = SQLText()
            text.sql = """
                WITH n AS (
                    SELECT f.tenant_id, f.type_name, f.object_key, f.path AS field,
                           \(AttrValue.sql("f.value")) AS value, nullif(u.o, ''::bytea) AS ord, f.seq
                    FROM unnest(\(text.bind(ruled.map(\.type)))::text[], \(text.bind(ruled.map(\.key)))::bytea[],
                                \(text.bind(ruled.map(\.path)))::text[],
                                \(text.bind(try ruled.map { try AttrValue.ordered($0.value) ?? ByteBuffer() }))::bytea[])
                                AS u(t, k, p, o)
                    CROSS JOIN LATERAL (
                        SELECT tenant_id, type_name, object_key, path, value, seq FROM fields
                        WHERE tenant_id = \(text.bind(tenant)) AND type_name = u.t AND object_key = u.k AND path = u.p
                          AND seq = \(text.bind(seq)) LIMIT 1) AS f)
                INSERT INTO sync_attrs AS a (tenant_id, type_name, object_key, field, value, ord, seq)
                SELECT tenant_id, type_name, object_key, field, value, ord, seq FROM n
                ON CONFLICT (tenant_id, type_name, object_key, field)
                DO UPDATE SET value = excluded.value, ord = excluded.ord, seq = excluded.seq
                WHERE a.value IS DISTINCT FROM excluded.value
                """
            try await connection.query(text.query, logger: logger)
        }
        // 6. An object a register of changed moves to `seq`, with the
        //    highest writer version and stamp. The objects are found by
        //    their keys (each a LIMIT 1 lookup, as in step 3); the update
        //    then reads them by row id.
        try await connection.query(
            """
            UPDATE objects o SET seq = \(seq),
                max_writer_version = greatest(o.max_writer_version, u.wv),
                origin = CASE WHEN u.hlc > o.hlc THEN u.origin ELSE o.origin END,
                hlc = greatest(o.hlc, u.hlc)
            FROM unnest(\(objects.map(\.type))::text[], \(objects.map(\.key))::bytea[],
                 \(objects.map(\.writerVersion))::int8[], \(objects.map(\.time))::int8[],
                 \(objects.map(\.origin))::uuid[]) AS u(t, k, wv, hlc, origin)
            WHERE o.ctid = ANY(ARRAY(
                    SELECT c.ctid FROM unnest(\(objects.map(\.type))::text[], \(objects.map(\.key))::bytea[]) AS v(t, k)
                    CROSS JOIN LATERAL (
                        SELECT ctid FROM objects WHERE tenant_id = \(tenant) AND type_name = v.t AND object_key = v.k
                          AND seq <> \(seq) LIMIT 1) AS c
                    CROSS JOIN LATERAL (
                        SELECT 1 FROM fields WHERE tenant_id = \(tenant) AND type_name = v.t AND object_key = v.k
                          AND seq = \(seq) LIMIT 1) AS f))
              AND o.tenant_id = \(tenant) AND o.type_name = u.t AND o.object_key = u.k
            """, logger: logger)
        let changed = try await connection.query(
            "SELECT EXISTS (SELECT 1 FROM objects WHERE tenant_id = \(tenant) AND seq = \(seq))", logger: logger)
        for try await value in changed.decode(Bool.self) { return value }
        return false
    }
}
