import ArgumentParser
import Foundation
import Logging
import Strata
import StrataHub

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `strata-hub-bench`: the hub's targets of docs/Benchmarks.md, measured
/// over HTTP against a running `strata-hub serve` (scripts/hub-bench.sh
/// starts one on a throw-away cluster, fsync on): ingest for one tenant
/// and for four at once, pull serving, and a load test of many devices.
@main
struct HubBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata-hub-bench", abstract: "Measure a running hub (docs/Benchmarks.md, \"Hub\").")

    @Option(
        help:
            "A hub's URL; give it once per hub process on the database (the load test's devices switch between them at random)."
    ) var url: [String]
    @Option(help: "Objects pushed for one tenant (10 field changes each).") var objects = 50_000
    @Option(help: "Objects per push.") var page = 1_000
    @Option(help: "Devices of the load test.") var devices = 100
    @Option(help: "Tenants the load test's devices are spread over.") var tenants = 10
    @Option(help: "Seconds of the load test.") var seconds = 60
    @Option(
        help:
            "Milliseconds each load-test device waits after an exchange before it writes again, a range (LOW-HIGH, drawn at random each time)."
    ) var pause = "200-1000"
    @Option(help: "Objects of the partial-sync measure's tenant (a device subscribed to 1 % of them); 0 skips it.")
    var partialObjects = 200_000
    @Option(help: "A scratch folder for the devices' files.") var folder = NSTemporaryDirectory() + "strata-hub-bench"
    @Flag(help: "Measure only the ingest of one tenant without and with sync rules (--rounds pairs).")
    var ingestOnly = false
    @Option(
        help:
            "With --ingest-only: pairs measured, each on new tenants, their order alternating (without rules first, then with rules first, ...) so that the tables' growth weighs on both alike."
    ) var rounds = 1

    /// `--pause` as a range of milliseconds.
    func pauseRange() throws -> ClosedRange<Int> {
        let bounds = pause.split(separator: "-").compactMap { Int($0) }
        guard bounds.count == 2, bounds[0] >= 0, bounds[0] <= bounds[1] else {
            throw ValidationError("--pause is LOW-HIGH in milliseconds, LOW <= HIGH, e.g. 10000-20000: \(pause)")
        }
        return bounds[0] ... bounds[1]
    }

    /// Checks the options before anything is measured.
    func validate() throws { _ = try pauseRange() }

    func run() async throws {
        let hubURLs = try url.map { text in
            guard let url = URL(string: text) else { throw ValidationError("--url is not a URL: \(text)") }
            return url
        }
        guard let hubURL = hubURLs.first else { throw ValidationError("Give the hub's URL with --url.") }
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let logger = Logger(label: "strata-hub-bench")
        try await PostgresSettings().withClient(logger: logger) { client in
            let hub = Hub(client: client, logger: logger)
            let bench = Bench(url: hubURL, hub: hub, folder: folder, page: page)
            print("| measure | field changes | seconds | field changes/s |")
            print("|---|---:|---:|---:|")
            // Ingest for one tenant, and the same with sync rules: a write
            // rule of one field, whose value each push copies, checked
            // before and after the merge.
            let rules = "Reading: f9 != 'none'\nReading fields: f1\n"
            if ingestOnly {
                for round in 0 ..< rounds {
                    for ruled in round % 2 == 0 ? [false, true] : [true, false] {
                        try await bench.ingest(tenants: 1, objects: objects, rules: ruled ? rules : nil)
                    }
                }
                return
            }
            let one = try await bench.ingest(tenants: 1, objects: objects)
            try await bench.ingest(tenants: 1, objects: objects, rules: rules)
            try await bench.ingest(tenants: 4, objects: objects / 2)
            try await bench.pull(one)
            if partialObjects > 0 { try await PartialSync(bench: bench, objects: partialObjects).run() }
            try await LoadTest(
                bench: bench, postgres: client, urls: hubURLs, devices: devices, tenants: tenants, seconds: seconds,
                pause: try pauseRange()
            ).run()
        }
    }
}

/// The ingest and pull measures.
struct Bench: Sendable {
    let url: URL
    let hub: Hub
    let folder: String
    let page: Int
    static let fields = (0 ..< 10).map { "f\($0)" }

    /// A tenant and a device token of it.
    struct Tenant: Sendable {
        var id: UUID
        var token: String
        var fieldChanges: Int
    }

    static func schema() -> Schema {
        Schema([
            ObjectSchema(
                "Reading", primaryKey: "id",
                properties: [Property("id", .int)]
                    + fields.enumerated().map { index, name in
                        index % 2 == 0
                            ? Property(name, .int, default: .int(0)) : Property(name, .string, default: .string(""))
                    })
        ])
    }

    func open(_ name: String, tenant: UUID, schema: Schema) throws -> Database {
        var config = Database.Configuration(path: "\(folder)/\(name)", schemaVersion: 1, schema: schema)
        config.mode = .synced
        config.durability = .noSync
        config.sync = .init(dataset: tenant)
        return try Database(configuration: config)
    }

    /// `objects` readings written in one file of a new tenant, as pages of
    /// `page` objects, made before the clock starts.
    func pages(tenant: UUID, objects: Int) throws -> [Changeset] {
        let db = try open("ingest-\(tenant).strata", tenant: tenant, schema: Self.schema())
        defer { db.close() }
        try db.write { tx in
            for id in 0 ..< objects {
                var values: [String: Value] = ["id": .int(Int64(id))]
                for (index, name) in Self.fields.enumerated() {
                    values[name] = index % 2 == 0 ? .int(Int64(id * 10 + index)) : .string("value \(id)-\(index)")
                }
                _ = try tx.insert("Reading", values)
            }
        }
        var pages: [Changeset] = []
        var cursor = SyncCursor.start
        while true {
            let changeset = try db.sync.changes(from: cursor, limit: page)
            pages.append(changeset)
            let summary = try changeset.summary()
            guard summary.hasMore else { break }
            cursor = SyncCursor(since: 0, after: summary.toSeq, afterKey: summary.toKey)
        }
        return pages
    }

    /// Pushes `objects` readings into each of `tenants` new tenants at
    /// once, one pusher per tenant, pages one after another.
    @discardableResult
    func ingest(tenants: Int, objects: Int, rules: String? = nil) async throws -> Tenant {
        var work: [(Tenant, [Changeset])] = []
        for _ in 0 ..< tenants {
            let id = UUID()
            let token = try await hub.addDevice(tenant: id, name: "ingest").token
            if let rules { try await hub.setRules(tenant: id, source: rules) }
            work.append(
                (
                    Tenant(id: id, token: token, fieldChanges: objects * Self.fields.count),
                    try pages(tenant: id, objects: objects)
                ))
        }
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (tenant, pages) in work {
                group.addTask {
                    let client = HTTPHub(url: url, token: tenant.token)
                    for page in pages {
                        let answer = try await client.push(page)
                        guard answer.refusedFields.isEmpty, answer.refusedObjects.isEmpty else {
                            throw ValidationError("refused \(answer.refusedFields) \(answer.refusedObjects)")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds = (ContinuousClock.now - start).seconds
        let changes = work.reduce(0) { $0 + $1.0.fieldChanges }
        Self.row(
            "ingest, \(tenants) tenant\(tenants == 1 ? "" : "s"), \(page) objects per push\(rules == nil ? "" : ", sync rules")",
            changes, seconds)
        return work[0].0
    }

    /// A new device of `tenant` pulls all of it, pages of 5,000 objects
    /// (the default), without applying them: the hub's serving rate.
    func pull(_ tenant: Tenant) async throws {
        let token = try await hub.addDevice(tenant: tenant.id, name: "puller").token
        let client = HTTPHub(url: url, token: token)
        let session = try await client.session(site: SiteID.random())
        var cursor = SyncCursor.start
        let start = ContinuousClock.now
        var objects = 0
        while true {
            let changeset = try await client.pull(from: cursor, epoch: session.epoch, limit: 5_000)
            let summary = try changeset.summary()
            objects += summary.entryCount
            cursor = SyncCursor(since: 0, after: summary.toSeq)
            if !summary.hasMore { break }
        }
        let seconds = (ContinuousClock.now - start).seconds
        guard objects * Self.fields.count == tenant.fieldChanges else {
            throw ValidationError("pulled \(objects) objects of \(tenant.fieldChanges / Self.fields.count)")
        }
        Self.row("pull, pages of 5,000 objects", tenant.fieldChanges, seconds)
    }

    static func row(_ name: String, _ changes: Int, _ seconds: Double) {
        print(
            "| \(name) | \(changes.formatted()) | \(String(format: "%.2f", seconds)) | **\(Int(Double(changes) / seconds).formatted())** |"
        )
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
