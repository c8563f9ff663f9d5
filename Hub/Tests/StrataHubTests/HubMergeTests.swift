import Foundation
@_spi(Hub) import Strata
import Testing

@testable import StrataHub

/// The hub's SQL merge against the Swift merge of every Strata file, and
/// the convergence of devices at three app versions through the hub.
@Suite("The hub's merge")
struct HubMergeTests {
    /// The same random changesets, in the same random order, some twice,
    /// merged by the hub's SQL and by a Strata file: equal states.
    @Test(arguments: [11, 12, 13] as [UInt64])
    func sqlMergeEqualsTheSwiftMerge(seed: UInt64) async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let world = try await HubFuzzWorld(hub: hub, folder: folder, seed: seed)
            defer { world.close() }
            try await world.run(operations: 400)
            // Only what was delivered so far: no quiescing exchange.
            let sql = try await CanonicalState(of: hub, device: world.members[0].device)
            let swift = try CanonicalState(of: world.reference.database)
            #expect(world.counts["pushes", default: 0] > 20, "\(world.counts)")
            #expect(sql.lines.count > 50, "\(sql)")
            #expect(sql == swift, "seed \(seed): \(sql) vs \(swift)\n\(sql.difference(from: swift))")
        }
    }

    /// The same with sync rules that let every device read and write
    /// everything, but read fields to decide it: the merge through the
    /// rules' path (savepoint, copied values, checks before and after)
    /// leaves the state the Swift merge does, and every device converges.
    @Test(arguments: [14, 15] as [UInt64])
    func theMergeWithinRulesEqualsTheSwiftMerge(seed: UInt64) async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let world = try await HubFuzzWorld(hub: hub, folder: folder, seed: seed)
            defer { world.close() }
            try await hub.setRules(
                tenant: world.dataset,
                source: """
                    Item: title != 'never written' and count != -12345
                    Item fields: title, note
                    Person: name != 'never written'
                    Label: true
                    """)
            try await world.run(operations: 400)
            let sql = try await CanonicalState(of: hub, device: world.members[0].device)
            let swift = try CanonicalState(of: world.reference.database)
            #expect(sql.lines.count > 50, "\(sql)")
            #expect(sql == swift, "seed \(seed): \(sql) vs \(swift)\n\(sql.difference(from: swift))")
            try await world.quiesce()
            let state = try await CanonicalState(of: hub, device: world.members[0].device)
            for (index, member) in world.members.enumerated() {
                let device = try CanonicalState(of: member.db)
                #expect(device == state, "seed \(seed): device \(index)\n\(device.difference(from: state))")
            }
        }
    }

    /// The same with rules that give each device the colors its claims
    /// name (``HubFuzzViews``), and three more devices that subscribe to
    /// part of what they may read, some subscriptions from their first
    /// exchange and some added halfway (a first pull up to their cursor),
    /// and write inside what they hold, over HTTP. The hub's state is the
    /// Swift merge of every change; each of the five members, which may
    /// read every color, holds it all; each subscribed device holds exactly
    /// the live objects its rules and subscriptions select in it, register
    /// by register.
    ///
    /// With an odd seed, writes change colors (`movesAcrossViews`):
    /// objects leave and enter the devices' views, and each device must
    /// have removed what left (docs/Hub.md, "Leaving a view") and received
    /// what entered.
    @Test(arguments: [16, 17] as [UInt64])
    func theMergeWithinRulesAndSubscriptionsEqualsTheSwiftMerge(seed: UInt64) async throws {
        let views = HubFuzzViews(movesAcrossViews: seed % 2 == 1)
        try await TestCluster.withHub { hub, _ in
            try await HubClientTests.serving(hub) { url in
                let folder = try TemporaryFolder()
                defer { folder.remove() }
                let world = try await HubFuzzWorld(
                    hub: hub, folder: folder, seed: seed, claims: ViewedDevice.claims(HubFuzzViews.colors),
                    views: views)
                defer { world.close() }
                try await hub.setRules(tenant: world.dataset, source: ViewedDevice.rules)
                var devices: [ViewedDevice] = []
                for index in 0 ..< 3 {
                    devices.append(try await ViewedDevice(index, world: world, folder: folder, url: url))
                }
                defer { for device in devices { device.db.close() } }
                var rng = SplitMix64(seed: seed ^ 0x5EED)
                for round in 0 ..< 10 {
                    try await world.run(operations: 40)
                    if round == 4 { for device in devices { try device.subscribeLater() } }
                    for device in devices where Bool.random(using: &rng) {
                        for _ in 0 ..< Int.random(in: 1 ... 3, using: &rng) {
                            // With moves, a subscribed device only changes
                            // what it holds: a key it inserts that another
                            // device made meanwhile, outside its view, would
                            // stay with it if its values lost (docs/Hub.md,
                            // "Leaving a view").
                            try world.write(
                                on: device.db, version: device.version,
                                within: { type, key in
                                    device.holds(
                                        type, [HubFuzzViews.field(of: type): .string(HubFuzzViews.color(of: key))])
                                }, inserts: !views.movesAcrossViews)
                        }
                        try await device.db.sync.exchange(
                            with: device.hub, pageSize: Int.random(in: 3 ... 20, using: &rng))
                    }
                }
                try await world.quiesce()
                for _ in 0 ..< 2 { for device in devices { try await device.db.sync.exchange(with: device.hub) } }
                for device in devices { try world.mirror(device.db) }
                try await world.quiesce()

                let state = try await CanonicalState(of: hub, device: world.members[0].device)
                let swift = try CanonicalState(of: world.reference.database)
                #expect(state.liveObjects > 30, "\(state)")
                #expect(state == swift, "seed \(seed): \(state) vs \(swift)\n\(state.difference(from: swift))")
                for (index, member) in world.members.enumerated() {
                    let file = try CanonicalState(of: member.db)
                    #expect(file == state, "seed \(seed): member \(index)\n\(file.difference(from: state))")
                }
                for device in devices {
                    #expect(try device.db.sync.subscriptions().allSatisfy { $0.state == .complete })
                    let held = try CanonicalState(of: device.db).live()
                    let selected = state.live(selecting: device.holds)
                    #expect(selected.liveObjects > 0 && selected.liveObjects < state.liveObjects, "\(selected)")
                    #expect(
                        held == selected,
                        "seed \(seed): subscribed device \(device.index)\n\(held.difference(from: selected))")
                }
            }
        }
    }

    /// The convergence fuzz of sync part 1 through the hub: five devices
    /// at versions {1, 1, 2, 3, 3}, pushes dropped, duplicated and
    /// reordered, pulls dropped or applied twice; after a quiet exchange
    /// every device, the hub and the reference hold one state.
    @Test(arguments: [21, 22] as [UInt64])
    func devicesAtThreeVersionsConverge(seed: UInt64) async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let world = try await HubFuzzWorld(hub: hub, folder: folder, seed: seed)
            defer { world.close() }
            try await world.run(operations: 600)
            try await world.quiesce()
            let state = try await CanonicalState(of: hub, device: world.members[0].device)
            let reference = try CanonicalState(of: world.reference.database)
            #expect(state == reference, "seed \(seed): hub \(state), reference \(reference)")
            for (index, member) in world.members.enumerated() {
                let device = try CanonicalState(of: member.db)
                #expect(
                    device == state,
                    "seed \(seed): device \(index) (v\(member.version)) \(device), hub \(state)\n\(device.difference(from: state))"
                )
            }
            for key in ["pushes dropped", "pushes duplicated", "pulls dropped", "pulls applied twice", "deletes"] {
                #expect(world.counts[key, default: 0] > 0, "seed \(seed): no \(key) in \(world.counts)")
            }
        }
    }
}

/// A device of ``HubMergeTests/theMergeWithinRulesAndSubscriptionsEqualsTheSwiftMerge(seed:)``
/// that reads some colors (its claims) and subscribes to part of them.
struct ViewedDevice {
    /// Each type read by its color, written by anyone; subscriptions may
    /// test the color.
    static let rules = """
        Item read: title in claims.colors
        Item write: true
        Item fields: title
        Person read: name in claims.colors
        Person write: true
        Person fields: name
        Label: true
        Label fields: text
        """

    static func claims(_ colors: [String]) -> DeviceClaims {
        DeviceClaims(["colors": .array(colors.map { .string($0) })])
    }

    let index: Int
    let db: Database
    let version: Int
    let hub: HTTPHub
    let colors: Set<String>

    /// Device `index` (0, 1 or 2) of `world`'s dataset, at an app version
    /// that has every type, with the subscriptions of its first exchange.
    init(_ index: Int, world: HubFuzzWorld, folder: TemporaryFolder, url: URL) async throws {
        self.index = index
        version = [3, 2, 3][index]
        colors = Set([["red", "green"], ["green", "blue"], ["red", "green", "blue"]][index])
        var config = Database.Configuration(
            path: folder.file("viewed\(index).strata"), schemaVersion: UInt64(version),
            schema: HubFuzzSchema.schema(version: version))
        config.durability = .noSync
        config.mode = .synced
        config.sync = .init(dataset: world.dataset)
        db = try Database(configuration: config)
        let token = try await world.hub.addDevice(
            tenant: world.dataset, name: "viewed \(index)", claims: Self.claims(colors.sorted())
        ).token
        hub = HTTPHub(url: url, token: token)
        switch index {
        case 0:
            try db.sync.subscribe("red items") { tx in try tx.objects("Item").where("title", equals: .string("red")) }
            try db.sync.subscribe("labels") { tx in try tx.objects("Label") }
        case 1:
            try db.sync.subscribe("people") { tx in try tx.objects("Person") }
        default:
            try db.sync.subscribe("blue items") { tx in try tx.objects("Item").where("title", in: [.string("blue")]) }
            try db.sync.subscribe("green people") { tx in
                try tx.objects("Person").where("name", equals: .string("green"))
            }
        }
    }

    /// The subscriptions added halfway: their objects come by first pulls.
    func subscribeLater() throws {
        switch index {
        case 0:
            // Blue people are not the device's to read: only red ones come.
            try db.sync.subscribe("red and blue people") { tx in
                try tx.objects("Person").where("name", in: [.string("red"), .string("blue")])
            }
        case 1:
            try db.sync.subscribe("items but blue") { tx in
                try tx.objects("Item").where("title", notEquals: .string("blue"))
            }
            try db.sync.subscribe("blue labels") { tx in try tx.objects("Label").where("text", equals: .string("blue"))
            }
        default:
            try db.sync.subscribe("labels") { tx in try tx.objects("Label") }
        }
    }

    /// Whether its rules and subscriptions (all of them, those added
    /// halfway too) select an object of `type` with top-level `fields`,
    /// decided here, not by the hub.
    func holds(_ type: String, _ fields: [String: Value]) -> Bool {
        guard case .string(let color)? = fields[HubFuzzViews.field(of: type)] else { return false }
        let readable = type == "Label" || colors.contains(color)
        let subscribed =
            switch (index, type) {
            case (0, "Item"): color == "red"
            case (0, "Label"): true
            case (0, "Person"): color == "red" || color == "blue"
            case (1, "Person"): true
            case (1, "Item"): color != "blue"
            case (1, "Label"): color == "blue"
            case (2, "Item"): color == "blue"
            case (2, "Person"): color == "green"
            case (2, "Label"): true
            default: false
            }
        return readable && subscribed
    }
}
