import Foundation
import PostgresNIO
@_spi(Hub) import Strata
import StrataHub
import Testing

/// Objects that leave a device's view on the hub (docs/Hub.md, "Leaving a
/// view") are removed from the device, with no delete sent back.
@Suite("Objects leaving a device's view")
struct HubLeavingTests {
    /// The rows of `table` the hub holds.
    static func rows(_ table: String, _ hub: Hub) async throws -> Int64 {
        let rows = try await hub.client.query(
            PostgresQuery(unsafeSQL: "SELECT count(*)::int8 FROM \(table)"), logger: TestCluster.logger)
        for try await count in rows.decode(Int64.self) { return count }
        return 0
    }

    /// The changeset of a pull of everything after `device`'s cursor.
    static func pulled(_ device: RuledDevice, leaves: Bool) async throws -> ChangesetContent {
        let epoch = try await HubRulesTests.epoch(device.hub, device)
        let cursor = try device.database.sync.cursor(of: SiteID(uuid: epoch))
        let data = try await device.hub.pull(
            device: device.device, since: cursor.since, after: cursor.after, epoch: epoch, limit: 500, leaves: leaves)
        return try ChangesetCodec.decode(data)
    }

    /// A document given to another owner leaves its old owner's device,
    /// also when it moved twice between two of its pulls, and lives on
    /// the hub and with its new owner. A client that does not ask for
    /// leaves gets none.
    @Test func aDocumentGivenAwayLeavesItsOldOwnersDevice() async throws {
        try await HubRulesTests.withTenant { hub, tenant, device in
            let admin = try await device("admin", ["roles": .array([.string("admin")])])
            let alice = try await device("alice", ["sub": .string("alice")])
            let bob = try await device("bob", ["sub": .string("bob")])
            try await hub.setRules(tenant: tenant, source: HubRulesTests.ownerRules)
            try await admin.database.write { tx in
                for id in 1 ... 6 { try tx.insert(OwnedDoc(id: id, ownerID: id % 2 == 0 ? "alice" : "bob")) }
            }
            try await admin.exchange()
            try await alice.exchange()
            try await bob.exchange()
            #expect(try await alice.docIDs() == [2, 4, 6])
            // 2 goes to bob; 4 to carol and then to bob, both before
            // alice pulls again.
            try await admin.database.write { tx in try tx.update("Doc", key: 2, ["ownerID": .string("bob")]) }
            try await admin.exchange()
            try await admin.database.write { tx in try tx.update("Doc", key: 4, ["ownerID": .string("carol")]) }
            try await admin.exchange()
            try await admin.database.write { tx in try tx.update("Doc", key: 4, ["ownerID": .string("bob")]) }
            try await admin.exchange()
            // A client that does not ask is told nothing it cannot read.
            #expect(try await Self.pulled(alice, leaves: false).entries.isEmpty)
            let told = try await Self.pulled(alice, leaves: true)
            #expect(Set(told.entries.map(\.key)) == [2, 4])
            #expect(told.entries.allSatisfy { $0.leavesView })
            let epoch = SiteID(uuid: try await HubRulesTests.epoch(hub, alice))
            let report = try alice.database.sync.apply(Changeset(data: ChangesetCodec.encode(told)), from: epoch)
            #expect(report.leftObjects == 2)
            #expect(report.deletedObjects == 0)
            #expect(try await alice.docIDs() == [6])
            // No tombstone: nothing for alice to send, nothing deleted.
            #expect(try alice.database.sync.status().tombstones == 0)
            #expect(try await alice.exchange().isEmpty)
            try await bob.exchange()
            try await admin.exchange()
            #expect(try await bob.docIDs() == [1, 2, 3, 4, 5])
            #expect(try await admin.docIDs() == [1, 2, 3, 4, 5, 6])
            #expect(try await hub.status(tenant: tenant).tombstones == 0)
            #expect(try alice.database.verify().isEmpty)
            // Given back, it comes back whole.
            try await admin.database.write { tx in
                try tx.update("Doc", key: 2, ["ownerID": .string("alice"), "text": .string("back")])
            }
            try await admin.exchange()
            try await alice.exchange()
            #expect(try await alice.docIDs() == [2, 6])
            #expect(try await alice.database.read { try $0.object(OwnedDoc.self, primaryKey: 2)?.text } == "back")
        }
    }

    /// A document with a change its device has not sent stays there when
    /// it leaves, so that the change is sent; the hub refuses it (alice
    /// may no longer write the document), and the document stays with
    /// alice, no longer updated, as docs/Hub.md says.
    @Test func aDocumentWithAnUnsentChangeStays() async throws {
        try await HubRulesTests.withTenant { hub, tenant, device in
            let admin = try await device("admin", ["roles": .array([.string("admin")])])
            let alice = try await device("alice", ["sub": .string("alice")])
            try await hub.setRules(tenant: tenant, source: HubRulesTests.ownerRules)
            try await admin.database.write { tx in
                for id in 1 ... 2 { try tx.insert(OwnedDoc(id: id, ownerID: "alice")) }
            }
            try await admin.exchange()
            try await alice.exchange()
            try await alice.database.write { tx in try tx.update("Doc", key: 1, ["text": .string("mine, unsent")]) }
            try await admin.database.write { tx in
                for id in 1 ... 2 { try tx.update("Doc", key: .int(Int64(id)), ["ownerID": .string("bob")]) }
            }
            try await admin.exchange()
            let told = try await Self.pulled(alice, leaves: true)
            let epoch = SiteID(uuid: try await HubRulesTests.epoch(hub, alice))
            let report = try alice.database.sync.apply(Changeset(data: ChangesetCodec.encode(told)), from: epoch)
            #expect(report.leftObjects == 1)
            #expect(report.keptLeavingObjects == 1)
            #expect(try await alice.docIDs() == [1])
            // Sent: the hub refuses it (alice may no longer write it), and
            // the admin's document is as the admin left it.
            let refused = try await alice.exchange()
            #expect(refused == [HubRefusedObject(type: "Doc", key: "1")])
            #expect(try await alice.docIDs() == [1])
            try await admin.exchange()
            #expect(try await admin.database.read { try $0.object(OwnedDoc.self, primaryKey: 1)?.ownerID } == "bob")
        }
    }

    /// A project that leaves a member's view takes its tasks with it,
    /// though they did not change.
    @Test func whatFollowedAnObjectInLeavesWithIt() async throws {
        try await HubRulesTests.withTenant { hub, tenant, device in
            let admin = try await device("admin", ["roles": .array([.string("admin")])])
            let member = try await device("member", [:])
            try await hub.setRules(
                tenant: tenant,
                source: """
                    Project read: name != 'archived' or 'admin' in claims.roles
                    Project write: 'admin' in claims.roles
                    Task: project in Project or 'admin' in claims.roles
                    """)
            try await admin.database.write { tx in
                for id in ["p1", "p2"] { try tx.insert(RuledProject(id: id, name: id)) }
                try tx.insert(RuledTask(id: 1, project: Link("p1"), title: "in p1"))
                try tx.insert(RuledTask(id: 2, project: Link("p1"), title: "also in p1"))
                try tx.insert(RuledTask(id: 3, project: Link("p2"), title: "in p2"))
            }
            try await admin.exchange()
            try await member.exchange()
            #expect(try await member.database.read { try $0.objects(RuledTask.self).map(\.id) } == [1, 2, 3])
            try await admin.database.write { tx in try tx.update("Project", key: "p1", ["name": .string("archived")]) }
            try await admin.exchange()
            try await member.exchange()
            #expect(try await member.database.read { try $0.objects(RuledProject.self).map(\.id) } == ["p2"])
            #expect(try await member.database.read { try $0.objects(RuledTask.self).map(\.id) } == [3])
            try await admin.exchange()
            #expect(try await admin.database.read { try $0.objects(RuledTask.self).map(\.id) } == [1, 2, 3])
            #expect(try member.database.verify().isEmpty)
            // Back in the view, the project brings them back, whole.
            try await admin.database.write { tx in try tx.update("Project", key: "p1", ["name": .string("p1 again")]) }
            try await admin.exchange()
            try await member.exchange()
            #expect(try await member.database.read { try $0.objects(RuledProject.self).map(\.id) } == ["p1", "p2"])
            #expect(
                try await member.database.read { try $0.objects(RuledTask.self).map(\.title) } == [
                    "in p1", "also in p1", "in p2",
                ])
        }
    }

    /// A document whose subscribed field changes on the hub leaves the
    /// devices whose subscriptions no longer select it, through the
    /// client's exchange; compaction then removes the earlier values the
    /// hub kept for it.
    @Test func aDocumentLeavesTheSubscriptionsThatNoLongerSelectIt() async throws {
        try await HubSubscriptionTests.withPair { pair in
            let (hub, tenant, writer, reader) = (pair.hub, pair.tenant, pair.writer, pair.reader)
            let (writerHub, readerHub) = (pair.writerHub, pair.readerHub)
            try await HubSubscriptionTests.written(9, writer, writerHub)
            try reader.sync.subscribe("a's") { tx in
                try tx.objects(OwnedDoc.self).filter(#Predicate { $0.ownerID == "a" })
            }
            try await reader.sync.exchange(with: readerHub)
            #expect(try await HubSubscriptionTests.owners(reader) == ["a": 3])
            try await writer.write { tx in try tx.update("Doc", key: 3, ["ownerID": .string("b")]) }
            try await writer.sync.exchange(with: writerHub)
            let report = try await reader.sync.exchange(with: readerHub)
            #expect(report.received.leftObjects == 1)
            #expect(report.description.contains("1 object left this device's view and was removed here"))
            #expect(try await HubSubscriptionTests.owners(reader) == ["a": 2])
            #expect(try await Self.rows("sync_moves", hub) == 1)
            // Nothing went back: the document lives on the hub.
            try await writer.sync.exchange(with: writerHub)
            #expect(try await HubSubscriptionTests.owners(writer) == ["a": 2, "b": 4, "c": 3])
            #expect(try await hub.status(tenant: tenant).tombstones == 0)
            // Once every device has pulled past the move (a pull
            // acknowledges the cursor it starts from), compaction
            // removes it.
            try await reader.sync.exchange(with: readerHub)
            try await writer.sync.exchange(with: writerHub)
            _ = try await hub.compact(tenant: tenant, retention: .seconds(3_600))
            #expect(try await Self.rows("sync_moves", hub) == 0)
        }
    }

    /// A device away past compaction, with a subscription, catches up: a
    /// document deleted meanwhile goes, and one moved out of its
    /// subscription leaves it, with no delete sent back to the hub, where
    /// it lives on.
    @Test func aCatchUpRemovesWhatLeftASubscriptionWithoutDeletingIt() async throws {
        try await HubSubscriptionTests.withPair { pair in
            let (hub, tenant, writer, reader) = (pair.hub, pair.tenant, pair.writer, pair.reader)
            let (writerHub, readerHub) = (pair.writerHub, pair.readerHub)
            try await HubSubscriptionTests.written(9, writer, writerHub)
            try reader.sync.subscribe("a's") { tx in
                try tx.objects(OwnedDoc.self).filter(#Predicate { $0.ownerID == "a" })
            }
            try await reader.sync.exchange(with: readerHub)
            #expect(try await reader.read { try $0.objects(OwnedDoc.self).map(\.id) } == [0, 3, 6])
            try await writer.write { tx in
                try tx.update("Doc", key: 3, ["ownerID": .string("b")])
                _ = try tx.delete(OwnedDoc.self, primaryKey: 6)
            }
            try await writer.sync.exchange(with: writerHub)
            try await writer.sync.exchange(with: writerHub)
            try await HubCompactionTests.away(pair.readerDevice, hub)
            #expect(try await hub.compact(tenant: tenant, retention: .seconds(3_600)).removedTombstones == 1)
            let report = try await reader.sync.exchange(with: readerHub)
            #expect(report.catchUp?.removedObjects == 2)
            #expect(try await reader.read { try $0.objects(OwnedDoc.self).map(\.id) } == [0])
            try await reader.sync.exchange(with: readerHub)
            try await writer.sync.exchange(with: writerHub)
            #expect(try await writer.read { try $0.object(OwnedDoc.self, primaryKey: 3)?.ownerID } == "b")
            #expect(try await hub.status(tenant: tenant).objects == 8)
        }
    }
}
