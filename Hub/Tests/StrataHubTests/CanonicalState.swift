import Crypto
import Foundation
@_spi(Hub) import Strata

@testable import StrataHub

/// A dataset's merged state in a form that two stores compare by: every
/// object's type, key and causal length, and every register (a field, or
/// a field inside an embedded object's life) with its value and stamp,
/// sorted. Two stores that merged the same changes have the same lines,
/// whatever order the changes came in and whichever store merged them.
struct CanonicalState: Equatable, CustomStringConvertible {
    private(set) var lines: [String] = []
    /// Per object (`type keyhex`, as its lines begin), its type and the
    /// values of its top-level fields: what views select by.
    private var objects: [String: (type: String, fields: [String: Value])] = [:]
    /// The objects alive (an odd causal length).
    private var alive: Set<String> = []

    static func == (a: CanonicalState, b: CanonicalState) -> Bool { a.lines == b.lines }

    /// The state a changeset of everything a store holds describes (a
    /// file's `changes(since: 0)`, or a pull from the start).
    init(_ changesets: [Changeset]) throws {
        var objects: [String: String] = [:]
        var registers: [String: String] = [:]
        for changeset in changesets {
            let rows = try ChangeRows(try ChangesetCodec.decode(changeset.data))
            for object in rows.objects {
                let id = "\(object.type) \(Self.hex(object.key.readableBytesView))"
                objects[id] = "cl \(object.causalLength)"
                if object.causalLength % 2 == 1 { alive.insert(id) } else { alive.remove(id) }
                self.objects[id, default: (object.type, [:])].type = object.type
            }
            for field in rows.fields.joined() {
                let id = "\(field.type) \(Self.hex(field.key.readableBytesView))"
                registers["\(id) \(field.path)"] =
                    "\(field.descriptor) rank \(field.rank) = \(Self.hex(field.value.readableBytesView)) @\(field.time)/\(field.origin)"
                if field.parent == nil {
                    // An embedded object's holder holds no value to select by.
                    self.objects[id, default: (field.type, [:])].fields[field.path] = try? ChangesetCodec.value(
                        from: Array(field.value.readableBytesView))
                }
            }
        }
        // A register of an object's earlier life is not state.
        lines =
            objects.map { "\($0.key) \($0.value)" }
            + registers.map { "\($0.key) \($0.value)" }
        lines.sort()
    }

    /// The live objects `select` keeps (given each one's type and
    /// top-level fields) and their registers, without tombstones: what a
    /// device that syncs part of the dataset must hold, whose tombstones
    /// are those of the objects it happened to see.
    func live(selecting select: (_ type: String, _ fields: [String: Value]) -> Bool = { _, _ in true })
        -> CanonicalState
    {
        let kept = Set(
            alive.filter { id in objects[id].map { select($0.type, $0.fields) } ?? false })
        var state = self
        state.lines = lines.filter { line in
            let parts = line.split(separator: " ", maxSplits: 2)
            return parts.count == 3 && kept.contains("\(parts[0]) \(parts[1])")
        }
        state.alive = kept
        return state
    }

    /// How many live objects it holds.
    var liveObjects: Int { alive.count }

    /// Everything `database` holds, in pages.
    init(of database: Database) throws {
        var changesets: [Changeset] = []
        var cursor = SyncCursor.start
        while true {
            let changeset = try database.sync.changes(from: cursor, limit: 1_000)
            changesets.append(changeset)
            let summary = try changeset.summary()
            guard summary.hasMore else { break }
            cursor = SyncCursor(since: 0, after: summary.toSeq, afterKey: summary.toKey)
        }
        try self.init(changesets)
    }

    /// Everything the hub holds for `device`'s tenant, in pages.
    init(of hub: Hub, device: Hub.Device) async throws {
        var changesets: [Changeset] = []
        var after: UInt64 = 0
        let epoch = try await hub.session(device: device, site: SiteID.random()).epoch
        while true {
            let changeset = Changeset(
                data: try await hub.pull(device: device, since: 0, after: after, epoch: epoch, limit: 1_000))
            changesets.append(changeset)
            let summary = try changeset.summary()
            guard summary.hasMore else { break }
            after = summary.toSeq
        }
        try self.init(changesets)
    }

    /// A short digest of the lines, to print.
    var hash: String {
        SHA256.hash(data: Data(lines.joined(separator: "\n").utf8)).prefix(8).map { String(format: "%02x", $0) }
            .joined()
    }

    var description: String { "\(lines.count) lines, \(hash)" }

    /// The lines one state has and the other not, both ways, at most
    /// `limit` of each: what a failed comparison prints.
    func difference(from other: CanonicalState, limit: Int = 12) -> String {
        let mine = Set(lines)
        let theirs = Set(other.lines)
        let only = mine.subtracting(theirs).sorted().prefix(limit)
        let missing = theirs.subtracting(mine).sorted().prefix(limit)
        return "only here:\n  " + only.joined(separator: "\n  ") + "\nonly there:\n  "
            + missing.joined(separator: "\n  ")
    }

    private static func hex(_ buffer: some Sequence<UInt8>) -> String {
        buffer.map { String(format: "%02x", $0) }.joined()
    }
}
