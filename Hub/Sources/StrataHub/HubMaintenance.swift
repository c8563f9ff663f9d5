import Logging
import ServiceLifecycle

/// The hub's housekeeping, as a service of `strata-hub serve`: stores the
/// devices' acknowledged pull cursors every `flushEvery`, and compacts
/// every tenant every `compactEvery` (``Hub/compact(tenant:retention:)``;
/// with several processes, each tenant's compaction runs in one of them
/// at a time). A failed pass is logged and tried again at the next.
public struct HubMaintenance: Service {
    let hub: Hub
    /// How long a device may go unseen and still hold compaction back; and
    /// how long `batches` rows are kept.
    let retention: Duration
    let flushEvery: Duration
    /// nil: no periodic compaction (`strata-hub compact` on demand).
    let compactEvery: Duration?

    /// Housekeeping for `hub`: compaction every `compactEvery` (never when
    /// nil) with `retention`, acknowledged cursors stored every
    /// `flushEvery`.
    public init(hub: Hub, retention: Duration, flushEvery: Duration = .seconds(10), compactEvery: Duration?) {
        self.hub = hub
        self.retention = retention
        self.flushEvery = flushEvery
        self.compactEvery = compactEvery
    }

    /// Runs until the application shuts down.
    public func run() async throws {
        let clock = ContinuousClock()
        var nextCompaction = compactEvery.map { clock.now.advanced(by: $0) }
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: flushEvery) }
            do {
                try await hub.flushAcknowledgements()
                if let due = nextCompaction, clock.now >= due {
                    nextCompaction = compactEvery.map { clock.now.advanced(by: $0) }
                    for tenant in try await hub.tenants() {
                        let report = try await hub.compact(tenant: tenant, retention: retention)
                        if report.removedTombstones + report.removedBatches > 0 {
                            hub.logger.info(
                                "Compacted tenant \(tenant): \(report.removedTombstones) tombstones, \(report.removedBatches) batches, through \(report.horizon)"
                            )
                        }
                    }
                }
            } catch {
                hub.logger.warning("Hub maintenance failed; trying again later: \(String(reflecting: error))")
            }
        }
        // The cursors noted last, before the process ends.
        _ = try? await hub.flushAcknowledgements()
    }
}
