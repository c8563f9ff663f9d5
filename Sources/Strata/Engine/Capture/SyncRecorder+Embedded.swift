/// Capture inside embedded objects: an embedded object is merged per path
/// (each of its fields a register of its own), and an optional one has a
/// life that a change between null and an object moves on (``ClockRow``).
extension SyncRecorder {
    /// Stamps what a write changed in the embedded field at `path` of
    /// layout `layout`, whose value was `before` and is `after` (each at
    /// its tag; nil where the record lacks the field).
    ///
    /// From null to an object or back, the object's life moves on, the
    /// path takes `clock`, and so does every field of the new object that
    /// the app declares (the fields it keeps for other app versions carry
    /// no stamp). Between two objects, each declared field whose bytes
    /// changed takes `clock`: a field the object lacked and now holds at
    /// the value it read as stays unstamped, as at the record's level.
    static func recordEmbedded(
        _ path: ClockPath, _ layout: EmbeddedLayout, before: CompositeCodec.Stored?,
        after: CompositeCodec.Stored?, row: inout ClockRow, clock: FieldClock
    ) {
        let wasObject = before?.tag == RecordCodec.Tag.object.rawValue
        let isObject = after?.tag == RecordCodec.Tag.object.rawValue
        if wasObject != isObject {
            let life = row.life(at: path, present: wasObject)
            row.removeInside(path)
            row.set(path, clock)
            row.setLife(path, nextLife(after: life, present: isObject), present: isObject)
            if isObject, let after { stampInside(path, layout, after, row: &row, clock: clock) }
            return
        }
        guard wasObject, let before, let after else { return }
        let old = CompositeCodec.fields(of: before)
        let new = CompositeCodec.fields(of: after)
        for inner in layout.fields {
            let was = old[inner.id]
            let now = new[inner.id]
            if let was, let now, was.field.elementsEqual(now.field) { continue }
            if was == nil && now == nil { continue }
            let inside = path.appending(inner.id)
            if inner.type == .embedded, let innerLayout = inner.embedded {
                recordEmbedded(inside, innerLayout, before: was?.value, after: now?.value, row: &row, clock: clock)
            } else if was == nil, let now, value(of: inner, at: now.value) == inner.valueWhenAbsent {
                row.set(inside, .none)
            } else {
                row.set(inside, clock)
            }
        }
    }

    /// The smallest life above `life` that is odd when `present`, even
    /// when not.
    static func nextLife(after life: UInt64, present: Bool) -> UInt64 {
        let next = life + 1
        return (next % 2 == 1) == present ? next : next + 1
    }

    /// Stamps every field of the new embedded object `object` at `path`
    /// with `clock`, inside its embedded objects too; its kept fields
    /// with none.
    private static func stampInside(
        _ path: ClockPath, _ layout: EmbeddedLayout, _ object: CompositeCodec.Stored, row: inout ClockRow,
        clock: FieldClock
    ) {
        for (id, field) in CompositeCodec.fields(of: object) {
            let inside = path.appending(id)
            guard let position = layout.shape.position(ofField: id) else {
                row.set(inside, .none)
                continue
            }
            row.set(inside, clock)
            let inner = layout.fields[position]
            if inner.type == .embedded, let innerLayout = inner.embedded,
                field.value.tag == RecordCodec.Tag.object.rawValue
            {
                stampInside(inside, innerLayout, field.value, row: &row, clock: clock)
            }
        }
    }

    /// The value of the embedded object's field `inner` stored at `stored`.
    static func value(of inner: ObjectTable.Field, at stored: CompositeCodec.Stored) -> Value? {
        var p = stored.offset
        return inner.type.isComposite
            ? CompositeCodec.read(inner, stored.base, &p, stored.end)
            : RecordView.read(stored.base, &p, stored.end)
    }

    /// The paths of every field `record` holds, those inside the embedded
    /// objects of `table`'s declared embedded fields included.
    static func paths(in record: RecordView, _ table: ObjectTable) -> [ClockPath] {
        var paths: [ClockPath] = []
        record.forEachEncodedField { id, _ in
            let path = ClockPath(id)
            paths.append(path)
            guard let position = table.shape.position(ofField: id) else { return }
            let field = table.fields[position]
            if field.type == .embedded, let layout = field.embedded,
                let stored = CompositeCodec.Stored(field, in: record),
                stored.tag == RecordCodec.Tag.object.rawValue
            {
                appendPaths(inside: path, layout, stored, to: &paths)
            }
        }
        return paths
    }

    private static func appendPaths(
        inside path: ClockPath, _ layout: EmbeddedLayout?, _ object: CompositeCodec.Stored, to paths: inout [ClockPath]
    ) {
        for (id, field) in CompositeCodec.fields(of: object).sorted(by: { $0.key < $1.key }) {
            let inside = path.appending(id)
            paths.append(inside)
            let inner = layout?.shape.position(ofField: id).map { layout!.fields[$0] }
            if let inner, inner.type == .embedded, field.value.tag == RecordCodec.Tag.object.rawValue {
                appendPaths(inside: inside, inner.embedded, field.value, to: &paths)
            }
        }
    }
}
