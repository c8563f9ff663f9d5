import Foundation
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import NIOConcurrencyHelpers
@_spi(Hub) import Strata
import Testing

@testable import StrataHub

@Model(name: "Note")
struct RatedNote {
    @PrimaryKey var id: Int
    var title: String
    var stars: Int = 0
}

@Model(name: "Note")
struct WordyNote {
    @PrimaryKey var id: Int
    var title: String
    var stars: String = ""
}

/// The core's client (`HTTPHub`, `exchange(with:)`, `run(with:)`) against
/// the real hub over HTTP and its WebSocket.
@Suite("The client against the hub")
struct HubClientTests {
    /// Runs `body` with the hub served on a free port: its URL.
    static func serving(_ hub: Hub, _ body: @Sendable @escaping (URL) async throws -> Void) async throws {
        try await HubSecurityTests.application(hub).test(.live) { client in
            try await body(URL(string: "http://127.0.0.1:\(client.port!)")!)
        }
    }

    static func waitUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(60)
        while !(try await condition()) {
            guard Date() < deadline else { throw HubTestError("timed out waiting until \(what)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test func runKeepsADeviceInStepThroughTheStreamAndItsOwnCommits() async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let devices = try await TwoDevices(hub, in: folder)
            defer { devices.close() }
            let (phone, laptop) = (devices.phone, devices.laptop)
            let (phoneToken, laptopToken) = (devices.phoneToken, devices.laptopToken)
            try await Self.serving(hub) { url in
                // Only the hub's stream or a local commit can wake the phone.
                let events = EventLog()
                let options = SyncRunOptions(pollInterval: .seconds(3_600), events: { events.append($0) })
                let running = Task {
                    try await phone.sync.run(with: HTTPHub(url: url, token: phoneToken), options: options)
                }
                let laptopHub = HTTPHub(url: url, token: laptopToken)
                try await Self.waitUntil("the phone's first round") { events.exchanges > 0 }
                try await laptop.write { tx in try tx.insert(Note(id: 1, title: "from the laptop")) }
                try await laptop.sync.exchange(with: laptopHub)
                try await Self.waitUntil("the phone has the laptop's note") {
                    try await phone.read { try $0.object(Note.self, primaryKey: 1) } != nil
                }
                try await phone.write { tx in try tx.insert(Note(id: 2, title: "from the phone")) }
                try await Self.waitUntil("the hub has the phone's note") {
                    try await laptop.sync.exchange(with: laptopHub)
                    return try await laptop.read { try $0.object(Note.self, primaryKey: 2) } != nil
                }
                running.cancel()
                try await running.value
                #expect(events.failures == 0, "\(events.all)")
            }
        }
    }

    /// The WebSocket pokes a device after each commit of its tenant, and
    /// only of its tenant; a socket without a token is not upgraded.
    @Test func theStreamPokesAfterEachCommitOfTheTenant() async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let (tenant, other) = (UUID(), UUID())
            let added = try await hub.addDevice(tenant: tenant, name: "phone")
            let stranger = try await hub.addDevice(tenant: other, name: "stranger")
            let phone = try folder.open("phone.strata", tenant: tenant)
            let alien = try folder.open("alien.strata", tenant: other)
            defer {
                phone.close()
                alien.close()
            }
            try await Self.serving(hub) { url in
                let socket = "ws://127.0.0.1:\(url.port!)/v1/stream"
                await #expect(throws: (any Error).self) {
                    try await WebSocketClient.connect(url: socket, logger: TestCluster.logger) { _, _, _ in }
                }
                let received = EventLog()
                let listening = await HubProcessesTests.openStream(url, token: added.token, into: received)
                try await Task.sleep(for: .milliseconds(200))
                // Another tenant's commit pokes no one here.
                try await alien.write { tx in try tx.insert(Note(id: 1, title: "elsewhere")) }
                try await alien.sync.exchange(with: HTTPHub(url: url, token: stranger.token))
                try await phone.write { tx in try tx.insert(Note(id: 1, title: "here")) }
                try await phone.sync.exchange(with: HTTPHub(url: url, token: added.token))
                try await Self.waitUntil("the socket got a poke") { !received.texts.isEmpty }
                #expect(received.texts == ["{\"hubSeq\":1}"])
                listening.cancel()
            }
        }
    }

    @Test func aSecondTypeForAFieldIsRefusedAndTheRestSyncs() async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenant = UUID()
            let rated = try folder.open("rated.strata", tenant: tenant, models: [RatedNote.self])
            let wordy = try folder.open("wordy.strata", tenant: tenant, models: [WordyNote.self])
            defer {
                rated.close()
                wordy.close()
            }
            let ratedToken = try await hub.addDevice(tenant: tenant, name: "rated").token
            let wordyToken = try await hub.addDevice(tenant: tenant, name: "wordy").token
            try await Self.serving(hub) { url in
                try await rated.write { tx in try tx.insert(RatedNote(id: 1, title: "one", stars: 5)) }
                try await rated.sync.exchange(with: HTTPHub(url: url, token: ratedToken))
                try await wordy.write { tx in try tx.insert(WordyNote(id: 2, title: "two", stars: "many")) }
                let report = try await wordy.sync.exchange(with: HTTPHub(url: url, token: wordyToken))
                #expect(report.refusedFields.map(\.field) == ["stars"])
                #expect(report.refusedFields.first?.registered.isEmpty == false)
                try await rated.sync.exchange(with: HTTPHub(url: url, token: ratedToken))
                let two = try #require(try await rated.read { try $0.object(RatedNote.self, primaryKey: 2) })
                #expect(two.title == "two")
                #expect(two.stars == 0)
                #expect(try await wordy.read { try $0.object(WordyNote.self, primaryKey: 1)?.title } == "one")
            }
        }
    }

    @Test func aNewEpochRebaselinesWithNothingLost() async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let devices = try await TwoDevices(hub, in: folder)
            defer { devices.close() }
            let (phone, laptop, tenant) = (devices.phone, devices.laptop, devices.tenant)
            let (phoneToken, laptopToken) = (devices.phoneToken, devices.laptopToken)
            try await Self.serving(hub) { url in
                let phoneHub = HTTPHub(url: url, token: phoneToken)
                let laptopHub = HTTPHub(url: url, token: laptopToken)
                try await phone.write { tx in for id in 0 ..< 50 { try tx.insert(Note(id: id, title: "p\(id)")) } }
                try await phone.sync.exchange(with: phoneHub)
                try await laptop.sync.exchange(with: laptopHub)
                // The operator restores a backup (here: just the epoch).
                let before = try await laptop.sync.exchange(with: laptopHub).epoch
                let epoch = try await hub.renewEpoch(tenant: tenant)
                try await laptop.write { tx in try tx.insert(Note(id: 100, title: "after the restore")) }
                let report = try await laptop.sync.exchange(with: laptopHub)
                #expect(report.epoch == epoch)
                #expect(report.previousEpoch == before || report.epoch != before)
                try await phone.sync.exchange(with: phoneHub)
                let device = try #require(try await hub.device(token: phoneToken))
                let state = try await CanonicalState(of: hub, device: device)
                #expect(try CanonicalState(of: phone) == state)
                #expect(try CanonicalState(of: laptop) == state)
                #expect(try await phone.read { try $0.objects(Note.self).count } == 51)
            }
        }
    }

    @Test func aChangesetFromTheFutureIsRefusedWithTheHubsTime() async throws {
        try await TestCluster.withHub { hub, settings in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenant = UUID()
            let added = try await hub.addDevice(tenant: tenant, name: "phone")
            let device = try #require(try await hub.device(token: added.token))
            let phone = try folder.open("phone.strata", tenant: tenant)
            defer { phone.close() }
            try await phone.write { tx in try tx.insert(Note(id: 1, title: "from tomorrow")) }
            var content = try ChangesetCodec.decode(try phone.sync.changes().data)
            let tomorrow = HybridTime(milliseconds: Hub.now() + 86_400_000, counter: 0)
            for index in content.entries.indices {
                content.entries[index].stamp.time = tomorrow
                for field in content.entries[index].fields.indices {
                    content.entries[index].fields[field].stamp.time = tomorrow
                }
            }
            let error = await #expect(throws: HubError.self) {
                try await hub.push(ChangesetCodec.encode(content), device: device)
            }
            #expect(error?.code == .clockSkew)
            #expect(error?.status == .conflict)
            if case .number(let hubTime)? = error?.fields["hubTime"] {
                #expect(abs(hubTime - Double(Hub.now())) < 60_000)
            } else {
                Issue.record("no hubTime in \(String(describing: error))")
            }
            #expect(try await HubSecurityTests.rowCounts(settings) == [0, 0, 0, 0, 0])
        }
    }
}

/// The events a run reported (or texts a socket got), from any thread.
final class EventLog: Sendable {
    private let events = NIOLockedValueBox<[SyncEvent]>([])
    private let textLog = NIOLockedValueBox<[String]>([])
    func append(_ event: SyncEvent) { events.withLockedValue { $0.append(event) } }
    func append(_ text: String) { textLog.withLockedValue { $0.append(text) } }
    var texts: [String] { textLog.withLockedValue { $0 } }
    var all: [SyncEvent] { events.withLockedValue { $0 } }
    var exchanges: Int { all.filter { if case .exchanged = $0 { true } else { false } }.count }
    var failures: Int { all.filter { if case .failed = $0 { true } else { false } }.count }
}
