import Foundation
import NIOCore
import PostgresNIO

/// What one compaction of a tenant removed (``Hub/compact(tenant:retention:)``).
public struct CompactionReport: Sendable, Equatable, Codable {
    /// The tenant compacted.
    public var tenant: UUID
    /// False when another process was compacting the tenant: this one
    /// removed nothing.
    public var ran: Bool
    /// The hub sequence number every active device has acknowledged: what
    /// is at or below it may go.
    public var horizon: Int64
    /// The tombstones (objects rows of deleted objects) removed.
    public var removedTombstones: Int
    /// The `batches` rows removed.
    public var removedBatches: Int
    /// The tenant's compacted sequence number afterwards: a pull from a
    /// cursor (above 0) below it must catch up.
    public var compactedSeq: Int64
}

extension Hub {
    /// Notes that `device` pulled from `since` in `epoch`: it has applied
    /// every change through `since`. Kept in memory until the next
    /// ``flushAcknowledgements()``.
    func noteAcknowledged(_ device: Device, epoch: UUID, since: UInt64) {
        let since = Int64(clamping: since)
        acknowledged.withLockedValue { pending in
            if let known = pending[device.id], known.epoch == epoch, known.since >= since { return }
            pending[device.id] = Acknowledgement(tenant: device.tenant, epoch: epoch, since: since)
        }
    }

    /// Stores the pull cursors noted since the last flush, one transaction
    /// per tenant: a device's stored cursor only rises, and only while the
    /// tenant's epoch is the one it pulled in. Returns how many devices'
    /// cursors were written. ``HubMaintenance`` runs it every few seconds;
    /// ``compact(tenant:retention:)`` first.
    @discardableResult
    public func flushAcknowledgements() async throws -> Int {
        let pending = acknowledged.withLockedValue { pending in
            defer { pending = [:] }
            return pending
        }
        guard !pending.isEmpty else { return 0 }
        let byTenant = Dictionary(grouping: pending, by: { $0.value.tenant })
        var written = 0
        for (tenant, entries) in byTenant {
            do {
                written += try await asOwner(of: tenant) { connection in
                    let rows = try await connection.query(
                        """
                        UPDATE devices d SET pulled_seq = greatest(d.pulled_seq, u.since)
                        FROM unnest(\(entries.map(\.key))::uuid[], \(entries.map(\.value.epoch))::uuid[],
                             \(entries.map(\.value.since))::int8[]) AS u(id, epoch, since),
                             tenants t
                        WHERE d.id = u.id AND d.tenant_id = \(tenant) AND t.id = \(tenant) AND t.epoch = u.epoch
                        RETURNING d.id
                        """, logger: logger)
                    var count = 0
                    for try await _ in rows { count += 1 }
                    return count
                }
            } catch {
                // Kept for the next flush, unless a later pull noted more.
                acknowledged.withLockedValue { now in
                    for (device, entry) in entries where now[device] == nil { now[device] = entry }
                }
                throw error
            }
        }
        return written
    }

    /// The tenants that have devices.
    public func tenants() async throws -> [UUID] {
        let rows = try await client.query("SELECT DISTINCT tenant_id FROM devices ORDER BY 1", logger: logger)
        var tenants: [UUID] = []
        for try await tenant in rows.decode(UUID.self) { tenants.append(tenant) }
        return tenants
    }

    /// Removes what every active device of `tenant` has: tombstones
    /// (objects rows of deleted objects; their registers went with the
    /// delete), the earlier values of ruled fields (`sync_moves`), and
    /// `batches` rows older than `retention` at or below the
    /// horizon, the lowest acknowledged pull cursor of the tenant's active
    /// devices (not revoked, seen within `retention`; with none, the last
    /// commit). One process at a time per tenant: a transaction-scoped
    /// advisory lock, which another process finding taken skips the tenant
    /// (``CompactionReport/ran`` false).
    public func compact(tenant: UUID, retention: Duration) async throws -> CompactionReport {
        try await flushAcknowledgements()
        let seconds = Double(retention.components.seconds) + Double(retention.components.attoseconds) / 1e18
        return try await asOwner(of: tenant) { connection in
            var report = CompactionReport(
                tenant: tenant, ran: false, horizon: 0, removedTombstones: 0, removedBatches: 0, compactedSeq: 0)
            let locked = try await connection.query(
                "SELECT pg_try_advisory_xact_lock(\(Hub.compactionLockClass), hashtext(\(tenant.uuidString)))",
                logger: logger)
            for try await value in locked.decode(Bool.self) { report.ran = value }
            let tenantRows = try await connection.query(
                "SELECT next_seq, compacted_seq FROM tenants WHERE id = \(tenant)", logger: logger)
            var found = false
            for try await (nextSeq, compacted) in tenantRows.decode((Int64, Int64).self) {
                (report.horizon, report.compactedSeq, found) = (nextSeq, compacted, true)
            }
            guard found else { throw HubError.unknownTenant(tenant) }
            guard report.ran else { return report }
            let active = try await connection.query(
                """
                SELECT coalesce(min(pulled_seq), -1) FROM devices
                WHERE tenant_id = \(tenant) AND revoked_at IS NULL
                  AND coalesce(last_seen, created_at) > now() - make_interval(secs => \(seconds))
                """, logger: logger)
            // -1: no active device.
            for try await lowest in active.decode(Int64.self) where lowest >= 0 {
                report.horizon = min(report.horizon, lowest)
            }
            let tombstones = try await connection.query(
                """
                WITH gone AS (
                    DELETE FROM objects WHERE tenant_id = \(tenant) AND cl % 2 = 0 AND seq <= \(report.horizon)
                    RETURNING type_name, object_key, seq),
                -- The values sync rules kept for the tombstones go with them.
                values_gone AS (
                    DELETE FROM sync_attrs a USING gone g
                    WHERE a.tenant_id = \(tenant) AND a.type_name = g.type_name AND a.object_key = g.object_key),
                -- So do the earlier values of ruled fields (a pull from
                -- below the horizon catches up instead).
                moves_gone AS (
                    DELETE FROM sync_moves WHERE tenant_id = \(tenant) AND seq <= \(report.horizon) RETURNING seq)
                SELECT count(*)::int8, greatest(coalesce(max(seq), 0), (SELECT coalesce(max(seq), 0) FROM moves_gone))
                FROM gone
                """, logger: logger)
            var removedThrough: Int64 = 0
            for try await (count, last) in tombstones.decode((Int64, Int64).self) {
                (report.removedTombstones, removedThrough) = (Int(count), last)
            }
            if removedThrough > report.compactedSeq {
                report.compactedSeq = removedThrough
                try await connection.query(
                    "UPDATE tenants SET compacted_seq = \(removedThrough) WHERE id = \(tenant)", logger: logger)
            }
            let batches = try await connection.query(
                """
                WITH gone AS (
                    DELETE FROM batches WHERE tenant_id = \(tenant) AND hub_seq <= \(report.horizon)
                      AND received_at < now() - make_interval(secs => \(seconds))
                    RETURNING 1)
                SELECT count(*)::int8 FROM gone
                """, logger: logger)
            for try await count in batches.decode(Int64.self) { report.removedBatches = Int(count) }
            return report
        }
    }

    /// The advisory lock class of compaction (the tenant's hash is the
    /// other key): `strata` in ASCII.
    static let compactionLockClass: Int32 = 0x7374_7261
}
