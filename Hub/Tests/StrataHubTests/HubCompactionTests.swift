import Foundation
import PostgresNIO
@_spi(Hub) import Strata
import Testing

@testable import StrataHub

/// Tombstones and `batches` that end: the devices' acknowledged cursors,
/// compaction, a device offline past it catching up, and `strata-hub
/// status`.
@Suite("Compaction and status")
struct HubCompactionTests {
    static let hour = Duration.seconds(3_600)

    /// Runs `body` with a hub, a phone and a laptop of a new tenant, and
    /// each as a ``Device`` that exchanges through the hub directly.
    static func withTwoDevices(
        _ body: @Sendable (Hub, TwoDevices, Device, Device, PostgresSettings) async throws -> Void
    ) async throws {
        try await TestCluster.withHub { hub, settings in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let devices = try await TwoDevices(hub, in: folder)
            defer { devices.close() }
            try await body(
                hub, devices, Device(database: devices.phone, hub: hub, device: devices.phoneDevice),
                Device(database: devices.laptop, hub: hub, device: devices.laptopDevice), settings)
        }
    }

    /// Marks `device` unseen for two hours: past an hour's retention.
    static func away(_ device: Hub.Device, _ hub: Hub) async throws {
        try await hub.client.query(
            "UPDATE devices SET last_seen = now() - interval '2 hours' WHERE id = \(device.id)",
            logger: TestCluster.logger)
    }

    /// The objects rows of deleted objects the hub holds for `tenant`.
    static func tombstones(_ tenant: UUID, _ hub: Hub) async throws -> Int {
        try await hub.status(tenant: tenant).tombstones
    }

    /// The rows of `sync_attrs`: the values sync rules read.
    static func ruledValues(_ hub: Hub) async throws -> Int64 {
        let rows = try await hub.client.query("SELECT count(*)::int8 FROM sync_attrs", logger: TestCluster.logger)
        for try await count in rows.decode(Int64.self) { return count }
        return 0
    }

    /// Tombstones go once every active device has pulled past them, and
    /// not before: a device that has not acknowledged them holds them
    /// back. The figure of docs/Benchmarks.md ("The hub"): rows left for
    /// deleted objects after compaction, against those deleted.
    @Test func tombstonesGoOnceEveryActiveDeviceHasPulledPastThem() async throws {
        try await Self.withTwoDevices { hub, devices, phone, laptop, _ in
            let (created, deleted) = (4_000, 2_000)
            // Rules that read each note's title: its value is kept for its
            // tombstone, and goes with it.
            try await hub.setRules(tenant: devices.tenant, source: "Note: true\nNote fields: title\n")
            try await devices.phone.write { tx in
                for i in 0 ..< created { try tx.insert(Note(id: i, title: "note \(i)")) }
            }
            try await phone.exchange()
            try await laptop.exchange()
            try await devices.phone.write { tx in
                for i in 0 ..< deleted { _ = try tx.delete(Note.self, primaryKey: i) }
            }
            try await phone.exchange()
            try await phone.exchange()
            #expect(try await Self.tombstones(devices.tenant, hub) == deleted)

            // The laptop's cursor is before the deletes: nothing goes.
            let early = try await hub.compact(tenant: devices.tenant, retention: Self.hour)
            #expect(early.ran)
            #expect(early.removedTombstones == 0)
            #expect(try await Self.tombstones(devices.tenant, hub) == deleted)
            #expect(try await Self.ruledValues(hub) == Int64(created))

            // A pull's `since` acknowledges what came before it: the
            // laptop's second exchange says it has the deletes.
            try await laptop.exchange()
            #expect(try await devices.laptop.read { try $0.objects(Note.self).count } == created - deleted)
            try await laptop.exchange()
            try await phone.exchange()
            let report = try await hub.compact(tenant: devices.tenant, retention: Self.hour)
            #expect(report.removedTombstones == deleted)
            let left = try await Self.tombstones(devices.tenant, hub)
            print(
                "compaction: \(left) rows left of \(deleted) deleted objects (\(Double(left) * 100 / Double(deleted)) %)"
            )
            #expect(left * 100 <= deleted)
            #expect(try await Self.ruledValues(hub) == Int64(created - deleted))
            let status = try await hub.status(tenant: devices.tenant)
            #expect(status.objects == created - deleted)
            #expect(status.compactedSeq == report.compactedSeq && report.compactedSeq > 0)
            // Both devices are past the compacted tombstones: they go on
            // as before.
            try await laptop.exchange()
            try await phone.exchange()
        }
    }

    /// A device unseen for longer than the retention holds nothing back;
    /// one seen within it does, whatever its cursor.
    @Test func aDeviceUnseenPastTheRetentionHoldsNothingBack() async throws {
        try await Self.withTwoDevices { hub, devices, phone, laptop, _ in
            try await devices.phone.write { tx in
                for i in 0 ..< 10 { try tx.insert(Note(id: i, title: "note \(i)")) }
            }
            try await phone.exchange()
            try await laptop.exchange()
            try await devices.phone.write { tx in
                for i in 0 ..< 4 { _ = try tx.delete(Note.self, primaryKey: i) }
            }
            try await phone.exchange()
            try await phone.exchange()
            #expect(try await hub.compact(tenant: devices.tenant, retention: Self.hour).removedTombstones == 0)
            try await Self.away(devices.laptopDevice, hub)
            #expect(try await hub.compact(tenant: devices.tenant, retention: Self.hour).removedTombstones == 4)
            // A revoked device holds nothing back either; the laptop, seen
            // again, pulls from its cursor below the compacted tombstones:
            // a plain pull is refused, a catch-up answered.
            let epoch = try await hub.status(tenant: devices.tenant).epoch
            let since = try devices.laptop.sync.cursor(of: SiteID(uuid: epoch)).since
            #expect(since > 0)
            let refused = await #expect(throws: HubError.self) {
                try await hub.pull(device: devices.laptopDevice, since: since, after: since, epoch: nil, limit: 100)
            }
            #expect(refused?.code == .cursorCompacted)
            #expect(refused?.status == .gone)
            let page = try ChangesetCodec.decode(
                try await hub.pull(
                    device: devices.laptopDevice, since: since, after: 0, epoch: nil, limit: 100, catchUp: true))
            // Every live object, none with a field: none changed since.
            #expect(page.entries.count == 6)
            #expect(page.entries.allSatisfy { $0.fields.isEmpty && $0.causalLength == 1 })
        }
    }

    /// `batches` rows stay for the retention, then go once every active
    /// device has pulled past their commits.
    @Test func pushAnswersAreKeptForTheRetentionThenGo() async throws {
        try await Self.withTwoDevices { hub, devices, phone, laptop, _ in
            for round in 0 ..< 3 {
                try await devices.phone.write { tx in try tx.insert(Note(id: round, title: "round \(round)")) }
                try await phone.exchange()
            }
            try await laptop.exchange()
            try await laptop.exchange()
            try await phone.exchange()
            // Every push leaves an answer: the phone's three, and the
            // devices' pushes of what they pulled.
            let before = try await hub.status(tenant: devices.tenant).batches
            #expect(before >= 3)
            #expect(try await hub.compact(tenant: devices.tenant, retention: Self.hour).removedBatches == 0)
            try await hub.asOwner(of: devices.tenant) { connection in
                try await connection.query(
                    "UPDATE batches SET received_at = now() - interval '2 hours'", logger: TestCluster.logger)
            }
            // One newer push, whose answer stays.
            try await devices.phone.write { tx in try tx.insert(Note(id: 9, title: "late")) }
            try await phone.exchange()
            let report = try await hub.compact(tenant: devices.tenant, retention: Self.hour)
            #expect(report.removedBatches == before)
            #expect(try await hub.status(tenant: devices.tenant).batches == 1)
        }
    }

    /// The laptop is away past the retention while the phone deletes two
    /// notes and the hub compacts their tombstones; meanwhile the laptop
    /// edits one of them and another note, and adds one. Its next exchange
    /// catches up: the note it left alone goes, the one it edited comes
    /// back whole on every device, its other changes merge as usual.
    @Test func aDeviceAwayPastCompactionCatchesUpKeepingItsChanges() async throws {
        try await Self.withTwoDevices { hub, devices, _, _, _ in
            let (phone, laptop) = (devices.phone, devices.laptop)
            let (phoneToken, laptopToken) = (devices.phoneToken, devices.laptopToken)
            let (tenant, laptopDevice) = (devices.tenant, devices.laptopDevice)
            try await HubClientTests.serving(hub) { url in
                let phoneHub = HTTPHub(url: url, token: phoneToken)
                let laptopHub = HTTPHub(url: url, token: laptopToken)
                try await phone.write { tx in
                    for i in 1 ... 4 { try tx.insert(Note(id: i, title: "note \(i)", body: "body \(i)")) }
                }
                try await phone.sync.exchange(with: phoneHub)
                try await laptop.sync.exchange(with: laptopHub)
                try await phone.write { tx in
                    _ = try tx.delete(Note.self, primaryKey: 2)
                    _ = try tx.delete(Note.self, primaryKey: 3)
                }
                try await phone.sync.exchange(with: phoneHub)
                try await phone.sync.exchange(with: phoneHub)
                try await Self.away(laptopDevice, hub)
                #expect(try await hub.compact(tenant: tenant, retention: Self.hour).removedTombstones == 2)

                try await laptop.write { tx in
                    try tx.update(Note(id: 1, title: "edited away", body: "body 1"))
                    try tx.update(Note(id: 3, title: "edited away too", body: "body 3"))
                    try tx.insert(Note(id: 5, title: "added away"))
                }
                let report = try await laptop.sync.exchange(with: laptopHub)
                let catchUp = try #require(report.catchUp)
                #expect(catchUp.removedObjects == 1)
                // Note 3, and note 5, which the hub never had.
                #expect(catchUp.keptObjects == 2)
                #expect(catchUp.since < catchUp.compactedSeq)
                #expect(report.description.contains("caught up past compacted tombstones"))
                try await phone.sync.exchange(with: phoneHub)
                let expected = [
                    Note(id: 1, title: "edited away", body: "body 1"),
                    Note(id: 3, title: "edited away too", body: "body 3"),
                    Note(id: 4, title: "note 4", body: "body 4"), Note(id: 5, title: "added away"),
                ]
                for database in [laptop, phone] {
                    let notes = try await database.read { tx in try tx.objects(Note.self).map { $0 } }.sorted(by: {
                        $0.id < $1.id
                    })
                    #expect(notes.map(\.id) == expected.map(\.id), "\(database.path)")
                    #expect(notes.map(\.title) == expected.map(\.title), "\(database.path)")
                    #expect(notes.map(\.body) == expected.map(\.body), "\(database.path)")
                }
                // The next round is an ordinary one.
                let next = try await laptop.sync.exchange(with: laptopHub)
                #expect(next.catchUp == nil)
                #expect(try await hub.status(tenant: tenant).objects == 4)
            }
        }
    }

    /// `status` tells each device's cursors and lag, for people and as
    /// JSON, through the API and the command.
    @Test func statusTellsEachDevicesCursorsAndLag() async throws {
        try await Self.withTwoDevices { hub, devices, phone, laptop, settings in
            try await devices.phone.write { tx in try tx.insert(Note(id: 1, title: "one")) }
            try await phone.exchange()
            try await laptop.exchange()
            try await laptop.exchange()
            try await devices.phone.write { tx in try tx.insert(Note(id: 2, title: "two")) }
            try await phone.exchange()
            _ = try await hub.revokeDevice(devices.phoneDevice.id)

            let status = try await hub.status(tenant: devices.tenant)
            #expect(status.hubSeq == 2)
            // Every push leaves an answer, the empty ones too.
            #expect(status.objects == 2 && status.tombstones == 0 && status.batches >= 2)
            let byName = Dictionary(uniqueKeysWithValues: status.devices.map { ($0.name, $0) })
            let laptopStatus = try #require(byName["laptop"])
            let phoneStatus = try #require(byName["phone"])
            #expect(laptopStatus.pulledSeq == 1 && laptopStatus.lag == 1)
            #expect(phoneStatus.revoked && !laptopStatus.revoked)
            let phoneSite = try devices.phone.sync.site
            let pushed = try await hub.session(device: devices.phoneDevice, site: phoneSite).pushCursor.since
            #expect(pushed > 0)
            #expect(phoneStatus.pushCursors == [phoneSite.uuid.uuidString.lowercased(): pushed])
            #expect(status.text.contains("\(laptopStatus.id.uuidString.lowercased())  laptop  pulled 1  lag 1"))
            #expect(status.text.contains("phone (revoked)"))

            let base = [
                "--pg-host", settings.host, "--pg-port", "\(settings.port)", "--pg-user", settings.user,
                "--pg-database", settings.database,
            ]
            let json = try await HubCommandTests.run(
                ["status", "--dataset", devices.tenant.uuidString, "--json"] + base)
            #expect(json.status == 0, "\(json.output)")
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let decoded = try decoder.decode(DatasetStatus.self, from: Data(json.output.utf8))
            #expect(decoded.devices.map(\.pulledSeq) == status.devices.map(\.pulledSeq))
            #expect(decoded.hubSeq == 2)
            let text = try await HubCommandTests.run(["status", "--dataset", devices.tenant.uuidString] + base)
            #expect(text.status == 0, "\(text.output)")
            #expect(text.output.contains("objects 2  tombstones 0  batches \(status.batches)"), "\(text.output)")
            let unknown = try await HubCommandTests.run(["status", "--dataset", UUID().uuidString] + base)
            #expect(unknown.status != 0)
            #expect(unknown.output.contains("unknownTenant"), "\(unknown.output)")
            let compact = try await HubCommandTests.run(["compact", "--retention-hours", "1"] + base)
            #expect(compact.status == 0, "\(compact.output)")
            #expect(compact.output.contains("\(devices.tenant.uuidString.lowercased()): removed 0 tombstones"))
        }
    }
}
