import Foundation
import Logging
import NIOCore
import PostgresNIO
@_spi(Hub) import Strata

extension Hub {
    /// The session of `device` for its file's site `site`: the answer of
    /// `GET /v1/session`, as the library's client reads it.
    public func session(device: Device, site: SiteID) async throws -> HubSession {
        let maxBodyBytes = self.maxBodyBytes
        return try await inTenant(device.tenant, readOnly: true) { connection in
            let (epoch, nextSeq, _) = try await self.tenantState(device.tenant, connection)
            let progress = try await self.siteProgress(site.uuid, connection)
            let compacted = try await self.compactedSeq(device.tenant, connection)
            return HubSession(
                tenant: device.tenant, device: device.id, epoch: epoch, hubSeq: UInt64(nextSeq),
                hubTimeMilliseconds: Hub.now(), maxBodyBytes: maxBodyBytes, pushCursor: progress.cursor,
                compactedSeq: UInt64(compacted))
        }
    }

    /// The tenant's last commit's sequence number.
    public func hubSeq(tenant: UUID) async throws -> Int64 {
        try await inTenant(tenant, readOnly: true) { connection in
            try await self.tenantState(tenant, connection).nextSeq
        }
    }

    func tenantState(_ tenant: UUID, _ connection: PostgresConnection) async throws -> (
        epoch: UUID, nextSeq: Int64, rulesVersion: Int64
    ) {
        let rows = try await connection.query(
            "SELECT epoch, next_seq, rules_version FROM tenants WHERE id = \(tenant)", logger: logger)
        for try await row in rows.decode((UUID, Int64, Int64).self) { return row }
        throw HubError.unauthorized
    }

    /// The sequence number through which the tenant's tombstones were
    /// compacted (0: never).
    func compactedSeq(_ tenant: UUID, _ connection: PostgresConnection) async throws -> Int64 {
        let rows = try await connection.query(
            "SELECT compacted_seq FROM tenants WHERE id = \(tenant)", logger: logger)
        for try await seq in rows.decode(Int64.self) { return seq }
        return 0
    }

    /// The most objects a pull returns.
    public static let maxPullLimit = 20_000

    /// The tenant's merged state changed after the cursor (`since`,
    /// `after`): at most `limit` objects, whole hub commits, as a changeset
    /// made by the epoch's site (docs/Hub.md, "GET /v1/pull").
    ///
    /// A catch-up pull (`catchUp`) walks from `after`, which may be below
    /// `since`: every live object comes, with the fields changed after
    /// `since`, so that a device whose cursor is older than the compacted
    /// tombstones learns which of its objects the hub no longer has
    /// (docs/Hub.md, "Compaction").
    ///
    /// Notes `since` as the device's acknowledged pull cursor
    /// (``flushAcknowledgements()`` stores it).
    ///
    /// - Throws: ``HubError`` `epochChanged` when `epoch` is not the
    ///   tenant's, or the cursor is past the hub's last commit (its data was
    ///   restored from a backup: the tenant gets a new epoch, at most once
    ///   per last commit: ``renewEpochForPull(tenant:epoch:)``);
    ///   `invalidRequest` when the cursor, of the epoch renewed so, is
    ///   still past the last commit; `cursorCompacted` for a pull that is
    ///   not a catch-up from a cursor (above 0) below the tenant's compacted
    ///   tombstones.
    ///
    /// With `subscriptions`, only the objects they select (docs/Hub.md,
    /// "Subscriptions"); with sync rules, only those the device may read.
    ///
    /// With `leaves`, a pull that is not a catch-up also names the objects
    /// of its commits that left the device's view since `since`
    /// (``ChangeEntry/leavesView``; docs/Hub.md, "Leaving a view"): only a
    /// client that asks understands them.
    public func pull(
        device: Device, since: UInt64, after: UInt64, epoch: UUID?, limit: Int, catchUp: Bool = false,
        subscriptions: HubSubscriptions? = nil, leaves: Bool = false
    ) async throws -> Data {
        let limit = min(max(limit, 1), Hub.maxPullLimit)
        let after = catchUp ? after : max(after, since)
        let logger = self.logger
        let tenant = device.tenant
        let result: (Data, UUID)? = try await inTenant(tenant, readOnly: true) { connection in
            let (current, nextSeq, rulesVersion) = try await self.tenantState(tenant, connection)
            if let epoch, epoch != current { throw HubError.epochChanged(current) }
            // A cursor past the last commit: the data went back in time.
            guard after <= UInt64(nextSeq), since <= UInt64(nextSeq) else { return nil }
            // A pull from the start sends every live object: it needs no
            // tombstone. Any other misses the compacted ones.
            let compacted = try await self.compactedSeq(tenant, connection)
            if !catchUp, since > 0, since < UInt64(compacted) {
                throw HubError.cursorCompacted(since: since, compactedSeq: compacted)
            }
            let (upto, hasMore) = try await self.pageEnd(
                tenant, after: after, nextSeq: nextSeq, limit: limit, connection)
            var builder = PullBuilder()
            var text = SQLText()
            let (tenantBind, sinceBind) = (text.bind(tenant), text.bind(Int64(bitPattern: since)))
            let (afterBind, uptoBind) = (text.bind(Int64(bitPattern: after)), text.bind(upto))
            // With rules, only the objects the device may read (docs/Hub.md,
            // "Sync rules"); with subscriptions, only those they select. An
            // object whose ruled fields changed in the window may be new to
            // the device: it gets all its fields.
            let rules = try await self.rules(tenant, version: rulesVersion, connection)
            let view = try await self.view(
                of: device, rules: rules, subscriptions: subscriptions, text: &text, connection)
            // What followed an object into the view since the cursor comes
            // whole, though it did not change (docs/Hub.md, "Leaving a
            // view"); one of the page's own commits too, so not here.
            let window = PullWindow(since: since, after: after, upto: UInt64(upto))
            var followers: [ObjectName] = []
            var others = ""
            if !catchUp, since > 0, let rules {
                followers = try await self.crossing(
                    .entering, device: device, rules: rules, subscriptions: subscriptions, window: window,
                    followersOnly: true, connection)
                if !followers.isEmpty {
                    others = """
                         AND (o.type_name, o.object_key) NOT IN
                             (SELECT * FROM unnest(\(text.bind(followers.map(\.type)))::text[], \(text.bind(followers.map(\.key)))::bytea[]))
                        """
                }
            }
            let entering =
                rules == nil
                ? ""
                : """
                 OR EXISTS (SELECT 1 FROM sync_attrs x WHERE x.tenant_id = o.tenant_id AND x.type_name = o.type_name
                            AND x.object_key = o.object_key AND x.seq > \(sinceBind))
                """
            text.sql = """
                SELECT o.type_name, o.object_key, o.cl, o.hlc, o.origin, o.max_writer_version,
                       f.path, f.descriptor, f.rank, f.value, f.hlc, f.origin
                FROM objects o LEFT JOIN fields f
                  ON f.tenant_id = o.tenant_id AND f.type_name = o.type_name AND f.object_key = o.object_key
                 AND (f.seq > \(sinceBind) OR f.rank > 0\(entering))
                WHERE o.tenant_id = \(tenantBind) AND o.seq > \(afterBind) AND o.seq <= \(uptoBind)\(view)\(others)
                ORDER BY o.seq, o.type_name, o.object_key, f.path
                """
            try await builder.add(rowsOf: text.query, connection, logger: logger)
            try await self.addWhole(followers, to: &builder, tenant: tenant, connection)
            if leaves, !catchUp, since > 0, let rules {
                let leaving = try await self.crossing(
                    .leaving, device: device, rules: rules, subscriptions: subscriptions, window: window, connection)
                try self.addLeaving(leaving, to: &builder, epoch: current)
            }
            let types = try await self.wireTypes(builder.typeNames, connection)
            let data = ChangesetCodec.encode(
                try builder.content(
                    dataset: SiteID(uuid: tenant), sender: SiteID(uuid: current), types: types,
                    senderSeq: UInt64(nextSeq),
                    since: since, after: after, upto: UInt64(upto), hasMore: hasMore))
            return (data, current)
        }
        if let result {
            metrics.pulled()
            noteAcknowledged(device, epoch: result.1, since: since)
            return result.0
        }
        throw try await renewEpochForPull(tenant: tenant, epoch: epoch)
    }

    /// The SQL (` AND ...`, or nothing) that keeps, of the `objects` row
    /// `o`, those the device may read and its subscriptions select; with
    /// `since` (a bound placeholder), those it could read after that hub
    /// commit, as the ruled fields' values were then.
    func view(
        of device: Device, rules: SyncRules?, subscriptions: HubSubscriptions?, text: inout SQLText,
        asOf since: String? = nil, _ connection: PostgresConnection
    ) async throws -> String {
        guard let rules else {
            guard let subscriptions else { return "" }
            // An open dataset lists no fields to subscribe by: whole types only.
            guard subscriptions.entries.allSatisfy({ $0.filter == .everything }) else {
                throw HubError.invalidRequest(
                    "A subscription tests fields, and the dataset has no sync rules listing fields to subscribe by: the operator adds 'Type fields: ...' to its rules, or the device subscribes to whole types."
                )
            }
            return " AND o.type_name = ANY(\(text.bind(subscriptions.entries.map(\.type)))::text[])"
        }
        let schema = try await ruleSchema(device.tenant, for: rules, connection)
        var compiler = RuleCompiler(rules: rules, claims: device.claims, schema: schema, text: text)
        if let since { compiler.attrs = RuleCompiler.values(asOf: since) }
        var view = " AND " + compiler.allows(.read, "o")
        if let subscriptions { view += " AND " + (try compiler.selects(subscriptions, "o")) }
        text = compiler.text
        return view
    }

    /// The first pull of a subscription's objects (docs/Hub.md,
    /// "Subscriptions"): the objects it selects, that the device may
    /// read (their tombstones too: a key the device inserts later is then
    /// a deliberate re-insert, as on a device that pulled everything),
    /// whose last change is at or before the sequence number `upto`,
    /// after the object key `after` (changeset bytes; empty: from the
    /// first), in key order, at most `limit` of them, with all their
    /// fields, as a changeset of the epoch's site whose summary says
    /// `hasMore`.
    ///
    /// - Throws: ``HubError`` `epochChanged` when `epoch` is not the
    ///   tenant's; `invalidRequest` for a subscription the rules do not
    ///   allow.
    public func firstPull(
        device: Device, subscription: HubSubscriptions.Entry, upto: UInt64, after: [UInt8], epoch: UUID?, limit: Int
    ) async throws -> Data {
        let limit = min(max(limit, 1), Hub.maxPullLimit)
        let tenant = device.tenant
        return try await inTenant(tenant, readOnly: true) { connection in
            let (current, nextSeq, rulesVersion) = try await self.tenantState(tenant, connection)
            if let epoch, epoch != current { throw HubError.epochChanged(current) }
            let upto = min(upto, UInt64(nextSeq))
            var text = SQLText()
            let tenantBind = text.bind(tenant)
            let (typeBind, uptoBind) = (text.bind(subscription.type), text.bind(Int64(upto)))
            let (afterBind, limitBind) = (text.bind(ByteBuffer(bytes: after)), text.bind(Int64(limit)))
            let rules = try await self.rules(tenant, version: rulesVersion, connection)
            let view = try await self.view(
                of: device, rules: rules, subscriptions: HubSubscriptions(entries: [subscription]), text: &text,
                connection)
            var narrowed = ""
            if let rules {
                let schema = try await self.ruleSchema(tenant, for: rules, connection)
                var compiler = RuleCompiler(rules: rules, claims: device.claims, schema: schema, text: text)
                if let keys = compiler.candidates(subscription.filter, type: subscription.type, tenant: tenantBind) {
                    narrowed = " AND o.object_key IN (\(keys))"
                }
                text = compiler.text
            }
            text.sql = """
                WITH page AS (
                    SELECT o.* FROM objects o
                    WHERE o.tenant_id = \(tenantBind) AND o.type_name = \(typeBind) AND o.seq <= \(uptoBind)
                      AND o.object_key > \(afterBind)\(narrowed)\(view)
                    ORDER BY o.object_key LIMIT \(limitBind))
                SELECT o.type_name, o.object_key, o.cl, o.hlc, o.origin, o.max_writer_version,
                       f.path, f.descriptor, f.rank, f.value, f.hlc, f.origin
                FROM page o LEFT JOIN fields f
                  ON f.tenant_id = o.tenant_id AND f.type_name = o.type_name AND f.object_key = o.object_key
                ORDER BY o.object_key, f.path
                """
            var builder = PullBuilder()
            try await builder.add(rowsOf: text.query, connection, logger: self.logger)
            let types = try await self.wireTypes(builder.typeNames, connection)
            return ChangesetCodec.encode(
                try builder.content(
                    dataset: SiteID(uuid: tenant), sender: SiteID(uuid: current), types: types,
                    senderSeq: UInt64(nextSeq), since: 0, after: 0, upto: upto,
                    hasMore: builder.entryCount == limit))
        }
    }

    /// The answer to a pull of `epoch` (nil: not given) whose cursor is
    /// past the tenant's last commit. The first such pull at a sequence
    /// number renews the epoch (`epochChanged`, the new one) and records
    /// that number (`tenants.renewed_at_seq`); after it, until the next
    /// commit, one of the renewed epoch is refused (`invalidRequest`: a
    /// device whose cursor is wrong, not a restored hub), and one of
    /// another epoch or none is told the current epoch without renewing
    /// it. So one broken or hostile device cannot make every device of
    /// its tenant pull everything again and again.
    func renewEpochForPull(tenant: UUID, epoch: UUID?) async throws -> HubError {
        try await asOwner(of: tenant) { connection in
            let rows = try await connection.query(
                "SELECT epoch, next_seq, renewed_at_seq FROM tenants WHERE id = \(tenant) FOR UPDATE", logger: logger)
            var found: (UUID, Int64, Int64?)?
            for try await row in rows.decode((UUID, Int64, Int64?).self) { found = row }
            guard let (current, nextSeq, renewedAt) = found else { throw HubError.unknownTenant(tenant) }
            if let epoch, epoch != current { return HubError.epochChanged(current) }
            if renewedAt == nextSeq {
                guard epoch != nil else { return HubError.epochChanged(current) }
                return HubError.invalidRequest(
                    "The cursor is past the hub's last commit (\(nextSeq)) of epoch \(current), which was already renewed at that commit: the device's cursor is wrong. Pull from the start of the epoch (since=0)."
                )
            }
            let renewed = UUID()
            try await connection.query(
                "UPDATE tenants SET epoch = \(renewed), renewed_at_seq = \(nextSeq) WHERE id = \(tenant)",
                logger: logger)
            logger.notice(
                "A pull's cursor was past the last commit \(nextSeq): tenant \(tenant.uuidString) gets epoch \(renewed.uuidString)."
            )
            return HubError.epochChanged(renewed)
        }
    }

    /// Where a page after `after` ends: the last hub commit whose objects,
    /// with those of the commits before it, are at most `limit` (at least
    /// one commit), and whether commits follow.
    private func pageEnd(_ tenant: UUID, after: UInt64, nextSeq: Int64, limit: Int, _ connection: PostgresConnection)
        async throws -> (upto: Int64, hasMore: Bool)
    {
        let after = Int64(bitPattern: after)
        let rows = try await connection.query(
            """
            SELECT seq FROM objects WHERE tenant_id = \(tenant) AND seq > \(after)
            ORDER BY seq LIMIT 1 OFFSET \(limit)
            """, logger: logger)
        var beyond: Int64?
        for try await seq in rows.decode(Int64.self) { beyond = seq }
        guard let beyond else { return (nextSeq, false) }
        if beyond - 1 > after { return (beyond - 1, true) }
        // One commit of more than `limit` objects: all of it.
        let more = try await connection.query(
            "SELECT EXISTS (SELECT 1 FROM objects WHERE tenant_id = \(tenant) AND seq > \(beyond))", logger: logger)
        for try await exists in more.decode(Bool.self) { return (beyond, exists) }
        return (beyond, false)
    }

    private func wireTypes(_ names: [String], _ connection: PostgresConnection) async throws -> [String: WireType] {
        var types: [String: WireType] = [:]
        let rows = try await connection.query(
            "SELECT type_name, key_name, key_descriptor FROM object_types WHERE type_name = ANY(\(names)::text[])",
            logger: logger)
        for try await (name, keyName, keyDescriptor) in rows.decode((String, String, String).self) {
            types[name] = WireType(name: name, keyName: keyName, keyDescriptor: keyDescriptor)
        }
        return types
    }
}

/// Builds a pull's changeset from the rows of its objects and registers.
struct PullBuilder {
    private struct FieldKey: Hashable {
        var type: Int
        var path: String
        var descriptor: String
        var parent: Int?
    }

    private(set) var typeNames: [String] = []
    /// The objects added so far.
    var entryCount: Int { entries.count }
    private var typeIndexes: [String: Int] = [:]
    private var fields: [WireField] = []
    private var fieldIndexes: [FieldKey: Int] = [:]
    private var origins: [SiteID] = []
    private var originIndexes: [UUID: Int] = [:]
    private var entries: [ChangeEntry] = []
    private var lastObject: (type: String, key: ByteBuffer)?
    /// The wire field of each register path of the current entry.
    private var entryPaths: [Substring: Int] = [:]

    private mutating func origin(_ uuid: UUID) -> Int {
        if let index = originIndexes[uuid] { return index }
        origins.append(SiteID(uuid: uuid))
        originIndexes[uuid] = origins.count - 1
        return origins.count - 1
    }

    /// Adds the rows of `query`: objects with their registers, as the
    /// pull and a first pull select them.
    mutating func add(rowsOf query: PostgresQuery, _ connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query(query, logger: logger)
        for try await row in rows.decode(
            (String, ByteBuffer, Int64, Int64, UUID, Int64, String?, String?, Int64?, ByteBuffer?, Int64?, UUID?).self)
        {
            try add(row)
        }
    }

    /// Adds that the object `key` of `typeName` left the device's view
    /// (``ChangeEntry/leaving(type:key:stamp:)``), stamped by `origin` at
    /// `time`.
    mutating func addLeaving(_ typeName: String, key: ByteBuffer, origin: UUID, time: HybridTime) throws {
        let type = self.type(typeName)
        entries.append(
            .leaving(
                type: type, key: try ChangesetCodec.value(from: Array(key.readableBytesView)),
                stamp: WireStamp(time: time, origin: self.origin(origin))))
        lastObject = nil
    }

    private mutating func type(_ name: String) -> Int {
        if let known = typeIndexes[name] { return known }
        typeNames.append(name)
        typeIndexes[name] = typeNames.count - 1
        return typeNames.count - 1
    }

    mutating func add(
        _ row: (
            String, ByteBuffer, Int64, Int64, UUID, Int64, String?, String?, Int64?, ByteBuffer?, Int64?, UUID?
        )
    ) throws {
        let (typeName, key, cl, time, objectOrigin, writerVersion, path, descriptor, _, value, fieldTime, fieldOrigin) =
            row
        if lastObject?.type != typeName || lastObject?.key != key {
            let type = self.type(typeName)
            entries.append(
                ChangeEntry(
                    type: type, key: try ChangesetCodec.value(from: Array(key.readableBytesView)),
                    causalLength: UInt64(cl), writerVersion: UInt64(writerVersion),
                    stamp: WireStamp(
                        time: HybridTime(rawValue: UInt64(bitPattern: time)), origin: origin(objectOrigin)),
                    fields: []))
            lastObject = (typeName, key)
            entryPaths = [:]
        }
        guard let path, let descriptor, let value, let fieldTime, let fieldOrigin else { return }
        let type = entries[entries.count - 1].type
        // `home/3/street`: the name after the last holder and its life.
        var parent: Int?
        var name = Substring(path)
        if let slash = path.lastIndex(of: ChangeRows.separator) {
            let holderEnd = path[..<slash].lastIndex(of: ChangeRows.separator)!
            guard let holder = entryPaths[path[..<holderEnd]] else { return }
            parent = holder
            name = path[path.index(after: slash)...]
        }
        let fieldKey = FieldKey(type: type, path: String(name), descriptor: descriptor, parent: parent)
        let index: Int
        if let known = fieldIndexes[fieldKey] {
            index = known
        } else {
            fields.append(WireField(type: type, path: String(name), descriptor: descriptor, parent: parent))
            index = fields.count - 1
            fieldIndexes[fieldKey] = index
        }
        entryPaths[Substring(path)] = index
        entries[entries.count - 1].fields.append(
            FieldChange(
                field: index,
                stamp: WireStamp(
                    time: HybridTime(rawValue: UInt64(bitPattern: fieldTime)), origin: origin(fieldOrigin)),
                value: try ChangesetCodec.value(from: Array(value.readableBytesView))))
    }

    func content(
        dataset: SiteID, sender: SiteID, types: [String: WireType], senderSeq: UInt64, since: UInt64, after: UInt64,
        upto: UInt64, hasMore: Bool
    ) throws -> ChangesetContent {
        let wireTypes = try typeNames.map { name in
            guard let type = types[name] else {
                throw HubError.unavailable("The hub's registry has no key of type '\(name)'.")
            }
            return type
        }
        return ChangesetContent(
            dataset: dataset, sender: sender, writerSchemaVersion: entries.map(\.writerVersion).max() ?? 0,
            senderTime: HybridTime(milliseconds: Hub.now(), counter: 0), senderSeq: senderSeq, baseline: since,
            fromSeq: after, toSeq: max(upto, after), hasMore: hasMore, types: wireTypes, fields: fields,
            origins: origins, entries: entries)
    }
}
