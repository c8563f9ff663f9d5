/// Where a value sits in an observed query's results: the stored value
/// of the property the results are sorted by (nil in primary-key order),
/// then the object's key, in the query's direction. Two values of one
/// query never have equal result keys, as keys are unique.
///
/// A class, so that the tree copies a reference when it moves or copies a
/// key: as a struct, each copy of its optional `Value` went through the
/// optional's value witness and a metadata lookup, about a third of what
/// a one-object update of the tree cost.
final class ResultKey: Comparable, Sendable {
    /// The sort property's stored value; nil in primary-key order.
    let value: Value?
    /// The object's key, as stored.
    let key: [UInt8]
    let ascending: Bool
    /// For an order by several keys (``value`` is then a list): which keys
    /// go against the first one's direction (``QueryOrder/tieFlips``), and
    /// that there are several.
    private let tieFlips: UInt64
    private let hasTies: Bool
    /// The first 8 bytes of `key`, big-endian, zero-padded: where two of
    /// them differ, the keys compare the same way.
    private let keyPrefix: UInt64
    /// `value` as bits that order as `value` does, for an integer, a
    /// floating-point number or a date (``valueKind`` 1, 2, 3; 0 for any
    /// other value), so that most comparisons in the tree compare two
    /// integers instead of two `Value`s.
    private let valueBits: UInt64
    private let valueKind: UInt8

    init(value: Value?, key: [UInt8], order: QueryOrder) {
        self.value = value
        self.key = key
        self.ascending = order.ascending
        self.hasTies = !order.ties.isEmpty
        self.tieFlips = order.tieFlips
        var prefix: UInt64 = 0
        for index in 0 ..< min(8, key.count) { prefix |= UInt64(key[index]) << (56 - 8 * index) }
        keyPrefix = prefix
        switch value {
        case .int(let x)?:
            (valueBits, valueKind) = (UInt64(bitPattern: x) ^ (1 << 63), 1)
        case .double(let x)?:
            (valueBits, valueKind) = (KeyCodec.orderPreservingBits(x), 2)
        case .date(let x)?:
            (valueBits, valueKind) = (KeyCodec.orderPreservingBits(x.timeIntervalSinceReferenceDate), 3)
        default:
            (valueBits, valueKind) = (0, 0)
        }
    }

    /// The query's order (``QueryOrder/compare(_:_:_:_:)``, the one its
    /// walk uses), through the precomputed bits where they decide.
    private static func order(_ a: ResultKey, _ b: ResultKey) -> Int {
        if a === b { return 0 }
        var order = 0
        if a.valueKind != 0 && a.valueKind == b.valueKind {
            // StoredKind compares two values of these kinds by these bits.
            if a.valueBits != b.valueBits { order = a.valueBits < b.valueBits ? -1 : 1 }
        } else if let x = a.value, let y = b.value {
            order = a.hasTies ? QueryOrder.compareLists(x, y, flips: a.tieFlips) : KeyCodec.compareInIndexOrder(x, y)
        }
        if order == 0 {
            if a.keyPrefix != b.keyPrefix {
                order = a.keyPrefix < b.keyPrefix ? -1 : 1
            } else {
                order = a.key.withUnsafeBytes { x in b.key.withUnsafeBytes { KeyCodec.compare(x, $0) } }
            }
        }
        return a.ascending ? order : -order
    }

    static func < (a: ResultKey, b: ResultKey) -> Bool { order(a, b) < 0 }
    static func == (a: ResultKey, b: ResultKey) -> Bool { order(a, b) == 0 }
}

/// A value in an observed query's results tree, boxed: the tree then holds
/// one concrete type, so that its code is compiled for it inside Strata
/// instead of running as generic code over the app's model (which lives
/// in another module), a path copy of which cost about 38,000 instructions
/// per commit in value witnesses and tuple metadata.
class ResultBox: @unchecked Sendable {}

// @unchecked: `model` is a `let` of a `Sendable` type.
/// A ``ResultBox`` holding a model value.
final class TypedBox<M: Sendable>: ResultBox, @unchecked Sendable {
    let model: M

    init(_ model: M) { self.model = model }

    /// The model in `box`, which must be a `TypedBox<M>`: every box of one
    /// results tree holds the one model type of its query.
    @inline(__always)
    static func model(of box: ResultBox) -> M {
        unsafeDowncast(box, to: TypedBox<M>.self).model
    }
}
