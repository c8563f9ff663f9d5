import Crypto
import Foundation
import NIOCore
import PostgresNIO
@_spi(Hub) import Strata

/// SQL text and its bound values, built up piece by piece.
struct SQLText {
    var sql = ""
    var binds = PostgresBindings()

    /// Binds `value` and returns its placeholder (`$3`).
    mutating func bind(_ value: some PostgresNonThrowingEncodable) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: sql, binds: binds) }
}

/// What the rules need of a dataset's schema to compare a field with a
/// claim: each type's primary key and the types of the fields they read.
struct RuleSchema: Sendable {
    var keys: [String: (name: String, descriptor: String)] = [:]
    /// Descriptors by type, then field.
    var fields: [String: [String: String]] = [:]

    /// Whether it has every key and field descriptor of `rules`.
    func covers(_ rules: SyncRules) -> Bool {
        rules.types.keys.allSatisfy { keys[$0] != nil }
            && rules.ruledFields.allSatisfy { type, names in
                names.allSatisfy { $0 == keys[type]?.name || fields[type]?[$0] != nil }
            }
    }

    /// The descriptor of `field` of `type`, its key's included.
    func descriptor(_ type: String, _ field: String) -> String? {
        if let key = keys[type], key.name == field { return key.descriptor }
        return fields[type]?[field]
    }
}

/// The bytes `sync_attrs.value` holds for a field's value: the value's
/// changeset bytes, or for one longer than ``inlineLimit`` bytes `FF` and
/// their SHA-256 (no value's first byte is `FF`), so that every value fits
/// an index entry. The SQL twin is ``sql(_:)``.
enum AttrValue {
    static let inlineLimit = 512

    static func bytes(_ value: Value) -> ByteBuffer {
        let bytes = ChangesetCodec.valueBytes(value)
        guard bytes.count > inlineLimit else { return ByteBuffer(bytes: bytes) }
        return ByteBuffer(bytes: [0xFF] + Array(SHA256.hash(data: bytes)))
    }

    /// The bytes `sync_attrs.ord` holds for the value whose changeset
    /// bytes are `bytes`: in the order of a query's `<`
    /// (``ChangesetCodec/orderedBytes(_:)``); nil for a type without
    /// order.
    static func ordered(_ bytes: ByteBuffer) throws -> ByteBuffer? {
        let value = try ChangesetCodec.value(from: Array(bytes.readableBytesView))
        return ChangesetCodec.orderedBytes(value).map { ByteBuffer(bytes: $0) }
    }

    /// The same, in SQL, of the bytea expression `column`.
    static func sql(_ column: String) -> String {
        "CASE WHEN length(\(column)) <= \(inlineLimit) THEN \(column) ELSE '\\xff'::bytea || sha256(\(column)) END"
    }
}

/// Turns a device's view of the rules into SQL: a boolean expression over
/// an `objects` row, true when the device may read (or write) it. The
/// claims are decided here; what remains reads `sync_attrs` by its
/// primary key, or `objects` by theirs, so a rule costs index lookups per
/// object, never a scan.
struct RuleCompiler {
    enum Mode { case read, write }

    let rules: SyncRules
    let claims: DeviceClaims
    let schema: RuleSchema
    var text = SQLText()
    private var aliases = 0
    /// The relation the conditions read the ruled fields' values from:
    /// `sync_attrs`, or their values as they were at a cursor
    /// (``values(asOf:)``).
    var attrs = "sync_attrs"

    /// A relation of `sync_attrs`' columns holding each value as it was
    /// after the hub commit `since` (a bound placeholder): the earliest
    /// value `sync_moves` keeps from a later commit, else the current one.
    /// An object made after `since` reads as it was made.
    static func values(asOf since: String) -> String {
        """
        (SELECT a.tenant_id, a.type_name, a.object_key, a.field, coalesce(m.value, a.value) AS value,
                CASE WHEN m.value IS NULL THEN a.ord ELSE m.ord END AS ord
         FROM sync_attrs a LEFT JOIN LATERAL
              (SELECT m.value, m.ord FROM sync_moves m WHERE m.tenant_id = a.tenant_id
                 AND m.type_name = a.type_name AND m.object_key = a.object_key AND m.field = a.field
                 AND m.seq > \(since) ORDER BY m.seq LIMIT 1) m ON true)
        """
    }

    init(rules: SyncRules, claims: DeviceClaims, schema: RuleSchema, text: SQLText = SQLText()) {
        self.rules = rules
        self.claims = claims
        self.schema = schema
        self.text = text
    }

    /// Whether the device may `mode` the `objects` row `alias`.
    mutating func allows(_ mode: Mode, _ alias: String) -> String {
        var cases: [String] = []
        for (type, typeRules) in rules.types.sorted(by: { $0.key < $1.key }) {
            guard let expression = mode == .read ? typeRules.read : typeRules.write else { continue }
            let condition = self.condition(expression, type: type, alias: alias)
            guard condition != "false" else { continue }
            cases.append("WHEN \(text.bind(type)) THEN \(condition)")
        }
        guard !cases.isEmpty else { return "false" }
        return "(CASE \(alias).type_name \(cases.joined(separator: " ")) ELSE false END)"
    }

    /// What `type`'s rule `mode` is for these claims when they decide it
    /// alone: `true` (every object of the type), `false` (none, as for a
    /// type without the rule); nil when it depends on the object's fields.
    func decided(_ mode: Mode, _ type: String) -> Bool? {
        guard let typeRules = rules.types[type], let expression = mode == .read ? typeRules.read : typeRules.write
        else { return false }
        var probe = RuleCompiler(rules: rules, claims: claims, schema: schema)
        switch probe.condition(expression, type: type, alias: "o") {
        case "true": return true
        case "false": return false
        default: return nil
        }
    }

    private mutating func alias() -> String {
        aliases += 1
        return "r\(aliases)"
    }

    /// The SQL of `expression` on the row `alias` of `type`: `true` or
    /// `false` when the claims decide it.
    mutating func condition(_ expression: RuleExpression, type: String, alias: String) -> String {
        switch expression {
        case .constant(let value):
            return value ? "true" : "false"
        case .all(let parts):
            let conditions = parts.map { condition($0, type: type, alias: alias) }
            if conditions.contains("false") { return "false" }
            let rest = conditions.filter { $0 != "true" }
            return rest.isEmpty ? "true" : "(" + rest.joined(separator: " AND ") + ")"
        case .any(let parts):
            let conditions = parts.map { condition($0, type: type, alias: alias) }
            if conditions.contains("true") { return "true" }
            let rest = conditions.filter { $0 != "false" }
            return rest.isEmpty ? "false" : "(" + rest.joined(separator: " OR ") + ")"
        case .not(let part):
            switch condition(part, type: type, alias: alias) {
            case "true": return "false"
            case "false": return "true"
            case let inner: return "NOT \(inner)"
            }
        case .equals(let left, let right, let negated):
            guard let field = left.field ?? right.field else {
                // Claims and constants alone.
                guard let a = constant(left), let b = constant(right) else { return "false" }
                return ((a == b) != negated) ? "true" : "false"
            }
            let other = left.field == nil ? left : right
            let candidates: [DeviceClaims.Value]
            switch other {
            case .claim(let name):
                guard let value = claims.values[name] else { return "false" }
                if case .array = value { return "false" }
                candidates = [value]
            default:
                guard let value = constant(other) else { return "false" }
                candidates = [value]
            }
            return holds(field, of: type, alias: alias, oneOf: candidates, negated: negated)
        case .member(let element, let claim):
            let list = claims.list(claim)
            guard let field = element.field else {
                guard let value = constant(element) else { return "false" }
                return list.contains(value) ? "true" : "false"
            }
            return holds(field, of: type, alias: alias, oneOf: list, negated: false)
        case .follows(let field, let target):
            guard let targetRule = rules.types[target]?.read, schema.keys[type]?.name != field,
                let descriptor = schema.descriptor(type, field), Self.plain(descriptor) == "link(\(target))"
            else { return "false" }
            let attr = self.alias()
            let linked = self.alias()
            let inner = condition(targetRule, type: target, alias: linked)
            guard inner != "false" else { return "false" }
            return """
                EXISTS (SELECT 1 FROM \(attrs) \(attr) JOIN objects \(linked)
                    ON \(linked).tenant_id = \(attr).tenant_id AND \(linked).type_name = \(text.bind(target))
                   AND \(linked).object_key = substring(\(attr).value from 2)
                  WHERE \(attr).tenant_id = \(alias).tenant_id AND \(attr).type_name = \(alias).type_name
                    AND \(attr).object_key = \(alias).object_key AND \(attr).field = \(text.bind(field))
                    AND get_byte(\(attr).value, 0) = \(RecordTagLink.value) AND \(inner))
                """
        }
    }

    /// Whether the row's `field` holds one of `candidates` (none of them,
    /// negated), each taken as a value of the field's type; false when
    /// none fits it.
    private mutating func holds(
        _ field: String, of type: String, alias: String, oneOf candidates: [DeviceClaims.Value], negated: Bool
    ) -> String {
        guard let descriptor = schema.descriptor(type, field) else { return "false" }
        let values = candidates.compactMap { value(of: $0, descriptor: descriptor) }
        guard !values.isEmpty else { return "false" }
        let test = matches(field, of: type, alias: alias, values)
        return negated ? "NOT \(test)" : test
    }

    /// Whether the `sync_attrs` row of the object `alias` and `field`
    /// holds one of `bytes`. One value is compared with `=`, which the
    /// index on values seeks with the key (PostgreSQL keeps `= ANY` out of
    /// the seek on a table it has not analyzed yet, and walks every value).
    private mutating func lookup(_ field: String, alias: String, _ bytes: [ByteBuffer]) -> String {
        let attr = self.alias()
        let value =
            bytes.count == 1
            ? "\(attr).value = \(text.bind(bytes[0]))" : "\(attr).value = ANY(\(text.bind(bytes))::bytea[])"
        return """
            EXISTS (SELECT 1 FROM \(attrs) \(attr) WHERE \(attr).tenant_id = \(alias).tenant_id
                AND \(attr).type_name = \(alias).type_name AND \(attr).field = \(text.bind(field))
                AND \(value) AND \(attr).object_key = \(alias).object_key)
            """
    }

    /// Whether one of `subscriptions` selects the `objects` row `alias`.
    ///
    /// - Throws: ``HubError`` `invalidRequest` for a subscription of a type
    ///   the rules do not name, or one that tests a field they do not list
    ///   (`Type fields: ...`).
    mutating func selects(_ subscriptions: HubSubscriptions, _ alias: String) throws(HubError) -> String {
        var byType: [String: [String]] = [:]
        for entry in subscriptions.entries {
            guard let typeRules = rules.types[entry.type] else {
                throw HubError.invalidRequest(
                    "A subscription names the type '\(entry.type)', which the dataset's sync rules do not name.")
            }
            let allowed = typeRules.subscribable.union([schema.keys[entry.type]?.name].compactMap { $0 })
            let unlisted = entry.filter.fields.subtracting(allowed)
            guard unlisted.isEmpty else {
                throw HubError.invalidRequest(
                    "A subscription of '\(entry.type)' tests \(unlisted.sorted().joined(separator: ", ")), which the dataset's sync rules do not list as fields to subscribe by (\(allowed.isEmpty ? "none" : allowed.sorted().joined(separator: ", "))): the operator adds '\(entry.type) fields: ...' to them."
                )
            }
            if let key = schema.keys[entry.type]?.name, Self.rangeFields(entry.filter).contains(key) {
                throw HubError.invalidRequest(
                    "A subscription of '\(entry.type)' tests a range of its primary key '\(key)', which the hub does not order: test the key for equality, or a range of another field."
                )
            }
            byType[entry.type, default: []].append(condition(entry.filter, type: entry.type, alias: alias))
        }
        var cases: [String] = []
        for (type, conditions) in byType.sorted(by: { $0.key < $1.key }) {
            let any = conditions.contains("true") ? "true" : "(" + conditions.joined(separator: " OR ") + ")"
            cases.append("WHEN \(text.bind(type)) THEN \(any)")
        }
        guard !cases.isEmpty else { return "false" }
        return "(CASE \(alias).type_name \(cases.joined(separator: " ")) ELSE false END)"
    }

    /// The fields `filter` tests a range of.
    static func rangeFields(_ filter: SyncFilter) -> Set<String> {
        switch filter {
        case .range(let field, _, _): [field]
        case .all(let parts), .any(let parts): parts.reduce(into: []) { $0.formUnion(rangeFields($1)) }
        case .not(let part): rangeFields(part)
        case .everything, .oneOf: []
        }
    }

    /// The SQL of a subscription's filter on the row `alias` of `type`.
    mutating func condition(_ filter: SyncFilter, type: String, alias: String) -> String {
        switch filter {
        case .everything: return "true"
        case .oneOf(let field, let values):
            guard schema.descriptor(type, field) != nil else { return "false" }
            return values.isEmpty ? "false" : matches(field, of: type, alias: alias, values)
        case .range(let field, let lower, let upper):
            guard schema.descriptor(type, field) != nil, let test = orderTest(lower, upper, column: "ATTR.ord") else {
                return "false"
            }
            let attr = self.alias()
            return """
                EXISTS (SELECT 1 FROM \(attrs) \(attr) WHERE \(attr).tenant_id = \(alias).tenant_id
                    AND \(attr).type_name = \(alias).type_name AND \(attr).field = \(text.bind(field))
                    AND \(attr).object_key = \(alias).object_key AND \(test.replacingOccurrences(of: "ATTR", with: attr)))
                """
        case .all(let parts):
            return "(" + parts.map { condition($0, type: type, alias: alias) }.joined(separator: " AND ") + ")"
        case .any(let parts):
            guard !parts.isEmpty else { return "false" }
            return "(" + parts.map { condition($0, type: type, alias: alias) }.joined(separator: " OR ") + ")"
        case .not(let part): return "NOT \(condition(part, type: type, alias: alias))"
        }
    }

    /// The keys of the objects of `type` that `filter` may select, from an
    /// index (nil when it cannot narrow them: a NOT, or everything).
    mutating func candidates(_ filter: SyncFilter, type: String, tenant: String) -> String? {
        switch filter {
        case .everything, .not: return nil
        case .oneOf(let field, let values):
            if schema.keys[type]?.name == field {
                return "SELECT unnest(\(text.bind(Self.keyBytes(values)))::bytea[])"
            }
            return """
                SELECT object_key FROM sync_attrs WHERE tenant_id = \(tenant) AND type_name = \(text.bind(type))
                AND field = \(text.bind(field)) AND value = ANY(\(text.bind(values.map(AttrValue.bytes)))::bytea[])
                """
        case .range(let field, let lower, let upper):
            guard let test = orderTest(lower, upper, column: "ord") else { return nil }
            return """
                SELECT object_key FROM sync_attrs WHERE tenant_id = \(tenant) AND type_name = \(text.bind(type))
                AND field = \(text.bind(field)) AND \(test)
                """
        case .all(let parts):
            for part in parts { if let narrowed = candidates(part, type: type, tenant: tenant) { return narrowed } }
            return nil
        case .any(let parts):
            var unions: [String] = []
            for part in parts {
                guard let narrowed = candidates(part, type: type, tenant: tenant) else { return nil }
                unions.append(narrowed)
            }
            return unions.isEmpty ? nil : unions.joined(separator: " UNION ")
        }
    }

    /// SQL that the ordered bytes `column` lie between the bounds, and
    /// are of their type (an open end stops at the type's edge); nil when
    /// the bounds are no range (``SyncFilter/range(field:lower:upper:)``).
    private mutating func orderTest(_ lower: SyncFilter.Bound?, _ upper: SyncFilter.Bound?, column: String)
        -> String?
    {
        guard let first = (lower ?? upper).flatMap({ ChangesetCodec.orderedBytes($0.value) }) else { return nil }
        let tag = first[0]
        func bytes(_ bound: SyncFilter.Bound) -> [UInt8]? {
            guard let bytes = ChangesetCodec.orderedBytes(bound.value), bytes[0] == tag else { return nil }
            return bytes
        }
        var tests: [String] = []
        if let lower {
            guard let bytes = bytes(lower) else { return nil }
            tests.append("\(column) \(lower.inclusive ? ">=" : ">") \(text.bind(ByteBuffer(bytes: bytes)))")
        } else {
            tests.append("\(column) >= \(text.bind(ByteBuffer(bytes: [tag])))")
        }
        if let upper {
            guard let bytes = bytes(upper) else { return nil }
            tests.append("\(column) \(upper.inclusive ? "<=" : "<") \(text.bind(ByteBuffer(bytes: bytes)))")
        } else {
            tests.append("\(column) < \(text.bind(ByteBuffer(bytes: [tag + 1])))")
        }
        return tests.joined(separator: " AND ")
    }

    /// Whether the row's `field` holds one of the `values`.
    private mutating func matches(_ field: String, of type: String, alias: String, _ values: [Value]) -> String {
        if schema.keys[type]?.name == field {
            return "\(alias).object_key = ANY(\(text.bind(Self.keyBytes(values)))::bytea[])"
        }
        return lookup(field, alias: alias, values.map(AttrValue.bytes))
    }

    /// The bytes `objects.object_key` holds for each of the keys `values`.
    private static func keyBytes(_ values: [Value]) -> [ByteBuffer] {
        values.map { ByteBuffer(bytes: ChangesetCodec.valueBytes($0)) }
    }

    /// A claim or constant operand's value; nil for a field or a claim the
    /// device does not have.
    private func constant(_ operand: RuleOperand) -> DeviceClaims.Value? {
        switch operand {
        case .field: nil
        case .claim(let name): claims.values[name]
        case .string(let value): .string(value)
        case .int(let value): .number(Double(value))
        case .bool(let value): .bool(value)
        }
    }

    /// `descriptor` without its `?`.
    static func plain(_ descriptor: String) -> String {
        descriptor.hasSuffix("?") ? String(descriptor.dropLast()) : descriptor
    }

    /// `claim` as a value of a field of `descriptor`: nil when it does not
    /// fit (a string that is no UUID for a `uuid` field, a bool for an
    /// `int`), or the field's type is one rules do not compare.
    func value(of claim: DeviceClaims.Value, descriptor: String) -> Value? {
        let plain = Self.plain(descriptor)
        switch (plain, claim) {
        case ("string", .string(let text)): return .string(text)
        case ("int", .number(let number)): return Int64(exactly: number).map(Value.int)
        case ("int", .string(let text)): return Int64(text).map(Value.int)
        case ("double", .number(let number)): return .double(number)
        case ("uuid", .string(let text)): return UUID(uuidString: text).map(Value.uuid)
        case ("bool", .bool(let flag)): return .bool(flag)
        default:
            guard plain.hasPrefix("link("), plain.hasSuffix(")") else { return nil }
            let target = String(plain.dropFirst("link(".count).dropLast())
            guard let key = schema.keys[target], let inner = value(of: claim, descriptor: key.descriptor) else {
                return nil
            }
            return .link(inner)
        }
    }
}

/// The tag that starts a link's changeset bytes (then its key's).
enum RecordTagLink {
    static let value = Int(ChangesetCodec.valueBytes(.link(.int(0)))[0])
}

extension DeviceClaims {
    /// The claim `name` as a list: its values when it is an array, else
    /// the one value; empty when the device has no such claim.
    func list(_ name: String) -> [Value] {
        switch values[name] {
        case .array(let elements)?: elements
        case let value?: [value]
        case nil: []
        }
    }
}
