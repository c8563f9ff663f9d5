import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ServiceLifecycle

/// Hears the commits of every hub process on the database and pokes this
/// process's subscribers (``Hub/commits``): a device whose stream or long
/// poll is served by one process learns of a push that another process
/// merged. Each push announces its commit on ``Hub/commitChannel`` inside
/// its transaction, so PostgreSQL delivers it exactly when it commits.
///
/// The listener holds one connection of the pool for as long as it runs.
/// When that connection is lost it listens again on another, after a short
/// wait, and then pokes every tenant that has subscribers here with its
/// current sequence number: a commit announced while no one listened is
/// not lost, only late. Revocations are announced on the same channel: the
/// listener closes this process's streams and long polls of a revoked
/// device (``Hub/revocations``), and after a lost connection those of the
/// devices revoked meanwhile. Runs as a service of the hub's application
/// (``HubServer/application(_:host:port:maintenance:onServerRunning:logger:)``) until
/// the application shuts down.
public struct CommitListener: Service {
    let hub: Hub
    let onListening: @Sendable () -> Void

    /// A listener for `hub`'s subscribers; `onListening` is called each
    /// time it starts listening (and has caught up), first and after a
    /// lost connection.
    public init(hub: Hub, onListening: @escaping @Sendable () -> Void = {}) {
        self.hub = hub
        self.onListening = onListening
    }

    public func run() async throws {
        var delay = Duration.milliseconds(100)
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            // Whether this attempt got to listen: the next wait starts
            // short again after a connection that worked.
            let listened = NIOLockedValueBox(false)
            do {
                try await cancelWhenGracefulShutdown {
                    try await hub.client.withConnection { connection in
                        try await connection.listen(on: Hub.commitChannel) { notifications in
                            listened.withLockedValue { $0 = true }
                            try await catchUp()
                            onListening()
                            for try await notification in notifications {
                                let payload = notification.payload
                                if !hub.commits.publish(notification: payload)
                                    && !hub.revocations.publish(notification: payload)
                                {
                                    hub.logger.warning(
                                        "A notification on \(Hub.commitChannel) that no hub sent: '\(notification.payload)'"
                                    )
                                }
                            }
                        }
                    }
                }
            } catch {
                guard !Task.isCancelled && !Task.isShuttingDownGracefully else { break }
                if listened.withLockedValue({ $0 }) { delay = .milliseconds(100) }
                hub.logger.warning(
                    "Lost the connection that hears other hub processes' commits; listening again in \(delay): \(String(reflecting: error))"
                )
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(5))
        }
    }

    /// Pokes every tenant that has subscribers here with its sequence
    /// number now, and closes the watchers of devices revoked: what was
    /// announced while no one listened.
    private func catchUp() async throws {
        for tenant in hub.commits.subscribedTenants {
            hub.commits.publish(tenant, seq: try await hub.hubSeq(tenant: tenant))
        }
        let watched = hub.revocations.watched
        guard !watched.isEmpty else { return }
        let rows = try await hub.client.query(
            """
            SELECT d.id, d.revoked_at IS NOT NULL, extract(epoch FROM r.revoked_at)::float8
            FROM devices d LEFT JOIN revoked_subjects r ON r.issuer = d.issuer AND r.subject = d.subject
            WHERE d.id = ANY(\(Array(watched.keys))::uuid[])
              AND (d.revoked_at IS NOT NULL OR r.revoked_at IS NOT NULL)
            """, logger: hub.logger)
        for try await (device, revoked, subjectRevokedAt) in rows.decode((UUID, Bool, Double?).self) {
            hub.revocations.revoke(device, issuedUpTo: revoked ? nil : subjectRevokedAt)
        }
    }
}
