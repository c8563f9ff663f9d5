import Foundation

/// A Strata file that relays the changes of every file of a dataset it
/// syncs with: devices on one machine, tests, a desktop app's helper.
///
/// The hub declares no types of its own: every type and field it
/// receives, it learns, keeps and passes on, whatever the app versions of
/// the devices. It merges as every file does, so devices that never meet
/// converge through it.
///
/// ```swift
/// let hub = try InProcessHub(path: hubPath, dataset: dataset)
/// try hub.sync(phone)
/// try hub.sync(laptop)   // the laptop now has the phone's changes
/// ```
///
/// It is a ``SyncHub`` too, which a device's
/// ``DatabaseSync/exchange(with:pageSize:)`` and
/// ``DatabaseSync/run(with:options:)`` talk to as they talk to an
/// ``HTTPHub``: its epoch is its file's site, and it refuses a pull of
/// another epoch with ``HubRefusal/Code/epochChanged``.
public final class InProcessHub: Sendable {
    /// The hub's file.
    public let database: Database

    /// Opens (or creates) the hub's file for `dataset`.
    ///
    /// - Throws: ``StrataError`` when the file exists and is not a hub of
    ///   that dataset (another dataset, a local-mode file).
    public init(path: String, dataset: UUID) throws {
        var config = Database.Configuration(path: path, schemaVersion: 1, schema: Schema([]))
        config.mode = .synced
        config.sync = .init(dataset: dataset)
        database = try Database(configuration: config)
    }

    /// A hub over `database`, an open synced-mode file.
    init(database: Database) {
        self.database = database
    }

    /// Exchanges changes with `device`, both ways, until neither has
    /// anything the other lacks.
    @discardableResult
    public func sync(_ device: Database) throws -> SyncExchangeReport {
        try database.sync.exchange(with: device)
    }

    /// Closes the hub's file.
    public func close() { database.close() }
}

extension InProcessHub: SyncHub {
    /// The hub's epoch, its file's site; its cursor of `site`.
    public func session(site: SiteID) async throws -> HubSession {
        try await database.onOwnThread { try self.session(of: site) }
    }

    /// Applies `changeset` to the hub's file (``DatabaseSync/apply(_:)``).
    public func push(_ changeset: Changeset) async throws -> HubPushAnswer {
        try await database.onOwnThread { try self.merge(changeset).answer }
    }

    /// The hub file's changes after `cursor`
    /// (``DatabaseSync/changes(from:limit:)``).
    ///
    /// - Throws: ``StrataError/Code/hubRefused`` with the refusal code
    ///   ``HubRefusal/Code/epochChanged`` when `epoch` is not the site of
    ///   the hub's file.
    public func pull(from cursor: SyncCursor, epoch: UUID, limit: Int) async throws -> Changeset {
        try await database.onOwnThread { try self.changes(from: cursor, epoch: epoch, limit: limit) }
    }

    /// A stream that finishes at once: a run polls this hub.
    public func commits() -> AsyncStream<UInt64> { AsyncStream { $0.finish() } }

    /// ``session(site:)`` on this thread. The hub takes bodies of any size.
    func session(of site: SiteID) throws -> HubSession {
        let sync = database.sync
        return HubSession(
            tenant: try sync.dataset.uuid, device: site.uuid, epoch: try sync.site.uuid,
            hubSeq: try sync.lastSequenceNumber(), hubTimeMilliseconds: Date().milliseconds,
            maxBodyBytes: .max, pushCursor: try sync.cursor(of: site))
    }

    /// ``push(_:)`` on this thread, with what applying it changed.
    func merge(_ changeset: Changeset) throws -> (answer: HubPushAnswer, applied: SyncApplyReport) {
        let sync = database.sync
        let applied = try sync.apply(changeset)
        let answer = HubPushAnswer(
            acceptedThrough: try sync.cursor(of: try changeset.summary().sender),
            hubSeq: try sync.lastSequenceNumber(), hubTimeMilliseconds: Date().milliseconds)
        return (answer, applied)
    }

    /// ``pull(from:epoch:limit:)`` on this thread.
    func changes(from cursor: SyncCursor, epoch: UUID, limit: Int) throws -> Changeset {
        let sync = database.sync
        let current = try sync.site.uuid
        guard epoch == current else {
            throw StrataError.hubRefused(
                HubRefusal(
                    code: .epochChanged, status: 410,
                    message: "The hub's epoch is \(current), not \(epoch): pull the new epoch from its start.",
                    hubTimeMilliseconds: Date().milliseconds, epoch: current),
                request: "a pull")
        }
        return try sync.changes(from: cursor, limit: limit)
    }
}
