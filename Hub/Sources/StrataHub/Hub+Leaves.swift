import Foundation
import NIOCore
import PostgresNIO
@_spi(Hub) import Strata

/// Objects that leave a device's view (docs/Hub.md, "Leaving a view"):
/// another device changed a field the sync rules or the device's
/// subscriptions test, and the device may no longer read the object, or
/// its subscriptions no longer select it. A pull names them, and the
/// device removes them without a delete for any peer to hear of.
///
/// What a device could read at its cursor is the view evaluated on the
/// ruled fields' values as they were then: `sync_moves` keeps each value
/// a commit replaced, with that commit's number, until compaction.
extension Hub {
    /// An object by type name and key bytes, as the hub's tables hold it.
    private struct ObjectName: Hashable {
        var type: String
        var key: ByteBuffer
    }

    /// Adds to `builder` the objects that left the device's view between
    /// its cursor `window.since` and the page's end: those of the page's
    /// commits (`window.after`, `window.upto`] whose ruled values changed
    /// after `since`, that the device could read then and cannot now; and,
    /// through each rule's `field in Type`, the objects that followed one
    /// of them into the view and leave with it.
    func addLeaving(
        to builder: inout PullBuilder, device: Device, rules: SyncRules, subscriptions: HubSubscriptions?,
        window: (since: UInt64, after: UInt64, upto: UInt64), epoch: UUID, _ connection: PostgresConnection
    ) async throws {
        var text = SQLText()
        let tenant = text.bind(device.tenant)
        let since = text.bind(Int64(bitPattern: window.since))
        let (after, upto) = (text.bind(Int64(bitPattern: window.after)), text.bind(Int64(bitPattern: window.upto)))
        let (now, then) = try await views(device, rules, subscriptions, since: since, &text, connection)
        text.sql = """
            SELECT o.type_name, o.object_key FROM objects o
            WHERE o.tenant_id = \(tenant) AND o.seq > \(after) AND o.seq <= \(upto)
              AND EXISTS (SELECT 1 FROM sync_moves m WHERE m.tenant_id = o.tenant_id AND m.type_name = o.type_name
                          AND m.object_key = o.object_key AND m.seq > \(since))
              AND NOT (true\(now)) AND (true\(then))
            """
        var leaving = try await names(text.query, connection)
        var seen = Set(leaving)
        // What followed a leaving object in leaves with it, and what
        // followed that, to the end of the rules' chains.
        let follows = rules.types.sorted { $0.key < $1.key }.flatMap { type, typeRules in
            (typeRules.read?.followedLinks ?? []).map { (type: type, field: $0.field, target: $0.type) }
        }
        var frontier = leaving
        while !frontier.isEmpty, !follows.isEmpty {
            var next: [ObjectName] = []
            for follow in follows {
                let targets = frontier.filter { $0.type == follow.target }
                guard !targets.isEmpty else { continue }
                let links = try targets.map {
                    AttrValue.bytes(.link(try ChangesetCodec.value(from: Array($0.key.readableBytesView))))
                }
                var text = SQLText()
                let tenant = text.bind(device.tenant)
                let since = text.bind(Int64(bitPattern: window.since))
                let (type, field, values) = (text.bind(follow.type), text.bind(follow.field), text.bind(links))
                let (now, then) = try await views(device, rules, subscriptions, since: since, &text, connection)
                text.sql = """
                    SELECT o.type_name, o.object_key FROM sync_attrs a JOIN objects o
                      ON o.tenant_id = a.tenant_id AND o.type_name = a.type_name AND o.object_key = a.object_key
                    WHERE a.tenant_id = \(tenant) AND a.type_name = \(type) AND a.field = \(field)
                      AND a.value = ANY(\(values)::bytea[]) AND NOT (true\(now)) AND (true\(then))
                    """
                for name in try await names(text.query, connection) where seen.insert(name).inserted {
                    next.append(name)
                }
            }
            leaving += next
            frontier = next
        }
        let time = HybridTime(milliseconds: Hub.now(), counter: 0)
        for name in leaving {
            try builder.addLeaving(name.type, key: name.key, origin: epoch, time: time)
        }
        if !leaving.isEmpty { metrics.left(leaving.count) }
    }

    /// The view of the device now and at the hub commit `since` (a bound
    /// placeholder), as ` AND ...` SQL over the `objects` row `o`.
    private func views(
        _ device: Device, _ rules: SyncRules, _ subscriptions: HubSubscriptions?, since: String,
        _ text: inout SQLText, _ connection: PostgresConnection
    ) async throws -> (now: String, then: String) {
        let now = try await view(of: device, rules: rules, subscriptions: subscriptions, text: &text, connection)
        let then = try await view(
            of: device, rules: rules, subscriptions: subscriptions, text: &text, asOf: since, connection)
        return (now, then)
    }

    private func names(_ query: PostgresQuery, _ connection: PostgresConnection) async throws -> [ObjectName] {
        var names: [ObjectName] = []
        let rows = try await connection.query(query, logger: logger)
        for try await (type, key) in rows.decode((String, ByteBuffer).self) {
            names.append(ObjectName(type: type, key: key))
        }
        return names
    }
}
