/// A walk over the contents of one stored list or embedded object: a
/// list's elements, or an object's fields (an id, then a value), each
/// found by its offset and passed over by what the walk's user does with
/// it: skipped by its length, checked down to its last byte, or decoded.
///
/// The one walker of list and embedded bytes: a record's validation (the
/// deep check of every list and embedded object in it, ``skipChecking(_:_:_:depth:)``),
/// reading a list as a ``Value``, decoding embedded objects, `verify`'s
/// check of one, and carrying the kept fields of a stored embedded object
/// over into the object written in its place all go through it. Each
/// element is walked once: the user's pass over an element is what moves
/// the walk past it, so a check or a decode does not follow a skip.
///
/// ```swift
/// guard var contents = CompositeBytes(base, at: p, end: end) else { return nil }
/// while let element = contents.nextElement() { /* the element's tag is at `element.value` */ }
/// if contents.isDamaged { return nil }
/// ```
struct CompositeBytes {
    let base: UnsafeRawPointer
    /// Where the contents end: the end of the list or object.
    let end: Int
    /// The number of elements or fields the bytes declare.
    let count: UInt64
    /// The offset of the next element or field.
    private(set) var position: Int
    private var visited: UInt64 = 0
    /// Whether the walk stopped before `count` elements or fields, at
    /// bytes that do not decode.
    private(set) var isDamaged = false

    /// Opens the list or embedded object whose tag is at `p` (the tag is
    /// not checked); nil when its length or count does not decode within
    /// `end`.
    @inline(__always)
    init?(_ base: UnsafeRawPointer, at p: Int, end: Int) {
        var p = p + 1
        guard let length = RecordView.varint(base, &p, end), length <= UInt64(end - p) else { return nil }
        let contentEnd = p + Int(length)
        guard let count = RecordView.varint(base, &p, contentEnd) else { return nil }
        self.base = base
        self.end = contentEnd
        self.count = count
        self.position = p
    }

    /// Whether the walk went through all `count` elements or fields and
    /// they fill the contents exactly.
    var isComplete: Bool { !isDamaged && visited == count && position == end }

    /// The next element of a list, passed over by `pass`: it gets the
    /// offset of the element's tag (before ``end``) and moves it past the
    /// element, and returns what it made of it, or nil at bytes it refuses.
    /// Nil after the last element, or at damaged bytes (``isDamaged``).
    @inline(__always)
    mutating func nextElement<Element>(_ pass: (_ p: inout Int, _ end: Int) -> Element?) -> Element? {
        guard visited < count else { return nil }
        guard position < end, let element = pass(&position, end) else { return damaged() }
        visited += 1
        return element
    }

    /// The next element of a list, skipped: the offset of its tag, and the
    /// offset just past it. Nil after the last one, or at damaged bytes
    /// (``isDamaged``).
    @inline(__always)
    mutating func nextElement() -> (value: Int, end: Int)? {
        let base = self.base
        return nextElement { p, end in
            let value = p
            return RecordView.skip(base, &p, end) ? (value, p) : nil
        }
    }

    /// The next field of an embedded object: its id, the offset of its
    /// first byte (the id's), and what `pass` made of its value (as for
    /// ``nextElement(_:)``). Nil after the last one, or at damaged bytes
    /// (``isDamaged``), an id above `UInt32.max` among them.
    @inline(__always)
    mutating func nextField<Element>(_ pass: (_ p: inout Int, _ end: Int) -> Element?)
        -> (id: PropertyID, start: Int, value: Element)?
    {
        guard visited < count else { return nil }
        let start = position
        guard let id = RecordView.varint(base, &position, end), id <= UInt64(UInt32.max), position < end,
            let value = pass(&position, end)
        else { return damaged() }
        visited += 1
        return (PropertyID(UInt32(id)), start, value)
    }

    /// The next field of an embedded object, skipped: its id, the offset of
    /// its first byte (the id's), of its value's tag, and just past it. Nil
    /// after the last one, or at damaged bytes (``isDamaged``).
    @inline(__always)
    mutating func nextField() -> (id: PropertyID, start: Int, value: Int, end: Int)? {
        let base = self.base
        guard
            let field = nextField({ p, end in
                let value = p
                return RecordView.skip(base, &p, end) ? (value, p) : nil
            })
        else { return nil }
        return (field.id, field.start, field.value.0, field.value.1)
    }

    private mutating func damaged<T>() -> T? {
        isDamaged = true
        return nil
    }
}

extension CompositeBytes {
    /// Skips the link, list or embedded object at `p` (its tag included)
    /// by its length, without looking inside: for a record whose
    /// validation checked it. A link's key is still checked, which costs
    /// no more than skipping it.
    @inline(never)
    static func skip(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Bool {
        guard p < end else { return false }
        let tag = base.load(fromByteOffset: p, as: UInt8.self)
        if tag == RecordCodec.Tag.link.rawValue { return skipLink(base, &p, end) }
        guard tag == RecordCodec.Tag.list.rawValue || tag == RecordCodec.Tag.object.rawValue else { return false }
        p += 1
        guard let length = RecordView.varint(base, &p, end), length <= UInt64(end - p) else { return false }
        p += Int(length)
        return true
    }

    /// Skips the link, list or embedded object at `p` (its tag included),
    /// checking everything inside, in one walk: every element and field
    /// well formed, a link's key an int, string or uuid, field ids
    /// increasing, counts and lengths that agree, nesting no deeper than
    /// ``RecordCodec/maxNesting``. A record's validation goes deep once;
    /// later walks trust the lengths (``skip(_:_:_:)``).
    @inline(never)
    static func skipChecking(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int, depth: Int = 0) -> Bool {
        guard p < end, depth < RecordCodec.maxNesting else { return false }
        let tag = base.load(fromByteOffset: p, as: UInt8.self)
        if tag == RecordCodec.Tag.link.rawValue { return skipLink(base, &p, end) }
        guard tag == RecordCodec.Tag.list.rawValue || tag == RecordCodec.Tag.object.rawValue,
            var contents = CompositeBytes(base, at: p, end: end)
        else { return false }
        // A nested list or object is checked where the walk meets it: the
        // check is the walk's pass over that element, not a second walk.
        func check(_ q: inout Int, _ end: Int) -> Bool? {
            let inner = base.load(fromByteOffset: q, as: UInt8.self)
            let valid =
                RecordCodec.Tag.isComposite(inner)
                ? skipChecking(base, &q, end, depth: depth + 1) : RecordView.skip(base, &q, end)
            return valid ? true : nil
        }
        if tag == RecordCodec.Tag.list.rawValue {
            while contents.nextElement(check) != nil {}
        } else {
            var previous: PropertyID?
            while let field = contents.nextField(check) {
                if let previous, field.id <= previous { return false }
                previous = field.id
            }
        }
        guard contents.isComplete else { return false }
        p = contents.end
        return true
    }

    /// Skips a link at `p` (its tag): its key must be a tagged value of a
    /// kind that can be a primary key.
    @inline(__always)
    private static func skipLink(_ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Bool {
        p += 1
        guard p < end, StoredKind(tag: base.load(fromByteOffset: p, as: UInt8.self))?.canBePrimaryKey == true
        else { return false }
        return RecordView.skip(base, &p, end)
    }
}
