/// The values a query's `where` accepts for one property: an
/// interval in index order (``KeyCodec/compareInIndexOrder(_:_:)``). An
/// equality is an interval whose bounds are one value.
struct QueryRange: Equatable {
    struct Bound: Equatable {
        let value: Value
        let inclusive: Bool
    }

    /// The plan position of the property (a ``QueryPlan``'s condition):
    /// a table field position, or, past the table's fields, one of the
    /// plan's ``QueryPlan/embeddedPaths``.
    let position: Int
    let lower: Bound?
    let upper: Bound?

    /// The tag that every value in the range has: a range never holds a
    /// value of another type (a null, for one). Worked out once, not per
    /// value tested.
    private let tag: RecordCodec.Tag

    /// A range with at least one bound.
    init(position: Int, lower: Bound?, upper: Bound?) {
        self.position = position
        self.lower = lower
        self.upper = upper
        guard let bound = lower ?? upper else { preconditionFailure("A query range without bounds") }
        self.tag = KeyCodec.tag(of: bound.value)
    }

    var isEquality: Bool {
        guard let lower, let upper else { return false }
        return lower.inclusive && upper.inclusive && lower.value == upper.value
    }

    /// Whether `value` lies in the range.
    @inline(__always)
    func contains(_ value: Value) -> Bool {
        guard KeyCodec.tag(of: value) == tag else { return false }
        if let lower {
            let order = KeyCodec.compareInIndexOrder(value, lower.value)
            if order < 0 || (order == 0 && !lower.inclusive) { return false }
        }
        if let upper {
            let order = KeyCodec.compareInIndexOrder(value, upper.value)
            if order > 0 || (order == 0 && !upper.inclusive) { return false }
        }
        return true
    }

    /// The index keys that can hold the range's values. A missing bound is
    /// the edge of the values of the range's type.
    var indexKeys: Keys {
        func key(_ value: Value) -> (key: [UInt8], cut: Bool) {
            let writer = ByteWriter(capacity: 16)
            let cut = FileLayout.appendIndexKey(value, to: writer)
            return (writer.withUnsafeBytes { Array($0) }, cut)
        }
        var keys = Keys()
        if let lower {
            (keys.lower, keys.lowerCut) = key(lower.value)
            keys.lowerInclusive = lower.inclusive
        } else {
            keys.lower = [tag.rawValue]
        }
        if let upper {
            (keys.upper, keys.upperCut) = key(upper.value)
            keys.upperInclusive = upper.inclusive
        } else {
            keys.upper = [tag.rawValue + 1]
            keys.upperInclusive = false
        }
        return keys
    }

    /// The record keys of the range, for a primary key of `type`; nil
    /// when a bound cannot be a key of that type.
    ///
    /// A bound too long to be a key (a string past 510 bytes) is cut at
    /// ``KeyCodec/maxKeySize`` bytes, as an index key is: a stored key,
    /// never longer, lies on the same side of the cut bound as of the
    /// bound itself, except one equal to the cut bytes, which is below the
    /// bound and is compared with the range on its record.
    func primaryKeys(type: PropertyType) -> Keys? {
        func key(_ value: Value) -> (bytes: [UInt8], cut: Bool)? {
            let writer = ByteWriter(capacity: 16)
            guard KeyCodec.appendPrimaryKey(value, type: type, to: writer) else { return nil }
            let bytes = writer.withUnsafeBytes { Array($0.prefix(KeyCodec.maxKeySize)) }
            return (bytes, writer.count > KeyCodec.maxKeySize)
        }
        var keys = Keys()
        if let lower {
            guard let found = key(lower.value) else { return nil }
            (keys.lower, keys.lowerCut) = found
            keys.lowerInclusive = lower.inclusive
        }
        if let upper {
            guard let found = key(upper.value) else { return nil }
            (keys.upper, keys.upperCut) = found
            keys.upperInclusive = upper.inclusive
        }
        return keys
    }

    /// An interval of LMDB keys, with what a cut index key leaves open.
    struct Keys: Equatable {
        var lower: [UInt8]?
        var lowerInclusive = true
        /// Whether `lower` is a cut index key: keys equal to it may hold
        /// values on either side of the bound.
        var lowerCut = false
        var upper: [UInt8]?
        var upperInclusive = true
        var upperCut = false

        enum Place {
            case below
            case inside(recheck: Bool)
            case above
        }

        /// Where `key` lies; `recheck` says that the key does not tell, and
        /// the stored value must be compared with the range.
        @inline(__always)
        func place(of key: UnsafeRawBufferPointer) -> Place {
            var recheck = false
            if let lower {
                let order = KeyCodec.compare(key, lower)
                if order < 0 || (order == 0 && !lowerInclusive && !lowerCut) { return .below }
                if order == 0 && lowerCut { recheck = true }
            }
            if let upper {
                let order = KeyCodec.compare(key, upper)
                if order > 0 || (order == 0 && !upperInclusive && !upperCut) { return .above }
                if order == 0 && upperCut { recheck = true }
            }
            return .inside(recheck: recheck)
        }
    }
}
