import Foundation
import HummingbirdTesting
import HummingbirdWSClient
import Logging
import NIOCore
import PostgresNIO
@_spi(Hub) import Strata
import StrataHub
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Two hubs on one database, as two processes behind a load balancer
/// would be: each with its own connection pool, subscribers and
/// ``CommitListener``, sharing nothing but PostgreSQL.
struct HubProcessesTests {
    /// Runs `body` with a second hub on `first`'s database, both hearing
    /// the commits of the other, and served on free ports: their URLs.
    static func withTwoHubs(
        _ first: Hub, _ settings: PostgresSettings,
        _ body: @Sendable @escaping (Hub, Hub, URL, URL) async throws -> Void
    ) async throws {
        let client = settings.client()
        let second = Hub(client: client, logger: TestCluster.logger)
        let listening = AsyncStream<Void>.makeStream()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            for hub in [first, second] {
                group.addTask {
                    try await CommitListener(hub: hub) { listening.continuation.yield() }.run()
                }
            }
            defer { group.cancelAll() }
            var heard = 0
            for await _ in listening.stream {
                heard += 1
                if heard == 2 { break }
            }
            try await HubClientTests.serving(first) { firstURL in
                try await HubClientTests.serving(second) { secondURL in
                    try await body(first, second, firstURL, secondURL)
                }
            }
        }
    }

    /// Collects the text messages of `token`'s stream on the hub at `url`
    /// until cancelled; returns once the socket is open.
    static func openStream(_ url: URL, token: String, into log: EventLog) async -> Task<Void, any Error> {
        let connected = AsyncStream<Void>.makeStream()
        let task = Task {
            _ = try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(url.port!)/v1/stream",
                configuration: .init(additionalHeaders: [.authorization: "Bearer \(token)"]),
                logger: TestCluster.logger
            ) { inbound, _, _ in
                connected.continuation.yield()
                for try await message in inbound.messages(maxSize: 1 << 10) {
                    if case .text(let text) = message { log.append(text) }
                }
            }
        }
        for await _ in connected.stream { break }
        return task
    }

    @Test func aCommitThroughOneHubPokesTheDevicesOfTheOtherOnce() async throws {
        try await TestCluster.withHub { hub, settings in
            try await Self.withTwoHubs(hub, settings) { first, _, firstURL, secondURL in
                let tenant = UUID()
                let phone = try await first.addDevice(tenant: tenant, name: "phone")
                let laptop = try await first.addDevice(tenant: tenant, name: "laptop")
                let folder = try TemporaryFolder()
                defer { folder.remove() }
                let laptopFile = try folder.open("laptop.strata", tenant: tenant)
                defer { laptopFile.close() }
                let onFirst = EventLog()
                let onSecond = EventLog()
                let streams = [
                    await Self.openStream(firstURL, token: phone.token, into: onFirst),
                    await Self.openStream(secondURL, token: phone.token, into: onSecond),
                ]
                defer { for stream in streams { stream.cancel() } }
                // A long poll on the second hub, waiting for any commit.
                let waiting = Task {
                    var request = URLRequest(
                        url: URL(string: secondURL.absoluteString + "/v1/wait?after=0&timeout=50")!,
                        timeoutInterval: 120)
                    request.setValue("Bearer \(phone.token)", forHTTPHeaderField: "Authorization")
                    let started = ContinuousClock.now
                    let (data, _) = try await URLSession.shared.data(for: request)
                    return (String(decoding: data, as: UTF8.self), ContinuousClock.now - started)
                }
                try await Task.sleep(for: .milliseconds(300))
                try await laptopFile.write { tx in try tx.insert(Note(id: 1, title: "through the first hub")) }
                try await laptopFile.sync.exchange(with: HTTPHub(url: firstURL, token: laptop.token))
                let (answer, waited) = try await waiting.value
                #expect(answer.contains("\"hubSeq\":1"), "\(answer)")
                #expect(waited < .seconds(40), "the second hub's long poll ran to its timeout")
                try await HubClientTests.waitUntil("both streams were poked") {
                    !onFirst.texts.isEmpty && !onSecond.texts.isEmpty
                }
                // Heard twice by the first hub (at once, and through
                // PostgreSQL), passed on once.
                try await Task.sleep(for: .milliseconds(300))
                #expect(onFirst.texts == ["{\"hubSeq\":1}"])
                #expect(onSecond.texts == ["{\"hubSeq\":1}"])
            }
        }
    }

    @Test func aDeviceMaySwitchHubsBetweenRequests() async throws {
        try await TestCluster.withHub { hub, settings in
            try await Self.withTwoHubs(hub, settings) { first, _, firstURL, secondURL in
                let folder = try TemporaryFolder()
                defer { folder.remove() }
                let devices = try await TwoDevices(first, in: folder)
                defer { devices.close() }
                let urls = [firstURL, secondURL]
                for round in 0 ..< 6 {
                    let (writer, reader) =
                        round % 2 == 0 ? (devices.phone, devices.laptop) : (devices.laptop, devices.phone)
                    let (writerToken, readerToken) =
                        round % 2 == 0
                        ? (devices.phoneToken, devices.laptopToken) : (devices.laptopToken, devices.phoneToken)
                    try await writer.write { tx in try tx.upsert(Note(id: round % 3, title: "round \(round)")) }
                    try await writer.sync.exchange(with: HTTPHub(url: urls[round % 2], token: writerToken))
                    try await reader.sync.exchange(with: HTTPHub(url: urls[(round + 1) % 2], token: readerToken))
                    let read = try await reader.read { try $0.object(Note.self, primaryKey: round % 3) }
                    #expect(read?.title == "round \(round)", "round \(round)")
                }
                let phoneNotes = try await devices.phone.read { try $0.objects(Note.self).map(\.title) }
                let laptopNotes = try await devices.laptop.read { try $0.objects(Note.self).map(\.title) }
                #expect(phoneNotes == laptopNotes)
                #expect(phoneNotes.count == 3)
            }
        }
    }
}

/// Two `strata-hub serve` processes on a cluster of their own, restarted
/// under them: each listens again, and a device's stream on one still
/// hears the commits made through the other.
struct HubProcessesRestartTests {
    @Test func theStreamOfOneProcessHearsTheOtherAcrossAPostgresRestart() async throws {
        let cluster = try await OwnCluster()
        defer { cluster.stop() }
        let tenant = UUID()
        let tokens = try await cluster.addDevices(["phone", "laptop"], tenant: tenant)
        let (phone, laptop) = (tokens[0], tokens[1])
        let first = try await HubProcess(settings: cluster.settings)
        let second = try await HubProcess(settings: cluster.settings)
        defer {
            Task {
                await first.kill()
                await second.kill()
            }
        }
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let laptopFile = try folder.open("laptop.strata", tenant: tenant)
        defer { laptopFile.close() }
        let pokes = EventLog()
        let stream = await HubProcessesTests.openStream(second.url, token: phone, into: pokes)
        defer { stream.cancel() }
        // The second process may not listen yet; its first listen catches
        // the tenant up, so the poke comes either way.
        try await laptopFile.write { tx in try tx.insert(Note(id: 1, title: "before the restart")) }
        try await laptopFile.sync.exchange(with: HTTPHub(url: first.url, token: laptop))
        try await HubClientTests.waitUntil("the first poke") { pokes.texts.contains("{\"hubSeq\":1}") }

        try await cluster.run("restart")
        try await laptopFile.write { tx in try tx.insert(Note(id: 2, title: "after the restart")) }
        let deadline = Date().addingTimeInterval(60)
        while true {
            do {
                try await laptopFile.sync.exchange(with: HTTPHub(url: first.url, token: laptop))
                break
            } catch {
                guard Date() < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        try await HubClientTests.waitUntil("a poke after the restart") { pokes.texts.contains("{\"hubSeq\":2}") }
        #expect(pokes.texts == ["{\"hubSeq\":1}", "{\"hubSeq\":2}"])
    }
}
