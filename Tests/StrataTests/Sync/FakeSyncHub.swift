import Foundation

@testable import Strata

/// A hub in the test's process: an ``InProcessHub``, which relays every
/// device's changes as the real hub's PostgreSQL does, its site being the
/// epoch, with the hub's refusals scripted by the test and a backup to
/// restore as a new epoch.
actor FakeSyncHub: SyncHub {
    private var current: InProcessHub
    private var backup: InProcessHub?
    private let folder: TemporaryFolder
    private let dataset: UUID
    private let broadcast = CommitBroadcast()
    private let streamsCommits: Bool

    /// Pushes of more entries than this are refused with 413.
    var tooLargeAbove: Int?
    /// The next pushes refused with 409 clockSkew.
    var clockSkews = 0
    /// Every request refused with 401.
    var revoked = false
    /// The next pull restores the backup first (a new epoch), and is
    /// refused with 410.
    var restoreOnNextPull = false
    /// Reported as refused by the next push (422 schemaConflict).
    var conflictingFields: [HubRefusedField] = []
    /// Runs during the next pull, before it answers.
    var onNextPull: (@Sendable () throws -> Void)?
    /// The entry counts of the pushes the hub merged.
    private(set) var acceptedPages: [Int] = []
    /// The pushes refused as too large.
    private(set) var tooLargePages = 0

    init(folder: TemporaryFolder, dataset: UUID, streamsCommits: Bool = false) throws {
        self.folder = folder
        self.dataset = dataset
        self.streamsCommits = streamsCommits
        current = try Self.open(folder.path("hub-\(UUID().uuidString).strata"), dataset: dataset)
    }

    private static func open(_ path: String, dataset: UUID) throws -> InProcessHub {
        var config = Database.Configuration(path: path, schemaVersion: 1, schema: Schema([]))
        config.durability = .noSync
        config.mode = .synced
        config.sync = .init(dataset: dataset)
        return InProcessHub(database: try Database(configuration: config))
    }

    /// The hub's file of the current epoch.
    var database: Database { current.database }

    var epoch: UUID { get throws { try current.database.sync.site.uuid } }

    func set(tooLargeAbove: Int? = nil, clockSkews: Int = 0, revoked: Bool = false) {
        self.tooLargeAbove = tooLargeAbove
        self.clockSkews = clockSkews
        self.revoked = revoked
    }

    func set(restoreOnNextPull: Bool) { self.restoreOnNextPull = restoreOnNextPull }
    func set(onNextPull: @escaping @Sendable () throws -> Void) { self.onNextPull = onNextPull }
    func set(conflictingFields: [HubRefusedField]) { self.conflictingFields = conflictingFields }

    /// Copies the hub's state to a file of another site: the backup that
    /// a restore brings back, as a new epoch.
    func takeBackup() throws {
        let copy = try Self.open(folder.path("backup-\(UUID().uuidString).strata"), dataset: dataset)
        try copy.sync(current.database)
        backup = copy
    }

    private func refuse(_ code: HubRefusal.Code, _ status: Int) -> StrataError {
        StrataError(
            .hubRefused, "The fake hub refused with \(code).",
            cause: HubRefusal(
                code: code, status: status, message: "\(code)", hubTimeMilliseconds: Date().milliseconds))
    }

    func session(site: SiteID) async throws -> HubSession {
        if revoked { throw refuse(.unauthorized, 401) }
        return try await current.session(site: site)
    }

    func push(_ changeset: Changeset) async throws -> HubPushAnswer {
        if revoked { throw refuse(.unauthorized, 401) }
        let summary = try changeset.summary()
        if let tooLargeAbove, summary.entryCount > tooLargeAbove {
            tooLargePages += 1
            throw refuse(.bodyTooLarge, 413)
        }
        if clockSkews > 0 {
            clockSkews -= 1
            throw refuse(.clockSkew, 409)
        }
        var answer = try await current.push(changeset)
        acceptedPages.append(summary.entryCount)
        broadcast.send(answer.hubSeq)
        answer.refusedFields = conflictingFields
        conflictingFields = []
        return answer
    }

    func pull(from cursor: SyncCursor, epoch: UUID, limit: Int) async throws -> Changeset {
        if revoked { throw refuse(.unauthorized, 401) }
        if restoreOnNextPull, let backup {
            restoreOnNextPull = false
            current = backup
            self.backup = nil
        }
        if let hook = onNextPull, epoch == (try self.epoch) {
            onNextPull = nil
            try hook()
        }
        return try await current.pull(from: cursor, epoch: epoch, limit: limit)
    }

    /// The streams of ``commits()`` open now.
    nonisolated var listeners: Int { broadcast.count }

    nonisolated func commits() -> AsyncStream<UInt64> {
        streamsCommits ? broadcast.subscribe() : AsyncStream { $0.finish() }
    }
}

// @unchecked: `continuations` is read and written only while holding `lock`.
/// Hands each hub commit to every stream of ``FakeSyncHub/commits()``.
final class CommitBroadcast: @unchecked Sendable {
    private let lock = NSLock()
    private var continuations: [UUID: AsyncStream<UInt64>.Continuation] = [:]

    func subscribe() -> AsyncStream<UInt64> {
        let (stream, continuation) = AsyncStream.makeStream(of: UInt64.self)
        let id = UUID()
        lock.withLock { continuations[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            self?.lock.withLock { _ = self?.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    var count: Int { lock.withLock { continuations.count } }

    func send(_ seq: UInt64) {
        for continuation in lock.withLock({ Array(continuations.values) }) { continuation.yield(seq) }
    }
}

// @unchecked: `events` is read and written only while holding `lock`.
/// The events a run reported, for a test to wait on.
final class SyncEventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [SyncEvent] = []

    var all: [SyncEvent] { lock.withLock { events } }

    func record(_ event: SyncEvent) { lock.withLock { events.append(event) } }

    var reports: [SyncHubReport] {
        all.compactMap { if case .exchanged(let report) = $0 { report } else { nil } }
    }

    /// Waits up to `seconds` for `condition`; whether it held. Long, and
    /// only ever waited out by a failing test: `make test` runs the whole
    /// suite's tests on the cooperative pool's two threads here, and other
    /// suites' long synchronous work can hold both for a minute or more
    /// before the run loop's task is scheduled at all.
    func wait(seconds: Double = 600, until condition: ([SyncEvent]) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(all) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(all)
    }
}
