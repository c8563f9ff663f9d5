import Foundation
import Testing

@testable import Strata

/// A process applying a peer's changesets, one transaction each, killed
/// with SIGKILL at seeded moments: after each kill the file verifies,
/// holds exactly the state after some number of whole changesets, its
/// cursor of the peer says which, and applying from the cursor on ends
/// in the peer's state. The same for a process killed in the middle of a
/// large write that sync records: what committed is whole, every change
/// of it is in the change log, and an exchange converges.
///
/// `STRATA_CRASH_TRIALS` and `STRATA_CRASH_SEED` apply, as for
/// ``CrashTests``.
@Suite(.temporaryFolder) struct SyncCrashTests {
    let folder = TemporaryFolder.current
    static let pages = 12
    static let perPage = 300

    static func configuration(_ path: String) -> Database.Configuration {
        var config = Database.Configuration(path: path, schemaVersion: 1, models: [NoteV1.self])
        config.mode = .synced
        config.sync = .init(dataset: SyncExchangeTests.dataset)
        return config
    }

    /// The notes of a file, by id.
    static func state(_ db: Database) throws -> [Int: NoteV1] {
        try db.read { tx in Dictionary(uniqueKeysWithValues: try tx.objects(NoteV1.self).map { ($0.id, $0) }) }
    }

    /// A sender whose changes come as `pages` changesets (each transaction
    /// inserts new notes and edits earlier ones), saved beside it.
    static func makeChangesets(_ folder: String) throws -> [Data] {
        let sender = try Database(configuration: configuration(folder + "/sender.strata"))
        defer { sender.close() }
        var changesets: [Data] = []
        var since: UInt64 = 0
        for page in 0 ..< pages {
            try sender.write { tx in
                for i in 0 ..< perPage {
                    let id = page * perPage + i
                    try tx.insert(NoteV1(id: id, title: "note \(id)", stars: page))
                    if id >= perPage {
                        try tx.update("Note", key: .int(Int64(id - perPage)), ["stars": .int(Int64(page))])
                    }
                }
            }
            let changes = try sender.sync.changes(since: since, limit: 100_000)
            since = try changes.summary().toSeq
            changesets.append(changes.data)
        }
        return changesets
    }

    @Test(.timeLimit(.minutes(5)))
    func applyingKilledAtAnyMomentKeepsWholeChangesetsAndResumes() async throws {
        let base = folder.path("")
        let changesets = try await offThePool { try Self.makeChangesets(base) }
        // The state after each number of changesets applied, and the time
        // the whole run takes.
        let reference = folder.path("reference.strata")
        let (states, duration) = try await offThePool {
            let db = try Database(configuration: Self.configuration(reference))
            defer { db.close() }
            var states = [try Self.state(db)]
            let start = ContinuousClock.now
            for data in changesets {
                try db.sync.apply(Changeset(data: data))
                states.append(try Self.state(db))
            }
            return (states, start.duration(to: .now))
        }
        let span = CrashTests.microseconds(duration)
        var generator = SplitMix64(seed: CrashTests.seed &+ 26)
        for trial in 0 ..< max(2, CrashTests.trials / 3) {
            let delay = Int.random(in: 0 ... span, using: &generator)
            let path = folder.path("trial\(trial).strata")
            let label = "sync apply trial \(trial) of seed \(CrashTests.seed), killed after \(delay) µs"
            try? FileManager.default.removeItem(atPath: path)
            try await offThePool { try Database(configuration: Self.configuration(path)).close() }
            await #expect(processExitsWith: .signal(SIGKILL), "\(label)") {
                [path = path as String, delay = delay as Int, changesets = changesets as [Data]] in
                let db = try Database(configuration: SyncCrashTests.configuration(path))
                CrashTests.killSoon(delay)
                for data in changesets { try db.sync.apply(Changeset(data: data)) }
                CrashTests.dieAfterWork()
            }
            try await offThePool {
                let verified = try FileVerifier.verify(path)
                #expect(verified.problems.isEmpty, "\(label): \(verified.problems)")
                let db = try Database(configuration: Self.configuration(path))
                defer { db.close() }
                #expect(try db.verify() == [], "\(label)")
                let sender = try Database(configuration: Self.configuration(base + "/sender.strata"))
                defer { sender.close() }
                let cursor = try db.sync.cursor(of: try sender.sync.site)
                let applied =
                    try changesets.firstIndex { try Changeset(data: $0).summary().toSeq == cursor }.map { $0 + 1 } ?? 0
                #expect(cursor == 0 || applied > 0, "\(label): cursor \(cursor) is no changeset's end")
                #expect(try Self.state(db) == states[applied], "\(label): not the state after \(applied) changesets")
                try db.sync.exchange(with: sender)
                #expect(try Self.state(db) == states.last!, "\(label): resuming did not converge")
            }
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func aRecordedWriteKilledAtAnyMomentIsWholeAndItsChangesTravel() async throws {
        let pristine = folder.path("pristine.strata")
        let duration = try await offThePool {
            try Database(configuration: Self.configuration(pristine)).close()
            let timing = folder.path("timing.strata")
            try CrashTests.restore(pristine, to: timing)
            let db = try Database(configuration: Self.configuration(timing))
            defer { db.close() }
            let start = ContinuousClock.now
            try Self.writeLoop(db)
            return start.duration(to: .now)
        }
        var generator = SplitMix64(seed: CrashTests.seed &+ 27)
        for trial in 0 ..< max(2, CrashTests.trials / 3) {
            let delay = Int.random(in: 0 ... CrashTests.microseconds(duration), using: &generator)
            let path = folder.path("writer\(trial).strata")
            let label = "sync capture trial \(trial), killed after \(delay) µs"
            try await offThePool { try CrashTests.restore(pristine, to: path) }
            await #expect(processExitsWith: .signal(SIGKILL), "\(label)") {
                [path = path as String, delay = delay as Int] in
                let db = try Database(configuration: SyncCrashTests.configuration(path))
                CrashTests.killSoon(delay)
                try SyncCrashTests.writeLoop(db)
                CrashTests.dieAfterWork()
            }
            try await offThePool {
                #expect(try FileVerifier.verify(path).problems.isEmpty, "\(label)")
                let db = try Database(configuration: Self.configuration(path))
                defer { db.close() }
                let state = try Self.state(db)
                // Transaction t inserts notes 100t ..< 100(t+1) and sets
                // the stars of every earlier note to t: whole or absent.
                let rounds = state.count / 100
                #expect(state.count == rounds * 100, "\(label): a partial transaction (\(state.count) notes)")
                #expect(state.values.allSatisfy { $0.stars == rounds - 1 }, "\(label)")
                let peer = try Database(configuration: Self.configuration(folder.path("peer\(trial).strata")))
                defer { peer.close() }
                try db.sync.exchange(with: peer)
                #expect(try Self.state(peer) == state, "\(label): the recorded changes did not all travel")
            }
        }
    }

    /// Twenty transactions, each inserting 100 notes and editing every
    /// earlier one.
    static func writeLoop(_ db: Database) throws {
        for t in 0 ..< 20 {
            try db.write { tx in
                for i in 0 ..< 100 { try tx.insert(NoteV1(id: t * 100 + i, title: "n", stars: t)) }
                for id in 0 ..< t * 100 { try tx.update("Note", key: .int(Int64(id)), ["stars": .int(Int64(t))]) }
            }
        }
    }
}
