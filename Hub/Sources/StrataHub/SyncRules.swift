import Foundation

/// A dataset's sync rules (docs/Hub.md, "Sync rules"): per object type,
/// which objects a device may read and which it may write, as predicates
/// over the object's fields and the device's claims. A dataset without
/// rules is open: every device of it reads and writes everything. A
/// dataset with rules denies every type they do not name.
///
/// The text, one rule per line (`#` starts a comment):
///
/// ```
/// Note: ownerID = claims.sub or 'admin' in claims.roles
/// Project read: id in claims.projects
/// Project write: 'admin' in claims.roles
/// Task: project in Project
/// Label: true
/// ```
///
/// A rule is `Type [read|write]: predicate`; without `read` or `write` it
/// is both. `Type fields: a, b` lists the fields devices' subscriptions
/// may test (docs/Hub.md, "Subscriptions"). The predicate combines, with `and`, `or`, `not` and
/// parentheses:
///
/// - `field = operand`, `field != operand`: the object's field holds (does
///   not hold) the value. An operand is a claim (`claims.sub`), a string
///   (`'text'`), a whole number, `true` or `false`.
/// - `field in claims.name`: the field holds one of the claim's values (a
///   claim that is one value is a list of one).
/// - `'value' in claims.name`, `claims.name = 'value'`: a test of the claims
///   alone, decided before any object is read.
/// - `link in Type`: the object the link field points at is one the device
///   may read by `Type`'s read rule: a Project's Tasks follow their
///   Project.
/// - `true`, `false`.
///
/// A field is a top-level field of the type or its primary key. A
/// comparison with a claim the device does not have, or whose value does
/// not fit the field's type, is false, and so is its `!=`.
public struct SyncRules: Sendable, Equatable {
    /// The read and write rules of one type: nil denies.
    public struct TypeRules: Sendable, Equatable {
        /// Which objects of the type a device may read; nil: none.
        public var read: RuleExpression?
        /// Which objects of the type a device may write; nil: none.
        public var write: RuleExpression?
        /// The fields a device's subscriptions may test (`Type fields: a, b`).
        public var subscribable: Set<String> = []
    }

    /// The rules of each type the text names.
    public private(set) var types: [String: TypeRules] = [:]
    /// The text the rules were read from.
    public let source: String

    /// How many `link in Type` steps a rule may take, following links from
    /// type to type.
    public static let maxFollowDepth = 4

    /// The rules `source` spells.
    ///
    /// - Throws: ``HubError`` `invalidRules`, naming the line and what is
    ///   wrong in it.
    public init(parsing source: String) throws(HubError) {
        self.source = source
        for (index, raw) in source.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            do {
                try add(line: String(line))
            } catch {
                throw HubError.invalidRules(line: index + 1, error.message)
            }
        }
        for (type, rules) in types {
            for expression in [rules.read, rules.write].compactMap({ $0 }) {
                for target in expression.followedTypes where types[target]?.read == nil {
                    throw HubError.invalidRules(
                        line: nil, "A rule of '\(type)' follows links to '\(target)', which has no read rule.")
                }
            }
            if try followDepth(type, path: []) > Self.maxFollowDepth {
                throw HubError.invalidRules(
                    line: nil,
                    "The rules of '\(type)' follow links through more than \(Self.maxFollowDepth) types.")
            }
        }
    }

    /// Adds the rule of one line.
    private mutating func add(line: String) throws(RuleSyntaxError) {
        guard let colon = line.firstIndex(of: ":") else {
            throw RuleSyntaxError("A rule is 'Type: predicate', 'Type read: predicate' or 'Type write: predicate'.")
        }
        let head = line[..<colon].split(whereSeparator: \.isWhitespace)
        guard let name = head.first, head.count <= 2, RuleLexer.isIdentifier(name) else {
            throw RuleSyntaxError("'\(line[..<colon].trimmingCharacters(in: .whitespaces))' is not a type name.")
        }
        let mode = head.count == 2 ? String(head[1]) : nil
        guard mode == nil || mode == "read" || mode == "write" || mode == "fields" else {
            throw RuleSyntaxError("After the type comes 'read', 'write', 'fields' or nothing (both), not '\(mode!)'.")
        }
        if mode == "fields" {
            let names = line[line.index(after: colon)...].split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard !names.isEmpty, names.allSatisfy({ RuleLexer.isIdentifier(Substring($0)) }) else {
                throw RuleSyntaxError("'\(name) fields:' lists top-level field names, separated by commas.")
            }
            types[String(name), default: TypeRules()].subscribable.formUnion(names)
            return
        }
        var parser = RuleParser(text: String(line[line.index(after: colon)...]))
        let expression = try parser.parseAll()
        var rules = types[String(name), default: TypeRules()]
        if mode != "write" {
            guard rules.read == nil else { throw RuleSyntaxError("'\(name)' has a read rule already.") }
            rules.read = expression
        }
        if mode != "read" {
            guard rules.write == nil else { throw RuleSyntaxError("'\(name)' has a write rule already.") }
            rules.write = expression
        }
        types[String(name)] = rules
    }

    /// How many types deep the read rule of `type` follows links; throws on
    /// a cycle.
    private func followDepth(_ type: String, path: [String]) throws(HubError) -> Int {
        guard !path.contains(type) else {
            throw HubError.invalidRules(
                line: nil, "The rules follow links in a circle: \((path + [type]).joined(separator: " → ")).")
        }
        var deepest = 0
        let expressions = [types[type]?.read, path.isEmpty ? types[type]?.write : nil].compactMap { $0 }
        for target in Set(expressions.flatMap(\.followedTypes)) {
            deepest = max(deepest, 1 + (try followDepth(target, path: path + [type])))
        }
        return deepest
    }

    /// The fields of each type that the rules read or subscriptions may
    /// test: the hub keeps their values in `sync_attrs`, indexed, to
    /// evaluate both in SQL.
    public var ruledFields: [String: Set<String>] {
        var fields: [String: Set<String>] = [:]
        for (type, rules) in types {
            fields[type, default: []].formUnion(rules.subscribable)
            for expression in [rules.read, rules.write].compactMap({ $0 }) {
                fields[type, default: []].formUnion(expression.fields)
            }
        }
        return fields.filter { !$0.value.isEmpty }
    }
}

/// A rule's predicate (``SyncRules``).
public indirect enum RuleExpression: Sendable, Equatable {
    /// `true` or `false`.
    case constant(Bool)
    /// `left = right`, or `left != right` when negated.
    case equals(RuleOperand, RuleOperand, negated: Bool)
    /// `element in claims.name`.
    case member(RuleOperand, claim: String)
    /// `field in Type`: the link's target is readable by `Type`'s rule.
    case follows(field: String, type: String)
    /// Every part holds (`and`).
    case all([RuleExpression])
    /// Some part holds (`or`).
    case any([RuleExpression])
    /// The part does not hold (`not`).
    case not(RuleExpression)

    /// The types whose read rules this one follows links into.
    var followedTypes: [String] {
        switch self {
        case .follows(_, let type): [type]
        case .all(let parts), .any(let parts): parts.flatMap(\.followedTypes)
        case .not(let part): part.followedTypes
        case .constant, .equals, .member: []
        }
    }

    /// The links it follows: each `field in Type` it holds.
    var followedLinks: [(field: String, type: String)] {
        switch self {
        case .follows(let field, let type): [(field, type)]
        case .all(let parts), .any(let parts): parts.flatMap(\.followedLinks)
        case .not(let part): part.followedLinks
        case .constant, .equals, .member: []
        }
    }

    /// The fields of its own type that the expression reads.
    var fields: Set<String> {
        switch self {
        case .follows(let field, _): [field]
        case .equals(let left, let right, _): Set([left.field, right.field].compactMap { $0 })
        case .member(let element, _): Set([element.field].compactMap { $0 })
        case .all(let parts), .any(let parts): parts.reduce(into: []) { $0.formUnion($1.fields) }
        case .not(let part): part.fields
        case .constant: []
        }
    }
}

/// One side of a comparison in a rule.
public enum RuleOperand: Sendable, Equatable {
    /// A top-level field of the object, or its primary key.
    case field(String)
    /// A claim of the device (`claims.name`).
    case claim(String)
    /// A string (`'text'`).
    case string(String)
    /// A whole number.
    case int(Int64)
    /// `true` or `false`.
    case bool(Bool)

    var field: String? {
        if case .field(let name) = self { name } else { nil }
    }
}

/// What is wrong in a rule's line, before the line number is known.
struct RuleSyntaxError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// The words of a rule's predicate.
struct RuleLexer {
    enum Token: Equatable {
        case word(String)
        case string(String)
        case number(Int64)
        case symbol(String)
    }

    static func isIdentifier(_ text: Substring) -> Bool {
        guard let first = text.first, first.isLetter || first == "_" else { return false }
        return text.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
    }

    static func tokens(_ text: String) throws(RuleSyntaxError) -> [Token] {
        var tokens: [Token] = []
        var rest = Substring(text)
        while let first = rest.first {
            if first.isWhitespace {
                rest = rest.dropFirst()
            } else if first == "'" {
                var value = ""
                var index = rest.index(after: rest.startIndex)
                var closed = false
                while index < rest.endIndex {
                    let character = rest[index]
                    index = rest.index(after: index)
                    if character == "'" {
                        // '' inside a string is one quote.
                        if index < rest.endIndex, rest[index] == "'" {
                            value.append("'")
                            index = rest.index(after: index)
                        } else {
                            closed = true
                            break
                        }
                    } else {
                        value.append(character)
                    }
                }
                guard closed else { throw RuleSyntaxError("A string is not closed with '.") }
                tokens.append(.string(value))
                rest = rest[index...]
            } else if first.isNumber || (first == "-" && rest.dropFirst().first?.isNumber == true) {
                let digits = rest.dropFirst().prefix { $0.isNumber }
                let text = rest.prefix(1 + digits.count)
                guard let value = Int64(text) else { throw RuleSyntaxError("\(text) is not a 64-bit whole number.") }
                tokens.append(.number(value))
                rest = rest.dropFirst(text.count)
            } else if first.isLetter || first == "_" {
                let word = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." }
                tokens.append(.word(String(word)))
                rest = rest.dropFirst(word.count)
            } else if rest.hasPrefix("!=") {
                tokens.append(.symbol("!="))
                rest = rest.dropFirst(2)
            } else if "=()".contains(first) {
                tokens.append(.symbol(String(first)))
                rest = rest.dropFirst()
            } else {
                throw RuleSyntaxError("'\(first)' has no meaning in a rule.")
            }
        }
        return tokens
    }
}

/// Reads a predicate: `or` of `and`s of (`not`) atoms.
struct RuleParser {
    private var tokens: [RuleLexer.Token]
    private var position = 0
    private let text: String

    init(text: String) {
        self.text = text
        tokens = []
    }

    mutating func parseAll() throws(RuleSyntaxError) -> RuleExpression {
        tokens = try RuleLexer.tokens(text)
        guard !tokens.isEmpty else { throw RuleSyntaxError("The rule has no predicate: write 'true' to allow all.") }
        let expression = try parseOr()
        guard position == tokens.count else { throw RuleSyntaxError("Unexpected \(describe(tokens[position])).") }
        return expression
    }

    private func describe(_ token: RuleLexer.Token) -> String {
        switch token {
        case .word(let word): "'\(word)'"
        case .string(let value): "the string '\(value)'"
        case .number(let value): "the number \(value)"
        case .symbol(let symbol): "'\(symbol)'"
        }
    }

    private var next: RuleLexer.Token? { position < tokens.count ? tokens[position] : nil }

    private mutating func take(_ token: RuleLexer.Token) -> Bool {
        guard next == token else { return false }
        position += 1
        return true
    }

    private mutating func parseOr() throws(RuleSyntaxError) -> RuleExpression {
        var parts = [try parseAnd()]
        while take(.word("or")) { parts.append(try parseAnd()) }
        return parts.count == 1 ? parts[0] : .any(parts)
    }

    private mutating func parseAnd() throws(RuleSyntaxError) -> RuleExpression {
        var parts = [try parseUnary()]
        while take(.word("and")) { parts.append(try parseUnary()) }
        return parts.count == 1 ? parts[0] : .all(parts)
    }

    private mutating func parseUnary() throws(RuleSyntaxError) -> RuleExpression {
        if take(.word("not")) { return .not(try parseUnary()) }
        if take(.symbol("(")) {
            let inner = try parseOr()
            guard take(.symbol(")")) else { throw RuleSyntaxError("A '(' is not closed.") }
            return inner
        }
        if take(.word("true")) { return .constant(true) }
        if take(.word("false")) { return .constant(false) }
        let left = try parseOperand()
        guard let op = next else { throw RuleSyntaxError("The rule ends after \(describe(left)).") }
        position += 1
        switch op {
        case .symbol("="), .symbol("!="):
            let right = try parseOperand()
            guard left.field != nil || right.field != nil || isClaim(left) || isClaim(right) else {
                throw RuleSyntaxError("A comparison of two constants; write true or false.")
            }
            guard left.field == nil || right.field == nil else {
                throw RuleSyntaxError("A rule compares a field with a claim or a value, not with another field.")
            }
            return .equals(left, right, negated: op == .symbol("!="))
        case .word("in"):
            guard case .word(let word)? = next else {
                throw RuleSyntaxError("'in' is followed by claims.name or a type name.")
            }
            position += 1
            if let claim = claimName(word) { return .member(left, claim: claim) }
            guard case .field(let field) = left, RuleLexer.isIdentifier(Substring(word)) else {
                throw RuleSyntaxError("'\(word)' after 'in' is neither claims.name nor a type name after a link field.")
            }
            return .follows(field: field, type: word)
        default:
            throw RuleSyntaxError("After \(describe(left)) comes '=', '!=' or 'in', not \(describe(op)).")
        }
    }

    private func describe(_ operand: RuleOperand) -> String {
        switch operand {
        case .field(let name): "the field '\(name)'"
        case .claim(let name): "claims.\(name)"
        case .string(let value): "'\(value)'"
        case .int(let value): "\(value)"
        case .bool(let value): "\(value)"
        }
    }

    private func isClaim(_ operand: RuleOperand) -> Bool {
        if case .claim = operand { true } else { false }
    }

    private func claimName(_ word: String) -> String? {
        guard word.hasPrefix("claims.") else { return nil }
        let name = word.dropFirst("claims.".count)
        return name.isEmpty || name.contains(".") ? nil : String(name)
    }

    private mutating func parseOperand() throws(RuleSyntaxError) -> RuleOperand {
        guard let token = next else { throw RuleSyntaxError("The rule ends where a value was expected.") }
        position += 1
        switch token {
        case .string(let value): return .string(value)
        case .number(let value): return .int(value)
        case .word("true"): return .bool(true)
        case .word("false"): return .bool(false)
        case .word(let word):
            if word.hasPrefix("claims") {
                guard let claim = claimName(word) else { throw RuleSyntaxError("'\(word)' is not claims.name.") }
                return .claim(claim)
            }
            guard RuleLexer.isIdentifier(Substring(word)) else {
                throw RuleSyntaxError("'\(word)': a rule reads top-level fields only, not fields inside them.")
            }
            guard !["and", "or", "not", "in"].contains(word) else {
                throw RuleSyntaxError("'\(word)' where a field or value was expected.")
            }
            return .field(word)
        case .symbol:
            throw RuleSyntaxError("\(describe(token)) where a field or value was expected.")
        }
    }
}
