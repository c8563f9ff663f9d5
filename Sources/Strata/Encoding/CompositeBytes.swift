/// A walk over the contents of one stored list or embedded object: a
/// list's elements, or an object's fields (an id, then a value), each
/// found by its offset and skipped without being decoded.
///
/// The one walker of list and embedded bytes: decoding a composite value,
/// `verify`'s check of one, and carrying the kept fields of a stored
/// embedded object over into the object written in its place all go
/// through it, and do with each element or field what their job needs.
///
/// ```swift
/// guard var contents = CompositeBytes(base, at: p, end: end) else { return nil }
/// while let element = contents.nextElement() { /* the element's tag is at `element` */ }
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
    init?(_ base: UnsafeRawPointer, at p: Int, end: Int) {
        var p = p + 1
        guard let length = RecordView.readVarint(base, &p, end), length <= UInt64(end - p) else { return nil }
        let contentEnd = p + Int(length)
        guard let count = RecordView.readVarint(base, &p, contentEnd) else { return nil }
        self.base = base
        self.end = contentEnd
        self.count = count
        self.position = p
    }

    /// The next element of a list: the offset of its tag, and the offset
    /// just past it. Nil after the last one, or at damaged bytes
    /// (``isDamaged``).
    mutating func nextElement() -> (value: Int, end: Int)? {
        guard visited < count else { return nil }
        let value = position
        guard value < end, RecordView.skipValue(base, &position, end) else { return damaged() }
        visited += 1
        return (value, position)
    }

    /// The next field of an embedded object: its id, the offset of its
    /// first byte (the id's), of its value's tag, and just past it. Nil
    /// after the last one, or at damaged bytes (``isDamaged``).
    mutating func nextField() -> (id: PropertyID, start: Int, value: Int, end: Int)? {
        guard visited < count else { return nil }
        let start = position
        guard let id = RecordView.readVarint(base, &position, end), position < end else { return damaged() }
        let value = position
        guard RecordView.skipValue(base, &position, end) else { return damaged() }
        visited += 1
        return (PropertyID(UInt32(truncatingIfNeeded: id)), start, value, position)
    }

    private mutating func damaged<T>() -> T? {
        isDamaged = true
        return nil
    }
}
