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
    let claims: HubClaims
    let schema: RuleSchema
    var text = SQLText()
    private var aliases = 0

    init(rules: SyncRules, claims: HubClaims, schema: RuleSchema, text: SQLText = SQLText()) {
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

    /// Whether `type`'s rule `mode` admits some objects for these claims
    /// (not the constant false).
    mutating func mayEver(_ mode: Mode, _ type: String) -> Bool {
        guard let typeRules = rules.types[type], let expression = mode == .read ? typeRules.read : typeRules.write
        else { return false }
        var probe = RuleCompiler(rules: rules, claims: claims, schema: schema)
        return probe.condition(expression, type: type, alias: "o") != "false"
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
                return (Self.same(a, b) != negated) ? "true" : "false"
            }
            let other = left.field == nil ? left : right
            let candidates: [HubClaims.Value]
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
                return list.contains { Self.same(value, $0) } ? "true" : "false"
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
                EXISTS (SELECT 1 FROM sync_attrs \(attr) JOIN objects \(linked)
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
        _ field: String, of type: String, alias: String, oneOf candidates: [HubClaims.Value], negated: Bool
    ) -> String {
        guard let descriptor = schema.descriptor(type, field) else { return "false" }
        let values = candidates.compactMap { value(of: $0, descriptor: descriptor) }
        guard !values.isEmpty else { return "false" }
        let bytes = values.map(AttrValue.bytes)
        if schema.keys[type]?.name == field {
            let test = "\(alias).object_key = ANY(\(text.bind(bytes))::bytea[])"
            return negated ? "NOT \(test)" : test
        }
        let attr = self.alias()
        let test = """
            EXISTS (SELECT 1 FROM sync_attrs \(attr) WHERE \(attr).tenant_id = \(alias).tenant_id
                AND \(attr).type_name = \(alias).type_name AND \(attr).object_key = \(alias).object_key
                AND \(attr).field = \(text.bind(field)) AND \(attr).value = ANY(\(text.bind(bytes))::bytea[]))
            """
        return negated ? "NOT \(test)" : test
    }

    /// A claim or constant operand's value; nil for a field or a claim the
    /// device does not have.
    private func constant(_ operand: RuleOperand) -> HubClaims.Value? {
        switch operand {
        case .field: nil
        case .claim(let name): claims.values[name]
        case .string(let value): .string(value)
        case .int(let value): .int(value)
        case .bool(let value): .bool(value)
        }
    }

    /// Whether two claim values are equal (a whole number and a double of
    /// its value are).
    static func same(_ a: HubClaims.Value, _ b: HubClaims.Value) -> Bool {
        switch (a, b) {
        case (.int(let x), .double(let y)), (.double(let y), .int(let x)): Double(x) == y
        default: a == b
        }
    }

    /// `descriptor` without its `?`.
    static func plain(_ descriptor: String) -> String {
        descriptor.hasSuffix("?") ? String(descriptor.dropLast()) : descriptor
    }

    /// `claim` as a value of a field of `descriptor`: nil when it does not
    /// fit (a string that is no UUID for a `uuid` field, a bool for an
    /// `int`), or the field's type is one rules do not compare.
    func value(of claim: HubClaims.Value, descriptor: String) -> Value? {
        let plain = Self.plain(descriptor)
        switch (plain, claim) {
        case ("string", .string(let text)): return .string(text)
        case ("int", .int(let number)): return .int(number)
        case ("int", .string(let text)): return Int64(text).map(Value.int)
        case ("int", .double(let number)): return Int64(exactly: number).map(Value.int)
        case ("double", .int(let number)): return .double(Double(number))
        case ("double", .double(let number)): return .double(number)
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
