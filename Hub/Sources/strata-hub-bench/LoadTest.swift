import ArgumentParser
import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
@_spi(Hub) import Strata
import StrataHub

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `devices` devices spread over `tenants` tenants, each writing a few
/// notes (of a hundred per tenant, so that they conflict) and exchanging
/// with the hub, again and again for `seconds` (each starting at a random
/// moment within one `pause`, and waiting `pause` milliseconds after each
/// exchange); then every device
/// exchanges twice more and each must hold exactly what it selects of its
/// tenant's notes as the hub's tables in PostgreSQL hold them (read with
/// SQL, not through the hub's pulls). Every
/// tenant has sync rules; half the devices subscribe to half of the notes
/// (two of four buckets) and write only those. With several hub processes
/// (`urls`), each exchange goes to one of them at random, as a load
/// balancer would send it. Each device has a `URLSession` of its own.
struct LoadTest {
    let bench: Bench
    /// The hub's database, read for the reference.
    let postgres: PostgresClient
    let urls: [URL]
    let devices: Int
    let tenants: Int
    let seconds: Int
    /// Milliseconds a device waits after an exchange, drawn each time.
    let pause: ClosedRange<Int>

    struct Member: Sendable {
        let db: Database
        /// The device's client of each hub process.
        let hubs: [HTTPHub]
        let tenant: Int
        /// The buckets it subscribes to; nil: everything.
        let buckets: Set<String>?

        var hub: HTTPHub { hubs.randomElement()! }

        /// Whether the device writes and holds the note `id`.
        func holds(_ id: Int64) -> Bool { buckets?.contains(LoadTest.bucket(id)) ?? true }
    }

    static func bucket(_ id: Int64) -> String { "b\(id % 4)" }
    static let rules = "Note: true\nNote fields: bucket\n"

    /// What the devices saw, from any task.
    final class Tally: Sendable {
        private let state = NIOLockedValueBox<(latencies: [Double], errors: [String], writes: Int)>(([], [], 0))
        func exchanged(_ seconds: Double) { state.withLockedValue { $0.latencies.append(seconds) } }
        func failed(_ error: any Error) { state.withLockedValue { $0.errors.append("\(error)") } }
        func wrote(_ count: Int) { state.withLockedValue { $0.writes += count } }
        var snapshot: (latencies: [Double], errors: [String], writes: Int) { state.withLockedValue { $0 } }
    }

    static let schema = Schema([
        ObjectSchema("Note", primaryKey: "id") {
            Property("id", .int)
            Property("title", .string, default: .string(""))
            Property("count", .int, default: .int(0))
            Property("bucket", .string, default: .string(""))
        }
    ])

    func run() async throws {
        var members: [Member] = []
        let tenantIDs = (0 ..< tenants).map { _ in UUID() }
        for index in 0 ..< devices {
            let tenant = index % tenants
            let token = try await bench.hub.addDevice(tenant: tenantIDs[tenant], name: "load \(index)").token
            if index < tenants { try await bench.hub.setRules(tenant: tenantIDs[tenant], source: Self.rules) }
            let db = try bench.open("load-\(index).strata", tenant: tenantIDs[tenant], schema: Self.schema)
            // Every other device of a tenant subscribes to two buckets.
            let buckets: Set<String>? =
                (index / tenants) % 2 == 0 ? nil : (index / tenants) % 4 == 1 ? ["b0", "b1"] : ["b2", "b3"]
            if let buckets {
                try db.sync.subscribe { tx in
                    try tx.objects("Note").where("bucket", in: buckets.sorted().map(Value.string))
                }
            }
            // A session of its own, as each phone has its connections:
            // on Linux a session holds at most 6 connections per host, and
            // devices sharing one would queue for them in this process
            // instead of being served by the hub.
            let session = URLSession(configuration: .ephemeral)
            members.append(
                Member(
                    db: db, hubs: urls.map { HTTPHub(url: $0, token: token, session: session) }, tenant: tenant,
                    buckets: buckets))
        }
        defer { for member in members { member.db.close() } }
        let tally = Tally()
        let end = ContinuousClock.now + .seconds(seconds)
        await withTaskGroup(of: Void.self) { group in
            for (index, member) in members.enumerated() {
                group.addTask {
                    var random = SystemRandomNumberGenerator()
                    // Each device starts at a random moment within one
                    // pause, as a fleet's devices do, not all at once.
                    try? await Task.sleep(for: .milliseconds(Int.random(in: 0 ... pause.upperBound, using: &random)))
                    var round = 0
                    while ContinuousClock.now < end {
                        round += 1
                        do {
                            var chosen: [Int64] = []
                            let count = Int.random(in: 1 ... 3, using: &random)
                            while chosen.count < count {
                                let id = Int64.random(in: 0 ..< 100, using: &random)
                                if member.holds(id) { chosen.append(id) }
                            }
                            let ids = chosen
                            let round = round
                            try await member.db.write { tx in
                                for id in ids {
                                    _ = try tx.upsert(
                                        "Note",
                                        [
                                            "id": .int(id), "title": .string("device \(index) round \(round)"),
                                            "count": .int(Int64(round)), "bucket": .string(Self.bucket(id)),
                                        ])
                                }
                            }
                            tally.wrote(ids.count)
                            let start = ContinuousClock.now
                            try await member.db.sync.exchange(with: member.hub)
                            tally.exchanged((ContinuousClock.now - start).seconds)
                        } catch {
                            tally.failed(error)
                        }
                        try? await Task.sleep(for: .milliseconds(Int.random(in: pause, using: &random)))
                    }
                }
            }
        }
        // Quiet: every device exchanges twice round, then each tenant's
        // devices must agree.
        for _ in 0 ..< 2 {
            for member in members { try await member.db.sync.exchange(with: member.hub) }
        }
        // Each tenant's reference: its notes in the hub's final state, as
        // PostgreSQL holds them; each device must hold exactly those its
        // subscriptions select (its rules, `Note: true`, select all).
        var converged = 0
        for tenant in 0 ..< tenants {
            let notes = try await finalNotes(of: tenantIDs[tenant])
            var agree = true
            for member in members where member.tenant == tenant {
                let expected = notes.filter { _, fields in
                    guard let buckets = member.buckets else { return true }
                    guard case .string(let bucket)? = fields["bucket"] else { return false }
                    return buckets.contains(bucket)
                }.map { id, fields in Self.line(.int(id), { fields[$0] ?? .null }) }.sorted()
                let held = try await member.db.read { tx in
                    try tx.objects("Note").array().map { note in Self.line(note["id"], { note[$0] }) }.sorted()
                }
                // Exactly: what the device holds is what it selects.
                if held != expected || expected.isEmpty { agree = false }
            }
            if agree { converged += 1 }
        }
        let (latencies, errors, writes) = tally.snapshot
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> String {
            sorted.isEmpty
                ? "-" : String(format: "%.0f ms", sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1_000)
        }
        print("")
        print("| load test | value |")
        print("|---|---:|")
        print("| devices, tenants, hub processes | \(devices), \(tenants), \(urls.count) |")
        print("| seconds | \(seconds) |")
        print("| pause after each exchange | \(pause.lowerBound)-\(pause.upperBound) ms |")
        print("| exchanges (push + pull rounds) | \(latencies.count.formatted()) |")
        print("| notes written | \(writes.formatted()) |")
        print("| exchange latency p50, p99 | \(percentile(0.5)), \(percentile(0.99)) |")
        print("| errors | **\(errors.count)** |")
        print("| tenants whose every device holds exactly what it selects | **\(converged) of \(tenants)** |")
        for error in Set(errors).prefix(5) { print("error: \(error)") }
        if !errors.isEmpty || converged != tenants { throw LoadTestFailure() }
    }
}

extension LoadTest {
    /// A note as the convergence check compares it.
    static func line(_ id: Value, _ fields: (String) -> Value) -> String {
        "\(id) \(fields("title")) \(fields("count")) \(fields("bucket"))"
    }

    /// The live notes of `tenant` and their top-level fields, by id, read
    /// from the hub's `objects` and `fields` tables.
    func finalNotes(of tenant: UUID) async throws -> [Int64: [String: Value]] {
        let rows = try await postgres.query(
            """
            SELECT o.object_key, f.path, f.value FROM objects o
            JOIN fields f ON f.tenant_id = o.tenant_id AND f.type_name = o.type_name AND f.object_key = o.object_key
            WHERE o.tenant_id = \(tenant) AND o.type_name = 'Note' AND o.cl % 2 = 1 AND f.cl = o.cl
            """, logger: Logger(label: "strata-hub-bench"))
        var notes: [Int64: [String: Value]] = [:]
        for try await (key, path, value) in rows.decode((ByteBuffer, String, ByteBuffer).self) {
            guard case .int(let id) = try ChangesetCodec.value(from: Array(key.readableBytesView)) else {
                throw ValidationError("a note of tenant \(tenant) has a key that is not an int")
            }
            notes[id, default: [:]][path] = try ChangesetCodec.value(from: Array(value.readableBytesView))
        }
        return notes
    }
}

struct LoadTestFailure: Error, CustomStringConvertible {
    var description: String { "The load test saw errors or a tenant whose devices did not converge." }
}

extension Array where Element: Sendable {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
