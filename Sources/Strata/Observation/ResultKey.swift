/// Where a value sits in an observed query's results: the stored value
/// of the property the results are sorted by (nil in primary-key order),
/// then the object's key, in the query's direction. Two values of one
/// query never have equal result keys, as keys are unique.
struct ResultKey: Comparable, Sendable {
    /// The sort property's stored value; nil in primary-key order.
    let value: Value?
    /// The object's key, as stored.
    let key: [UInt8]
    let ascending: Bool

    private static func order(_ a: ResultKey, _ b: ResultKey) -> Int {
        var order = 0
        if let x = a.value, let y = b.value { order = KeyCodec.compareInIndexOrder(x, y) }
        if order == 0 { order = a.key.withUnsafeBytes { x in b.key.withUnsafeBytes { KeyCodec.compare(x, $0) } } }
        return a.ascending ? order : -order
    }

    static func < (a: ResultKey, b: ResultKey) -> Bool { order(a, b) < 0 }
    static func == (a: ResultKey, b: ResultKey) -> Bool { order(a, b) == 0 }
}
