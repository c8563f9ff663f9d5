import Foundation
@_spi(Hub) import Strata

@testable import StrataHub

/// Five files of one dataset at app versions {1, 1, 2, 3, 3}, written at
/// random through each one's own schema, syncing through a hub on
/// PostgreSQL over a bad network: pushes dropped, delivered twice or
/// late (in any order), answers lost, pulls dropped or applied twice.
///
/// Every push the hub gets, a reference file gets too (an
/// ``InProcessHub``, which merges as every Strata file does): the hub's
/// SQL merge and the Swift merge see the same changesets in the same
/// order, and their states must be equal.
final class HubFuzzWorld {
    struct Member {
        let db: Database
        let version: Int
        let site: SiteID
        let device: Hub.Device
    }

    let hub: Hub
    let reference: InProcessHub
    private(set) var members: [Member] = []
    private var rng: SplitMix64
    private var unique: Int64 = 0
    private var inFlight: [(member: Int, changeset: Changeset)] = []
    private(set) var counts: [String: Int] = [:]
    let dataset: UUID
    /// The view fields' values, when the world's objects fall into views
    /// (``HubFuzzViews``); nil: every value unique.
    let views: HubFuzzViews?

    /// `claims` are every member's; `views`, when given, makes each
    /// type's view field (``HubFuzzViews/field(of:)``) a color.
    init(
        hub: Hub, folder: TemporaryFolder, seed: UInt64, versions: [Int] = [1, 1, 2, 3, 3],
        claims: DeviceClaims = DeviceClaims(), views: HubFuzzViews? = nil
    ) async throws {
        self.hub = hub
        self.views = views
        rng = SplitMix64(seed: seed)
        dataset = UUID()
        reference = try InProcessHub(path: folder.file("reference.strata"), dataset: dataset)
        for (index, version) in versions.enumerated() {
            var config = Database.Configuration(
                path: folder.file("device\(index).strata"), schemaVersion: UInt64(version),
                schema: HubFuzzSchema.schema(version: version))
            config.durability = .noSync
            config.mode = .synced
            config.sync = .init(dataset: dataset)
            let db = try Database(configuration: config)
            let added = try await hub.addDevice(tenant: dataset, name: "device \(index)", claims: claims)
            guard let device = try await hub.device(token: added.token) else { throw HubTestError("no device") }
            members.append(Member(db: db, version: version, site: try db.sync.site, device: device))
        }
    }

    func close() {
        for member in members { member.db.close() }
        reference.close()
    }

    /// `operations` random steps: local writes, pushes, deliveries, pulls.
    func run(operations: Int) async throws {
        for _ in 0 ..< operations {
            let member = Int.random(in: 0 ..< members.count, using: &rng)
            let roll = Int.random(in: 0 ..< 100, using: &rng)
            if roll < 55 {
                try write(on: members[member].db, version: members[member].version)
            } else if roll < 70 {
                try await sendPushes(from: member)
            } else if roll < 85, !inFlight.isEmpty {
                try await deliver()
            } else {
                try await pull(into: member, faulty: true)
            }
        }
    }

    /// Delivers what is in flight, then every member pushes and pulls all,
    /// twice round.
    func quiesce() async throws {
        while !inFlight.isEmpty { try await deliver() }
        for _ in 0 ..< 2 {
            for member in members.indices {
                try await pushAll(from: member)
                try await pull(into: member, faulty: false)
            }
        }
    }

    // MARK: Network

    /// Pages of the member's changes past the hub's cursor of it (now and
    /// then from the start: a resend), each dropped, queued once or queued
    /// twice.
    private func sendPushes(from index: Int) async throws {
        let member = members[index]
        var cursor = try await hub.session(device: member.device, site: member.site).pushCursor
        if Int.random(in: 0 ..< 8, using: &rng) == 0 { cursor = .start }
        let limit = Int.random(in: 1 ... 12, using: &rng)
        for _ in 0 ..< 20 {
            let changeset = try member.db.sync.changes(from: cursor, limit: limit)
            let summary = try changeset.summary()
            switch Int.random(in: 0 ..< 10, using: &rng) {
            case 0: counts["pushes dropped", default: 0] += 1
            case 1:
                counts["pushes duplicated", default: 0] += 1
                for _ in 0 ..< 2 { queue(index, changeset) }
            default: queue(index, changeset)
            }
            cursor = SyncCursor(since: cursor.since, after: summary.toSeq, afterKey: summary.toKey)
            if !summary.hasMore { break }
        }
    }

    private func queue(_ member: Int, _ changeset: Changeset) {
        inFlight.insert((member, changeset), at: Int.random(in: 0 ... inFlight.count, using: &rng))
    }

    /// One queued push, chosen at random, to the hub and the reference.
    private func deliver() async throws {
        let (member, changeset) = inFlight.remove(at: Int.random(in: 0 ..< inFlight.count, using: &rng))
        try await push(changeset, from: member)
    }

    private func push(_ changeset: Changeset, from member: Int) async throws {
        let (status, answer) = try await hub.push(changeset.data, device: members[member].device)
        guard status == 200 else {
            throw HubTestError("push answered \(status): \(String(decoding: answer, as: UTF8.self))")
        }
        try reference.database.sync.apply(changeset)
        counts["pushes", default: 0] += 1
    }

    /// Gives the reference every change `db` holds (a device that
    /// exchanged with the hub on its own, the merge of which is
    /// idempotent): the reference then has what the hub got from it.
    func mirror(_ db: Database) throws {
        var cursor = SyncCursor.start
        while true {
            let changeset = try db.sync.changes(from: cursor, limit: 200)
            try reference.database.sync.apply(changeset)
            let summary = try changeset.summary()
            guard summary.hasMore else { break }
            cursor = SyncCursor(since: 0, after: summary.toSeq, afterKey: summary.toKey)
        }
    }

    /// Every change of the member the hub lacks, page after page.
    private func pushAll(from index: Int) async throws {
        let member = members[index]
        var cursor = try await hub.session(device: member.device, site: member.site).pushCursor
        while true {
            let changeset = try member.db.sync.changes(from: cursor, limit: 50)
            let (status, data) = try await hub.push(changeset.data, device: member.device)
            guard status == 200 else { throw HubTestError("push answered \(status)") }
            try reference.database.sync.apply(changeset)
            cursor = try JSONDecoder().decode(HubPushAnswer.self, from: data).acceptedThrough
            if !(try changeset.summary().hasMore) { break }
        }
    }

    /// Pages of the hub's changes past the member's cursor; when `faulty`,
    /// a page is now and then dropped (the rest of the pull with it) or
    /// applied twice.
    private func pull(into index: Int, faulty: Bool) async throws {
        let member = members[index]
        let epoch = try await hub.session(device: member.device, site: member.site).epoch
        let epochSite = SiteID(uuid: epoch)
        let limit = faulty ? Int.random(in: 1 ... 15, using: &rng) : 40
        while true {
            let cursor = try member.db.sync.cursor(of: epochSite)
            let changeset = Changeset(
                data: try await hub.pull(
                    device: member.device, since: cursor.since, after: cursor.after, epoch: epoch, limit: limit))
            let roll = faulty ? Int.random(in: 0 ..< 10, using: &rng) : 5
            if roll == 0 {
                counts["pulls dropped", default: 0] += 1
                return
            }
            try member.db.sync.apply(changeset, from: epochSite)
            if roll == 1 {
                counts["pulls applied twice", default: 0] += 1
                try member.db.sync.apply(changeset, from: epochSite)
            }
            counts["pulls", default: 0] += 1
            if !(try changeset.summary().hasMore) { break }
        }
    }

    // MARK: Writes

    /// A transaction of 1 to 4 inserts, updates or deletes on `db`, a file
    /// at app version `version` (a member's, or another device's of the
    /// dataset), through the fields its version declares; every value is
    /// unique, but for the view fields' colors. With `within`, only the
    /// objects it lets through are written: a device that holds part of
    /// the dataset writes inside it.
    func write(on db: Database, version: Int, within: ((String, Value) -> Bool)? = nil, inserts: Bool = true) throws {
        try db.write { tx in
            for _ in 0 ..< Int.random(in: 1 ... 4, using: &rng) {
                let types = HubFuzzSchema.types(version: version)
                let type = types[Int.random(in: 0 ..< types.count, using: &rng)]
                let key = Value.int(Int64.random(in: 0 ..< HubFuzzSchema.keys, using: &rng))
                if let within, !within(type, key) { continue }
                let current = try tx.object(type, key: key)
                let roll = Int.random(in: 0 ..< 10, using: &rng)
                if current != nil, roll == 0 {
                    _ = try tx.delete(type, key: key)
                    counts["deletes", default: 0] += 1
                } else if let current {
                    let names = HubFuzzSchema.fields(type, version: version).filter { _ in
                        Bool.random(using: &rng)
                    }
                    try tx.update(type, key: key, values(names, of: type, key: key, version: version, current: current))
                    counts["updates", default: 0] += 1
                } else if inserts {
                    var values = values(
                        HubFuzzSchema.fields(type, version: version), of: type, key: key, version: version,
                        current: nil)
                    values["id"] = key
                    _ = try tx.insert(type, values)
                    counts["inserts", default: 0] += 1
                }
            }
        }
    }

    private func values(_ names: [String], of type: String, key: Value, version: Int, current: DynamicObject?)
        -> [String: Value]
    {
        var values: [String: Value] = [:]
        for name in names {
            unique += 1
            let n = unique
            if let views, name == HubFuzzViews.field(of: type) {
                values[name] = .string(views.color(of: key, using: &rng))
                continue
            }
            switch name {
            case "count": values[name] = .int(n)
            case "score": values[name] = .double(Double(n) + 0.25)
            case "note": values[name] = Bool.random(using: &rng) ? .string("note\(n)") : .null
            case "tags":
                values[name] = .list((0 ..< Int.random(in: 0 ... 3, using: &rng)).map { .string("tag\(n)-\($0)") })
            case "home":
                // Some fields of the address it has (merged per register),
                // a new address (a new life), or none.
                let address = HubFuzzSchema.addressFields(version: version)
                if case .object(var fields)? = current?["home"], Int.random(in: 0 ..< 3, using: &rng) > 0 {
                    for field in address where Bool.random(using: &rng) { fields[field] = .string("\(field)\(n)") }
                    values[name] = .object(fields)
                } else if Bool.random(using: &rng) {
                    values[name] = .object(Dictionary(uniqueKeysWithValues: address.map { ($0, .string("\($0)\(n)")) }))
                } else {
                    values[name] = .null
                }
            default: values[name] = .string("\(name)\(n)")
            }
        }
        return values
    }
}

/// Views of the fuzz's objects, for sync rules and subscriptions to select
/// by: each type has a view field (`Item.title`, `Person.name`,
/// `Label.text`) whose value is one of three colors.
///
/// Without `movesAcrossViews`, the color is the key's and never changes,
/// in every life of the object, so an object never leaves a view that
/// held it; with it, each write gives a random color, and objects leave
/// and enter the devices' views (docs/Hub.md, "Leaving a view").
struct HubFuzzViews {
    static let colors = ["red", "green", "blue"]

    /// Whether an update may change an object's color (and an insert pick
    /// any), moving it across the devices' views.
    var movesAcrossViews = false

    /// The field that decides the views of `type`.
    static func field(of type: String) -> String {
        switch type {
        case "Item": "title"
        case "Person": "name"
        default: "text"
        }
    }

    /// The color an object of `key` never leaves while moves are off.
    static func color(of key: Value) -> String {
        guard case .int(let number) = key else { return colors[0] }
        return colors[Int(number % Int64(colors.count))]
    }

    /// The color a write gives the object `key`.
    func color(of key: Value, using rng: inout SplitMix64) -> String {
        movesAcrossViews ? Self.colors[Int.random(in: 0 ..< Self.colors.count, using: &rng)] : Self.color(of: key)
    }
}

/// The app versions of the hub's fuzz: version 1 has `Item` and `Person`
/// (with an embedded `Address`); version 2 adds `Item.note` and the type
/// `Label`; version 3 adds `Item.score` and `Address.zip`, which older
/// files keep without declaring.
enum HubFuzzSchema {
    static let keys: Int64 = 16

    static func types(version: Int) -> [String] {
        ["Item", "Person"] + (version >= 2 ? ["Label"] : [])
    }

    /// The fields a version writes, key left out.
    static func fields(_ type: String, version: Int) -> [String] {
        switch type {
        case "Item": ["title", "count", "tags"] + (version >= 2 ? ["note"] : []) + (version >= 3 ? ["score"] : [])
        case "Person": ["name", "home"]
        default: ["text"]
        }
    }

    static func addressFields(version: Int) -> [String] {
        ["street", "city"] + (version >= 3 ? ["zip"] : [])
    }

    static func schema(version: Int) -> Schema {
        var item: [Property] = [
            Property("id", .int),
            Property("title", .string, default: .string("")),
            Property("count", .int, default: .int(0)),
            Property.list("tags", of: .string),
        ]
        if version >= 2 { item.append(Property("note", .string, optional: true)) }
        if version >= 3 { item.append(Property("score", .double, default: .double(0))) }
        var types = [
            ObjectSchema(
                "Address", embedded: true,
                properties: addressFields(version: version).map { Property($0, .string, default: .string("")) }),
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("name", .string, default: .string(""))
                Property.embedded("home", "Address")
            },
            ObjectSchema("Item", primaryKey: "id", properties: item),
        ]
        if version >= 2 {
            types.append(
                ObjectSchema("Label", primaryKey: "id") {
                    Property("id", .int)
                    Property("text", .string, default: .string(""))
                })
        }
        return Schema(types)
    }
}

/// A small, seeded random number generator: a run repeats from its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
