import Foundation
import Strata
import StrataHub

/// Partial sync's target (docs/Benchmarks.md, "The hub"): a device
/// subscribed to 1 % of a tenant's objects against one that syncs all of
/// them, each a new file's first exchange (pull and apply), in bytes
/// pulled and seconds.
struct PartialSync {
    let bench: Bench
    let objects: Int

    static let groups = 100

    static func schema() -> Schema {
        Schema([
            ObjectSchema(
                "Reading", primaryKey: "id",
                properties: [Property("id", .int), Property("group", .string, default: .string(""))]
                    + (1 ..< 9).map { Property("f\($0)", .string, default: .string("")) })
        ])
    }

    func run() async throws {
        let tenant = UUID()
        let token = try await bench.hub.addDevice(tenant: tenant, name: "writer").token
        try await bench.hub.setRules(tenant: tenant, source: "Reading: true\nReading fields: group\n")
        let writer = try bench.open("partial-writer.strata", tenant: tenant, schema: Self.schema())
        defer { writer.close() }
        try await writer.write { tx in
            for id in 0 ..< objects {
                var values: [String: Value] = ["id": .int(Int64(id)), "group": .string("g\(id % Self.groups)")]
                for field in 1 ..< 9 { values["f\(field)"] = .string("value \(id)-\(field)") }
                _ = try tx.insert("Reading", values)
            }
        }
        _ = try await writer.sync.exchange(with: HTTPHub(url: bench.url, token: token))
        let full = try await firstSync(tenant, name: "full", subscribe: nil)
        let partial = try await firstSync(tenant, name: "partial", subscribe: "g7")
        guard full.objects == objects, partial.objects == objects / Self.groups else {
            throw BenchError("full sync has \(full.objects) objects, partial \(partial.objects), of \(objects)")
        }
        print("")
        print("| first sync of a new device, \(objects.formatted()) objects | objects | bytes pulled | seconds |")
        print("|---|---:|---:|---:|")
        for (name, run) in [("everything", full), ("subscribed to 1 % (`group == \"g7\"`)", partial)] {
            print(
                "| \(name) | \(run.objects.formatted()) | \(run.bytes.formatted()) | \(String(format: "%.2f", run.seconds)) |"
            )
        }
        print(
            "| **partial / full** | | **\(String(format: "%.2f", 100 * Double(partial.bytes) / Double(full.bytes))) %** | **\(String(format: "%.2f", 100 * partial.seconds / full.seconds)) %** |"
        )
    }

    /// A new device's first exchange: everything, or the objects of one
    /// group when `subscribe` names it.
    func firstSync(_ tenant: UUID, name: String, subscribe group: String?) async throws -> (
        objects: Int, bytes: Int, seconds: Double
    ) {
        let token = try await bench.hub.addDevice(tenant: tenant, name: name).token
        let db = try bench.open("partial-\(name).strata", tenant: tenant, schema: Self.schema())
        defer { db.close() }
        if let group {
            try db.sync.subscribe { tx in try tx.objects("Reading").where("group", equals: .string(group)) }
        }
        let hub = CountingHub(hub: HTTPHub(url: bench.url, token: token))
        let start = ContinuousClock.now
        _ = try await db.sync.exchange(with: hub)
        let seconds = (ContinuousClock.now - start).seconds
        let count = try await db.read { try $0.objects("Reading").count }
        return (count, hub.bytes, seconds)
    }
}

/// A transport that counts the bytes of the changesets it pulls.
struct CountingHub: SyncHub {
    let hub: HTTPHub
    private let counted = ByteCount()

    init(hub: HTTPHub) { self.hub = hub }

    var bytes: Int { counted.total }

    private func count(_ changeset: Changeset) -> Changeset {
        counted.add(changeset.data.count)
        return changeset
    }

    func session(site: SiteID) async throws -> HubSession { try await hub.session(site: site) }
    func push(_ changeset: Changeset) async throws -> HubPushAnswer { try await hub.push(changeset) }
    func pull(from cursor: SyncCursor, epoch: UUID, limit: Int) async throws -> Changeset {
        count(try await hub.pull(from: cursor, epoch: epoch, limit: limit))
    }
    func pull(from cursor: SyncCursor, epoch: UUID, limit: Int, subscriptions: [SyncSubscription]) async throws
        -> Changeset
    {
        count(try await hub.pull(from: cursor, epoch: epoch, limit: limit, subscriptions: subscriptions))
    }
    func firstPull(_ subscription: SyncSubscription, upto: UInt64, after: Data, epoch: UUID, limit: Int) async throws
        -> Changeset
    {
        count(try await hub.firstPull(subscription, upto: upto, after: after, epoch: epoch, limit: limit))
    }
    func commits() -> AsyncStream<UInt64> { hub.commits() }
}

// @unchecked: `value` is read and written only while holding `lock`.
/// A byte count behind a lock.
final class ByteCount: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    var total: Int { lock.withLock { value } }
    func add(_ bytes: Int) { lock.withLock { value += bytes } }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
