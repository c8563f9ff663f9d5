import Foundation
import Testing

@testable import Strata

/// Seeded random workloads of relationships, mirrored step by step in a
/// plain in-memory model: inserts, deletes under every delete rule
/// (cascades that chain and loop, nullified links and list entries,
/// refused deletes), relinks, list edits (append, remove, reorder) and
/// embedded edits, in transactions of a few operations, some of them
/// rolled back. Every few transactions, and at the end, the database must
/// hold exactly what the model holds, the backlink queries must answer as
/// the model does, and `verify()` must find nothing.
///
/// The schema: a `Child` belongs to a `Parent` (cascade) and may follow a
/// leader `Child` (cascade, so deletes chain and can loop) and have a buddy
/// `Child` (nullify); an `Item` (automatic ids) may have a keeper `Parent`
/// (nullify); a `Parent` lists favorite items (nullify) and may pin one
/// (deny), and a `Child` lists toys (deny); a `Parent` has an optional
/// embedded `Address` (with an optional embedded `Geo`) and a list of past
/// addresses.
@Suite(.temporaryFolder) struct RelationshipWorkloadTests {
    let folder = TemporaryFolder.current

    static let schema = Schema([
        ObjectSchema("Parent", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property.embedded("address", "Address")
            Property.list("history", embedded: "Address")
            Property.list("favorites", linksTo: "Item")
            Property.link("pinned", to: "Item", onDelete: .deny)
        },
        ObjectSchema("Child", primaryKey: "id") {
            Property("id", .int)
            Property.link("parent", to: "Parent", onDelete: .cascade)
            Property.link("leader", to: "Child", onDelete: .cascade)
            Property.link("buddy", to: "Child")
            Property.list("tags", of: .string)
            Property.list("toys", linksTo: "Item", onDelete: .deny)
        },
        ObjectSchema("Item") {
            Property("label", .string)
            Property.link("keeper", to: "Parent")
        },
        ObjectSchema("Address", embedded: true) {
            Property("street", .string)
            Property("city", .string, default: "Leeds")
            Property.embedded("geo", "Geo")
        },
        ObjectSchema("Geo", embedded: true) {
            Property("lat", .double)
            Property("lon", .double)
        },
    ])

    struct Workload: Sendable, CustomTestStringConvertible {
        let mode: Database.Mode
        let seed: UInt64
        var testDescription: String { "\(mode), seed \(seed)" }
    }

    static let workloads = Fixtures.modes.flatMap { mode in
        [1, 20_261_125, 0xDEAD_BEEF].map { Workload(mode: mode, seed: $0) }
    }

    /// Transactions per run, operations per transaction at most, and how
    /// often the database is compared with the model.
    static let transactions = 600
    static let operationsPerTransaction = 8
    static let checkEvery = 50

    @Test(arguments: workloads)
    func theDatabaseFollowsTheModelThroughEveryOperation(_ workload: Workload) throws {
        var config = Fixtures.configuration(folder.path(), schema: Self.schema, mode: workload.mode)
        config.durability = .noSync
        let db = try Database(configuration: config)
        var random = SplitMix64(seed: workload.seed)
        var model = Model()
        var operations = 0
        var counts: [String: Int] = [:]
        for transaction in 1 ... Self.transactions {
            let rollBack = Int.random(in: 0 ..< 10, using: &random) == 0
            let before = model
            do {
                try db.write { tx throws in
                    // A retried transaction starts from the model it began with.
                    model = before
                    for _ in 0 ..< Int.random(in: 1 ... Self.operationsPerTransaction, using: &random) {
                        let kind = try model.step(tx, &random)
                        counts[kind, default: 0] += 1
                        operations += 1
                    }
                    if rollBack { throw RolledBack() }
                }
            } catch is RolledBack {
                model = before
            }
            if transaction % Self.checkEvery == 0 || transaction == Self.transactions {
                try expectMatches(db, model, "after transaction \(transaction) of \(workload)")
            }
        }
        #expect(operations > 1_500)
        // Every kind of operation ran, and deletes met every rule.
        for kind in Model.kinds {
            #expect(counts[kind, default: 0] > 0, "\(kind) never ran: \(counts)")
        }
    }

    struct RolledBack: Error {}

    /// Compares every object, a sample of backlink queries, and `verify()`.
    func expectMatches(_ db: Database, _ model: Model, _ when: String) throws {
        let stored = try RelationshipFixtures.contents(db)
        let expected = model.contents
        for type in ["Parent", "Child", "Item"] {
            let got = stored[type] ?? []
            let want = expected[type] ?? []
            #expect(got.count == want.count, "\(type) count \(when)")
            for (index, (g, w)) in zip(got, want).enumerated() where g != w {
                Issue.record("\(type) #\(index) differs \(when):\n  stored \(g)\n  model  \(w)")
                break
            }
        }
        try db.read { tx throws in
            for (id, _) in model.parents.prefix(20) {
                let children = try tx.objects("Child", linkingTo: .int(id), through: "parent").map { $0["id"] }
                #expect(children == model.children.filter { $0.value.parent == id }.keys.sorted().map { .int($0) })
            }
            for (id, _) in model.items.prefix(20) {
                let toys = try tx.objects("Child", linkingTo: .int(id), through: "toys").map { $0["id"] }
                #expect(toys == model.children.filter { $0.value.toys.contains(id) }.keys.sorted().map { .int($0) })
                let fans = try tx.objects("Parent", linkingTo: .int(id), through: "favorites").map { $0["id"] }
                #expect(fans == model.parents.filter { $0.value.favorites.contains(id) }.keys.sorted().map { .int($0) })
            }
        }
        let problems = try db.verify()
        #expect(problems.isEmpty, "\(when): \(problems)")
    }
}

// MARK: The model

extension RelationshipWorkloadTests {
    struct Geo: Equatable {
        var lat: Double
        var lon: Double
        var value: Value { .object(["lat": .double(lat), "lon": .double(lon)]) }
    }

    struct Address: Equatable {
        var street: String
        var city: String
        var geo: Geo?
        var value: Value {
            .object(["street": .string(street), "city": .string(city), "geo": geo?.value ?? .null])
        }
    }

    struct Parent {
        var name: String
        var address: Address?
        var history: [Address]
        var favorites: [Int64]
        var pinned: Int64?
    }

    struct Child {
        var parent: Int64?
        var leader: Int64?
        var buddy: Int64?
        var tags: [String]
        var toys: [Int64]
    }

    struct Item {
        var label: String
        var keeper: Int64?
    }

    /// What the database should hold, and the operations that change both.
    struct Model {
        var parents: [Int64: Parent] = [:]
        var children: [Int64: Child] = [:]
        var items: [Int64: Item] = [:]
        var nextParent: Int64 = 1
        var nextChild: Int64 = 1

        static let kinds = [
            "insert", "delete", "cascade", "nullify", "deny", "relink", "append", "remove", "reorder", "embedded",
        ]

        static func link(_ id: Int64?) -> Value { id.map { .link(.int($0)) } ?? .null }
        static func links(_ ids: [Int64]) -> Value { .list(ids.map { .link(.int($0)) }) }

        var contents: [String: [[String: Value]]] {
            [
                "Parent": parents.sorted { $0.key < $1.key }.map { id, p in
                    [
                        "id": .int(id), "name": .string(p.name), "address": p.address?.value ?? .null,
                        "history": .list(p.history.map(\.value)), "favorites": Self.links(p.favorites),
                        "pinned": Self.link(p.pinned),
                    ]
                },
                "Child": children.sorted { $0.key < $1.key }.map { id, c in
                    [
                        "id": .int(id), "parent": Self.link(c.parent), "leader": Self.link(c.leader),
                        "buddy": Self.link(c.buddy), "tags": .list(c.tags.map(Value.string)),
                        "toys": Self.links(c.toys),
                    ]
                },
                "Item": items.sorted { $0.key < $1.key }.map { _, i in
                    ["label": .string(i.label), "keeper": Self.link(i.keeper)]
                },
            ]
        }

        // MARK: Random choices

        static func pick<T>(_ keys: Dictionary<Int64, T>.Keys, _ random: inout SplitMix64) -> Int64? {
            keys.isEmpty ? nil : keys.sorted()[Int.random(in: 0 ..< keys.count, using: &random)]
        }

        static func maybe<T>(_ keys: Dictionary<Int64, T>.Keys, _ random: inout SplitMix64) -> Int64? {
            Bool.random(using: &random) ? pick(keys, &random) : nil
        }

        static func address(_ random: inout SplitMix64) -> Address {
            Address(
                street:
                    "\(Int.random(in: 1 ... 99, using: &random)) \(["Main", "High", "Mill"].randomElement(using: &random)!) St",
                city: ["Leeds", "York", "Hull"].randomElement(using: &random)!,
                geo: Bool.random(using: &random)
                    ? Geo(lat: Double(Int.random(in: -90 ... 90, using: &random)) / 2, lon: 0.25) : nil)
        }

        static func value(_ address: Address?) -> Value { address?.value ?? .null }

        // MARK: Steps

        /// One random operation, on the database and on the model. Returns
        /// its kind.
        mutating func step(_ tx: WriteTransaction, _ random: inout SplitMix64) throws -> String {
            switch Int.random(in: 0 ..< 100, using: &random) {
            case 0 ..< 30:
                try insert(tx, &random)
                return "insert"
            case 30 ..< 48:
                return try delete(tx, &random)
            case 48 ..< 62:
                try relink(tx, &random)
                return "relink"
            case 62 ..< 85:
                return try editList(tx, &random)
            default:
                try editEmbedded(tx, &random)
                return "embedded"
            }
        }

        mutating func insert(_ tx: WriteTransaction, _ random: inout SplitMix64) throws {
            // Children first: cascades take them by the dozen.
            switch [0, 1, 1, 1, 2, 2][Int.random(in: 0 ..< 6, using: &random)] {
            case 0:
                let id = nextParent
                nextParent += 1
                let favorites = (0 ..< Int.random(in: 0 ... 3, using: &random)).compactMap { _ in
                    Self.pick(items.keys, &random)
                }
                let parent = Parent(
                    name: "P\(id)", address: Bool.random(using: &random) ? Self.address(&random) : nil,
                    history: (0 ..< Int.random(in: 0 ... 2, using: &random)).map { _ in Self.address(&random) },
                    favorites: favorites,
                    pinned: Int.random(in: 0 ..< 4, using: &random) == 0 ? Self.pick(items.keys, &random) : nil)
                try tx.insert(
                    "Parent",
                    [
                        "id": .int(id), "name": .string(parent.name), "address": Self.value(parent.address),
                        "history": .list(parent.history.map(\.value)), "favorites": Self.links(parent.favorites),
                        "pinned": Self.link(parent.pinned),
                    ])
                parents[id] = parent
            case 1:
                let id = nextChild
                nextChild += 1
                let child = Child(
                    parent: Int.random(in: 0 ..< 5, using: &random) == 0 ? nil : Self.pick(parents.keys, &random),
                    leader: Self.maybe(children.keys, &random), buddy: Self.maybe(children.keys, &random),
                    tags: (0 ..< Int.random(in: 0 ... 2, using: &random)).map { "t\($0)" },
                    toys: Int.random(in: 0 ..< 4, using: &random) == 0
                        ? [Self.pick(items.keys, &random)].compactMap { $0 } : [])
                try tx.insert(
                    "Child",
                    [
                        "id": .int(id), "parent": Self.link(child.parent), "leader": Self.link(child.leader),
                        "buddy": Self.link(child.buddy), "tags": .list(child.tags.map(Value.string)),
                        "toys": Self.links(child.toys),
                    ])
                children[id] = child
            default:
                let item = Item(
                    label: "I\(Int.random(in: 0 ..< 1000, using: &random))", keeper: Self.maybe(parents.keys, &random))
                let id = try tx.insert("Item", ["label": .string(item.label), "keeper": Self.link(item.keeper)])
                guard case .int(let key) = id else { throw RolledBack() }
                #expect(items[key] == nil, "an automatic id given twice")
                items[key] = item
            }
        }

        enum Target: Hashable {
            case parent(Int64)
            case child(Int64)
            case item(Int64)
        }

        /// Deletes a random object on both sides; the model applies the rules
        /// as documented and must agree with the database on a refusal.
        mutating func delete(_ tx: WriteTransaction, _ random: inout SplitMix64) throws -> String {
            let target: Target
            let type: String
            let id: Int64
            switch [0, 1, 1, 2, 2][Int.random(in: 0 ..< 5, using: &random)] {
            case 0:
                guard let key = Self.pick(parents.keys, &random) else { return "delete" }
                (target, type, id) = (.parent(key), "Parent", key)
            case 1:
                guard let key = Self.pick(children.keys, &random) else { return "delete" }
                (target, type, id) = (.child(key), "Child", key)
            default:
                guard let key = Self.pick(items.keys, &random) else { return "delete" }
                (target, type, id) = (.item(key), "Item", key)
            }
            let outcome = planDelete(target)
            do {
                let deleted = try tx.delete(type, key: .int(id))
                #expect(deleted)
                #expect(!outcome.denied, "the database deleted \(target), which the model refuses")
            } catch let error as StrataError where error.code == .deleteDenied {
                #expect(outcome.denied, "the database refused to delete \(target): \(error.message)")
                return "deny"
            }
            guard !outcome.denied else { return "deny" }
            apply(outcome)
            return outcome.doomed.count > 1 ? "cascade" : outcome.nullifies ? "nullify" : "delete"
        }

        struct DeleteOutcome {
            var doomed: Set<Target>
            var denied: Bool
            var nullifies: Bool
        }

        /// Every object the delete reaches by cascade, and whether a deny
        /// rule from an object outside them refuses it.
        func planDelete(_ start: Target) -> DeleteOutcome {
            var doomed: Set<Target> = [start]
            var queue = [start]
            var denials: [Target] = []
            var nullifies = false
            while let next = queue.popLast() {
                var cascades: [Target] = []
                switch next {
                case .parent(let id):
                    cascades = children.filter { $0.value.parent == id }.map { .child($0.key) }
                    nullifies = nullifies || items.values.contains { $0.keeper == id }
                case .child(let id):
                    cascades = children.filter { $0.value.leader == id }.map { .child($0.key) }
                    nullifies = nullifies || children.values.contains { $0.buddy == id }
                case .item(let id):
                    denials += parents.filter { $0.value.pinned == id }.map { .parent($0.key) }
                    denials += children.filter { $0.value.toys.contains(id) }.map { .child($0.key) }
                    nullifies = nullifies || parents.values.contains { $0.favorites.contains(id) }
                }
                for target in cascades where doomed.insert(target).inserted { queue.append(target) }
            }
            return DeleteOutcome(
                doomed: doomed, denied: denials.contains { !doomed.contains($0) }, nullifies: nullifies)
        }

        mutating func apply(_ outcome: DeleteOutcome) {
            for target in outcome.doomed {
                switch target {
                case .parent(let id): parents[id] = nil
                case .child(let id): children[id] = nil
                case .item(let id): items[id] = nil
                }
            }
            for (id, var child) in children {
                if let buddy = child.buddy, children[buddy] == nil { child.buddy = nil }
                // Cascaded: a survivor's leader or parent is never deleted.
                #expect(child.leader.map { children[$0] != nil } ?? true)
                #expect(child.parent.map { parents[$0] != nil } ?? true)
                children[id] = child
            }
            for (id, var item) in items {
                if let keeper = item.keeper, parents[keeper] == nil { item.keeper = nil }
                items[id] = item
            }
            for (id, var parent) in parents {
                parent.favorites.removeAll { items[$0] == nil }
                #expect(parent.pinned.map { items[$0] != nil } ?? true)
                parents[id] = parent
            }
        }

        mutating func relink(_ tx: WriteTransaction, _ random: inout SplitMix64) throws {
            switch Int.random(in: 0 ..< 3, using: &random) {
            case 0:
                guard let id = Self.pick(children.keys, &random) else { return }
                var child = children[id]!
                switch Int.random(in: 0 ..< 3, using: &random) {
                case 0: child.parent = Self.maybe(parents.keys, &random)
                case 1: child.leader = Self.maybe(children.keys, &random)
                default: child.buddy = Self.maybe(children.keys, &random)
                }
                try tx.update(
                    "Child", key: .int(id),
                    [
                        "parent": Self.link(child.parent), "leader": Self.link(child.leader),
                        "buddy": Self.link(child.buddy),
                    ])
                children[id] = child
            case 1:
                guard let id = Self.pick(items.keys, &random) else { return }
                items[id]!.keeper = Self.maybe(parents.keys, &random)
                try tx.update("Item", key: .int(id), ["keeper": Self.link(items[id]!.keeper)])
            default:
                guard let id = Self.pick(parents.keys, &random) else { return }
                parents[id]!.pinned = Self.maybe(items.keys, &random)
                try tx.update("Parent", key: .int(id), ["pinned": Self.link(parents[id]!.pinned)])
            }
        }

        /// Appends to, removes from or reorders a list of links or strings.
        mutating func editList(_ tx: WriteTransaction, _ random: inout SplitMix64) throws -> String {
            let edit = ["append", "remove", "reorder"].randomElement(using: &random)!
            func edited<T>(_ list: [T], _ new: T?) -> [T] {
                var list = list
                switch edit {
                case "append": if let new { list.append(new) }
                case "remove": if !list.isEmpty { list.remove(at: Int.random(in: 0 ..< list.count, using: &random)) }
                default: list.shuffle(using: &random)
                }
                return list
            }
            switch Int.random(in: 0 ..< 3, using: &random) {
            case 0:
                guard let id = Self.pick(parents.keys, &random) else { return edit }
                parents[id]!.favorites = edited(parents[id]!.favorites, Self.pick(items.keys, &random))
                try tx.update("Parent", key: .int(id), ["favorites": Self.links(parents[id]!.favorites)])
            case 1:
                guard let id = Self.pick(children.keys, &random) else { return edit }
                children[id]!.toys = edited(children[id]!.toys, Self.pick(items.keys, &random))
                try tx.update("Child", key: .int(id), ["toys": Self.links(children[id]!.toys)])
            default:
                guard let id = Self.pick(children.keys, &random) else { return edit }
                children[id]!.tags = edited(children[id]!.tags, "x\(Int.random(in: 0 ..< 9, using: &random))")
                try tx.update("Child", key: .int(id), ["tags": .list(children[id]!.tags.map(Value.string))])
            }
            return edit
        }

        /// Sets, clears or changes an address, its geo, or the history.
        mutating func editEmbedded(_ tx: WriteTransaction, _ random: inout SplitMix64) throws {
            guard let id = Self.pick(parents.keys, &random) else { return }
            var parent = parents[id]!
            switch Int.random(in: 0 ..< 5, using: &random) {
            case 0: parent.address = Self.address(&random)
            case 1: parent.address = nil
            case 2:
                if var address = parent.address {
                    address.city = ["Leeds", "York", "Hull", "Ripon"].randomElement(using: &random)!
                    address.geo = address.geo == nil ? Geo(lat: 1, lon: 2) : nil
                    parent.address = address
                }
            case 3: parent.history.append(Self.address(&random))
            default:
                if !parent.history.isEmpty {
                    parent.history.remove(at: Int.random(in: 0 ..< parent.history.count, using: &random))
                }
                parent.history.reverse()
            }
            try tx.update(
                "Parent", key: .int(id),
                ["address": Self.value(parent.address), "history": .list(parent.history.map(\.value))])
            parents[id] = parent
        }
    }
}
