/// Writing an embedded object over a stored one keeps the fields of the
/// properties its type no longer declares but other app versions do
/// (synced mode): what the stored object holds, and which stored element
/// of a list each written element replaces.
extension CompositeCodec {
    /// A value as a record being replaced stores it: the offset of its tag
    /// in the stored bytes. Embedded objects written over it keep the
    /// stored fields their type no longer declares (synced mode).
    struct Stored {
        let base: UnsafeRawPointer
        let offset: Int
        let end: Int

        var tag: UInt8 { base.load(fromByteOffset: offset, as: UInt8.self) }

        /// Field `field` of `record`, when it stores one.
        init?(_ field: ObjectTable.Field, in record: RecordView) {
            guard let base = record.bytes.baseAddress,
                let offset = record.fieldOffset(forField: field.id, expectedAt: field.position)
            else { return nil }
            self.init(base: base, offset: offset, end: record.bytes.count)
        }

        init(base: UnsafeRawPointer, offset: Int, end: Int) {
            self.base = base
            self.offset = offset
            self.end = end
        }
    }

    /// Appends a kept field's value for a record or embedded object that
    /// has no stored one to carry over: the empty value of its type, so
    /// that the app versions that declare it read it.
    static func appendEmpty(_ writer: ByteWriter, _ kept: ObjectTable.KeptField) {
        guard case .object = kept.emptyValue else {
            RecordCodec.appendField(writer, id: kept.id, value: kept.emptyValue)
            return
        }
        // An embedded object with no fields reads as one of defaults.
        writer.appendVarint(UInt64(kept.id.rawValue))
        RecordCodec.appendObject(writer, fieldCount: 0) { _ in }
    }

    /// The fields of the stored embedded object `object` (at its tag), by
    /// id: each field's bytes (id, tag and payload) and where its value is.
    static func fields(of object: Stored) -> [PropertyID: (field: Slice<UnsafeRawBufferPointer>, value: Stored)] {
        let base = object.base
        guard var contents = CompositeBytes(base, at: object.offset, end: object.end) else { return [:] }
        let all = UnsafeRawBufferPointer(start: base, count: contents.end)
        var fields: [PropertyID: (field: Slice<UnsafeRawBufferPointer>, value: Stored)] = [:]
        while let field = contents.nextField() {
            fields[field.id] = (
                all[field.start ..< field.end], Stored(base: base, offset: field.value, end: contents.end)
            )
        }
        return fields
    }

    /// For each element of a list of embedded objects being written, the
    /// stored element whose kept fields it carries over, or nil. Embedded
    /// objects have no identity, so an element takes over a stored element
    /// whose declared properties are equal to its own (the same position
    /// first); an element the older app changed takes over the remaining
    /// stored element with the most properties equal to its own (the one at
    /// its position on a tie), or, sharing none, the one at its position.
    /// So writing a list back unchanged, appending to it, removing or
    /// reordering elements, and editing some of them at the same time keep
    /// every kept field with its object; only a new element (none left to
    /// take over) starts with empty kept fields.
    static func storedElements(_ field: ObjectTable.Field, _ elements: [Value], _ stored: Stored?) -> [Stored?] {
        guard let stored, stored.tag == RecordCodec.Tag.list.rawValue, let layout = field.embedded else { return [] }
        let base = stored.base
        guard var contents = CompositeBytes(base, at: stored.offset, end: stored.end) else { return [] }
        var old: [(stored: Stored, value: Value?)] = []
        while let element = contents.nextElement() {
            var at = element.value
            let value = readObject(layout, base, &at, contents.end)
            old.append((Stored(base: base, offset: element.value, end: contents.end), value))
        }
        let new = elements.map { normalized($0, layout) }
        var taken = [Bool](repeating: false, count: old.count)
        var matched = [Stored?](repeating: nil, count: elements.count)
        for offset in new.indices where offset < old.count && old[offset].value == new[offset] {
            matched[offset] = old[offset].stored
            taken[offset] = true
        }
        for offset in new.indices where matched[offset] == nil {
            if let other = old.indices.first(where: { !taken[$0] && old[$0].value == new[offset] }) {
                matched[offset] = old[other].stored
                taken[other] = true
            }
        }
        for offset in new.indices where matched[offset] == nil {
            // Changed by the older app: the stored element most like it.
            var best: Int?
            var bestShared = 0
            for other in old.indices where !taken[other] {
                let shared = sharedValues(old[other].value, new[offset])
                if shared > bestShared || (shared == bestShared && shared > 0 && other == offset) {
                    best = other
                    bestShared = shared
                }
            }
            if best == nil, offset < old.count, !taken[offset] { best = offset }
            if let best {
                matched[offset] = old[best].stored
                taken[best] = true
            }
        }
        return matched
    }

    /// How many declared properties two embedded objects have equal.
    static func sharedValues(_ a: Value?, _ b: Value) -> Int {
        guard case .object(let first)? = a, case .object(let second) = b else { return 0 }
        return first.count(where: { second[$0.key] == $0.value })
    }

    /// An embedded object given for a layout, as reading it back after it
    /// is written would return it: every declared property, given or
    /// defaulted, nested objects likewise.
    static func normalized(_ value: Value, _ layout: EmbeddedLayout?) -> Value {
        guard case .object(let properties) = value, let layout else { return value }
        var result: [String: Value] = [:]
        for inner in layout.fields {
            var value = properties[inner.name].map { $0.coerced(to: inner.type) } ?? inner.valueWhenAbsent
            switch (inner.type, value) {
            case (.embedded, .object):
                value = normalized(value, inner.embedded)
            case (.list, .list(let elements)) where inner.elementType == .embedded:
                value = .list(elements.map { normalized($0, inner.embedded) })
            default:
                break
            }
            result[inner.name] = value
        }
        return .object(result)
    }
}
