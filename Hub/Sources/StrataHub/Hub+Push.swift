import Crypto
import Foundation
import NIOCore
import PostgresNIO
@_spi(Hub) import Strata

/// The body of a 422: the push's answer, with the refusal's `error` and
/// `message` (docs/Hub.md).
private struct ConflictAnswer: Encodable {
    var answer: HubPushAnswer

    private enum Keys: String, CodingKey { case error, message }

    func encode(to encoder: any Encoder) throws {
        try answer.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        var parts: [String] = []
        if !answer.refusedFields.isEmpty {
            parts.append(
                "\(answer.refusedFields.count) field(s) name another type than the dataset has for them; they were dropped. Give a field of another type a new name."
            )
        }
        if !answer.refusedObjects.isEmpty {
            parts.append(
                "\(answer.refusedObjects.count) object(s) are outside what the dataset's sync rules let this device write; they were not merged."
            )
        }
        let code: HubRefusal.Code = answer.refusedFields.isEmpty ? .outsideRules : .schemaConflict
        try container.encode(code.rawValue, forKey: .error)
        try container.encode((parts + ["The rest was merged."]).joined(separator: " "), forKey: .message)
    }
}

extension Hub {
    /// Merges the changeset `body` of `device` in one transaction (docs/Hub.md,
    /// "Storage"): the status and JSON body of the answer. A body pushed
    /// again by the same device gets its first answer back.
    public func push(_ body: Data, device: Device) async throws -> (status: Int, answer: Data) {
        let content: ChangesetContent
        do {
            content = try ChangesetCodec.decode(body)
        } catch let error as StrataError {
            throw HubError.invalidChangeset(error.description)
        }
        guard content.dataset.uuid == device.tenant else {
            throw HubError.wrongDataset(content.dataset.uuid, tenant: device.tenant)
        }
        let now = Hub.now()
        let latest = content.latestTime.milliseconds
        if latest > now + maxClockDrift { throw HubError.clockSkew(ahead: latest - now, hubTime: now) }
        let hash = ByteBuffer(bytes: Array(SHA256.hash(data: body)))
        let logger = self.logger
        let (status, answer, committed) = try await inTenant(device.tenant) { connection in
            let tenantRows = try await connection.query(
                "SELECT next_seq, rules_version FROM tenants WHERE id = \(device.tenant) FOR UPDATE", logger: logger)
            var (nextSeq, rulesVersion): (Int64, Int64) = (0, 0)
            for try await value in tenantRows.decode((Int64, Int64).self) { (nextSeq, rulesVersion) = value }
            let stored = try await connection.query(
                "SELECT status, answer FROM batches WHERE device_id = \(device.id) AND body_sha256 = \(hash)",
                logger: logger)
            for try await (status, answer) in stored.decode((Int, String).self) {
                return (status, Data(answer.utf8), Int64?.none)
            }
            // A site is one file: the first device that pushed its changes
            // owns it (a copied file, or a token used for another
            // device's file, would move that file's cursor).
            let owners = try await connection.query(
                "SELECT device_id FROM site_cursors WHERE site = \(content.sender.uuid)", logger: logger)
            for try await owner in owners.decode(UUID.self) where owner != device.id {
                throw HubError.siteOfAnotherDevice(content.sender.uuid)
            }
            let rejected = try await register(content, connection)
            let seq = nextSeq + 1
            let rows = try ChangeRows(
                content,
                refused: Set(
                    rejected.filter { !$0.isPrimaryKey }.map {
                        ChangeRows.Refused(type: $0.type, path: $0.field, descriptor: $0.descriptor)
                    }),
                refusedTypes: Set(rejected.filter(\.isPrimaryKey).map(\.type)))
            var changed: Bool
            var refusedObjects: [HubRefusedObject] = []
            if let rules = try await self.rules(device.tenant, version: rulesVersion, connection) {
                let refused: Set<ChangeRows.ObjectRef>
                (changed, refused) = try await mergeWithinRules(
                    rows, rules: rules, device: device, seq: seq, connection)
                refusedObjects = try refused.map { try $0.refusal }.sorted { ($0.type, $0.key) < ($1.type, $1.key) }
            } else {
                changed = try await merge(rows, seq: seq, tenant: device.tenant, connection)
            }
            if changed {
                try await connection.query(
                    "UPDATE tenants SET next_seq = \(seq) WHERE id = \(device.tenant)", logger: logger)
                // Delivered to every hub process's listener when (and
                // only if) the transaction commits.
                try await connection.query(
                    "SELECT pg_notify(\(Hub.commitChannel), \(device.tenant.uuidString + ":" + String(seq)))",
                    logger: logger)
            }
            let cursor = try await advanceCursor(of: content, device: device, connection)
            let answer = HubPushAnswer(
                acceptedThrough: cursor, hubSeq: UInt64(changed ? seq : nextSeq), hubTimeMilliseconds: Hub.now(),
                refusedFields: rejected.sorted { ($0.type, $0.field) < ($1.type, $1.field) },
                refusedObjects: refusedObjects)
            let refusedAny = !rejected.isEmpty || !refusedObjects.isEmpty
            let status = refusedAny ? 422 : 200
            let json =
                try refusedAny
                ? JSONEncoder().encode(ConflictAnswer(answer: answer)) : JSONEncoder().encode(answer)
            let text = String(decoding: json, as: UTF8.self)
            try await connection.query(
                """
                INSERT INTO batches (device_id, body_sha256, tenant_id, hub_seq, status, answer)
                VALUES (\(device.id), \(hash), \(device.tenant), \(Int64(answer.hubSeq)), \(status), \(text))
                """, logger: logger)
            return (status, json, changed ? seq : nil)
        }
        if let committed { commits.publish(device.tenant, seq: committed) }
        metrics.pushed(mergedFields: committed == nil ? 0 : content.entries.reduce(0) { $0 + $1.fields.count })
        return (status, answer)
    }

    /// Checks the changeset's types and fields against the tenant's schema
    /// registry, registering the new ones: the fields (and types' primary
    /// keys, ``HubRefusedField/isPrimaryKey``) whose descriptor differs
    /// from the registered one.
    private func register(_ content: ChangesetContent, _ connection: PostgresConnection) async throws
        -> [HubRefusedField]
    {
        let logger = self.logger
        var rejected: [HubRefusedField] = []
        let typeNames = content.types.map(\.name)
        var keys: [String: String] = [:]
        let typeRows = try await connection.query(
            "SELECT type_name, key_descriptor FROM object_types WHERE type_name = ANY(\(typeNames)::text[])",
            logger: logger)
        for try await (name, descriptor) in typeRows.decode((String, String).self) { keys[name] = descriptor }
        var newTypes: [WireType] = []
        for type in content.types {
            if let registered = keys[type.name] {
                if registered != type.keyDescriptor {
                    rejected.append(
                        HubRefusedField(
                            type: type.name, field: type.keyName, descriptor: type.keyDescriptor,
                            registered: registered, isPrimaryKey: true))
                }
            } else {
                newTypes.append(type)
            }
        }
        if !newTypes.isEmpty {
            try await connection.query(
                """
                INSERT INTO object_types (tenant_id, type_name, key_name, key_descriptor)
                SELECT current_setting('strata.tenant')::uuid, * FROM unnest(
                    \(newTypes.map(\.name))::text[], \(newTypes.map(\.keyName))::text[],
                    \(newTypes.map(\.keyDescriptor))::text[])
                ON CONFLICT DO NOTHING
                """, logger: logger)
        }
        let named = ChangeRows.registry(of: content)
        var registered: [ChangeRows.RegistryKey: String] = [:]
        let rows = try await connection.query(
            "SELECT type_name, path, descriptor FROM schema_registry WHERE type_name = ANY(\(typeNames)::text[])",
            logger: logger)
        for try await (type, path, descriptor) in rows.decode((String, String, String).self) {
            registered[ChangeRows.RegistryKey(type: type, path: path)] = descriptor
        }
        var fresh: [(ChangeRows.RegistryKey, String)] = []
        for (key, descriptors) in named {
            var first = registered[key]
            for descriptor in descriptors.sorted() {
                if let known = first {
                    if known != descriptor {
                        rejected.append(
                            HubRefusedField(type: key.type, field: key.path, descriptor: descriptor, registered: known))
                    }
                } else {
                    first = descriptor
                    fresh.append((key, descriptor))
                }
            }
        }
        if !fresh.isEmpty {
            try await connection.query(
                """
                INSERT INTO schema_registry (tenant_id, type_name, path, descriptor)
                SELECT current_setting('strata.tenant')::uuid, * FROM unnest(
                    \(fresh.map(\.0.type))::text[], \(fresh.map(\.0.path))::text[], \(fresh.map(\.1))::text[])
                """, logger: logger)
        }
        return rejected
    }

    /// Moves the hub's cursor of the changeset's sender past it, as a file
    /// moves its cursor of a peer (``PeerProgress``), and returns it.
    private func advanceCursor(of content: ChangesetContent, device: Device, _ connection: PostgresConnection)
        async throws -> SyncCursor
    {
        let site = content.sender.uuid
        var progress = try await siteProgress(site, connection)
        progress.advance(by: content)
        let cursor = progress.cursor
        try await connection.query(
            """
            INSERT INTO site_cursors (tenant_id, site, since, after, after_key, walked_at, device_id)
            VALUES (\(device.tenant), \(site), \(Int64(bitPattern: cursor.since)), \(Int64(bitPattern: cursor.after)),
                    \(ByteBuffer(bytes: cursor.afterKey)), \(Int64(bitPattern: progress.walkedAt)), \(device.id))
            ON CONFLICT (tenant_id, site) DO UPDATE SET since = excluded.since, after = excluded.after,
                after_key = excluded.after_key, walked_at = excluded.walked_at
            """, logger: logger)
        return cursor
    }

    /// The hub's progress in the changes of `site`.
    func siteProgress(_ site: UUID, _ connection: PostgresConnection) async throws -> PeerProgress {
        let rows = try await connection.query(
            "SELECT since, after, after_key, walked_at FROM site_cursors WHERE site = \(site)", logger: logger)
        for try await (since, after, key, walkedAt) in rows.decode((Int64, Int64, ByteBuffer, Int64).self) {
            return PeerProgress(
                cursor: SyncCursor(
                    since: UInt64(bitPattern: since), after: UInt64(bitPattern: after),
                    afterKey: Data(key.readableBytesView)),
                walkedAt: UInt64(bitPattern: walkedAt))
        }
        return PeerProgress()
    }
}
