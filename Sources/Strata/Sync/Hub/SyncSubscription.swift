import Foundation

/// Which objects of one type a subscription asks the hub for: a test of
/// stored fields that the hub evaluates in SQL (docs/Hub.md,
/// "Subscriptions"). Made from a query's `where`s and planned `#Predicate`
/// parts by ``DatabaseSync/subscribe(_:to:)``.
public indirect enum SyncFilter: Sendable, Hashable, CustomStringConvertible {
    /// Every object of the type.
    case everything
    /// The field holds one of the values.
    case oneOf(field: String, values: [Value])
    /// The field holds a value of the bounds' type between them, in the
    /// order of a query's `<` (numbers and dates by value, strings and
    /// data by their bytes); a missing bound is open. At least one bound.
    case range(field: String, lower: Bound?, upper: Bound?)
    /// Every part selects the object.
    case all([SyncFilter])
    /// Some part selects the object.
    case any([SyncFilter])
    /// The part does not select the object.
    case not(SyncFilter)

    /// One end of a ``range(field:lower:upper:)``.
    public struct Bound: Sendable, Hashable {
        /// The value at the end.
        public var value: Value
        /// Whether the value itself is in the range (`<=`, `>=`).
        public var inclusive: Bool

        /// A bound from its parts.
        public init(_ value: Value, inclusive: Bool) {
            self.value = value
            self.inclusive = inclusive
        }
    }

    /// The fields the filter reads.
    public var fields: Set<String> {
        switch self {
        case .everything: []
        case .oneOf(let field, _), .range(let field, _, _): [field]
        case .all(let parts), .any(let parts): parts.reduce(into: []) { $0.formUnion($1.fields) }
        case .not(let part): part.fields
        }
    }

    /// `folder in ["work"] and not (archived in [true])`.
    public var description: String {
        switch self {
        case .everything: "everything"
        case .oneOf(let field, let values):
            values.count == 1 ? "\(field) == \(values[0])" : "\(field) in \(values.map(\.description))"
        case .range(let field, let lower, let upper):
            [
                lower.map { "\(field) \($0.inclusive ? ">=" : ">") \($0.value)" },
                upper.map { "\(field) \($0.inclusive ? "<=" : "<") \($0.value)" },
            ].compactMap { $0 }.joined(separator: " and ")
        case .all(let parts): parts.map { "(\($0))" }.joined(separator: " and ")
        case .any(let parts): parts.map { "(\($0))" }.joined(separator: " or ")
        case .not(let part): "not (\(part))"
        }
    }

    /// Whether an object whose fields read as `value(name)` passes.
    func matches(_ value: (String) -> Value) -> Bool {
        switch self {
        case .everything: true
        case .oneOf(let field, let values): values.contains(value(field))
        case .range(let field, let lower, let upper):
            QueryRange(position: 0, lower, upper)?.contains(value(field)) ?? false
        case .all(let parts): parts.allSatisfy { $0.matches(value) }
        case .any(let parts): parts.contains { $0.matches(value) }
        case .not(let part): !part.matches(value)
        }
    }
}

extension QueryRange {
    /// The range of a subscription's bounds (``SyncFilter/range(field:lower:upper:)``);
    /// nil without a bound, or with bounds of two types or of a type
    /// without order.
    init?(position: Int, _ lower: SyncFilter.Bound?, _ upper: SyncFilter.Bound?) {
        let bounds = [lower, upper].compactMap { $0?.value }
        guard let first = bounds.first, bounds.allSatisfy(SyncFilter.isOrdered),
            bounds.allSatisfy({ KeyCodec.tag(of: $0) == KeyCodec.tag(of: first) })
        else { return nil }
        self.init(
            position: position, lower: lower.map { Bound(value: $0.value, inclusive: $0.inclusive) },
            upper: upper.map { Bound(value: $0.value, inclusive: $0.inclusive) })
    }
}

/// The filter of a query's plan, refusing what the hub cannot evaluate.
extension SyncFilter {
    /// Whether the hub compares values of `value`'s type in order: the
    /// numbers, dates, strings, data and UUIDs.
    static func isOrdered(_ value: Value) -> Bool {
        switch value {
        case .int, .double, .date, .string, .data, .uuid: true
        default: false
        }
    }

    init(plan: QueryPlan, hasClosureFilters: Bool, path: String) throws {
        func refuse(_ what: String) -> StrataError {
            StrataError.invalidValue(
                "A subscription cannot \(what): the hub evaluates only tests of whether a top-level field holds one of some values or lies in a range, combined with and, or and not.",
                remedy:
                    "Subscribe with where(_:equals:), where(_:in:) or a #Predicate of ==, !=, <, <=, >, >=, contains, &&, || and !, and filter the rest on the device.",
                path: path)
        }
        if let error = plan.error { throw error }
        guard !hasClosureFilters else { throw refuse("run a closure filter or an unplanned #Predicate part") }
        guard plan.order == nil, plan.limit == nil, plan.offset == 0 else { throw refuse("sort, limit or skip") }
        guard plan.backlinks == nil, plan.recordTest == nil else {
            throw refuse("follow backlinks or test schema versions")
        }
        guard !plan.matchesNothing else {
            self = .not(.everything)
            return
        }
        func filter(_ condition: QueryCondition) throws -> SyncFilter {
            switch condition {
            case .range(let range):
                guard range.position < plan.table.fields.count else {
                    throw refuse("test a field inside an embedded object")
                }
                let field = plan.table.fields[range.position].name
                if range.isEquality, let value = range.lower?.value { return .oneOf(field: field, values: [value]) }
                guard plan.table.primaryKey?.name != field else { throw refuse("test a range of the primary key") }
                let (lower, upper) = (
                    range.lower.map { Bound($0.value, inclusive: $0.inclusive) },
                    range.upper.map { Bound($0.value, inclusive: $0.inclusive) }
                )
                guard QueryRange(position: 0, lower, upper) != nil else {
                    throw refuse("compare values of this type in order")
                }
                return .range(field: field, lower: lower, upper: upper)
            case .prefix, .substring: throw refuse("test part of a string")
            case .constant(let holds): return holds ? .everything : .not(.everything)
            case .all(let parts): return .all(try parts.map(filter))
            case .not(let part): return .not(try filter(part))
            case .any(let parts):
                let filters = try parts.map(filter)
                // An OR of equalities of one field is one oneOf.
                var field: String?
                var values: [Value] = []
                for part in filters {
                    guard case .oneOf(let name, let some) = part, field == nil || field == name else {
                        return .any(filters)
                    }
                    field = name
                    values += some
                }
                return field.map { .oneOf(field: $0, values: values) } ?? .any(filters)
            }
        }
        let parts = try plan.conditions.map(filter)
        self = parts.isEmpty ? .everything : parts.count == 1 ? parts[0] : .all(parts)
    }
}

/// A part of the dataset a device syncs: the objects of one type that
/// pass a filter, within what the hub's sync rules let it read (docs/Hub.md,
/// "Subscriptions"). A file with no subscriptions syncs everything it may
/// read; a file with some, only what they select.
public struct SyncSubscription: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// Where a subscription is in getting its objects.
    public enum State: Sendable, Hashable {
        /// Added: the next exchange with the hub pulls the objects it
        /// selects that the file lacks.
        case pending
        /// Pulling its objects from the hub, page by page: `objects` so far.
        /// An exchange that stops resumes where it was.
        case pulling(objects: Int)
        /// The file has its objects; each exchange brings their changes.
        case complete
    }

    /// Its identity.
    public let id: UUID
    /// A name for people (logs, a settings screen); need not be unique.
    public let name: String?
    /// The object type's stored name.
    public let typeName: String
    /// The objects of the type it selects.
    public let filter: SyncFilter
    /// How far it is in getting its objects.
    public internal(set) var state: State

    /// Where its objects' first pull is: the hub's epoch and sequence
    /// number it pulls up to, and the key of the last object it got.
    var firstPull: FirstPull?

    struct FirstPull: Sendable, Hashable {
        var epoch: UUID
        var upto: UInt64
        var after: Data
        var objects: Int
    }

    init(id: UUID = UUID(), name: String?, typeName: String, filter: SyncFilter) {
        self.id = id
        self.name = name
        self.typeName = typeName
        self.filter = filter
        state = .pending
    }

    /// `"work notes": Note where folder == "work" (complete)`.
    public var description: String {
        let label = name.map { "\"\($0)\": " } ?? ""
        let selection = filter == .everything ? typeName : "\(typeName) where \(filter)"
        return "\(label)\(selection) (\(state))"
    }
}

// The JSON of subscriptions: in the file (meta key `sync.subscriptions`)
// and on the wire (the pull's `subscriptions`), values as the base64 of
// their changeset bytes.
extension SyncFilter: Codable {
    private enum Keys: String, CodingKey {
        case field, values, all, any, not, everything, from, fromInclusive, to, toInclusive
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        if let parts = try container.decodeIfPresent([SyncFilter].self, forKey: .all) {
            self = .all(parts)
        } else if let parts = try container.decodeIfPresent([SyncFilter].self, forKey: .any) {
            self = .any(parts)
        } else if let part = try container.decodeIfPresent(SyncFilter.self, forKey: .not) {
            self = .not(part)
        } else if let field = try container.decodeIfPresent(String.self, forKey: .field) {
            func value(_ text: String, _ key: Keys) throws -> Value {
                guard let data = Data(base64Encoded: text) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: key, in: container, debugDescription: "a value that is not base64")
                }
                return try ChangesetCodec.value(from: [UInt8](data))
            }
            guard let encoded = try container.decodeIfPresent([String].self, forKey: .values) else {
                func bound(_ key: Keys, _ inclusive: Keys) throws -> Bound? {
                    guard let text = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
                    return Bound(
                        try value(text, key),
                        inclusive: try container.decodeIfPresent(Bool.self, forKey: inclusive) ?? false)
                }
                let (lower, upper) = (try bound(.from, .fromInclusive), try bound(.to, .toInclusive))
                guard QueryRange(position: 0, lower, upper) != nil else {
                    throw DecodingError.dataCorruptedError(
                        forKey: .from, in: container,
                        debugDescription:
                            "a range without bounds, or with bounds of two types or of a type without order")
                }
                self = .range(field: field, lower: lower, upper: upper)
                return
            }
            let values = try encoded.map { try value($0, .values) }
            guard !values.isEmpty else {
                throw DecodingError.dataCorruptedError(
                    forKey: .values, in: container, debugDescription: "a field test with no values")
            }
            self = .oneOf(field: field, values: values)
        } else if try container.decodeIfPresent(Bool.self, forKey: .everything) == true {
            self = .everything
        } else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "not a subscription filter"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .everything: try container.encode(true, forKey: .everything)
        case .oneOf(let field, let values):
            try container.encode(field, forKey: .field)
            try container.encode(
                values.map { Data(ChangesetCodec.valueBytes($0)).base64EncodedString() }, forKey: .values)
        case .range(let field, let lower, let upper):
            try container.encode(field, forKey: .field)
            if let lower {
                try container.encode(Data(ChangesetCodec.valueBytes(lower.value)).base64EncodedString(), forKey: .from)
                try container.encode(lower.inclusive, forKey: .fromInclusive)
            }
            if let upper {
                try container.encode(Data(ChangesetCodec.valueBytes(upper.value)).base64EncodedString(), forKey: .to)
                try container.encode(upper.inclusive, forKey: .toInclusive)
            }
        case .all(let parts): try container.encode(parts, forKey: .all)
        case .any(let parts): try container.encode(parts, forKey: .any)
        case .not(let part): try container.encode(part, forKey: .not)
        }
    }
}

extension SyncSubscription: Codable {
    private enum Keys: String, CodingKey {
        case id, name, type, filter, complete
        case epoch, upto, after, objects
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        id = try container.decode(UUID.self, forKey: .id)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        typeName = try container.decode(String.self, forKey: .type)
        filter = try container.decode(SyncFilter.self, forKey: .filter)
        if let epoch = try container.decodeIfPresent(UUID.self, forKey: .epoch) {
            let objects = try container.decode(Int.self, forKey: .objects)
            firstPull = FirstPull(
                epoch: epoch, upto: try container.decode(UInt64.self, forKey: .upto),
                after: Data(hex: try container.decode(String.self, forKey: .after)) ?? Data(),
                objects: objects)
            state = .pulling(objects: objects)
        } else {
            state = .pending
        }
        if try container.decodeIfPresent(Bool.self, forKey: .complete) == true { state = .complete }
    }

    /// The subscription as the file keeps it; on the wire, the hub reads
    /// `type` and `filter` only.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encode(typeName, forKey: .type)
        try container.encode(filter, forKey: .filter)
        if state == .complete { try container.encode(true, forKey: .complete) }
        if let firstPull {
            try container.encode(firstPull.epoch, forKey: .epoch)
            try container.encode(firstPull.upto, forKey: .upto)
            try container.encode(firstPull.after.hexString, forKey: .after)
            try container.encode(firstPull.objects, forKey: .objects)
        }
    }
}

/// Subscriptions as a pull names them to the hub: each one's type and
/// filter, as JSON, in the query parameter `subscriptions` (or `firstPull`)
/// as base64url. For a transport of your own and the hub.
public struct HubSubscriptions: Sendable, Hashable, Codable {
    /// One subscription: its type and filter.
    public struct Entry: Sendable, Hashable, Codable {
        /// The object type's stored name.
        public var type: String
        /// The objects of the type it selects.
        public var filter: SyncFilter

        /// An entry from its parts.
        public init(type: String, filter: SyncFilter) {
            self.type = type
            self.filter = filter
        }
    }

    /// The subscriptions, in the file's order.
    public var entries: [Entry]

    /// Subscriptions from their entries.
    public init(entries: [Entry]) { self.entries = entries }

    /// The type and filter of each of `subscriptions`.
    public init(_ subscriptions: [SyncSubscription]) {
        entries = subscriptions.map { Entry(type: $0.typeName, filter: $0.filter) }
    }

    /// The query parameter's text.
    public var parameter: String {
        get throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return try encoder.encode(self).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
    }

    /// The subscriptions a query parameter names; nil when it is not one.
    public init?(parameter: String) {
        var text = parameter.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while !text.count.isMultiple(of: 4) { text += "=" }
        guard let data = Data(base64Encoded: text),
            let decoded = try? JSONDecoder().decode(HubSubscriptions.self, from: data)
        else { return nil }
        self = decoded
    }
}
