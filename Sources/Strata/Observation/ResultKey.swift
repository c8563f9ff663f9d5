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

    init(value: Value?, key: [UInt8], ascending: Bool) {
        self.value = value
        self.key = key
        self.ascending = ascending
    }

    /// The query's order (``QueryOrder``), the one its walk uses.
    private static func order(_ a: ResultKey, _ b: ResultKey) -> Int {
        if a === b { return 0 }
        let order = a.key.withUnsafeBytes { x in b.key.withUnsafeBytes { QueryOrder.compare(a.value, x, b.value, $0) } }
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
