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

    /// The state a changeset of everything a store holds describes (a
    /// file's `changes(since: 0)`, or a pull from the start).
    init(_ changesets: [Changeset]) throws {
        var objects: [String: String] = [:]
        var registers: [String: String] = [:]
        for changeset in changesets {
            let rows = try ChangeRows(try ChangesetCodec.decode(changeset.data))
            for object in rows.objects {
                objects["\(object.type) \(Self.hex(object.key.readableBytesView))"] = "cl \(object.causalLength)"
            }
            for field in rows.fields.joined() {
                registers["\(field.type) \(Self.hex(field.key.readableBytesView)) \(field.path)"] =
                    "\(field.descriptor) rank \(field.rank) = \(Self.hex(field.value.readableBytesView)) @\(field.time)/\(field.origin)"
            }
        }
        // A register of an object's earlier life is not state.
        lines =
            objects.map { "\($0.key) \($0.value)" }
            + registers.map { "\($0.key) \($0.value)" }
        lines.sort()
    }

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
