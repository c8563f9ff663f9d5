/// The fields of one embedded type, as its objects are stored inside their
/// owners' records: the embedded type's current properties sorted by id,
/// each with the layout of the objects it embeds in turn.
// @unchecked: immutable after init.
final class EmbeddedLayout: @unchecked Sendable {
    let name: String
    /// Current properties sorted by id: the order fields are written in.
    let fields: [ObjectTable.Field]
    private let positions: [String: Int]

    init(name: String, fields: [ObjectTable.Field]) {
        self.name = name
        self.fields = fields
        self.positions = Dictionary(fields.map { ($0.name, $0.position) }, uniquingKeysWith: { first, _ in first })
    }

    func field(_ name: String) -> ObjectTable.Field? { positions[name].map { fields[$0] } }

    /// The layouts of every embedded type of `types` (the catalog's), by name.
    static func layouts(_ types: [CatalogType]) -> [String: EmbeddedLayout] {
        var layouts: [String: EmbeddedLayout] = [:]
        let embedded = Dictionary(
            types.filter(\.isEmbedded).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        // Schema validation refuses cycles, so the recursion ends; a damaged
        // catalog with one is refused by its consistency check first.
        func layout(_ name: String, depth: Int) -> EmbeddedLayout? {
            if let known = layouts[name] { return known }
            guard let type = embedded[name], depth < RecordCodec.maxNesting else { return nil }
            let fields = type.properties.sorted { $0.id < $1.id }.enumerated().map { position, entry in
                ObjectTable.Field(
                    id: entry.id, position: position, property: entry.property, isPrimaryKey: false, index: nil,
                    embedded: entry.property.isEmbedding
                        ? entry.property.target.flatMap { layout($0, depth: depth + 1) } : nil)
            }
            let made = EmbeddedLayout(name: name, fields: fields)
            layouts[name] = made
            return made
        }
        for name in embedded.keys { _ = layout(name, depth: 0) }
        return layouts
    }
}

/// Encodes and decodes the values of links, lists and embedded objects: the
/// checks a value must pass before it is written (element types, embedded
/// property names and types, link keys of the target's key type), and the
/// reading of embedded objects through their layout.
enum CompositeCodec {
    /// Checks `value` for `field` and appends it as the field's payload.
    /// `value` has passed the top-level check (``Value/fits(_:optional:)``).
    static func appendField(
        _ writer: inout ByteWriter, _ field: ObjectTable.Field, _ value: Value, owner: String, path: String
    ) throws {
        writer.appendVarint(UInt64(field.id.rawValue))
        try appendValue(&writer, field, value, owner: owner, path: path)
    }

    private static func appendValue(
        _ writer: inout ByteWriter, _ field: ObjectTable.Field, _ value: Value, owner: String, path: String
    ) throws {
        switch (field.type, value) {
        case (_, .null):
            writer.append(RecordCodec.Tag.null.rawValue)
        case (.link, .link(let key)):
            try checkLinkKey(key, field, owner: owner, path: path)
            RecordCodec.appendTagged(&writer, value)
        case (.list, .list(let elements)):
            let element = field.elementType ?? .int
            try RecordCodec.appendList(&writer, count: elements.count) { body in
                for (offset, raw) in elements.enumerated() {
                    let item = raw.coerced(to: element)
                    guard item.fits(element, optional: false) else {
                        throw invalid(
                            "element \(offset) of the list '\(owner).\(field.name)' is \(raw), but the list holds \(element == .list ? "lists" : describe(field, element))",
                            path: path)
                    }
                    switch item {
                    case .link(let key):
                        try checkLinkKey(key, field, owner: owner, path: path)
                        RecordCodec.appendTagged(&body, item)
                    case .object(let properties):
                        try appendObject(
                            &body, field, properties, owner: "\(owner).\(field.name)[\(offset)]", path: path)
                    default:
                        RecordCodec.appendTagged(&body, item)
                    }
                }
            }
        case (.embedded, .object(let properties)):
            try appendObject(&writer, field, properties, owner: "\(owner).\(field.name)", path: path)
        default:
            throw invalid(
                "'\(owner).\(field.name)' is \(describe(field, field.type)), but \(value) was given", path: path)
        }
    }

    /// An embedded object: every property of its type, in id order, given
    /// or defaulted; an unknown name is an error.
    private static func appendObject(
        _ writer: inout ByteWriter, _ field: ObjectTable.Field, _ properties: [String: Value], owner: String,
        path: String
    ) throws {
        guard let layout = field.embedded else {
            throw invalid("'\(owner)' holds objects of '\(field.target ?? "?")', an unknown embedded type", path: path)
        }
        for name in properties.keys where layout.field(name) == nil {
            let known = layout.fields.map(\.name).sorted().joined(separator: ", ")
            throw StrataError(
                .unknownProperty,
                "Embedded type '\(layout.name)' has no property '\(name)' (given for '\(owner)' in \(path)). Its properties are: \(known). Nothing was written.",
                path: path)
        }
        try RecordCodec.appendObject(&writer, fieldCount: layout.fields.count) { body in
            for inner in layout.fields {
                let value: Value
                if let given = properties[inner.name] {
                    value = given.coerced(to: inner.type)
                } else if let defaultValue = inner.defaultValue {
                    value = defaultValue
                } else if inner.isOptional || inner.type == .list || inner.type == .embedded {
                    value = inner.valueWhenAbsent
                } else {
                    throw StrataError(
                        .missingValue,
                        "Property '\(layout.name).\(inner.name)' is required and has no default, but no value was given for '\(owner)' (in \(path)). Nothing was written.",
                        path: path)
                }
                guard value.fits(inner.type, optional: inner.isOptional) else {
                    throw invalid(
                        "'\(owner).\(inner.name)' is \(describe(inner, inner.type))\(inner.isOptional ? "?" : ""), but \(value) was given",
                        path: path)
                }
                if inner.type.isComposite {
                    try appendField(&body, inner, value, owner: owner, path: path)
                } else {
                    RecordCodec.appendField(&body, id: inner.id, value: value)
                }
            }
        }
    }

    private static func checkLinkKey(_ key: Value, _ field: ObjectTable.Field, owner: String, path: String) throws {
        let expected = field.linkKeyType ?? .int
        let fits: Bool
        switch key {
        case .int(let id): fits = expected == .int && (field.linkKeyType != nil || id > 0)
        case .string: fits = expected == .string
        case .uuid: fits = expected == .uuid
        default: fits = false
        }
        guard fits else {
            let what = field.linkKeyType.map { "its primary key, of type \($0)" } ?? "its automatic id, a positive int"
            throw invalid(
                "'\(owner).\(field.name)' links to '\(field.target ?? "?")' by \(what), but the key \(key) was given",
                path: path)
        }
    }

    private static func describe(_ field: ObjectTable.Field, _ type: PropertyType) -> String {
        switch type {
        case .link: "link(\(field.target ?? "?"))"
        case .embedded: "embedded(\(field.target ?? "?"))"
        case .list: "list(\(field.elementType.map { describe(field, $0) } ?? "?"))"
        default: "\(type)"
        }
    }

    private static func invalid(_ what: String, path: String) -> StrataError {
        StrataError(.invalidValue, "Property \(what) (in \(path)). Nothing was written.", path: path)
    }

    // MARK: Reading

    /// The value of a link, list or embedded field at `p` (its tag) of a
    /// validated record, or nil when it does not fit the field.
    static func read(_ field: ObjectTable.Field, _ base: UnsafeRawPointer, _ p: inout Int, _ end: Int) -> Value? {
        let tag = base.load(fromByteOffset: p, as: UInt8.self)
        if tag == RecordCodec.Tag.null.rawValue { return field.isOptional ? .null : nil }
        guard RecordCodec.tag(tag, fits: field.type, optional: field.isOptional) else { return nil }
        switch field.type {
        case .embedded:
            return readObject(field.embedded, base, &p, end)
        case .list where field.elementType == .embedded:
            p += 1
            guard let length = RecordView.readVarint(base, &p, end), length <= UInt64(end - p) else { return nil }
            let contentEnd = p + Int(length)
            defer { p = contentEnd }
            guard let count = RecordView.readVarint(base, &p, contentEnd) else { return nil }
            var elements: [Value] = []
            for _ in 0 ..< count {
                guard p < contentEnd, let element = readObject(field.embedded, base, &p, contentEnd) else {
                    return nil
                }
                elements.append(element)
            }
            return .list(elements)
        default:
            guard let value = RecordView.read(base, &p, end) else { return nil }
            if case .list(let elements) = value, let element = field.elementType,
                !elements.allSatisfy({ $0.fits(element, optional: false) })
            {
                return nil
            }
            return value
        }
    }

    /// An embedded object at `p` (its tag): every property of its layout,
    /// stored or defaulted.
    private static func readObject(_ layout: EmbeddedLayout?, _ base: UnsafeRawPointer, _ p: inout Int, _ end: Int)
        -> Value?
    {
        guard let layout, p < end, base.load(fromByteOffset: p, as: UInt8.self) == RecordCodec.Tag.object.rawValue
        else { return nil }
        p += 1
        guard let length = RecordView.readVarint(base, &p, end), length <= UInt64(end - p) else { return nil }
        let contentEnd = p + Int(length)
        defer { p = contentEnd }
        guard let count = RecordView.readVarint(base, &p, contentEnd) else { return nil }
        var stored: [PropertyID: Int] = [:]
        for _ in 0 ..< count {
            guard let id = RecordView.readVarint(base, &p, contentEnd), p < contentEnd else { return nil }
            stored[PropertyID(UInt32(truncatingIfNeeded: id))] = p
            guard RecordView.skipValue(base, &p, contentEnd) else { return nil }
        }
        var properties: [String: Value] = [:]
        properties.reserveCapacity(layout.fields.count)
        for inner in layout.fields {
            var value: Value?
            if var at = stored[inner.id] {
                if inner.type.isComposite {
                    value = read(inner, base, &at, contentEnd)
                } else if let primitive = RecordView.read(base, &at, contentEnd),
                    primitive.fits(inner.type, optional: inner.isOptional)
                {
                    value = primitive
                }
            }
            properties[inner.name] = value ?? inner.valueWhenAbsent
        }
        return .object(properties)
    }
}

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
            p += 1
            guard let length = RecordView.readVarint(base, &p, end), length <= UInt64(end - p) else {
                return "'\(place)' holds a damaged list"
            }
            let contentEnd = p + Int(length)
            defer { p = contentEnd }
            guard let count = RecordView.readVarint(base, &p, contentEnd) else {
                return "'\(place)' holds a damaged list"
            }
            let element = field.elementType ?? .int
            for offset in 0 ..< Int(count) {
                guard p < contentEnd else { return "'\(place)' holds a damaged list" }
                let elementPlace = "\(place)[\(offset)]"
                if element == .embedded {
                    if let problem = objectProblem(field, at: elementPlace, base, &p, contentEnd) { return problem }
                    continue
                }
                let elementTag = base.load(fromByteOffset: p, as: UInt8.self)
                guard RecordCodec.tag(elementTag, fits: element, optional: false) else {
                    return
                        "'\(elementPlace)' holds \(stored(elementTag)), but the list holds \(describe(field, element))"
                }
                guard RecordView.skipValue(base, &p, contentEnd) else { return "'\(place)' holds a damaged list" }
            }
            return nil
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
        p += 1
        guard let length = RecordView.readVarint(base, &p, end), length <= UInt64(end - p) else {
            return "'\(place)' holds a damaged embedded '\(layout.name)'"
        }
        let contentEnd = p + Int(length)
        defer { p = contentEnd }
        guard let count = RecordView.readVarint(base, &p, contentEnd) else {
            return "'\(place)' holds a damaged embedded '\(layout.name)'"
        }
        for _ in 0 ..< count {
            guard let id = RecordView.readVarint(base, &p, contentEnd), p < contentEnd else {
                return "'\(place)' holds a damaged embedded '\(layout.name)'"
            }
            guard let inner = layout.fields.first(where: { $0.id.rawValue == id }) else {
                guard RecordView.skipValue(base, &p, contentEnd) else {
                    return "'\(place)' holds a damaged embedded '\(layout.name)'"
                }
                continue
            }
            let innerPlace = "\(place).\(inner.name)"
            if inner.type.isComposite {
                if let problem = problem(inner, at: innerPlace, base, &p, contentEnd) { return problem }
                continue
            }
            let innerTag = base.load(fromByteOffset: p, as: UInt8.self)
            guard RecordCodec.tag(innerTag, fits: inner.type, optional: true) else {
                return
                    "'\(innerPlace)' holds \(stored(innerTag)), but '\(layout.name).\(inner.name)' is \(describe(inner, inner.type))"
            }
            guard RecordView.skipValue(base, &p, contentEnd) else {
                return "'\(place)' holds a damaged embedded '\(layout.name)'"
            }
        }
        return nil
    }

    /// A stored tag as a person reads it: "an int", "a list".
    private static func stored(_ tag: UInt8) -> String {
        switch RecordCodec.Tag(rawValue: tag) {
        case .null?: "null"
        case .falseValue?, .trueValue?: "a bool"
        case .int?: "an int"
        case .double?: "a double"
        case .string?: "a string"
        case .data?: "data"
        case .date?: "a date"
        case .uuid?: "a uuid"
        case .link?: "a link"
        case .list?: "a list"
        case .object?: "an embedded object"
        case nil: "an unknown tag \(tag)"
        }
    }
}
