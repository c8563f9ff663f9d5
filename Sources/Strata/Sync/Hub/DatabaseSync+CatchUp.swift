import Foundation

/// What a round did to catch up with a hub that had compacted tombstones
/// this file had not received (``SyncHubReport/catchUp``): it walked every
/// object the hub holds, and deleted here the objects the hub no longer
/// has, as the hub's tombstones would have (docs/Hub.md, "Compaction").
public struct SyncCatchUp: Sendable, Equatable {
    /// The file's cursor of the hub when the round began: older than
    /// ``compactedSeq``.
    public var since: UInt64
    /// Through which hub commit the hub had removed tombstones.
    public var compactedSeq: UInt64
    /// The objects of this file the hub no longer had, deleted here.
    public var removedObjects: Int
    /// The objects of this file the hub did not have that hold changes
    /// made here since the hub last acknowledged this file's changes:
    /// objects made here, and objects changed here after the hub deleted
    /// them. Kept, each as a new life with all its fields, and pushed:
    /// they live on every device.
    public var keptObjects: Int
}

/// An object by type name and encoded key, as a changeset names it.
struct ObjectName: Hashable {
    var type: String
    var key: [UInt8]
}

extension DatabaseSync {
    /// Deletes, as changes of the hub `hub` (the epoch's site), the live
    /// objects of this file absent from `present` (every object the hub
    /// holds) that this file changed nothing of since the hub acknowledged
    /// its changes (`acknowledged`, this file's sequence number): no field
    /// changed after it with this file's site as its origin. The hub deleted them
    /// and compacted their tombstones. The others are new here or changed
    /// here since, and stay, each as a new life (``revive(_:hub:)``).
    /// Leaves the cursor of `hub` as it is.
    ///
    /// - Returns: How many objects it deleted and kept, and what the
    ///   deletes changed.
    ///
    /// With `subscriptions`, the walk covered only what they select: an
    /// object none of them selects is not the walk's to remove, and one
    /// they select that the walk did not bring leaves the file without a
    /// delete (``ChangeEntry/leavesView``): the hub may hold it outside
    /// them.
    func removeAbsent(
        _ present: Set<ObjectName>, hub: SiteID, acknowledged: UInt64, time: HybridTime,
        subscriptions: [SyncSubscription] = []
    ) throws -> (
        removed: Int, kept: Int, applied: SyncApplyReport
    ) {
        let handles = try handles()
        let site = handles.identity.site
        var types: [WireType] = []
        var typeIndexes: [String: Int] = [:]
        var entries: [ChangeEntry] = []
        var revived: Set<ObjectName> = []
        var position = LogPosition(seq: 0)
        while true {
            let page = try content(since: acknowledged, walkingFrom: position, limit: 5_000)
            for entry in page.entries where entry.causalLength % 2 == 1 {
                let type = page.types[entry.type]
                guard !present.contains(ObjectName(type: type.name, key: ChangesetCodec.valueBytes(entry.key)))
                else { continue }
                if !subscriptions.isEmpty {
                    let filters = subscriptions.filter { $0.typeName == type.name }.map(\.filter)
                    let selected = try database.read { tx in
                        guard let object = try tx.object(type.name, key: entry.key) else { return false }
                        return filters.contains { $0.matches { object[$0] } }
                    }
                    guard selected else { continue }
                }
                // Changed here since the hub's acknowledgement: a field
                // this file wrote after it (what came from the hub or a
                // peer is not this file's to keep).
                guard !entry.fields.contains(where: { page.origins[$0.stamp.origin] == site }) else {
                    revived.insert(ObjectName(type: type.name, key: ChangesetCodec.valueBytes(entry.key)))
                    continue
                }
                let index: Int
                if let known = typeIndexes[type.name] {
                    index = known
                } else {
                    types.append(type)
                    index = types.count - 1
                    typeIndexes[type.name] = index
                }
                // With subscriptions, an object the walk did not bring may
                // live on the hub outside them (moved elsewhere): it
                // leaves this file, and no delete goes back to the hub.
                let stamp = WireStamp(time: time, origin: 0)
                entries.append(
                    subscriptions.isEmpty
                        ? ChangeEntry(
                            type: index, key: entry.key, causalLength: entry.causalLength + 1, writerVersion: 0,
                            stamp: stamp, fields: [])
                        : .leaving(type: index, key: entry.key, stamp: stamp))
            }
            guard page.hasMore, page.to > position else { break }
            position = page.to
        }
        // Pages of a changeset the merge applies as the hub's; from the
        // start of its log, not complete: they move no cursor.
        var applied = SyncApplyReport()
        var start = 0
        while start < entries.count {
            let end = min(start + 5_000, entries.count)
            let report = try apply(
                content: ChangesetContent(
                    dataset: handles.identity.dataset, sender: hub, writerSchemaVersion: 0, senderTime: time,
                    fromSeq: 0, toSeq: 0, hasMore: true, types: types, fields: [], origins: [hub],
                    entries: Array(entries[start ..< end])))
            applied.add(report)
            start = end
        }
        if !revived.isEmpty { applied.add(try revive(revived, hub: hub)) }
        return (entries.count, revived.count, applied)
    }

    /// Gives each object of `names` a new life holding all its fields (its
    /// causal length up by two, as a delete and an insert would): the hub
    /// deleted it and forgot the tombstone, and this file changed it since.
    /// Pushed whole, it lives again everywhere, also on the devices that
    /// still hold the tombstone, whose life it outranks; pushed as an edit
    /// of the old life, the hub would take it back and those devices not.
    private func revive(_ names: Set<ObjectName>, hub: SiteID) throws -> SyncApplyReport {
        var applied = SyncApplyReport()
        var position = LogPosition(seq: 0)
        while true {
            var page = try content(since: 0, walkingFrom: position, limit: 5_000)
            let next = page.to
            let hasMore = page.hasMore
            page.entries = page.entries.compactMap { entry in
                guard entry.causalLength % 2 == 1,
                    names.contains(
                        ObjectName(type: page.types[entry.type].name, key: ChangesetCodec.valueBytes(entry.key)))
                else { return nil }
                var entry = entry
                entry.causalLength += 2
                return entry
            }
            if !page.entries.isEmpty {
                // The hub's, from the start of its log and not complete:
                // it moves no cursor.
                page.sender = hub
                (page.baseline, page.senderSeq, page.hasMore) = (0, 0, true)
                (page.fromSeq, page.fromKey, page.toSeq, page.toKey) = (0, [], 0, [])
                applied.add(try apply(content: page))
            }
            guard hasMore, next > position else { break }
            position = next
        }
        return applied
    }
}
