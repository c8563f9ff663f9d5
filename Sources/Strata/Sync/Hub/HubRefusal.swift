import Foundation

/// What a hub answered when it refused a request: its error code, the HTTP
/// status, its message, and the fields that come with the code.
///
/// It is the ``StrataError/cause`` of a ``StrataError`` of code
/// ``StrataError/Code/hubRefused``, also reachable as
/// ``StrataError/hubRefusal``:
///
/// ```swift
/// } catch let error as StrataError where error.hubRefusal?.code == .clockSkew {
///     print("the hub's clock:", error.hubRefusal?.hubTime ?? .now)
/// }
/// ```
///
/// A ``SyncHub`` of your own throws one the same way:
/// `throw StrataError(.hubRefused, "…", cause: HubRefusal(...))`.
public struct HubRefusal: Error, Sendable, Hashable {
    /// The hub's error code (the `error` field of its JSON).
    public var code: Code
    /// The HTTP status: 401, 403, 409, 410, 413, 422...
    public var status: Int
    /// The hub's message, for people.
    public var message: String
    /// The hub's clock in milliseconds since 1970, with
    /// ``Code/clockSkew`` (and ``Code/schemaConflict``).
    public var hubTimeMilliseconds: UInt64?
    /// The hub's new epoch, with ``Code/epochChanged``.
    public var epoch: UUID?
    /// The largest body the hub takes, in bytes, with
    /// ``Code/bodyTooLarge``.
    public var limit: Int?
    /// The dataset the changeset named, with ``Code/wrongDataset``.
    public var dataset: String?

    /// A refusal from its parts.
    public init(
        code: Code, status: Int, message: String, hubTimeMilliseconds: UInt64? = nil, epoch: UUID? = nil,
        limit: Int? = nil, dataset: String? = nil
    ) {
        self.code = code
        self.status = status
        self.message = message
        self.hubTimeMilliseconds = hubTimeMilliseconds
        self.epoch = epoch
        self.limit = limit
        self.dataset = dataset
    }

    /// The hub's clock as a date, when the refusal carries it.
    public var hubTime: Date? { hubTimeMilliseconds.map(Date.init(milliseconds:)) }

    /// Whether asking again later can succeed: the hub was unavailable or
    /// failed (5xx), or the device's clock differs from the hub's (409,
    /// until a clock is set right). An unknown token, another dataset, a
    /// malformed request or a body too large for the hub will be refused
    /// again.
    public var isRetryable: Bool {
        status >= 500 || status == 429 || code == .clockSkew || code == .epochChanged
    }

    /// A hub's error code, as its JSON spells it.
    ///
    /// A struct rather than an enum: a newer hub may answer with a code this
    /// version does not name, and new codes never break your `switch`.
    ///
    /// The hub (`strata-hub`) refuses with these very values: this list
    /// is the protocol's, docs/Hub.md's table read as code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code as the hub spells it.
        public var rawValue: String

        /// A code as the hub spells it.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// 400: the body is not a well-formed changeset.
        public static let invalidChangeset = Code(rawValue: "invalidChangeset")
        /// 400: a query parameter is missing or malformed; or a pull's
        /// cursor is past the last commit of an epoch the hub already
        /// renewed at that commit.
        public static let invalidRequest = Code(rawValue: "invalidRequest")
        /// 401: no token, an unknown token, a revoked one, or a JWT that
        /// fails a check (the message says which).
        public static let unauthorized = Code(rawValue: "unauthorized")
        /// 403: the changeset belongs to another dataset than the token's.
        public static let wrongDataset = Code(rawValue: "wrongDataset")
        /// 403: the file first synced as another device of the dataset (a
        /// copied file: give it an identity of its own with
        /// ``Database/resetSyncIdentity(at:)``).
        public static let siteOfAnotherDevice = Code(rawValue: "siteOfAnotherDevice")
        /// 409: a stamp is more than 5 minutes ahead of the hub's clock
        /// (``HubRefusal/hubTime``).
        public static let clockSkew = Code(rawValue: "clockSkew")
        /// 410: the hub's data was restored from a backup; its new epoch is
        /// ``HubRefusal/epoch``.
        public static let epochChanged = Code(rawValue: "epochChanged")
        /// 413: the body is over ``HubRefusal/limit`` bytes.
        public static let bodyTooLarge = Code(rawValue: "bodyTooLarge")
        /// 422: fields name a type the dataset has with another type; the
        /// rest was merged. A push answers it as a ``HubPushAnswer``.
        public static let schemaConflict = Code(rawValue: "schemaConflict")
        /// 422: objects of the push are outside the device's sync rules (the
        /// hub's operator sets them per dataset): those objects were not
        /// merged, the rest was. A push answers it as a ``HubPushAnswer``
        /// whose ``HubPushAnswer/refusedObjects`` names them.
        public static let outsideRules = Code(rawValue: "outsideRules")
        /// 503: the hub's database cannot be reached.
        public static let unavailable = Code(rawValue: "unavailable")
        /// 500: a failure of the hub's own; its message says which, its
        /// log has more. The JSON spells it `internal`.
        public static let internalError = Code(rawValue: "internal")
        /// The hub's operator named a tenant the hub has no device of
        /// (`strata-hub epoch`); no request of a device is answered so.
        public static let unknownTenant = Code(rawValue: "unknownTenant")
        /// The hub's operator gave sync rules that do not parse or do not
        /// hold together (`strata-hub rules set`); the message names the
        /// line. No request of a device is answered so.
        public static let invalidRules = Code(rawValue: "invalidRules")
        /// The hub's PostgreSQL schema was migrated by a newer hub: the
        /// operator runs the newer `strata-hub`. The hub does not serve.
        public static let schemaTooNew = Code(rawValue: "schemaTooNew")
        /// The hub's PostgreSQL schema is older than the hub: the operator
        /// runs `strata-hub migrate`. The hub does not serve.
        public static let schemaNotMigrated = Code(rawValue: "schemaNotMigrated")

        /// 410: a pull's cursor is older than the tombstones the hub
        /// compacted (the device was offline past the hub's retention): a
        /// plain pull would miss deletions. The client catches up instead
        /// (docs/Hub.md, "Compaction"); an older client that cannot stops
        /// here rather than diverge.
        public static let cursorCompacted = Code(rawValue: "cursorCompacted")

        /// The code as the hub spells it.
        public var description: String { rawValue }
    }
}
