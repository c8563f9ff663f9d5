import Foundation
import Testing

@testable import Strata

/// Where a child process kills itself with SIGKILL.
struct KillPoint: Codable, Sendable, CustomStringConvertible {
    enum Phase: String, Codable, Sendable {
        /// Just before the `count`-th object of the work: enumerated by a
        /// migration closure, or written by a transaction (counted over
        /// every run of a transaction that the map growth makes run again).
        case working
        /// When `count` objects of an index are built (migrations).
        case indexing
        /// `microseconds` after the `count`-th time the map filled up, while
        /// the transaction is rolled back, the map grown and the work begun
        /// again.
        case growing
        /// `microseconds` after the work is done: while the catalog is
        /// written and the transaction commits, or after it returned.
        case committing
        /// Once the work has returned: the file must be finished.
        case returned
    }

    var phase: Phase
    var count = 0
    var microseconds = 0

    var description: String {
        switch phase {
        case .working, .indexing: "\(phase) at object \(count)"
        case .growing: "\(microseconds) µs after map-full \(count)"
        case .committing: "\(microseconds) µs after the work is done"
        case .returned: "after the work returned"
        }
    }

    /// What the trials of one kind of work draw kill points from.
    struct Span {
        var phases: [Phase]
        /// Objects the work handles (`working` and `indexing` points).
        var objects: Int
        /// How many times the map fills up (`growing` points).
        var mapFulls = 0
        /// `committing` delays are drawn up to this.
        var commitMicroseconds: Int
        var growingMicroseconds = 500
    }

    /// Kill points for `trials` trials, drawn from `seed`: the first trials
    /// cover each phase in turn, six in ten of the others fall in the
    /// work, which takes most of the time.
    static func draw(_ trials: Int, seed: UInt64, _ span: Span) -> [KillPoint] {
        var generator = SplitMix64(seed: seed)
        return (0 ..< trials).map { trial in
            let phase =
                trial < span.phases.count
                ? span.phases[trial]
                : Int.random(in: 0 ..< 10, using: &generator) < 6
                    ? .working : span.phases.randomElement(using: &generator)!
            switch phase {
            case .working, .indexing:
                return KillPoint(phase: phase, count: Int.random(in: 0 ..< span.objects, using: &generator))
            case .growing:
                return KillPoint(
                    phase: phase, count: Int.random(in: 0 ..< max(1, span.mapFulls), using: &generator),
                    microseconds: Int.random(in: 0 ... span.growingMicroseconds, using: &generator))
            case .committing:
                return KillPoint(
                    phase: phase, microseconds: Int.random(in: 0 ... span.commitMicroseconds, using: &generator))
            case .returned:
                return KillPoint(phase: phase)
            }
        }
    }
}

/// A process killed with SIGKILL at seeded moments of a migration, of a
/// large write transaction, and of a transaction that grows the map: after
/// each kill the file is exactly as it was or exactly as the finished work
/// leaves it, it opens, and the verifier finds nothing wrong in it.
///
/// `STRATA_CRASH_TRIALS` sets the number of kills per test (25 by
/// default), and `STRATA_CRASH_SEED` the seed, to replay a failure.
@Suite(.temporaryFolder) struct CrashTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    static let trials = ProcessInfo.processInfo.environment["STRATA_CRASH_TRIALS"].flatMap { Int($0) } ?? 25
    static let seed = ProcessInfo.processInfo.environment["STRATA_CRASH_SEED"].flatMap { UInt64($0) } ?? 20_250_601

    // MARK: Dying

    private static let timerStarted = Flag()

    /// Kills the process `microseconds` from now, from another thread,
    /// while this one goes on. Only the first call counts.
    static func killSoon(_ microseconds: Int) {
        guard !timerStarted.isSet else { return }
        timerStarted.set()
        Thread.detachNewThread {
            usleep(UInt32(microseconds))
            killSelf()
        }
    }

    /// What a child does when its work returned: waits for a kill already
    /// on its way, or dies now (the kill point was past the end of the work).
    static func dieAfterWork() -> Never {
        if timerStarted.isSet { sleep(60) }
        killSelf()
    }

    // MARK: Trials

    enum Outcome: String {
        case asItWas, finished
    }

    /// What running the work undisturbed measured, to spread kill points.
    struct Calibration: Sendable {
        /// From the end of the work to the end of the commit.
        var commit: Duration
        var objects = 0
        var mapFulls = 0
        /// How many times the transaction ran.
        var runs = 1
    }

    /// One kind of work killed again and again: the file before it, and
    /// after it finished undisturbed. The files are read and written off
    /// the cooperative pool, so that these long tests leave its threads to
    /// the other tests; issues are recorded back in the test's task.
    struct Trials: Sendable {
        let name: String
        let pristine: String
        let before: FileVerifier
        let after: FileVerifier
        let calibration: Calibration
        /// The configuration that opens the file in each state unchanged.
        let opening: @Sendable (String, Outcome) -> Database.Configuration
        /// The files trials run on: two at a time, one per core.
        let lanes: [String]

        /// Checks that `pristine` is sound, runs the work undisturbed on a
        /// copy with `finish`, and checks that copy too.
        init(
            _ name: String, folder: TemporaryFolder, pristine: String,
            opening: @escaping @Sendable (String, Outcome) -> Database.Configuration,
            finish: @escaping @Sendable (String) throws -> Calibration
        ) async throws {
            self.name = name
            self.pristine = pristine
            self.opening = opening
            lanes = [folder.path("lane0.strata"), folder.path("lane1.strata")]
            let reference = folder.path("finished.strata")
            (before, after, calibration) = try await offThePool {
                let before = try FileVerifier.verify(pristine)
                try CrashTests.restore(pristine, to: reference)
                let calibration = try finish(reference)
                return (before, try FileVerifier.verify(reference), calibration)
            }
            #expect(before.problems.isEmpty, "\(name): the file before: \(before.problems)")
            #expect(after.problems.isEmpty, "\(name): the file after: \(after.problems)")
            #expect(before.digests != after.digests, "\(name): the work changed nothing")
        }

        /// For each point: restores a file, lets `child` run the work in a
        /// child process killed at the point, then checks what is left.
        func run(_ points: [KillPoint], child: @escaping @Sendable (String, KillPoint, String) async -> Void)
            async throws -> [Outcome?]
        {
            var outcomes = [Outcome?](repeating: nil, count: points.count)
            try await withThrowingTaskGroup(of: [(Int, Outcome?)].self) { group in
                for (lane, path) in lanes.enumerated() {
                    group.addTask {
                        var results: [(Int, Outcome?)] = []
                        for trial in stride(from: lane, to: points.count, by: lanes.count) {
                            let label = "\(name) trial \(trial) of seed \(CrashTests.seed), killed \(points[trial])"
                            try await offThePool { [pristine] in try CrashTests.restore(pristine, to: path) }
                            await child(path, points[trial], label)
                            results.append((trial, try await survivor(path, label)))
                        }
                        return results
                    }
                }
                for try await results in group {
                    for (trial, outcome) in results { outcomes[trial] = outcome }
                }
            }
            let phases = Dictionary(grouping: points, by: \.phase.rawValue).mapValues(\.count).sorted {
                $0.key < $1.key
            }
            let counts = Dictionary(grouping: outcomes.compactMap { $0 }, by: \.rawValue).mapValues(\.count).sorted {
                $0.key < $1.key
            }
            print(
                "\(name): \(points.count) kills (seed \(CrashTests.seed)), by phase \(phases), left the file \(counts)")
            // Kills that are synchronous with the work, whatever the timing.
            for (point, outcome) in zip(points, outcomes) {
                if point.phase == .working || point.phase == .indexing {
                    #expect(
                        outcome == .asItWas, "\(name): killed before the commit, \(point), the file must be as it was")
                } else if point.phase == .returned {
                    #expect(outcome == .finished, "\(name): killed after the work returned, the file must be finished")
                }
            }
            return outcomes
        }

        /// Checks the file a killed child left: verified, exactly in one of
        /// the two states, and opening without any change. Returns which.
        func survivor(_ path: String, _ label: String) async throws -> Outcome? {
            let found = try await offThePool { try FileVerifier.verify(path) }
            #expect(found.problems.isEmpty, "\(label): \(found.problems.joined(separator: "\n"))")
            let outcome: Outcome
            if found.digests == before.digests {
                outcome = .asItWas
            } else if found.digests == after.digests {
                outcome = .finished
            } else {
                let names = Set(found.digests.keys).union(after.digests.keys).union(before.digests.keys).sorted()
                let differing = names.filter {
                    found.digests[$0] != before.digests[$0] && found.digests[$0] != after.digests[$0]
                }
                Issue.record(
                    "\(label): the file is neither as it was nor as the finished work leaves it; these differ from both: \(differing)"
                )
                return nil
            }
            let configuration = opening(path, outcome)
            let (action, counts) = try await offThePool {
                let db = try Database(configuration: configuration)
                defer { db.close() }
                let counts = try db.read { tx in
                    try Dictionary(uniqueKeysWithValues: tx.typeNames.map { ($0, try tx.objects($0).count) })
                }
                return (db.openingPlan.action, counts)
            }
            #expect(action == .open, "\(label)")
            #expect(counts == found.objectCounts, "\(label)")
            return outcome
        }
    }

    /// Replaces the file with a copy of `pristine`. The lock file a killed
    /// child left stays: every trial opens a file after a stale lock file.
    static func restore(_ pristine: String, to path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: pristine, toPath: path)
    }

    static func microseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds) * 1_000_000 + Int(duration.components.attoseconds / 1_000_000_000_000)
    }

    // MARK: A migration

    static let migrationObjects = 200_000

    /// The 1 → 2 migration of Person (firstName + lastName → fullName:
    /// every record rewritten, the age index rebuilt), killing the process
    /// at `point`.
    static func migration(_ path: String, killingAt point: KillPoint?) -> Database.Configuration {
        var config = Migrations.configuration(path, version: 2, [Migrations.personV2]) { migration, _ in
            var seen = 0
            try migration.enumerateObjects(ofType: "Person") { old, new in
                if let point, point.phase == .working, seen == point.count { killSelf() }
                seen += 1
                new?["fullName"] = .string(old!["firstName"].string! + " " + old!["lastName"].string!)
                // Set, unchanged, so that the age index is rebuilt and kills
                // can land in that phase too.
                new?["age"] = old!["age"]
            }
        }
        config.durability = .full
        config.progress = { progress in
            guard let point, progress.step == .buildingIndex else { return }
            if point.phase == .indexing && progress.completed >= point.count { killSelf() }
            if point.phase == .committing && progress.completed == progress.total { killSoon(point.microseconds) }
        }
        return config
    }

    @Test(.timeLimit(.minutes(10)))
    func aMigrationKilledAtAnyMomentLeavesTheOldFileOrTheMigratedOne() async throws {
        let pristine = folder.path("pristine.strata")
        try await offThePool { try Migrations.seedPeople(pristine, count: Self.migrationObjects) }
        let trials = try await Trials(
            "migration", folder: folder, pristine: pristine,
            opening: { path, outcome in
                outcome == .asItWas
                    ? Migrations.configuration(path, version: 1, [Migrations.personV1])
                    : Self.migration(path, killingAt: nil)
            },
            finish: { path in
                // The commit is what follows the last index progress report.
                let indexed = Recorder<ContinuousClock.Instant>()
                var config = Self.migration(path, killingAt: nil)
                config.progress = { if $0.step == .buildingIndex && $0.completed == $0.total { indexed.append(.now) } }
                _ = try Database(configuration: config)
                return Calibration(commit: (indexed.all.last ?? .now).duration(to: .now))
            })
        #expect(trials.after.schemaVersion == 2 && trials.after.objectCounts == ["Person": Self.migrationObjects])

        // Kills of the `committing` phase are spread over twice the commit.
        let span = KillPoint.Span(
            phases: [.working, .indexing, .committing, .returned], objects: Self.migrationObjects,
            commitMicroseconds: 2 * Self.microseconds(trials.calibration.commit))
        let points = KillPoint.draw(Self.trials, seed: Self.seed, span)
        let survivorCopy = folder.path("survivor.strata")
        _ = try await trials.run(points) { path, point, label in
            await #expect(processExitsWith: .signal(SIGKILL), "\(label)") {
                [path = path as String, point = point as KillPoint] in
                _ = try Database(configuration: CrashTests.migration(path, killingAt: point))
                CrashTests.dieAfterWork()
            }
            if point.phase == .working && point.count > 0 && !FileManager.default.fileExists(atPath: survivorCopy) {
                try? FileManager.default.copyItem(atPath: path, toPath: survivorCopy)
            }
        }
        // A file that a killed migration left migrates when opened again.
        let migrated = try await offThePool {
            _ = try Database(configuration: Self.migration(survivorCopy, killingAt: nil))
            return try FileVerifier.verify(survivorCopy)
        }
        #expect(migrated.problems.isEmpty, "\(migrated.problems)")
        #expect(migrated.digests == trials.after.digests)
    }

    // MARK: A large write transaction

    /// Over a file of 20,000 people: 40,000 inserts, 10,000 updates that
    /// move index entries, 5,000 deletes. `step` is called before each.
    static func largeWrite(_ tx: WriteTransaction, _ step: (Int) -> Void) throws {
        var n = 0
        for id in 20_001 ... 60_000 as ClosedRange<Int64> {
            step(n)
            n += 1
            try tx.insert("Person", Fixtures.person(id, "New\(id)", "Person\(id)", age: id % 70))
        }
        for id in 1 ... 10_000 as ClosedRange<Int64> {
            step(n)
            n += 1
            try tx.update(
                "Person", key: .int(id), ["age": .int(100 + id % 50), "email": .string("u\(id)@example.org")])
        }
        for id in stride(from: 10_001, through: 20_000, by: 2) as StrideThrough<Int64> {
            step(n)
            n += 1
            try tx.delete("Person", key: .int(id))
        }
    }

    static let largeWriteOperations = 55_000

    /// The configuration children write with: the default durability.
    static func childConfiguration(_ path: String, initialMapSize: Int, mode: Database.Mode) -> Database.Configuration {
        var config = Fixtures.configuration(path, mode: mode)
        config.durability = .full
        config.initialMapSize = initialMapSize
        return config
    }

    /// Room for the whole transaction: growing the map is the next test's.
    static func largeWriteConfiguration(_ path: String, mode: Database.Mode) -> Database.Configuration {
        childConfiguration(path, initialMapSize: 64 << 20, mode: mode)
    }

    @Test(.timeLimit(.minutes(10)), arguments: Fixtures.modes)
    func aLargeWriteTransactionKilledAtAnyMomentIsAllOrNothing(_ mode: Database.Mode) async throws {
        let pristine = folder.path("pristine.strata")
        try await offThePool { try Migrations.seedPeople(pristine, count: 20_000, mode: mode) }
        let trials = try await Trials(
            "large write (\(mode))", folder: folder, pristine: pristine,
            opening: { path, _ in Fixtures.configuration(path, mode: mode) },
            finish: { path in
                let db = try Database(configuration: Self.largeWriteConfiguration(path, mode: mode))
                var steps = 0
                var done = ContinuousClock.now
                try db.write { tx in
                    steps = 0
                    try Self.largeWrite(tx) { _ in steps += 1 }
                    done = .now
                }
                return Calibration(commit: done.duration(to: .now), objects: steps)
            })
        #expect(trials.calibration.objects == Self.largeWriteOperations)
        #expect(trials.after.objectCounts == ["Person": 55_000])

        let span = KillPoint.Span(
            phases: [.working, .committing, .returned], objects: Self.largeWriteOperations,
            commitMicroseconds: 2 * Self.microseconds(trials.calibration.commit))
        let points = KillPoint.draw(Self.trials, seed: Self.seed &+ 1, span)
        _ = try await trials.run(points) { path, point, label in
            await #expect(processExitsWith: .signal(SIGKILL), "\(label)") {
                [path = path as String, point = point as KillPoint, mode = mode as Database.Mode] in
                let db = try Database(configuration: CrashTests.largeWriteConfiguration(path, mode: mode))
                try db.write { tx in
                    try CrashTests.largeWrite(tx) { if point.phase == .working && $0 == point.count { killSelf() } }
                    if point.phase == .committing { CrashTests.killSoon(point.microseconds) }
                }
                CrashTests.dieAfterWork()
            }
        }
    }

    // MARK: A transaction that grows the map

    static let growingInserts = 20_000

    static func growingConfiguration(_ path: String) -> Database.Configuration {
        childConfiguration(path, initialMapSize: 64 << 10, mode: .local)
    }

    /// Inserts 20,000 people into a file whose map starts at 64 KiB, so
    /// that the transaction fills the map, rolls back and runs again about
    /// six times. `step` is called before each insert of every run,
    /// `mapFull` each time an insert finds the map full, `done` when a run
    /// has inserted everything. Returns the inserts of every run, and the runs.
    static func growingWrite(_ db: Database, step: (Int) -> Void, mapFull: (Int) -> Void, done: () -> Void) throws -> (
        inserts: Int, runs: Int
    ) {
        var inserts = 0
        var fulls = 0
        var runs = 0
        try db.write { tx in
            runs += 1
            for id in 1_001 ... Int64(1_000 + growingInserts) {
                step(inserts)
                inserts += 1
                do {
                    try tx.insert(
                        "Person", Fixtures.person(id, "Grown\(id)", String(repeating: "x", count: 40), age: id % 90))
                } catch let error as StrataError where error.lmdbCode == .mapFull {
                    mapFull(fulls)
                    fulls += 1
                    throw error
                }
            }
            done()
        }
        return (inserts, runs)
    }

    @Test(.timeLimit(.minutes(10)))
    func aTransactionKilledWhileTheMapGrowsIsAllOrNothing() async throws {
        let pristine = folder.path("pristine.strata")
        let initialMap = try await offThePool {
            let db = try Database(configuration: Self.growingConfiguration(pristine))
            defer { db.close() }
            try db.write { tx in
                for id in 1 ... 1_000 as ClosedRange<Int64> { try tx.insert("Person", Fixtures.person(id)) }
            }
            return db.environment.mapSize
        }
        #expect(initialMap < 1 << 20)
        let trials = try await Trials(
            "map growth", folder: folder, pristine: pristine, opening: { path, _ in Fixtures.configuration(path) },
            finish: { path in
                let db = try Database(configuration: Self.growingConfiguration(path))
                var done = ContinuousClock.now
                var fulls = 0
                let (inserts, runs) = try Self.growingWrite(
                    db, step: { _ in }, mapFull: { _ in fulls += 1 }, done: { done = .now })
                return Calibration(commit: done.duration(to: .now), objects: inserts, mapFulls: fulls, runs: runs)
            })
        #expect(trials.calibration.mapFulls >= 4, "the transaction should fill the map several times")
        #expect(
            trials.calibration.runs == trials.calibration.mapFulls + 1, "each map-full should run the transaction again"
        )

        let span = KillPoint.Span(
            phases: [.working, .growing, .committing, .returned], objects: trials.calibration.objects,
            mapFulls: trials.calibration.mapFulls, commitMicroseconds: 2 * Self.microseconds(trials.calibration.commit))
        let points = KillPoint.draw(Self.trials, seed: Self.seed &+ 2, span)
        _ = try await trials.run(points) { path, point, label in
            await #expect(processExitsWith: .signal(SIGKILL), "\(label)") {
                [path = path as String, point = point as KillPoint] in
                let db = try Database(configuration: CrashTests.growingConfiguration(path))
                _ = try CrashTests.growingWrite(
                    db, step: { if point.phase == .working && $0 == point.count { killSelf() } },
                    mapFull: {
                        if point.phase == .growing && $0 == point.count { CrashTests.killSoon(point.microseconds) }
                    },
                    done: { if point.phase == .committing { CrashTests.killSoon(point.microseconds) } })
                CrashTests.dieAfterWork()
            }
        }
    }
}
