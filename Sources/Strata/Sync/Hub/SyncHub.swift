import Foundation

/// A server that the devices of a dataset sync through: the transport
/// that ``DatabaseSync/exchange(with:pageSize:)`` and
/// ``DatabaseSync/run(with:options:)`` talk to.
///
/// ``HTTPHub`` speaks the hub's HTTP protocol (`docs/Hub.md`);
/// ``InProcessHub`` is a Strata file of the process as the hub; a test or
/// another transport implements the four calls itself (the fifth,
/// ``catchUp(since:after:epoch:limit:subscriptions:)``, only when it compacts). Failures are
/// thrown as ``StrataError``s the exchange understands: code
/// ``StrataError/Code/hubRefused`` with a ``HubRefusal`` as the
/// ``StrataError/cause`` when the hub answered with an error, and
/// ``StrataError/Code/hubUnavailable`` when it could not be reached.
///
/// ```swift
/// let hub = HTTPHub(url: URL(string: "https://sync.example.com")!, token: token)
/// let report = try await db.sync.exchange(with: hub)
/// ```
public protocol SyncHub: Sendable {
    /// What the hub knows of the file of site `site`: the hub's epoch, how
    /// far it has the file's changes, its clock.
    func session(site: SiteID) async throws -> HubSession

    /// Sends one changeset of this file's changes; the answer says how far
    /// the hub now has them. A changeset whose fields the hub refused in
    /// part (a field it has with another type) is answered, not thrown:
    /// the rest was merged, and ``HubPushAnswer/refusedFields`` lists
    /// what was not.
    func push(_ changeset: Changeset) async throws -> HubPushAnswer

    /// The hub's changes after `cursor`, the file's cursor of the hub's
    /// epoch `epoch`: a changeset made by the site of the epoch
    /// (``HubSession/epochSite``), with at most `limit` objects unless one
    /// hub commit holds more.
    ///
    /// - Throws: ``StrataError/Code/hubRefused`` with the refusal code
    ///   ``HubRefusal/Code/epochChanged`` when `epoch` is no longer the
    ///   hub's.
    func pull(from cursor: SyncCursor, epoch: UUID, limit: Int) async throws -> Changeset

    /// The hub's sequence number after each commit of the dataset, for as
    /// long as the hub tells; a stream that finishes at once when the
    /// transport cannot tell (the run loop then polls).
    func commits() -> AsyncStream<UInt64>

    /// ``pull(from:epoch:limit:)`` of only the objects that
    /// `subscriptions` select (a file's ``DatabaseSync/subscriptions()``);
    /// all of them when it is empty.
    func pull(from cursor: SyncCursor, epoch: UUID, limit: Int, subscriptions: [SyncSubscription]) async throws
        -> Changeset

    /// The first pull of a subscription's objects: those it selects (within
    /// `subscriptions`' rules) whose last change on the hub is at or before
    /// the hub's sequence number `upto`, after the object `after` (the
    /// changeset bytes of the last key a page held; empty at first), at
    /// most `limit` objects, as a changeset of the epoch's site whose
    /// summary says `hasMore`. Applied without moving the file's cursor.
    func firstPull(_ subscription: SyncSubscription, upto: UInt64, after: Data, epoch: UUID, limit: Int)
        async throws -> Changeset

    /// A page of a catch-up pull (`GET /v1/pull?catchUp=1`), for a file
    /// whose cursor of the hub, `since`, is older than the tombstones the
    /// hub compacted (``HubSession/compactedSeq``): every object the hub
    /// holds after hub sequence number `after` (which may be below
    /// `since`), with the fields changed after `since`. A hub that never
    /// compacts is never asked; the default implementation throws. With
    /// `subscriptions`, only the objects they select.
    func catchUp(since: UInt64, after: UInt64, epoch: UUID, limit: Int, subscriptions: [SyncSubscription])
        async throws -> Changeset
}

extension SyncHub {
    /// Throws: a hub that reports no compaction (``HubSession/compactedSeq``
    /// 0) is never asked for a catch-up.
    public func catchUp(
        since: UInt64, after: UInt64, epoch: UUID, limit: Int, subscriptions: [SyncSubscription]
    ) async throws -> Changeset {
        throw StrataError.hubRefused(
            HubRefusal(
                code: .invalidRequest, status: 400,
                message: "This hub does not serve catch-up pulls: it reported compacted tombstones it cannot send."),
            request: "catch-up pull")
    }

    /// A transport without subscriptions: pulls everything, and refuses a
    /// file that has subscriptions.
    public func pull(from cursor: SyncCursor, epoch: UUID, limit: Int, subscriptions: [SyncSubscription])
        async throws -> Changeset
    {
        guard subscriptions.isEmpty else { throw Self.noSubscriptions }
        return try await pull(from: cursor, epoch: epoch, limit: limit)
    }

    /// A transport without subscriptions refuses.
    public func firstPull(_ subscription: SyncSubscription, upto: UInt64, after: Data, epoch: UUID, limit: Int)
        async throws -> Changeset
    {
        throw Self.noSubscriptions
    }

    private static var noSubscriptions: StrataError {
        StrataError.invalidConfiguration(
            path: "",
            "The transport \(Self.self) syncs whole datasets, and the file has subscriptions.",
            remedy: "Sync through HTTPHub (strata-hub), or remove the file's subscriptions.")
    }
}

/// What a hub knows of one device's file: the answer to
/// ``SyncHub/session(site:)`` (`GET /v1/session`).
public struct HubSession: Sendable, Hashable, Codable {
    /// The dataset (the hub's tenant) the device's token belongs to.
    public var tenant: UUID
    /// The device the token names.
    public var device: UUID
    /// The hub's epoch: its site as the maker of the changesets it sends.
    /// It changes when the hub's data is restored from a backup.
    public var epoch: UUID
    /// The hub's last commit sequence number.
    public var hubSeq: UInt64
    /// The hub's clock, in milliseconds since 1970.
    public var hubTimeMilliseconds: UInt64
    /// The largest body a push may have, in bytes.
    public var maxBodyBytes: Int
    /// How far the hub has the file's changes: where the next push starts
    /// (``DatabaseSync/changes(from:limit:)``).
    public var pushCursor: SyncCursor
    /// The hub sequence number through which the hub removed tombstones
    /// (compaction; 0 when it never did): a file whose cursor of the hub
    /// is below it catches up before it pushes (``SyncCatchUp``).
    public var compactedSeq: UInt64

    /// A session from its parts.
    public init(
        tenant: UUID, device: UUID, epoch: UUID, hubSeq: UInt64, hubTimeMilliseconds: UInt64,
        maxBodyBytes: Int = 16 << 20, pushCursor: SyncCursor, compactedSeq: UInt64 = 0
    ) {
        self.compactedSeq = compactedSeq
        self.tenant = tenant
        self.device = device
        self.epoch = epoch
        self.hubSeq = hubSeq
        self.hubTimeMilliseconds = hubTimeMilliseconds
        self.maxBodyBytes = maxBodyBytes
        self.pushCursor = pushCursor
    }

    /// The hub's clock as a date.
    public var hubTime: Date { Date(milliseconds: hubTimeMilliseconds) }

    /// The site that makes the changesets the hub sends: the epoch's 16
    /// bytes.
    public var epochSite: SiteID { SiteID(uuid: epoch) }

    private enum CodingKeys: String, CodingKey {
        case tenant, device, epoch, hubSeq, maxBodyBytes, pushCursor, compactedSeq
        case hubTimeMilliseconds = "hubTime"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        tenant = try container.decode(UUID.self, forKey: .tenant)
        device = try container.decode(UUID.self, forKey: .device)
        epoch = try container.decode(UUID.self, forKey: .epoch)
        hubSeq = try container.decode(UInt64.self, forKey: .hubSeq)
        hubTimeMilliseconds = try container.decode(UInt64.self, forKey: .hubTimeMilliseconds)
        maxBodyBytes = try container.decodeIfPresent(Int.self, forKey: .maxBodyBytes) ?? 16 << 20
        pushCursor = try container.decode(HubCursor.self, forKey: .pushCursor).cursor
        // A hub older than compaction sends none.
        compactedSeq = try container.decodeIfPresent(UInt64.self, forKey: .compactedSeq) ?? 0
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(tenant, forKey: .tenant)
        try container.encode(device, forKey: .device)
        try container.encode(epoch, forKey: .epoch)
        try container.encode(hubSeq, forKey: .hubSeq)
        try container.encode(hubTimeMilliseconds, forKey: .hubTimeMilliseconds)
        try container.encode(maxBodyBytes, forKey: .maxBodyBytes)
        try container.encode(HubCursor(pushCursor), forKey: .pushCursor)
        try container.encode(compactedSeq, forKey: .compactedSeq)
    }
}

/// The hub's answer to a push (``SyncHub/push(_:)``, `POST /v1/push`).
public struct HubPushAnswer: Sendable, Hashable, Codable {
    /// How far the hub now has the file's changes: where the next push
    /// starts.
    public var acceptedThrough: SyncCursor
    /// The hub's last commit sequence number after the push.
    public var hubSeq: UInt64
    /// The hub's clock, in milliseconds since 1970.
    public var hubTimeMilliseconds: UInt64
    /// The fields of the changeset the hub did not merge, because the
    /// dataset has a field of that name with another type (the hub's
    /// `schemaConflict`); empty when it merged everything.
    public var refusedFields: [HubRefusedField]
    /// The objects of the changeset the hub did not merge, because the
    /// dataset's sync rules do not let this device write them (the hub's
    /// `outsideRules`); empty when it merged everything.
    public var refusedObjects: [HubRefusedObject]

    /// An answer from its parts.
    public init(
        acceptedThrough: SyncCursor, hubSeq: UInt64, hubTimeMilliseconds: UInt64,
        refusedFields: [HubRefusedField] = [], refusedObjects: [HubRefusedObject] = []
    ) {
        self.acceptedThrough = acceptedThrough
        self.hubSeq = hubSeq
        self.hubTimeMilliseconds = hubTimeMilliseconds
        self.refusedFields = refusedFields
        self.refusedObjects = refusedObjects
    }

    /// The hub's clock as a date.
    public var hubTime: Date { Date(milliseconds: hubTimeMilliseconds) }

    private enum CodingKeys: String, CodingKey {
        case acceptedThrough, hubSeq
        case hubTimeMilliseconds = "hubTime"
        case refusedFields = "fields"
        case refusedObjects = "objects"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        acceptedThrough = try container.decode(HubCursor.self, forKey: .acceptedThrough).cursor
        hubSeq = try container.decode(UInt64.self, forKey: .hubSeq)
        hubTimeMilliseconds = try container.decode(UInt64.self, forKey: .hubTimeMilliseconds)
        refusedFields = try container.decodeIfPresent([HubRefusedField].self, forKey: .refusedFields) ?? []
        refusedObjects = try container.decodeIfPresent([HubRefusedObject].self, forKey: .refusedObjects) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(HubCursor(acceptedThrough), forKey: .acceptedThrough)
        try container.encode(hubSeq, forKey: .hubSeq)
        try container.encode(hubTimeMilliseconds, forKey: .hubTimeMilliseconds)
        if !refusedFields.isEmpty { try container.encode(refusedFields, forKey: .refusedFields) }
        if !refusedObjects.isEmpty { try container.encode(refusedObjects, forKey: .refusedObjects) }
    }
}

/// An object the hub refused to merge: the dataset's sync rules do not let
/// the device write it, as it stands on the hub or as the push would have
/// left it (docs/Hub.md, "Sync rules"). The device keeps its own version;
/// the hub's changes to the object still arrive.
public struct HubRefusedObject: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The object type's name.
    public var type: String
    /// The primary key, as text: the string, the number, or the UUID.
    public var key: String

    /// A refused object from its parts.
    public init(type: String, key: String) {
        self.type = type
        self.key = key
    }

    /// `Note 42`.
    public var description: String { "\(type) \(key)" }
}

/// A field the hub refused to merge: the dataset already has a field of
/// that name on that type, with another type (`descriptor`). When it is
/// the type's primary key (``isPrimaryKey``), the hub refused the whole
/// type: none of the push's objects of that type were merged.
public struct HubRefusedField: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The object type's name.
    public var type: String
    /// The field's name (its path, inside an embedded object); the
    /// primary key's name when ``isPrimaryKey``.
    public var field: String
    /// The field's type as the changeset described it.
    public var descriptor: String
    /// The field's type in the dataset, which the hub keeps (empty when
    /// the hub did not say).
    public var registered: String
    /// Whether the field is the type's primary key, so that the hub
    /// refused every object of the type: the dataset has the type with
    /// another key type.
    public var isPrimaryKey: Bool {
        get { key == true }
        set { key = newValue ? true : nil }
    }
    /// The JSON's `key`: true, or absent (an answer about fields reads as
    /// it did before keys were told apart).
    private var key: Bool?

    /// A refused field from its parts.
    public init(type: String, field: String, descriptor: String, registered: String = "", isPrimaryKey: Bool = false) {
        self.type = type
        self.field = field
        self.descriptor = descriptor
        self.registered = registered
        self.isPrimaryKey = isPrimaryKey
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        type = try container.decode(String.self, forKey: .type)
        field = try container.decode(String.self, forKey: .field)
        descriptor = try container.decode(String.self, forKey: .descriptor)
        registered = try container.decodeIfPresent(String.self, forKey: .registered) ?? ""
        key = try container.decodeIfPresent(Bool.self, forKey: .key) == true ? true : nil
    }

    private enum CodingKeys: String, CodingKey { case type, field, descriptor, registered, key }

    /// `Note.score: string (the dataset has int)`; for a primary key,
    /// `Note.id (primary key): string (the dataset has int)`.
    public var description: String {
        "\(type).\(field)\(isPrimaryKey ? " (primary key)" : ""): \(descriptor)"
            + (registered.isEmpty ? "" : " (the dataset has \(registered))")
    }
}

/// A ``SyncCursor`` as the hub's JSON writes it: `afterKey` in hexadecimal.
struct HubCursor: Codable {
    var since: UInt64
    var after: UInt64
    var afterKey: String

    init(_ cursor: SyncCursor) {
        since = cursor.since
        after = cursor.after
        afterKey = cursor.afterKey.hexString
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        since = try container.decode(UInt64.self, forKey: .since)
        after = try container.decode(UInt64.self, forKey: .after)
        afterKey = try container.decodeIfPresent(String.self, forKey: .afterKey) ?? ""
        guard Data(hex: afterKey) != nil else {
            throw DecodingError.dataCorruptedError(
                forKey: .afterKey, in: container, debugDescription: "afterKey is not hexadecimal: \(afterKey)")
        }
    }

    var cursor: SyncCursor {
        SyncCursor(since: since, after: after, afterKey: Data(hex: afterKey) ?? Data())
    }
}

extension Date {
    init(milliseconds: UInt64) {
        self.init(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    }

    var milliseconds: UInt64 { UInt64(max(0, timeIntervalSince1970 * 1000)) }
}

extension Data {
    /// Lowercase hexadecimal digits, two per byte.
    var hexString: String { map { String(format: "%02x", $0) }.joined() }

    /// The bytes of an even number of hexadecimal digits; nil for anything
    /// else.
    @_spi(Hub) public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(digits.count / 2)
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let high = Self.nibble(digits[i]), let low = Self.nibble(digits[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.init(bytes)
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a") ... UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A") ... UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
