import Foundation
import Testing

@testable import Strata

@Model(name: "Note") struct HubNote: Equatable {
    @PrimaryKey var id: Int
    var title = ""
}

/// Devices syncing through a hub (a ``FakeSyncHub`` in the process):
/// `exchange` pushes and pulls in pages and survives the hub's refusals,
/// and `run` keeps going until it is cancelled or refused for good.
@Suite(.temporaryFolder) struct SyncHubClientTests {
    let folder = TemporaryFolder.current
    static let dataset = UUID(uuidString: "0D7A3C59-2B4E-4F61-8A1D-3E5C7B9F0A12")!

    func device(_ name: String) throws -> Database {
        var config = Database.Configuration(path: folder.path(name), schemaVersion: 1, models: [HubNote.self])
        config.durability = .noSync
        config.mode = .synced
        config.sync = .init(dataset: Self.dataset)
        return try Database(configuration: config)
    }

    func hub(streamsCommits: Bool = false) throws -> FakeSyncHub {
        try FakeSyncHub(folder: folder, dataset: Self.dataset, streamsCommits: streamsCommits)
    }

    func insert(_ db: Database, _ ids: some Sequence<Int>, title: String = "") throws {
        try db.write { tx in for id in ids { try tx.insert(HubNote(id: id, title: title.isEmpty ? "\(id)" : title)) } }
    }

    func notes(_ db: Database) throws -> [Int: String] {
        try db.read { tx in Dictionary(uniqueKeysWithValues: try tx.objects(HubNote.self).map { ($0.id, $0.title) }) }
    }

    func options(_ log: SyncEventLog, poll: Duration = .seconds(3600)) -> SyncRunOptions {
        SyncRunOptions(
            pollInterval: poll, initialBackoff: .milliseconds(10), maxBackoff: .milliseconds(100), pageSize: 100,
            events: log.record)
    }

    @Test func twoDevicesConvergeThroughTheHub() async throws {
        let (a, b, hub) = (try device("a.strata"), try device("b.strata"), try hub())
        try insert(a, 1 ... 2)
        try insert(b, [3])
        let first = try await a.sync.exchange(with: hub)
        #expect(first.pushedObjects == 2)
        try await b.sync.exchange(with: hub)
        try await a.sync.exchange(with: hub)
        #expect(try notes(a) == [1: "1", 2: "2", 3: "3"])
        #expect(try notes(b) == notes(a))
        try await b.write { tx in try tx.update("Note", key: 1, ["title": "edited on b"]) }
        try await b.sync.exchange(with: hub)
        try await a.sync.exchange(with: hub)
        #expect(try notes(a)[1] == "edited on b")
        // What a device received goes back once; then nothing moves.
        var quiet = false
        for _ in 0 ..< 3 where !quiet { quiet = try await a.sync.exchange(with: hub).isEmpty }
        #expect(quiet)
    }

    @Test func pagesTheHubFindsTooLargeAreHalved() async throws {
        let (a, b, hub) = (try device("a.strata"), try device("b.strata"), try hub())
        await hub.set(tooLargeAbove: 3)
        try insert(a, 1 ... 10)
        let report = try await a.sync.exchange(with: hub, pageSize: 8)
        #expect(report.pushPageSize == 2)
        #expect(report.pushedObjects == 10)
        #expect(await hub.tooLargePages == 2)  // 8, then 4
        #expect(await hub.acceptedPages.allSatisfy { $0 <= 2 })
        try await b.sync.exchange(with: hub)
        #expect(try notes(b).count == 10)
    }

    @Test func anObjectTooLargeForTheHubIsAnError() async throws {
        let (a, hub) = (try device("a.strata"), try hub())
        await hub.set(tooLargeAbove: 0)
        try insert(a, 1 ... 3)
        let error = await #expect(throws: StrataError.self) { try await a.sync.exchange(with: hub, pageSize: 4) }
        #expect(error?.code == .hubRefused)
        #expect(error?.hubRefusal?.code == .bodyTooLarge)
        #expect(await hub.tooLargePages == 3)  // 4, 2, 1
        #expect(await hub.acceptedPages.isEmpty)
    }

    @Test func aNewEpochDuringTheRoundLosesNothing() async throws {
        let (a, b, hub) = (try device("a.strata"), try device("b.strata"), try hub())
        try insert(a, [1])
        try await a.sync.exchange(with: hub)
        try await hub.takeBackup()
        try insert(a, [2])
        try await a.sync.exchange(with: hub)
        let oldEpoch = try await hub.epoch
        // The hub is restored from the backup, which lacks 2 and 3, while a
        // pushes 3 and before it pulls.
        await hub.set(restoreOnNextPull: true)
        try insert(a, [3])
        let report = try await a.sync.exchange(with: hub)
        let newEpoch = try await hub.epoch
        #expect(newEpoch != oldEpoch)
        #expect(report.previousEpoch == oldEpoch)
        #expect(report.epoch == newEpoch)
        try await b.sync.exchange(with: hub)
        #expect(try notes(b) == [1: "1", 2: "2", 3: "3"])
        #expect(try a.sync.cursor(of: SiteID(uuid: newEpoch)) != .start)
    }

    @Test func aClockSkewStillPullsThenThrows() async throws {
        let (a, b, hub) = (try device("a.strata"), try device("b.strata"), try hub())
        try insert(b, [7])
        try await b.sync.exchange(with: hub)
        try insert(a, [1])
        await hub.set(clockSkews: 1)
        let error = await #expect(throws: StrataError.self) { try await a.sync.exchange(with: hub) }
        #expect(error?.hubRefusal?.code == .clockSkew)
        #expect(error?.hubRefusal?.hubTime != nil)
        #expect(try notes(a)[7] == "7")
    }

    @Test func runReportsAClockSkewAndRetries() async throws {
        let (a, hub) = (try device("a.strata"), try hub())
        try insert(a, [1])
        await hub.set(clockSkews: 2)
        let log = SyncEventLog()
        let run = Task { try await a.sync.run(with: hub, options: options(log)) }
        defer { run.cancel() }
        #expect(await log.wait { _ in log.reports.contains { $0.pushedObjects == 1 } })
        let events = log.all
        #expect(events.filter { if case .clockSkew = $0 { true } else { false } }.count == 2)
        let retries = events.compactMap { event -> Duration? in
            if case .failed(let error as StrataError, let delay) = event, error.hubRefusal?.code == .clockSkew {
                return delay
            }
            return nil
        }
        #expect(retries.count == 2)
        #expect(retries.allSatisfy { $0 > .zero && $0 <= .milliseconds(100) })
        #expect(await hub.acceptedPages == [1])
    }

    @Test func runEndsWithTheErrorWhenTheTokenIsRefused() async throws {
        let (a, hub) = (try device("a.strata"), try hub())
        await hub.set(revoked: true)
        let log = SyncEventLog()
        let error = await #expect(throws: StrataError.self) {
            try await a.sync.run(with: hub, options: options(log))
        }
        #expect(error?.code == .hubRefused)
        #expect(error?.hubRefusal?.code == .unauthorized)
        #expect(error?.hubRefusal?.isRetryable == false)
        guard case .failed(_, let delay) = log.all.last else {
            Issue.record("no failure event: \(log.all)")
            return
        }
        #expect(delay == nil)
    }

    @Test func cancellingTheTaskEndsTheRunWithoutAnError() async throws {
        let (a, hub) = (try device("a.strata"), try hub())
        let log = SyncEventLog()
        let run = Task { try await a.sync.run(with: hub, options: options(log)) }
        #expect(await log.wait { _ in !log.reports.isEmpty })
        run.cancel()
        // The poll interval is an hour: only cancellation ends the wait.
        let ended = SyncEventLog()
        let watch = Task {
            let result = await run.result
            ended.record(.failed(CancellationError(), retryIn: nil))
            return result
        }
        guard await ended.wait(until: { !$0.isEmpty }) else {
            Issue.record("The run did not end within ten minutes of its cancellation.")
            return
        }
        let result = await watch.value
        #expect(throws: Never.self) { try result.get() }
    }

    @Test func aLocalCommitWakesTheRun() async throws {
        let (a, b, hub) = (try device("a.strata"), try device("b.strata"), try hub())
        let log = SyncEventLog()
        let run = Task { try await a.sync.run(with: hub, options: options(log)) }
        defer { run.cancel() }
        #expect(await log.wait { _ in !log.reports.isEmpty })
        try insert(a, [5])
        #expect(await log.wait { _ in log.reports.contains { $0.pushedObjects == 1 } })
        try await b.sync.exchange(with: hub)
        #expect(try notes(b) == [5: "5"])
    }

    /// A write made while an exchange pulls missed that exchange's push:
    /// the run goes round again at once, not after the poll interval (an
    /// hour here).
    @Test func aWriteDuringAnExchangeIsPushedWithoutWaitingForThePoll() async throws {
        let (a, hub) = (try device("a.strata"), try hub())
        let note = HubNote(id: 9, title: "during")
        await hub.set(onNextPull: { @Sendable () throws -> Void in
            try a.write { (tx: WriteTransaction) -> Void in _ = try tx.insert(note) }
        })
        let log = SyncEventLog()
        let run = Task { try await a.sync.run(with: hub, options: options(log)) }
        defer { run.cancel() }
        #expect(await log.wait { _ in log.reports.contains { $0.pushedObjects == 1 } })
        #expect(await hub.acceptedPages.reduce(0, +) >= 1)
    }

    @Test func aHubCommitWakesTheRun() async throws {
        let (a, b, hub) = (try device("a.strata"), try device("b.strata"), try hub(streamsCommits: true))
        let log = SyncEventLog()
        let run = Task { try await b.sync.run(with: hub, options: options(log)) }
        defer { run.cancel() }
        #expect(await log.wait { _ in !log.reports.isEmpty && hub.listeners == 1 })
        try insert(a, [8])
        try await a.sync.exchange(with: hub)
        #expect(await log.wait { _ in log.reports.contains { $0.pulledObjects == 1 } })
        #expect(try notes(b) == [8: "8"])
    }

    @Test func refusedFieldsAreReportedAndTheRestMerged() async throws {
        let (a, b, hub) = (try device("a.strata"), try device("b.strata"), try hub())
        let refused = HubRefusedField(type: "Note", field: "title", descriptor: "string")
        await hub.set(conflictingFields: [refused])
        try insert(a, [1])
        let report = try await a.sync.exchange(with: hub)
        #expect(report.refusedFields == [refused])
        try await b.sync.exchange(with: hub)
        #expect(try notes(b) == [1: "1"])
    }

    @Test func anObserverSeesAPulledChange() async throws {
        let (a, b, hub) = (try device("a.strata"), try device("b.strata"), try hub())
        let (ready, observing) = AsyncStream.makeStream(of: Void.self)
        let seen = Task {
            for try await change in b.observe(HubNote.self) {
                guard !change.isInitial else {
                    observing.yield()
                    continue
                }
                return Array(change.results)
            }
            return []
        }
        for await _ in ready { break }
        try insert(a, [4], title: "from a")
        try await a.sync.exchange(with: hub)
        try await b.sync.exchange(with: hub)
        #expect(try await seen.value == [HubNote(id: 4, title: "from a")])
    }

    @Test func statusCountsAsPendingOnlyWhatTheHubHasNotAcknowledged() async throws {
        let (a, hub) = (try device("a.strata"), try hub())
        try insert(a, 1 ... 3)
        #expect(try a.sync.status().pendingObjects == 3)
        try await a.sync.exchange(with: hub)
        let epochSite = SiteID(uuid: try await hub.epoch)
        let status = try a.sync.status()
        let hubPeer = try #require(status.peers.first { $0.site == epochSite })
        #expect(hubPeer.acknowledged == status.lastSequenceNumber)
        #expect(hubPeer.pendingObjects == 0)
        #expect(status.pendingObjects == 0)
        try insert(a, [4])
        #expect(try a.sync.status().pendingObjects == 1)
        try await a.sync.exchange(with: hub)
        #expect(try a.sync.status().pendingObjects == 0)
    }

    @Test func ownChangesComingBackFromTheHubAreNotCountedAsChanges() async throws {
        let (a, b, hub) = (try device("a.strata"), try device("b.strata"), try hub())
        try insert(b, [3])
        try await b.sync.exchange(with: hub)
        try insert(a, 1 ... 2)
        let report = try await a.sync.exchange(with: hub)
        // The hub sends a's 1 and 2 back with b's 3: only 3 changes a.
        #expect(report.pushedObjects == 2)
        #expect(report.pulledObjects == 3)
        #expect(report.received.changedObjects == 1)
        #expect(report.received.deletedObjects == 0)
        #expect(
            report.description == "pushed 2 objects (1 page); pulled 3 objects (1 page): 1 changed, 0 deleted here")
    }
}
