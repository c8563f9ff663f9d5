import Foundation
import Testing

@testable import Strata

/// Two processes on one file: one reads at version 1 while the other
/// migrates the file to version 2.
@Suite(.temporaryFolder) struct TwoProcessTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    static func migrateToVersion2(_ path: String) -> Database.Configuration {
        Migrations.configuration(path, version: 2, [Migrations.personV2]) { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { old, new in
                new?["fullName"] = .string(old!["firstName"].string! + " " + old!["lastName"].string!)
            }
        }
    }

    /// This process holds a read transaction, on a thread of its own, from
    /// before another process migrates the file until after: the
    /// transaction keeps reading version 1's objects, through scans and the
    /// index. Afterwards the old `Database` is told the schema changed, an
    /// open at version 1 is refused, and the file is sound and migrated.
    @Test(.timeLimit(.minutes(3)))
    func aReaderKeepsItsSnapshotWhileAnotherProcessMigratesThenMustOpenTheNewVersion() async throws {
        let path = folder.path()
        try Migrations.seedPeople(path, count: 10_000)
        let old = Migrations.configuration(path, version: 1, [Migrations.personV1])
        let before = try Migrations.state(opening: old)
        let db = try Database(configuration: old)

        let snapshots = Recorder<[[String: Value]]>()
        let lookups = Recorder<[Value]>()
        let errors = Recorder<String>()
        let reading = DispatchSemaphore(value: 0)
        let migrated = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            do {
                try db.read { tx in
                    snapshots.append(try TwoProcessTests.people(tx))
                    lookups.append(try tx.objects("Person").where("age", equals: 42).map(\.primaryKey))
                    reading.signal()
                    migrated.wait()
                    snapshots.append(try TwoProcessTests.people(tx))
                    lookups.append(try tx.objects("Person").where("age", equals: 42).map(\.primaryKey))
                }
            } catch {
                errors.append("\(error)")
            }
            finished.signal()
        }.start()
        await Self.wait(for: reading)

        await #expect(processExitsWith: .success) { [path = path as String] in
            let db = try Database(configuration: TwoProcessTests.migrateToVersion2(path))
            guard db.fileSchemaVersion == 2, db.openingPlan.action == .migrate else { exit(2) }
        }
        migrated.signal()
        await Self.wait(for: finished)

        #expect(errors.all.isEmpty, "\(errors.all)")
        let seen = snapshots.all
        #expect(seen.count == 2)
        #expect(seen.first == before.objects["Person"], "the snapshot before the migration is version 1's")
        #expect(seen.last == seen.first, "the snapshot changed while the other process migrated")
        #expect(lookups.all.count == 2 && lookups.all.first == lookups.all.last && lookups.all.first?.count == 111)

        let stale = expectStrataError(.schemaChanged) { try db.read { tx in _ = try tx.objects("Person").count } }
        #expect(stale?.message.contains("now at schema version 2") == true, "\(stale?.message ?? "")")
        db.close()
        let lower = expectStrataError(.schemaVersionTooLow) { _ = try Database(configuration: old) }
        #expect(
            lower?.message.contains("Schema version 1 is lower than the file's version 2") == true,
            "\(lower?.message ?? "")")

        let after = try expectFileVerified(path)
        #expect(after.schemaVersion == 2)
        #expect(after.digests != before.databases)
        let migratedDB = try Database(configuration: Self.migrateToVersion2(path))
        #expect(migratedDB.openingPlan.action == .open)
        let (atVersion2, fullName, aged42) = try await migratedDB.read { tx in
            (
                try tx.objects("Person").whereSchemaVersion(2 ... 2).count,
                try tx.object("Person", key: 4242)?["fullName"],
                try tx.objects("Person").where("age", equals: 42).count
            )
        }
        #expect(atVersion2 == 10_000)
        #expect(fullName == "First4242 Last4242")
        #expect(aged42 == 111)
    }

    /// Every Person as Migrations.everything records them: values and
    /// effective version.
    static func people(_ tx: ReadTransaction) throws -> [[String: Value]] {
        try tx.objects("Person").map { $0.values.merging(["__schemaVersion": .int(Int64($0.schemaVersion))]) { $1 } }
    }

    /// Waits for a semaphore without blocking a thread of the cooperative pool.
    static func wait(for semaphore: DispatchSemaphore) async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                semaphore.wait()
                continuation.resume()
            }
        }
    }
}
