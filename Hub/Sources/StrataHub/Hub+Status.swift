import Foundation
import NIOCore
import PostgresNIO

/// A dataset as the hub holds it, and each of its devices: `strata-hub
/// status` (docs/Hub.md, "Running it").
public struct DatasetStatus: Sendable, Equatable, Codable {
    /// One device of the dataset.
    public struct Device: Sendable, Equatable, Codable {
        /// The device's id, as `strata-hub device add` printed it.
        public var id: UUID
        /// Its name for people.
        public var name: String
        /// When it was added.
        public var createdAt: Date
        /// When its token was last used (at most a minute off); nil when
        /// never.
        public var lastSeen: Date?
        /// Whether its token is revoked.
        public var revoked: Bool
        /// The hub sequence number through which it has applied the hub's
        /// changes, as its last pull said (stored every few seconds by the
        /// serving processes: it may lag by that much).
        public var pulledSeq: Int64
        /// How many hub commits it lacks: ``DatasetStatus/hubSeq`` less
        /// ``pulledSeq``.
        public var lag: Int64
        /// Per site (file) it pushed from: how far the hub has its changes
        /// (the file's own sequence number).
        public var pushCursors: [String: UInt64]
    }

    /// The dataset (the hub's tenant).
    public var dataset: UUID
    /// The hub's epoch for it.
    public var epoch: UUID
    /// The last hub commit.
    public var hubSeq: Int64
    /// Through which commit tombstones were compacted.
    public var compactedSeq: Int64
    /// Live objects.
    public var objects: Int
    /// Objects rows of deleted objects not compacted yet.
    public var tombstones: Int
    /// Stored push answers (`batches` rows).
    public var batches: Int
    /// Its devices, oldest first.
    public var devices: [Device]

    /// The status for people: the dataset's figures, then a line per
    /// device.
    public var text: String {
        let dates = ISO8601DateFormatter()
        var lines = [
            "dataset \(dataset.uuidString.lowercased())",
            "epoch \(epoch.uuidString.lowercased())  hub seq \(hubSeq)  compacted through \(compactedSeq)",
            "objects \(objects)  tombstones \(tombstones)  batches \(batches)",
            "devices \(devices.count)",
        ]
        for device in devices {
            let seen = device.lastSeen.map { dates.string(from: $0) } ?? "never"
            let pushed =
                device.pushCursors.isEmpty
                ? "none"
                : device.pushCursors.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(
                    separator: ",")
            lines.append(
                "  \(device.id.uuidString.lowercased())  \(device.name)\(device.revoked ? " (revoked)" : "")  "
                    + "pulled \(device.pulledSeq)  lag \(device.lag)  pushed \(pushed)  last seen \(seen)")
        }
        return lines.joined(separator: "\n")
    }
}

extension Hub {
    /// The status of dataset `tenant`: its figures and devices, their
    /// cursors and lag.
    ///
    /// - Throws: ``HubError`` `unknownTenant` when no device was ever added
    ///   to it.
    public func status(tenant: UUID) async throws -> DatasetStatus {
        try await flushAcknowledgements()
        return try await asOwner(of: tenant) { connection in
            let tenantRows = try await connection.query(
                "SELECT epoch, next_seq, compacted_seq FROM tenants WHERE id = \(tenant)", logger: logger)
            var state: (UUID, Int64, Int64)?
            for try await row in tenantRows.decode((UUID, Int64, Int64).self) { state = row }
            guard let (epoch, hubSeq, compacted) = state else { throw HubError.unknownTenant(tenant) }
            var status = DatasetStatus(
                dataset: tenant, epoch: epoch, hubSeq: hubSeq, compactedSeq: compacted, objects: 0, tombstones: 0,
                batches: 0, devices: [])
            let counts = try await connection.query(
                """
                SELECT count(*) FILTER (WHERE cl % 2 = 1), count(*) FILTER (WHERE cl % 2 = 0),
                       (SELECT count(*) FROM batches WHERE tenant_id = \(tenant))
                FROM objects WHERE tenant_id = \(tenant)
                """, logger: logger)
            for try await (live, dead, batches) in counts.decode((Int64, Int64, Int64).self) {
                (status.objects, status.tombstones, status.batches) = (Int(live), Int(dead), Int(batches))
            }
            var pushed: [UUID: [String: UInt64]] = [:]
            let cursors = try await connection.query(
                "SELECT device_id, site, since FROM site_cursors WHERE tenant_id = \(tenant)", logger: logger)
            for try await (device, site, since) in cursors.decode((UUID, UUID, Int64).self) {
                pushed[device, default: [:]][site.uuidString.lowercased()] = UInt64(bitPattern: since)
            }
            let devices = try await connection.query(
                """
                SELECT id, name, created_at, last_seen, revoked_at IS NOT NULL, pulled_seq FROM devices
                WHERE tenant_id = \(tenant) ORDER BY created_at, id
                """, logger: logger)
            for try await (id, name, created, seen, revoked, pulled) in devices.decode(
                (UUID, String, Date, Date?, Bool, Int64).self)
            {
                status.devices.append(
                    DatasetStatus.Device(
                        id: id, name: name, createdAt: created, lastSeen: seen, revoked: revoked, pulledSeq: pulled,
                        lag: max(0, hubSeq - pulled), pushCursors: pushed[id] ?? [:]))
            }
            return status
        }
    }
}
