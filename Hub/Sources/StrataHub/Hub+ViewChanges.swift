import Foundation
import NIOCore
import PostgresNIO
@_spi(Hub) import Strata

/// Objects that enter or leave a device's view between two of its pulls
/// (docs/Hub.md, "Leaving a view"): another device changed a field the
/// sync rules or the device's subscriptions test. An object that leaves
/// is named by the pull, and the device removes it without a delete for
/// any peer to hear of; one that enters arrives whole. So do the objects
/// that follow it (`field in Type`), though they did not change.
///
/// What a device could read at its cursor is the view evaluated on the
/// ruled fields' values as they were then: `sync_moves` keeps each value
/// a commit replaced, with that commit's number, until compaction.
extension Hub {
    /// An object by type name and key bytes, as the hub's tables hold it.
    struct ObjectName: Hashable {
        var type: String
        var key: ByteBuffer
    }

    /// Which way objects cross the view.
    enum Crossing {
        /// Readable at the cursor, not now.
        case leaving
        /// Readable now, not at the cursor.
        case entering
    }

    /// A pull's window: the device's cursor `since`, and the commits
    /// (`after`, `upto`] of its page.
    struct PullWindow {
        var since: UInt64
        var after: UInt64
        var upto: UInt64
    }

    /// The objects that crossed the device's view `way` between its cursor
    /// and the page's end: those of the page's commits whose ruled values
    /// changed after the cursor, that the device could read then and not
    /// now (leaving) or now and not then (entering), with what followed
    /// them across (``followers(of:_:device:rules:subscriptions:since:_:)``);
    /// `followersOnly` leaves the page's own objects out.
    func crossing(
        _ way: Crossing, device: Device, rules: SyncRules, subscriptions: HubSubscriptions?, window: PullWindow,
        followersOnly: Bool = false, _ connection: PostgresConnection
    ) async throws -> [ObjectName] {
        // Without a rule that follows links, nothing follows: the pull's
        // own objects are all there is.
        if followersOnly, Self.follows(in: rules).isEmpty { return [] }
        var text = SQLText()
        let tenant = text.bind(device.tenant)
        let since = text.bind(Int64(bitPattern: window.since))
        let (after, upto) = (text.bind(Int64(bitPattern: window.after)), text.bind(Int64(bitPattern: window.upto)))
        let test = try await self.crossed(way, device, rules, subscriptions, since: since, &text, connection)
        text.sql = """
            SELECT o.type_name, o.object_key FROM objects o
            WHERE o.tenant_id = \(tenant) AND o.seq > \(after) AND o.seq <= \(upto)
              AND EXISTS (SELECT 1 FROM sync_moves m WHERE m.tenant_id = o.tenant_id AND m.type_name = o.type_name
                          AND m.object_key = o.object_key AND m.seq > \(since))
              AND \(test)
            """
        let crossed = try await names(text.query, connection)
        let followers = try await self.followers(
            of: crossed, way, device: device, rules: rules, subscriptions: subscriptions, since: window.since,
            connection)
        return followersOnly ? followers : crossed + followers
    }

    /// The objects that follow one of `start` (each rule's `field in
    /// Type`) across the view `way`, and those that follow them, to the
    /// end of the rules' chains; none of `start`.
    private func followers(
        of start: [ObjectName], _ way: Crossing, device: Device, rules: SyncRules,
        subscriptions: HubSubscriptions?, since: UInt64, _ connection: PostgresConnection
    ) async throws -> [ObjectName] {
        let follows = Self.follows(in: rules)
        var seen = Set(start)
        var followers: [ObjectName] = []
        var frontier = start
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
                let sinceBind = text.bind(Int64(bitPattern: since))
                let (type, field, values) = (text.bind(follow.type), text.bind(follow.field), text.bind(links))
                let test = try await self.crossed(
                    way, device, rules, subscriptions, since: sinceBind, &text, connection)
                text.sql = """
                    SELECT o.type_name, o.object_key FROM sync_attrs a JOIN objects o
                      ON o.tenant_id = a.tenant_id AND o.type_name = a.type_name AND o.object_key = a.object_key
                    WHERE a.tenant_id = \(tenant) AND a.type_name = \(type) AND a.field = \(field)
                      AND a.value = ANY(\(values)::bytea[]) AND o.cl % 2 = 1 AND \(test)
                    """
                for name in try await names(text.query, connection) where seen.insert(name).inserted {
                    next.append(name)
                }
            }
            followers += next
            frontier = next
        }
        return followers
    }

    /// Each read rule's `field in Type`: the type holding the link, the
    /// field, and the type it follows.
    private static func follows(in rules: SyncRules) -> [(type: String, field: String, target: String)] {
        rules.types.sorted { $0.key < $1.key }.flatMap { type, typeRules in
            (typeRules.read?.followedLinks ?? []).map { (type: type, field: $0.field, target: $0.type) }
        }
    }

    /// Adds to `builder` that each of `names` left the device's view
    /// (``ChangeEntry/leaving(type:key:stamp:)``), stamped by the epoch's
    /// site now.
    func addLeaving(_ names: [ObjectName], to builder: inout PullBuilder, epoch: UUID) throws {
        let time = HybridTime(milliseconds: Hub.now(), counter: 0)
        for name in names { try builder.addLeaving(name.type, key: name.key, origin: epoch, time: time) }
        if !names.isEmpty { metrics.left(names.count) }
    }

    /// Adds to `builder` the objects `names`, whole: every register.
    func addWhole(_ names: [ObjectName], to builder: inout PullBuilder, tenant: UUID, _ connection: PostgresConnection)
        async throws
    {
        guard !names.isEmpty else { return }
        var text = SQLText()
        let tenantBind = text.bind(tenant)
        let (types, keys) = (text.bind(names.map(\.type)), text.bind(names.map(\.key)))
        text.sql = """
            SELECT o.type_name, o.object_key, o.cl, o.hlc, o.origin, o.max_writer_version,
                   f.path, f.descriptor, f.rank, f.value, f.hlc, f.origin
            FROM unnest(\(types)::text[], \(keys)::bytea[]) AS u(t, k)
            JOIN objects o ON o.tenant_id = \(tenantBind) AND o.type_name = u.t AND o.object_key = u.k
            LEFT JOIN fields f
              ON f.tenant_id = o.tenant_id AND f.type_name = o.type_name AND f.object_key = o.object_key
            ORDER BY o.type_name, o.object_key, f.path
            """
        try await builder.add(rowsOf: text.query, connection, logger: logger)
    }

    /// The SQL that an `objects` row `o` crossed the view `way` since the
    /// hub commit `since` (a bound placeholder).
    private func crossed(
        _ way: Crossing, _ device: Device, _ rules: SyncRules, _ subscriptions: HubSubscriptions?, since: String,
        _ text: inout SQLText, _ connection: PostgresConnection
    ) async throws -> String {
        let now = try await view(of: device, rules: rules, subscriptions: subscriptions, text: &text, connection)
        let then = try await view(
            of: device, rules: rules, subscriptions: subscriptions, text: &text, asOf: since, connection)
        switch way {
        case .leaving: return "NOT (true\(now)) AND (true\(then))"
        case .entering: return "(true\(now)) AND NOT (true\(then))"
        }
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
