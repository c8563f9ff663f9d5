import Foundation
import Testing

@testable import Strata

/// A migration that makes a linked type embedded, killed at seeded moments:
/// the file is left as it was (every link whole) or fully converted, never
/// with some links turned into copies and others dangling.
extension CrashTests {
    static let embeddingObjects = 20_000

    static let linkingSchema = [EmbeddingMigrationTests.personLinking, EmbeddingMigrationTests.addressTopLevel]
    static let embeddingSchema = [EmbeddingMigrationTests.personEmbedding, EmbeddingMigrationTests.addressEmbedded]

    /// Each person links to an address of its own, and to the next
    /// person's as a past one, so each address has two parents.
    static func seedLinkedAddresses(_ path: String) throws {
        let db = try Database(configuration: Migrations.configuration(path, version: 1, linkingSchema))
        try db.write { tx in
            for id in 1 ... Int64(embeddingObjects) {
                try tx.insert("Address", ["street": .string("\(id) Main St")])
            }
            for id in 1 ... Int64(embeddingObjects) {
                let next = id % Int64(embeddingObjects) + 1
                try tx.insert("Person", ["id": .int(id), "home": .link(.int(id)), "past": [.link(.int(next))]])
            }
        }
        db.close()
    }

    /// The conversion, with a copy of each shared address per parent,
    /// killing the process at `point`.
    static func embedding(_ path: String, killingAt point: KillPoint?) -> Database.Configuration {
        var config = Migrations.configuration(path, version: 2, embeddingSchema) { migration, _ in
            try migration.setEmbeddingPolicy(.init(sharedObjects: .copyPerParent), forType: "Address")
        }
        config.durability = .full
        config.progress = { progress in
            guard let point, progress.step == .migratingObjects else { return }
            if point.phase == .working && progress.completed >= point.count { killSelf() }
            if point.phase == .committing && progress.completed == progress.total { killSoon(point.microseconds) }
        }
        return config
    }

    @Test(.timeLimit(.minutes(10)))
    func aConversionToEmbeddedKilledAtAnyMomentLeavesTheLinksOrTheCopies() async throws {
        let pristine = folder.path("pristine.strata")
        try await offThePool { try Self.seedLinkedAddresses(pristine) }
        let trials = try await Trials(
            "embedding", folder: folder, pristine: pristine,
            opening: { path, outcome in
                outcome == .asItWas
                    ? Migrations.configuration(path, version: 1, Self.linkingSchema)
                    : Self.embedding(path, killingAt: nil)
            },
            finish: { path in
                let walked = Recorder<ContinuousClock.Instant>()
                var config = Self.embedding(path, killingAt: nil)
                config.progress = {
                    if $0.step == .migratingObjects && $0.completed == $0.total { walked.append(.now) }
                }
                let db = try Database(configuration: config)
                defer { db.close() }
                let problems = try db.verify()
                #expect(problems.isEmpty, "\(problems)")
                let last = try db.read { tx in try tx.object("Person", key: .int(Int64(Self.embeddingObjects)))?.values
                }
                #expect(last?["past"] == .list([["street": "1 Main St", "city": "Leeds"]]))
                return Calibration(commit: (walked.all.last ?? .now).duration(to: .now))
            })
        #expect(trials.after.objectCounts == ["Person": Self.embeddingObjects])
        let span = KillPoint.Span(
            phases: [.working, .committing, .returned], objects: Self.embeddingObjects,
            commitMicroseconds: 2 * Self.microseconds(trials.calibration.commit))
        let points = KillPoint.draw(max(4, Self.trials / 2), seed: Self.seed, span)
        _ = try await trials.run(points) { path, point, label in
            await #expect(processExitsWith: .signal(SIGKILL), "\(label)") {
                [path = path as String, point = point as KillPoint] in
                _ = try Database(configuration: CrashTests.embedding(path, killingAt: point))
                CrashTests.dieAfterWork()
            }
        }
    }
}
