extension ObjectTable {
    /// Whether `record` holds a value for a field this app does not
    /// declare, inside its embedded objects too: a property another app
    /// version declares (a kept one) or one a sync-enabled file learned
    /// from a peer. The empty value this app writes for a kept property of
    /// an object it makes does not count, and neither do the values of
    /// properties removed for good (retired).
    func holdsUndeclaredFields(_ record: RecordView) -> Bool {
        var holds = false
        record.forEachEncodedField { id, _ in
            guard !holds else { return }
            if let position = shape.position(ofField: id) {
                let field = fields[position]
                if field.type == .embedded, let layout = field.embedded,
                    let stored = CompositeCodec.Stored(field, in: record), stored.tag == RecordCodec.Tag.object.rawValue
                {
                    holds = ObjectTable.holdsUndeclaredFields(layout, stored)
                }
                return
            }
            guard !type.retiredProperties.contains(where: { $0.id == id }),
                let offset = record.fieldOffset(forField: id, expectedAt: Int.max), let base = record.bytes.baseAddress
            else { return }
            holds = ObjectTable.isHeld(
                CompositeCodec.Stored(base: base, offset: offset, end: record.bytes.count),
                empty: keptFields.first { $0.id == id }?.emptyValue)
        }
        return holds
    }

    /// Whether the embedded object `object`, of layout `layout`, holds a
    /// value for a field the layout does not declare, at any depth.
    private static func holdsUndeclaredFields(_ layout: EmbeddedLayout, _ object: CompositeCodec.Stored) -> Bool {
        CompositeCodec.fields(of: object).contains { id, field in
            guard let position = layout.shape.position(ofField: id) else {
                return isHeld(field.value, empty: layout.kept.first { $0.id == id }?.emptyValue)
            }
            let inner = layout.fields[position]
            guard inner.type == .embedded, let innerLayout = inner.embedded,
                field.value.tag == RecordCodec.Tag.object.rawValue
            else { return false }
            return holdsUndeclaredFields(innerLayout, field.value)
        }
    }

    /// Whether the stored value at `stored` is a value, not `empty` (the
    /// kept property's empty value; nil for a field learned since the
    /// table opened, whose every value counts). An embedded object counts
    /// when it holds a field.
    private static func isHeld(_ stored: CompositeCodec.Stored, empty: Value?) -> Bool {
        guard stored.tag != RecordCodec.Tag.object.rawValue else {
            return !CompositeCodec.fields(of: stored).isEmpty
        }
        var p = stored.offset
        guard let value = RecordView.read(stored.base, &p, stored.end) else { return true }
        return empty.map { value != $0 } ?? true
    }
}
