import Foundation
import Testing

@testable import Strata

typealias OracleVariable = PredicateExpressions.Variable<OracleItem>
typealias OracleExpression = any StandardPredicateExpression<Bool>

/// One part of a random `#Predicate`: how to build it, the same test on
/// an item, and what the plan makes of it.
struct OraclePart {
    let description: String
    let build: (OracleVariable) -> OracleExpression
    /// The test as documented: a planned part compares stored values as
    /// `where` does, an unplanned one as Foundation evaluates it.
    let test: (OracleItem) -> Bool
    /// Whether the translator plans it.
    var planned = true
    /// At the top level of the predicate, the condition that may choose
    /// the walk.
    var drive: OracleCondition?
    /// The column, when the part is one or more ranges of it (an equality,
    /// a comparison, a set, an OR of these).
    var rangeColumn: Int?
    /// The same question asked of a dynamic collection, where it can be.
    var dynamic: ((ObjectCollection) throws -> ObjectCollection)?

    static func and(_ a: some StandardPredicateExpression<Bool>, _ b: some StandardPredicateExpression<Bool>)
        -> OracleExpression
    { PredicateExpressions.build_Conjunction(lhs: a, rhs: b) }

    static func or(_ a: some StandardPredicateExpression<Bool>, _ b: some StandardPredicateExpression<Bool>)
        -> OracleExpression
    { PredicateExpressions.build_Disjunction(lhs: a, rhs: b) }

    static func not(_ a: some StandardPredicateExpression<Bool>) -> OracleExpression {
        PredicateExpressions.build_Negation(a)
    }

    static func drive(_ column: Int, equality: Bool) -> OracleCondition {
        OracleCondition(description: "", column: column, isEquality: equality) { _ in true }
    }

    /// `$0.x == v`, `$0.x != v` or `[v, …].contains($0.x)`.
    static func leaves<V: PropertyValue & Equatable & Codable & Sendable>(
        _ name: String, _ keyPath: KeyPath<OracleItem, V> & Sendable, asked: [V], order: @escaping (V, V) -> Int
    ) -> (Int, inout SplitMix64) -> OraclePart {
        { index, random in
            func property(_ v: OracleVariable) -> PredicateExpressions.KeyPath<OracleVariable, V> {
                PredicateExpressions.build_KeyPath(root: v, keyPath: keyPath)
            }
            let value = asked.randomElement(using: &random)!
            switch Int.random(in: 0 ..< 4, using: &random) {
            case 0:
                return OraclePart(
                    description: "$0.\(name) != \(value)",
                    build: {
                        PredicateExpressions.build_NotEqual(lhs: property($0), rhs: PredicateExpressions.Value(value))
                    },
                    test: { order($0[keyPath: keyPath], value) != 0 },
                    dynamic: { $0.where(name, notEquals: value.propertyValue) })
            case 1:
                let values = (0 ..< Int.random(in: 1 ... 3, using: &random)).map { _ in
                    asked.randomElement(using: &random)!
                }
                return OraclePart(
                    description: "\(values).contains($0.\(name))",
                    build: { PredicateExpressions.build_contains(PredicateExpressions.Value(values), property($0)) },
                    test: { item in values.contains { order(item[keyPath: keyPath], $0) == 0 } },
                    drive: drive(index, equality: values.count == 1), rangeColumn: index,
                    dynamic: { $0.where(name, in: values.map(\.propertyValue)) })
            default:
                return OraclePart(
                    description: "$0.\(name) == \(value)",
                    build: {
                        PredicateExpressions.build_Equal(lhs: property($0), rhs: PredicateExpressions.Value(value))
                    },
                    test: { order($0[keyPath: keyPath], value) == 0 },
                    drive: drive(index, equality: true), rangeColumn: index,
                    dynamic: { $0.where(name, equals: value.propertyValue) })
            }
        }
    }

    /// `$0.x < v`, `<=`, `>`, `>=`, either way round, or one of `others`.
    static func comparisons<V: PropertyValue & Comparable & Codable & Sendable>(
        _ name: String, _ keyPath: KeyPath<OracleItem, V> & Sendable, asked: [V], bounds: [V],
        order: @escaping (V, V) -> Int, others: @escaping (Int, inout SplitMix64) -> OraclePart
    ) -> (Int, inout SplitMix64) -> OraclePart {
        { index, random in
            guard Bool.random(using: &random) else { return others(index, &random) }
            let value = bounds.randomElement(using: &random)!
            let ops: [(PredicateExpressions.ComparisonOperator, String, (Int) -> Bool)] = [
                (.lessThan, "<", { $0 < 0 }), (.lessThanOrEqual, "<=", { $0 <= 0 }),
                (.greaterThan, ">", { $0 > 0 }), (.greaterThanOrEqual, ">=", { $0 >= 0 }),
            ]
            let (op, symbol, holds) = ops.randomElement(using: &random)!
            let flipped = Bool.random(using: &random)
            return OraclePart(
                description: flipped ? "\(value) \(symbol) $0.\(name) (flipped)" : "$0.\(name) \(symbol) \(value)",
                build: { v in
                    let property = PredicateExpressions.build_KeyPath(root: v, keyPath: keyPath)
                    // `v < $0.x` reads `$0.x > v`: the constant on the left
                    // with the mirrored operator asks the same question.
                    guard flipped else {
                        return PredicateExpressions.build_Comparison(
                            lhs: property, rhs: PredicateExpressions.Value(value), op: op)
                    }
                    let mirrored: PredicateExpressions.ComparisonOperator =
                        switch op {
                        case .lessThan: .greaterThan
                        case .lessThanOrEqual: .greaterThanOrEqual
                        case .greaterThan: .lessThan
                        default: .lessThanOrEqual
                        }
                    return PredicateExpressions.build_Comparison(
                        lhs: PredicateExpressions.Value(value), rhs: property, op: mirrored)
                },
                test: { holds(order($0[keyPath: keyPath], value)) },
                drive: drive(index, equality: false), rangeColumn: index)
        }
    }

    /// `$0.id % 3 != 0`: a part the translator does not plan.
    static var unplannable: OraclePart {
        OraclePart(
            description: "$0.id % 3 != 0",
            build: {
                PredicateExpressions.build_NotEqual(
                    lhs: PredicateExpressions.build_Remainder(
                        lhs: PredicateExpressions.build_KeyPath(root: $0, keyPath: \OracleItem.id),
                        rhs: PredicateExpressions.Value(3)),
                    rhs: PredicateExpressions.Value(0))
            },
            test: { $0.id % 3 != 0 }, planned: false)
    }

    /// Whether the UTF-8 bytes of `text` start with those of `prefix`.
    static func starts(_ text: String, _ prefix: String) -> Bool { text.utf8.starts(with: prefix.utf8) }

    /// Whether the UTF-8 bytes of `text` contain those of `part`.
    static func contains(_ text: String, _ part: String) -> Bool {
        let (text, part) = (Array(text.utf8), Array(part.utf8))
        guard part.count <= text.count else { return false }
        return (0 ... text.count - part.count).contains { text[$0 ..< $0 + part.count].elementsEqual(part) }
    }
}

extension OracleColumn {
    /// The column's questions, one in five a `where(_:hasPrefix:)` with one
    /// of `prefixes` (`typed` asks it of a typed query).
    func asking(
        _ prefixes: [String], read: @escaping (OracleItem) -> String?,
        typed: @escaping (ModelQuery<OracleItem>, String) -> ModelQuery<OracleItem>
    ) -> (Int, inout SplitMix64) -> OracleQuestion {
        let (name, question) = (self.name, self.question)
        return { index, random in
            guard Int.random(in: 0 ..< 5, using: &random) == 0 else { return question(index, &random) }
            let prefix = prefixes.randomElement(using: &random)!
            let condition = OracleCondition(
                description: "\(name) has prefix \(prefix)", column: index, isEquality: false
            ) { read($0).map { OraclePart.starts($0, prefix) } ?? false }
            return OracleQuestion(
                condition: condition, typed: { typed($0, prefix) }, dynamic: { $0.where(name, hasPrefix: prefix) })
        }
    }

    /// The column asked also `where(_:hasPrefix:)`, `starts(with:)` and
    /// `contains(_:)` with `prefixes`.
    func withPrefixes(_ keyPath: KeyPath<OracleItem, String> & Sendable, _ prefixes: [String]) -> OracleColumn {
        var column = self
        let (name, leaf) = (self.name, self.leaf)
        column.question = asking(prefixes, read: { $0[keyPath: keyPath] }, typed: { $0.where(keyPath, hasPrefix: $1) })
        column.leaf = { index, random in
            guard Int.random(in: 0 ..< 3, using: &random) == 0 else { return leaf(index, &random) }
            let part = prefixes.randomElement(using: &random)!
            let property = { (v: OracleVariable) in PredicateExpressions.build_KeyPath(root: v, keyPath: keyPath) }
            if Bool.random(using: &random) {
                return OraclePart(
                    description: "$0.\(name).contains(\(part))",
                    build: { PredicateExpressions.build_contains(property($0), PredicateExpressions.Value(part)) },
                    test: { OraclePart.contains($0[keyPath: keyPath], part) })
            }
            return OraclePart(
                description: "$0.\(name).starts(with: \(part))",
                build: { PredicateExpressions.build_starts(property($0), with: PredicateExpressions.Value(part)) },
                test: { OraclePart.starts($0[keyPath: keyPath], part) },
                drive: OraclePart.drive(index, equality: false), dynamic: { $0.where(name, hasPrefix: part) })
        }
        return column
    }

    /// The optional column asked also `where(_:hasPrefix:)` and
    /// `$0.x?.starts(with:) ?? true/false` with `prefixes`.
    func withPrefixes(_ keyPath: KeyPath<OracleItem, String?> & Sendable, _ prefixes: [String]) -> OracleColumn {
        var column = self
        let (name, leaf) = (self.name, self.leaf)
        column.question = asking(prefixes, read: { $0[keyPath: keyPath] }, typed: { $0.where(keyPath, hasPrefix: $1) })
        column.leaf = { index, random in
            guard Int.random(in: 0 ..< 3, using: &random) == 0 else { return leaf(index, &random) }
            let prefix = prefixes.randomElement(using: &random)!
            let whenNil = Bool.random(using: &random)
            return OraclePart(
                description: "$0.\(name)?.starts(with: \(prefix)) ?? \(whenNil)",
                build: {
                    PredicateExpressions.build_NilCoalesce(
                        lhs: PredicateExpressions.build_flatMap(
                            PredicateExpressions.build_KeyPath(root: $0, keyPath: keyPath)
                        ) { PredicateExpressions.build_starts($0, with: PredicateExpressions.Value(prefix)) },
                        rhs: PredicateExpressions.Value(whenNil))
                },
                test: { $0[keyPath: keyPath].map { OraclePart.starts($0, prefix) } ?? whenNil },
                // `?? false` plans as "not nil, and the prefix": the prefix
                // may choose the walk.
                drive: whenNil ? nil : OraclePart.drive(index, equality: false))
        }
        return column
    }
}

extension QueryOracle {
    /// A random predicate node: a leaf, or `&&`, `||`, `!` of nodes.
    func node(depth: Int, _ random: inout SplitMix64) -> OraclePart {
        if depth == 0 || Bool.random(using: &random) { return leaf(&random) }
        switch Int.random(in: 0 ..< 3, using: &random) {
        case 0:
            let (a, b) = (node(depth: depth - 1, &random), node(depth: depth - 1, &random))
            return OraclePart(
                description: "(\(a.description) && \(b.description))",
                build: { OraclePart.and(a.build($0), b.build($0)) },
                test: { a.test($0) && b.test($0) })
        case 1:
            return or(depth: depth, &random)
        default:
            let a = node(depth: depth - 1, &random)
            return OraclePart(
                description: "!(\(a.description))", build: { OraclePart.not(a.build($0)) }, test: { !a.test($0) })
        }
    }

    /// A random leaf on a random column.
    func leaf(_ random: inout SplitMix64, column: Int? = nil) -> OraclePart {
        let index = column ?? Int.random(in: columns.indices, using: &random)
        return columns[index].leaf(index, &random)
    }

    /// An OR of two nodes, half the time two leaves of one column.
    func or(depth: Int, _ random: inout SplitMix64) -> OraclePart {
        let (a, b): (OraclePart, OraclePart)
        if Bool.random(using: &random) {
            let column = Int.random(in: columns.indices, using: &random)
            (a, b) = (leaf(&random, column: column), leaf(&random, column: column))
        } else {
            (a, b) = (node(depth: depth - 1, &random), node(depth: depth - 1, &random))
        }
        let column = a.rangeColumn == b.rangeColumn ? a.rangeColumn : nil
        return OraclePart(
            description: "(\(a.description) || \(b.description))", build: { OraclePart.or(a.build($0), b.build($0)) },
            test: { a.test($0) || b.test($0) }, drive: column.map { OraclePart.drive($0, equality: false) },
            rangeColumn: column)
    }

    /// A random part of a predicate's top-level `&&`.
    func topPart(_ random: inout SplitMix64) -> OraclePart {
        switch Int.random(in: 0 ..< 10, using: &random) {
        case 0:
            return OraclePart.unplannable
        case 1:
            // Unplanned under ||: Foundation evaluates the whole OR.
            let (a, b) = (leaf(&random), OraclePart.unplannable)
            let build = { (v: OracleVariable) in OraclePart.or(a.build(v), b.build(v)) }
            let predicate = Predicate<OracleItem> { build($0) }
            return OraclePart(
                description: "(\(a.description) || \(b.description))", build: build,
                test: { (try? predicate.evaluate($0)) ?? false }, planned: false)
        case 2, 3: return or(depth: 2, &random)
        case 4: return node(depth: 2, &random)
        default: return leaf(&random)
        }
    }

    /// One random `#Predicate` of one to three parts, maybe sorted and
    /// limited, asked of a typed query (and of a dynamic collection when
    /// each part is one it can ask).
    func askPredicate(_ tx: ReadTransaction, _ all: [OracleItem], _ random: inout SplitMix64, _ context: String)
        throws -> Bool
    {
        let parts = (0 ..< Int.random(in: 1 ... 3, using: &random)).map { _ in topPart(&random) }
        let builds = parts.map(\.build)
        let predicate = Predicate<OracleItem> { v in
            var expression = builds[0](v)
            for build in builds.dropFirst() { expression = OraclePart.and(expression, build(v)) }
            return expression
        }
        let query = try tx.objects(OracleItem.self).filter(predicate)
        var collection: ObjectCollection? = try tx.objects("OracleItem")
        for part in parts { collection = try part.dynamic.flatMap { ask in try collection.map(ask) } }
        let expected = all.filter { item in parts.allSatisfy { $0.test(item) } }
        let described = "#Predicate { \(parts.map(\.description).joined(separator: " && ")) }"
        let fallsBack = !query.predicates.isEmpty
        if fallsBack == parts.allSatisfy(\.planned) {
            Issue.record("\(context): \(described): evaluates on decoded objects: \(fallsBack)")
            return false
        }
        return try orderCutAndCheck(
            query, collection, expected, parts.compactMap(\.drive), [described], &random, context)
    }
}
