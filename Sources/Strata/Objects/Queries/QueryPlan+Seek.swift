/// How a condition of a ``QueryPlan`` can bound a walk: the keys of the
/// records or index entries that can hold the values it accepts.
extension QueryPlan {
    struct Seek {
        /// The table field position of the property.
        let position: Int
        /// Whether the condition accepts one value.
        let isEquality: Bool
        /// On the primary key, the intervals of record keys; nil on
        /// another property, or when a bound cannot be a key.
        let primaryKeys: [QueryRange.Keys]?
        /// The intervals of index keys, in key order, apart.
        let indexKeys: [QueryRange.Keys]
        /// Whether the keys hold values the condition rejects (beyond
        /// those of a cut key): it is checked on each record too.
        let rechecks: Bool
    }

    /// How `condition` can bound a walk: a range, an OR of ranges of one
    /// property (an `in:` set, walked as one interval per value), or a
    /// string prefix on an index; nil for other conditions.
    func seek(_ condition: QueryCondition) -> Seek? {
        if case .prefix(let position, let prefix) = condition {
            guard isTableField(position), table.fields[position].index != nil else { return nil }
            var keys = QueryRange(position: position, equals: .string(prefix)).indexKeys
            // Strings that start with the prefix's bytes sort from it up to
            // (not including) the bytes followed by 0xFF, which UTF-8
            // never holds.
            keys.upper = (keys.lower ?? []) + [0xFF]
            keys.upperInclusive = false
            keys.upperCut = false
            return Seek(position: position, isEquality: false, primaryKeys: nil, indexKeys: [keys], rechecks: true)
        }
        guard let ranges = condition.ranges else { return nil }
        let position = ranges[0].position
        // A property inside embedded objects has no index: nothing bounds
        // a walk by it.
        guard isTableField(position) else { return nil }
        let field = table.fields[position]
        var rechecks = false
        var primaryKeys: [QueryRange.Keys]?
        if field.isPrimaryKey {
            let keys = ranges.compactMap { $0.primaryKeys(type: field.type) }
            if keys.count == ranges.count {
                let merged = QueryRange.Keys.merged(keys)
                primaryKeys = merged.keys
                rechecks = merged.overlapped
            }
        }
        let index = QueryRange.Keys.merged(ranges.map(\.indexKeys))
        return Seek(
            position: position, isEquality: ranges.count == 1 && ranges[0].isEquality, primaryKeys: primaryKeys,
            indexKeys: index.keys, rechecks: primaryKeys == nil ? index.overlapped : rechecks)
    }
}

extension QueryRange.Keys {
    /// `intervals` in key order, those that overlap or touch merged into
    /// one (which then holds keys between them: `overlapped`), the same
    /// one twice kept once.
    static func merged(_ intervals: [Self]) -> (keys: [Self], overlapped: Bool) {
        guard intervals.count > 1 else { return (intervals, false) }
        func lowerOrder(_ a: Self, _ b: Self) -> Int {
            switch (a.lower, b.lower) {
            case (nil, nil): 0
            case (nil, _): -1
            case (_, nil): 1
            case (let x?, let y?): x.withUnsafeBytes { KeyCodec.compare($0, y) }
            }
        }
        let sorted = intervals.sorted { lowerOrder($0, $1) < 0 }
        var keys = [sorted[0]]
        var overlapped = false
        for next in sorted.dropFirst() {
            let last = keys[keys.count - 1]
            if last == next { continue }
            guard let upper = last.upper, let lower = next.lower,
                upper.withUnsafeBytes({ KeyCodec.compare($0, lower) }) < 0
            else {
                overlapped = true
                var joined = last
                if let upper = last.upper, let nextUpper = next.upper {
                    let order = nextUpper.withUnsafeBytes { KeyCodec.compare($0, upper) }
                    if order > 0 || (order == 0 && (next.upperInclusive || next.upperCut)) {
                        (joined.upper, joined.upperInclusive, joined.upperCut) =
                            (nextUpper, next.upperInclusive, next.upperCut)
                    }
                } else {
                    joined.upper = nil
                }
                keys[keys.count - 1] = joined
                continue
            }
            keys.append(next)
        }
        return (keys, overlapped)
    }
}
