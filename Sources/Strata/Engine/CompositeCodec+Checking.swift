extension CompositeCodec {
    // MARK: Checking (verify)

    /// Why the link, list or embedded value stored for `field` at `p` (its
    /// tag) of a validated record does not decode by the field's type, or
    /// nil when it does. Stricter than ``read(_:_:_:_:)``, which reads a
    /// value that does not fit as the field's default: here every element
    /// of a list must fit the element type, and every stored property of an
    /// embedded object that its type still has must fit that property, down
    /// through nested objects. A null, which reads as the default, and a
    /// field id the embedded type no longer has (a removed property) pass.
    static func problem(_ field: ObjectTable.Field, _ base: UnsafeRawPointer, _ p: Int, _ end: Int) -> String? {
        var p = p
        return problem(field, at: field.name, base, &p, end)
    }

    private static func problem(
        _ field: ObjectTable.Field, at place: String, _ base: UnsafeRawPointer, _ p: inout Int, _ end: Int
    ) -> String? {
        let tag = base.load(fromByteOffset: p, as: UInt8.self)
        if tag == RecordCodec.Tag.null.rawValue {
            p += 1
            return nil
        }
        guard RecordCodec.tag(tag, fits: field.type, optional: true) else {
            _ = RecordView.skipValue(base, &p, end)
            return "'\(place)' holds \(stored(tag)), but it is \(describe(field, field.type))"
        }
        switch field.type {
        case .embedded:
            return objectProblem(field, at: place, base, &p, end)
        case .list:
            guard var contents = CompositeBytes(base, at: p, end: end) else {
                return "'\(place)' holds a damaged list"
            }
            p = contents.end
            let element = field.elementType ?? .int
            var offset = 0
            while let entry = contents.nextElement() {
                let elementPlace = "\(place)[\(offset)]"
                offset += 1
                if element == .embedded {
                    var at = entry.value
                    if let problem = objectProblem(field, at: elementPlace, base, &at, contents.end) { return problem }
                    continue
                }
                let elementTag = base.load(fromByteOffset: entry.value, as: UInt8.self)
                guard RecordCodec.tag(elementTag, fits: element, optional: false) else {
                    return
                        "'\(elementPlace)' holds \(stored(elementTag)), but the list holds \(describe(field, element))"
                }
            }
            return contents.isDamaged ? "'\(place)' holds a damaged list" : nil
        default:
            // A link: validation checked that its key is an int, string or
            // uuid; the table engine checks that it names an object.
            _ = RecordView.skipValue(base, &p, end)
            return nil
        }
    }

    /// Checks the embedded object at `p` (its tag) against the layout of
    /// `field`'s embedded type.
    private static func objectProblem(
        _ field: ObjectTable.Field, at place: String, _ base: UnsafeRawPointer, _ p: inout Int, _ end: Int
    ) -> String? {
        let tag = base.load(fromByteOffset: p, as: UInt8.self)
        guard let layout = field.embedded else {
            _ = RecordView.skipValue(base, &p, end)
            return
                "'\(place)' holds an object of '\(field.target ?? "?")', which is not an embedded type of the catalog"
        }
        guard tag == RecordCodec.Tag.object.rawValue else {
            _ = RecordView.skipValue(base, &p, end)
            return "'\(place)' holds \(stored(tag)), but it holds embedded '\(layout.name)' objects"
        }
        guard var contents = CompositeBytes(base, at: p, end: end) else {
            return "'\(place)' holds a damaged embedded '\(layout.name)'"
        }
        p = contents.end
        while let entry = contents.nextField() {
            // A field id the type no longer has: a removed property.
            guard let position = layout.shape.position(ofField: entry.id) else { continue }
            let inner = layout.fields[position]
            let innerPlace = "\(place).\(inner.name)"
            if inner.type.isComposite {
                var at = entry.value
                if let problem = problem(inner, at: innerPlace, base, &at, contents.end) { return problem }
                continue
            }
            let innerTag = base.load(fromByteOffset: entry.value, as: UInt8.self)
            guard RecordCodec.tag(innerTag, fits: inner.type, optional: true) else {
                return
                    "'\(innerPlace)' holds \(stored(innerTag)), but '\(layout.name).\(inner.name)' is \(describe(inner, inner.type))"
            }
        }
        return contents.isDamaged ? "'\(place)' holds a damaged embedded '\(layout.name)'" : nil
    }

    /// A stored tag as a person reads it: "an int", "a list".
    private static func stored(_ tag: UInt8) -> String {
        if let kind = StoredKind(tag: tag) { return kind.noun }
        switch RecordCodec.Tag(rawValue: tag) {
        case .null?: return "null"
        case .link?: return "a link"
        case .list?: return "a list"
        case .object?: return "an embedded object"
        default: return "an unknown tag \(tag)"
        }
    }
}
