import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOConcurrencyHelpers
import NIOCore
@_spi(Hub) import Strata
import Testing

@testable import StrataHub

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Operating the hub: its metrics, its request ids, and epoch renewals
/// that one device cannot repeat at will.
@Suite("Operating the hub")
struct HubOperationsTests {
    /// A pull past the last commit renews the epoch once per sequence
    /// number: again with the renewed epoch it is refused, without one (or
    /// with the old one) it is told the current epoch; after a commit a
    /// renewal may come again.
    @Test func epochRenewalsAreLimitedToOnePerCommit() async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let devices = try await TwoDevices(hub, in: folder)
            defer { devices.close() }
            let device = devices.phoneDevice
            try await devices.phone.write { tx in try tx.insert(Note(id: 1, title: "one")) }
            #expect(try await hub.push(try devices.phone.sync.changes().data, device: device).status == 200)
            let site = try devices.phone.sync.site
            let original = try await hub.session(device: device, site: site).epoch
            func pull(_ epoch: UUID?) async -> HubError? {
                await #expect(throws: HubError.self) {
                    try await hub.pull(device: device, since: 50, after: 50, epoch: epoch, limit: 100)
                }
            }
            let first = await pull(original)
            #expect(first?.code == .epochChanged)
            let renewed = try await hub.session(device: device, site: site).epoch
            #expect(renewed != original)
            #expect(first?.fields["epoch"] == .string(renewed.uuidString))
            // The same cursor with the renewed epoch: refused, no renewal.
            let again = await pull(renewed)
            #expect(again?.code == .invalidRequest)
            #expect(again?.status == .badRequest)
            #expect(again?.message.contains("already renewed") == true, "\(again?.message ?? "")")
            // Without an epoch, or with the old one: told the current one.
            for epoch in [nil, original] {
                let told = await pull(epoch)
                #expect(told?.code == .epochChanged)
                #expect(told?.fields["epoch"] == .string(renewed.uuidString))
            }
            #expect(try await hub.session(device: device, site: site).epoch == renewed)
            // A pull from the start of the renewed epoch works.
            _ = try await hub.pull(device: device, since: 0, after: 0, epoch: renewed, limit: 100)
            // After another commit, a cursor past it renews once more.
            try await devices.phone.write { tx in try tx.insert(Note(id: 2, title: "two")) }
            #expect(try await hub.push(try devices.phone.sync.changes().data, device: device).status == 200)
            #expect(await pull(renewed)?.code == .epochChanged)
            #expect(try await hub.session(device: device, site: site).epoch != renewed)
        }
    }

    /// `/metrics` answers in Prometheus's format, and its counters move
    /// with requests, pushes, pulls, refusals and pool waits.
    @Test func metricsCountWhatTheHubDoes() async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenant = UUID()
            let added = try await hub.addDevice(tenant: tenant, name: "phone")
            let file = try folder.open("phone.strata", tenant: tenant)
            defer { file.close() }
            try await file.write { tx in
                for id in 0 ..< 3 { try tx.insert(Note(id: id, title: "note \(id)")) }
            }
            let fields = try ChangesetCodec.decode(try file.sync.changes().data).entries.reduce(0) {
                $0 + $1.fields.count
            }
            #expect(fields > 0)
            let metricsApp = Application(
                router: HubServer.metricsRouter(hub), configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                logger: TestCluster.logger)
            func scrape() async throws -> String {
                try await metricsApp.test(.router) { client in
                    let response = try await client.execute(uri: "/metrics", method: .get)
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType]?.hasPrefix("text/plain") == true)
                    return String(buffer: response.body)
                }
            }
            let before = try await scrape()
            #expect(!before.contains("strata_hub_pushes_total 1"))
            try await HubClientTests.serving(hub) { url in
                try await file.sync.exchange(with: HTTPHub(url: url, token: added.token))
                var request = URLRequest(url: url.appendingPathComponent("v1/pull"))
                request.setValue("Bearer sth1_nobody", forHTTPHeaderField: "Authorization")
                let (_, response) = try await URLSession.shared.data(for: request)
                #expect((response as? HTTPURLResponse)?.statusCode == 401)
            }
            let text = try await scrape()
            func value(_ line: String) -> Double? {
                text.split(separator: "\n").first { $0.hasPrefix(line + " ") }.flatMap {
                    Double($0.split(separator: " ").last!)
                }
            }
            #expect(value("strata_hub_pushes_total") == 1, "\(text)")
            #expect((value("strata_hub_pulls_total") ?? 0) >= 1, "\(text)")
            #expect(value("strata_hub_merged_fields_total") == Double(fields), "\(text)")
            #expect(value(#"strata_hub_refusals_total{code="unauthorized"}"#) == 1, "\(text)")
            #expect(
                value(#"strata_hub_requests_total{route="/v1/push",method="POST",status="200"}"#) == 1, "\(text)")
            #expect(
                value(#"strata_hub_requests_total{route="/v1/pull",method="GET",status="401"}"#) == 1, "\(text)")
            #expect((value(#"strata_hub_request_duration_seconds_count{route="/v1/session"}"#) ?? 0) >= 1, "\(text)")
            #expect((value("strata_hub_pool_wait_seconds_count") ?? 0) >= 3, "\(text)")
            #expect(text.contains(#"strata_hub_request_duration_seconds_bucket{route="/v1/push",le="+Inf"} 1"#))
        }
    }

    /// Each answer names its request's id, and every line logged while
    /// serving the request carries that id.
    @Test func logLinesOfARequestCarryItsID() async throws {
        let records = NIOLockedValueBox<[(String, Logger.Metadata)]>([])
        let logger = Logger(label: "strata-hub-test-capture") { _ in CapturingLogHandler(records: records) }
        try await TestCluster.withHub { hub, _ in
            let router = HubServer.router(hub)
            let app = Application(
                router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: logger)
            let ids = try await app.test(.router) { client in
                var ids: [String] = []
                for _ in 0 ..< 2 {
                    let response = try await client.execute(
                        uri: "/v1/pull?since=0", method: .get, headers: [.authorization: "Bearer sth1_nobody"])
                    #expect(response.status == .unauthorized)
                    ids.append(try #require(response.headers[HTTPField.Name("Strata-Request-Id")!]))
                }
                return ids
            }
            #expect(Set(ids).count == 2)
            let lines = records.withLockedValue { $0 }
            for id in ids {
                let own = lines.filter { $0.1["hb.request.id"]?.description == id }.map(\.0)
                #expect(own.contains("Refused: unauthorized"), "\(lines)")
                #expect(own.contains("Answered"), "\(lines)")
            }
        }
    }
}

/// Keeps every record logged, with its metadata.
struct CapturingLogHandler: LogHandler {
    let records: NIOLockedValueBox<[(String, Logger.Metadata)]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String,
        function: String, line: UInt
    ) {
        let merged = self.metadata.merging(metadata ?? [:]) { _, new in new }
        records.withLockedValue { $0.append((message.description, merged)) }
    }
}
