/// One condition of a ``QueryPlan``: a test of one property's stored
/// value, or a boolean combination of conditions. A plan holds an AND of
/// them; the walk is chosen from the ones at that top level.
///
/// Each test compares what the property reads as in the record
/// (``QueryPlan/value(at:in:)``: a table field, or a property inside its
/// embedded objects): nothing is decoded into a model or a
/// ``DynamicObject`` to test it. Positions are the plan's: a table field
/// position, or past the table's fields one of its
/// ``QueryPlan/embeddedPaths``.
indirect enum QueryCondition: Equatable {
    /// The property's value lies in a range (an equality: one value).
    case range(QueryRange)
    /// The property is a string that starts with these UTF-8 bytes.
    case prefix(position: Int, String)
    /// The property is a string that contains these UTF-8 bytes.
    case substring(position: Int, String)
    /// Every object passes (true) or none does: a test of a property the
    /// table lacks, whose every object reads as one value.
    case constant(Bool)
    case all([QueryCondition])
    case any([QueryCondition])
    case not(QueryCondition)

    /// The property is one of `values`: an equality per value.
    static func oneOf(position: Int, _ values: [Value]) -> QueryCondition {
        .any(values.map { QueryRange(position: position, equals: $0) }.map(QueryCondition.range))
    }

    /// The property is not `value`: a null or another value (Swift's `!=`).
    static func notEqual(position: Int, _ value: Value) -> QueryCondition {
        .not(.range(QueryRange(position: position, equals: value)))
    }

    /// Whether the condition holds when each property reads as `value(at:)`
    /// gives it (by plan position).
    @inline(__always)
    func holds(_ value: (Int) -> Value) -> Bool {
        switch self {
        case .range(let range):
            return range.contains(value(range.position))
        case .prefix(let position, let prefix):
            guard case .string(let text) = value(position) else { return false }
            return text.utf8.starts(with: prefix.utf8)
        case .substring(let position, let part):
            guard case .string(let text) = value(position) else { return false }
            return Self.bytes(of: text, contain: part)
        case .constant(let holds):
            return holds
        case .all(let conditions):
            for condition in conditions where !condition.holds(value) { return false }
            return true
        case .any(let conditions):
            for condition in conditions where condition.holds(value) { return true }
            return false
        case .not(let condition):
            return !condition.holds(value)
        }
    }

    /// The condition with constants folded away: `.constant` only when the
    /// whole condition is one.
    var simplified: QueryCondition {
        switch self {
        case .range, .prefix, .substring, .constant:
            return self
        case .not(let condition):
            let inner = condition.simplified
            if case .constant(let holds) = inner { return .constant(!holds) }
            return .not(inner)
        case .all(let conditions), .any(let conditions):
            let isAll = if case .all = self { true } else { false }
            var kept: [QueryCondition] = []
            for condition in conditions.map(\.simplified) {
                switch (condition, isAll) {
                case (.all(let parts), true), (.any(let parts), false):
                    // An AND in an AND (an OR in an OR) is its parts, so that
                    // an OR of ranges of one property is one set of ranges.
                    kept += parts
                case (.constant(let holds), _):
                    // true in an AND, false in an OR: no effect; else decides.
                    if holds != isAll { return .constant(holds) }
                default:
                    kept.append(condition)
                }
            }
            if kept.count == 1 { return kept[0] }
            if kept.isEmpty { return .constant(isAll) }
            return isAll ? .all(kept) : .any(kept)
        }
    }

    /// The plan position of the one property the condition tests,
    /// when it tests one; nil for combinations of several.
    var position: Int? {
        switch self {
        case .range(let range): range.position
        case .prefix(let position, _), .substring(let position, _): position
        case .constant: nil
        case .all(let conditions), .any(let conditions):
            conditions.first?.position.flatMap { first in
                conditions.allSatisfy { $0.position == first } ? first : nil
            }
        case .not(let condition): condition.position
        }
    }

    /// The ranges of an OR of ranges of one property (an `in:` set); a
    /// range alone is an OR of one.
    var ranges: [QueryRange]? {
        switch self {
        case .range(let range):
            return [range]
        case .any(let conditions):
            var ranges: [QueryRange] = []
            for condition in conditions {
                guard case .range(let range) = condition else { return nil }
                ranges.append(range)
            }
            return ranges.isEmpty || position == nil ? nil : ranges
        default:
            return nil
        }
    }

    private static func bytes(of text: String, contain part: String) -> Bool {
        let part = Array(part.utf8)
        guard let first = part.first else { return true }
        let utf8 = text.utf8
        var start = utf8.startIndex
        while let found = utf8[start...].firstIndex(of: first) {
            if utf8[found...].starts(with: part) { return true }
            start = utf8.index(after: found)
        }
        return false
    }
}

extension QueryRange {
    /// The range of the one value `value`.
    init(position: Int, equals value: Value) {
        let bound = Bound(value: value, inclusive: true)
        self.init(position: position, lower: bound, upper: bound)
    }
}
