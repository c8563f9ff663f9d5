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
