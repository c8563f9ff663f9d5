import Foundation

@_spi(Hub) @testable import Strata

/// Five files of one dataset at app versions {1, 1, 2, 3, 3}, written at
/// random through each one's own app version (the dynamic API with the
/// properties that version declares), exchanging changesets over a bad
/// network: random partitions; changesets (or pages of a few objects),
/// each dropped, delivered up to three times, and delivered in any order.
///
/// Every value written is unique, and the ledger keeps each register's
/// winning write, read back from the writer's clock row.
final class SyncFuzzWorld {
    struct Device {
        let db: Database
        let version: Int
        let site: SiteID
    }

    /// How many keys each type's objects take: few, so that writes,
    /// deletes and re-inserts of one object meet often.
    static let keys: [String: Int64] = ["Item": 24, "Person": 10, "Label": 6]

    let seed: UInt64
    private(set) var devices: [Device] = []
    private(set) var ledger = SyncFuzzLedger()
    private var rng: SplitMix64
    private var unique: Int64 = 0
    /// Pages sent and not yet delivered: the receiver's index and the page.
    private var inFlight: [(to: Int, changeset: Changeset)] = []
    /// The group of each device: pages go only within a group.
    private var groups: [Int]
    private(set) var counts: [String: Int] = [:]

    /// How many objects a page holds at most; nil: a changeset holds all
    /// the sender has after the receiver's cursor.
    let pageSizes: ClosedRange<Int>?

    init(folder: TemporaryFolder, seed: UInt64, pageSizes: ClosedRange<Int>?, versions: [Int] = [1, 1, 2, 3, 3]) throws
    {
        self.seed = seed
        self.pageSizes = pageSizes
        rng = SplitMix64(seed: seed)
        groups = Array(repeating: 0, count: versions.count)
        let dataset = UUID(uuidString: "0F7A6C52-8D11-4E0B-A5C3-5E2B9D4C\(String(format: "%04X", seed % 0xFFFF))")!
        for (index, version) in versions.enumerated() {
            var config = Database.Configuration(
                path: folder.path("device\(index).strata"), schemaVersion: UInt64(version),
                schema: SyncFuzzSchema.schema(version: version))
            config.durability = .noSync
            config.mode = .synced
            config.sync = .init(dataset: dataset)
            let db = try Database(configuration: config)
            devices.append(Device(db: db, version: version, site: try db.sync.site))
        }
    }

    /// Runs `operations` local writes, with network traffic between them.
    func run(operations: Int) throws {
        for _ in 0 ..< operations {
            try write(on: Int.random(in: 0 ..< devices.count, using: &rng))
            let roll = Int.random(in: 0 ..< 100, using: &rng)
            if roll < 12 {
                try send()
            } else if roll < 30, !inFlight.isEmpty {
                try deliver()
            } else if roll < 31 {
                repartition()
            }
        }
    }

    /// Delivers what is in flight, then exchanges everything in a ring and
    /// between all pairs, twice.
    func quiesce() throws {
        while !inFlight.isEmpty { try deliver() }
        for _ in 0 ..< 2 {
            for index in devices.indices {
                try devices[index].db.sync.exchange(with: devices[(index + 1) % devices.count].db)
            }
            for a in devices.indices {
                for b in devices.indices where a < b { try devices[a].db.sync.exchange(with: devices[b].db) }
            }
        }
    }

    func close() {
        for device in devices { device.db.close() }
    }

    // MARK: Network

    private func repartition() {
        let parts = Int.random(in: 1 ... 3, using: &rng)
        groups = devices.indices.map { _ in Int.random(in: 0 ..< parts, using: &rng) }
        counts["partitions", default: 0] += 1
    }

    /// One device sends another the pages of its changes since the other's
    /// cursor of it (sometimes since earlier: a resend).
    private func send() throws {
        let from = Int.random(in: 0 ..< devices.count, using: &rng)
        let to = Int.random(in: 0 ..< devices.count, using: &rng)
        guard from != to, groups[from] == groups[to] else { return }
        let sender = devices[from]
        let cursor = try devices[to].db.sync.cursor(of: sender.site)
        var start: SyncCursor
        if Int.random(in: 0 ..< 10, using: &rng) == 0 {
            let since = UInt64.random(in: 0 ... cursor.since, using: &rng)
            start = SyncCursor(since: since, after: since)
        } else {
            start = cursor
        }
        let limit = pageSizes.map { Int.random(in: $0, using: &rng) } ?? 1_000_000
        for _ in 0 ..< 40 {
            let changeset = try sender.db.sync.changes(from: start, limit: limit)
            let summary = try changeset.summary()
            counts["pages", default: 0] += 1
            if !summary.toKey.isEmpty { counts["split pages", default: 0] += 1 }
            if Int.random(in: 0 ..< 10, using: &rng) == 0 {
                counts["dropped", default: 0] += 1
            } else {
                for _ in 0 ..< Int.random(in: 1 ... 3, using: &rng) {
                    inFlight.insert((to, changeset), at: Int.random(in: 0 ... inFlight.count, using: &rng))
                }
            }
            // The next page: the walk goes on, the baseline stays.
            start = SyncCursor(since: start.since, after: summary.toSeq, afterKey: summary.toKey)
            if !summary.hasMore { break }
        }
    }

    /// Applies one page in flight, chosen at random.
    private func deliver() throws {
        let (to, changeset) = inFlight.remove(at: Int.random(in: 0 ..< inFlight.count, using: &rng))
        try devices[to].db.sync.apply(changeset)
        counts["applied", default: 0] += 1
    }

    // MARK: Writes

    /// What one write did to one object, for the ledger.
    private struct Touch {
        var type: String
        var key: Int64
        var values: [String: Value]
    }

    /// One write transaction of one to three changes on distinct objects
    /// (one in twenty: up to twelve, more than a small page holds).
    private func write(on index: Int) throws {
        let device = devices[index]
        var touches: [Touch] = []
        try device.db.write { tx in
            var used: Set<String> = []
            let changes = Int.random(in: 0 ..< 20, using: &rng) == 0 ? 12 : 3
            for _ in 0 ..< Int.random(in: 1 ... changes, using: &rng) {
                let type = pick(["Item", "Item", "Item", "Person"] + (device.version >= 2 ? ["Label"] : []))
                let key = Int64.random(in: 1 ... SyncFuzzWorld.keys[type]!, using: &rng)
                guard used.insert("\(type)\(key)").inserted else { continue }
                let current = try tx.object(type, key: .int(key))
                if current == nil {
                    var values = try fields(
                        SyncFuzzSchema.properties(type, version: device.version).filter { $0 != "id" }, type, tx,
                        version: device.version, current: nil)
                    values["id"] = .int(key)
                    _ = try tx.insert(type, values)
                    values["id"] = nil
                    touches.append(Touch(type: type, key: key, values: values))
                    counts["inserts", default: 0] += 1
                } else if Int.random(in: 0 ..< 5, using: &rng) == 0 {
                    // A person's delete nullifies the links to it: stamped
                    // writes of the items, recorded as such.
                    let holders =
                        type == "Person"
                        ? try tx.objects("Item", linkingTo: .int(key), through: "owner").array().compactMap {
                            $0.primaryKey.int
                        } : []
                    _ = try tx.delete(type, key: .int(key))
                    touches.append(Touch(type: type, key: key, values: [:]))
                    for holder in holders { touches.append(Touch(type: "Item", key: holder, values: ["owner": .null])) }
                    counts["deletes", default: 0] += 1
                    break
                } else {
                    let names = SyncFuzzSchema.properties(type, version: device.version).filter { $0 != "id" }
                    let chosen = names.filter { _ in Bool.random(using: &rng) }
                    let values = try fields(
                        chosen.isEmpty ? [pick(names)] : chosen, type, tx, version: device.version, current: current)
                    try tx.update(type, key: .int(key), values)
                    touches.append(Touch(type: type, key: key, values: values))
                    counts["updates", default: 0] += 1
                }
            }
        }
        for touch in touches {
            var names = Array(touch.values.keys)
            if case .object(let address)? = touch.values["home"] { names += address.keys.map { "home.\($0)" } }
            guard
                let (causalLength, stamps, lives, last) = try SyncFuzzState.stamps(
                    in: device.db, touch.type, key: touch.key, fields: names)
            else { throw FuzzFailure("\(touch.type)[\(touch.key)] has no clock row after a write") }
            ledger.note(.init(type: touch.type, key: touch.key), causalLength: causalLength)
            // A value the record held already is no write (not stamped):
            // clearing a link whose target has not arrived here, which
            // the record shows as null, leaves its register as it was.
            var written = touch.values
            if let home = written["home"] {
                // An embedded object is registers per path: its life, and
                // each field inside it, in that life.
                let life = lives["home"] ?? 0
                ledger.note(
                    SyncFuzzRegister(type: touch.type, key: touch.key, field: "home"), life: life,
                    causalLength: causalLength)
                written["home"] = nil
                if case .object(let address) = home {
                    for (field, value) in address where stamps["home.\(field)"] == last {
                        ledger.record(
                            SyncFuzzRegister(type: touch.type, key: touch.key, field: "home.\(field)"), value,
                            stamp: last, causalLength: causalLength, life: life)
                    }
                }
            }
            for (name, value) in written where stamps[name] == last {
                ledger.record(
                    SyncFuzzRegister(type: touch.type, key: touch.key, field: name), value, stamp: stamps[name]!,
                    causalLength: causalLength)
            }
        }
    }

    /// New values for fields `names` of a `type` object, each unique in the
    /// run (a link names a person that lives here, or nothing).
    private func fields(
        _ names: [String], _ type: String, _ tx: WriteTransaction, version: Int, current: DynamicObject?
    ) throws -> [String: Value] {
        var values: [String: Value] = [:]
        for name in names {
            unique += 1
            let n = unique
            switch name {
            case "title", "name", "text": values[name] = .string("\(name)\(n)")
            case "count": values[name] = .int(n)
            case "score": values[name] = .double(Double(n) + 0.5)
            case "note": values[name] = Bool.random(using: &rng) ? .string("note\(n)") : .null
            case "tags":
                values[name] = .list((0 ..< Int.random(in: 0 ... 3, using: &rng)).map { .string("tag\(n)-\($0)") })
            case "ranks":
                values[name] = .list((0 ..< Int.random(in: 0 ... 3, using: &rng)).map { .int(n * 10 + Int64($0)) })
            case "home":
                // One field of the address it has (merged per path), a new
                // address, or none.
                let address = SyncFuzzSchema.addressFields(version: version)
                if case .object(var fields)? = current?["home"], Int.random(in: 0 ..< 3, using: &rng) > 0 {
                    for field in address where Bool.random(using: &rng) { fields[field] = .string("\(field)\(n)") }
                    values[name] = .object(fields)
                } else if Bool.random(using: &rng) {
                    values[name] = .object(Dictionary(uniqueKeysWithValues: address.map { ($0, .string("\($0)\(n)")) }))
                } else {
                    values[name] = .null
                }
            case "owner":
                let people = try tx.objects("Person").array().compactMap(\.primaryKey.int)
                values[name] =
                    people.isEmpty || Int.random(in: 0 ..< 4, using: &rng) == 0 ? .null : .link(.int(pick(people)))
            default: throw FuzzFailure("no values for \(type).\(name)")
            }
        }
        return values
    }

    private func pick<T>(_ choices: [T]) -> T { choices[Int.random(in: 0 ..< choices.count, using: &rng)] }
}
