/// The fields of one embedded type, as its objects are stored inside their
/// owners' records: the embedded type's compiled ``RecordShape`` (its
/// current properties sorted by id), each field with the layout of the
/// objects it embeds in turn.
// @unchecked: immutable after init.
final class EmbeddedLayout: @unchecked Sendable {
    let name: String
    /// The type's shape: ids, names and the lookup by name.
    let shape: RecordShape
    /// Current properties sorted by id: the order fields are written in;
    /// position for position, the fields of ``shape``.
    let fields: [ObjectTable.Field]
    /// Properties this app's schema does not declare but other app
    /// versions do (synced mode), sorted by id: an embedded object written
    /// over a stored one keeps their stored bytes.
    let kept: [ObjectTable.KeptField]
    /// Whether an object written over a stored one carries over every
    /// stored field of an id the layout does not declare, not only the
    /// kept ones: in a sync-enabled file, whose catalog learns fields of
    /// embedded types from peers while the layout is in use.
    let preservesUnknownFields: Bool
    /// Whether objects of this layout, or objects nested in them, have
    /// kept properties: writing one over a stored one must then read it.
    let keepsStoredFields: Bool

    init(
        shape: RecordShape, fields: [ObjectTable.Field], kept: [ObjectTable.KeptField] = [],
        preservesUnknownFields: Bool = false
    ) {
        self.name = shape.typeName
        self.shape = shape
        self.fields = fields
        self.kept = kept
        self.preservesUnknownFields = preservesUnknownFields
        self.keepsStoredFields =
            preservesUnknownFields || !kept.isEmpty || fields.contains { $0.embedded?.keepsStoredFields == true }
    }

    func field(_ name: String) -> ObjectTable.Field? { shape.position(of: name).map { fields[$0] } }

    /// The layouts of every embedded type of `types` (the catalog's), by name.
    static func layouts(_ types: [CatalogType], preservesUnknownFields: Bool = false) -> [String: EmbeddedLayout] {
        var layouts: [String: EmbeddedLayout] = [:]
        let embedded = Dictionary(
            types.filter(\.isEmbedded).map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        // Schema validation refuses cycles, so the recursion ends; a damaged
        // catalog with one is refused by its consistency check first.
        func layout(_ name: String, depth: Int) -> EmbeddedLayout? {
            if let known = layouts[name] { return known }
            guard let type = embedded[name], depth < RecordCodec.maxNesting else { return nil }
            let shape = RecordShape(type)
            let fields = shape.fields.enumerated().map { position, entry in
                ObjectTable.Field(
                    id: entry.id, position: position, property: entry.property, isPrimaryKey: false, index: nil,
                    embedded: entry.property.isEmbedding
                        ? entry.property.target.flatMap { layout($0, depth: depth + 1) } : nil)
            }
            let made = EmbeddedLayout(
                shape: shape, fields: fields,
                kept: type.keptProperties.sorted { $0.id < $1.id }.map(ObjectTable.KeptField.init),
                preservesUnknownFields: preservesUnknownFields)
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
    /// `stored` is what the field held before, for the embedded objects
    /// whose kept fields a replaced record carries over.
    static func appendField(
        _ writer: ByteWriter, _ field: ObjectTable.Field, _ value: Value, owner: String, path: String,
        replacing stored: Stored? = nil
    ) throws {
        writer.appendVarint(UInt64(field.id.rawValue))
        try appendValue(writer, field, value, owner: owner, path: path, replacing: stored)
    }

    private static func appendValue(
        _ writer: ByteWriter, _ field: ObjectTable.Field, _ value: Value, owner: String, path: String,
        replacing stored: Stored?
    ) throws {
        switch (field.type, value) {
        case (_, .null):
            writer.append(RecordCodec.Tag.null.rawValue)
        case (.link, .link(let key)):
            try checkLinkKey(key, field, owner: owner, path: path)
            RecordCodec.appendTagged(writer, value)
        case (.list, .list(let elements)):
            let element = field.elementType ?? .int
            let previous =
                element == .embedded && field.embedded?.keepsStoredFields == true
                ? storedElements(field, elements, stored) : []
            try RecordCodec.appendList(writer, count: elements.count) { body in
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
                        RecordCodec.appendTagged(body, item)
                    case .object(let properties):
                        try appendObject(
                            body, field, properties, owner: "\(owner).\(field.name)[\(offset)]", path: path,
                            replacing: offset < previous.count ? previous[offset] : nil)
                    default:
                        RecordCodec.appendTagged(body, item)
                    }
                }
            }
        case (.embedded, .object(let properties)):
            try appendObject(
                writer, field, properties, owner: "\(owner).\(field.name)", path: path,
                replacing: stored?.tag == RecordCodec.Tag.object.rawValue ? stored : nil)
        default:
            throw invalid(
                "'\(owner).\(field.name)' is \(describe(field, field.type)), but \(value) was given", path: path)
        }
    }

    /// An embedded object: every property of its type, in id order, given
    /// or defaulted; an unknown name is an error. The kept properties of its
    /// type (synced mode) come from `stored`, the object it replaces, byte
    /// for byte; a new object stores their empty values.
    private static func appendObject(
        _ writer: ByteWriter, _ field: ObjectTable.Field, _ properties: [String: Value], owner: String,
        path: String, replacing stored: Stored? = nil
    ) throws {
        guard let layout = field.embedded else {
            throw invalid("'\(owner)' holds objects of '\(field.target ?? "?")', an unknown embedded type", path: path)
        }
        for name in properties.keys where layout.field(name) == nil {
            let known = layout.fields.map(\.name).sorted().joined(separator: ", ")
            throw StrataError.unknownProperty(
                typeName: layout.name, property: name, known: known, embeddedIn: owner, path: path)
        }
        let storedFields = layout.keepsStoredFields ? stored.map(fields(of:)) ?? [:] : [:]
        // The fields this app does not declare, carried over: the kept ones
        // (their empty values in a new object), and in a sync-enabled file
        // any other the stored object holds (learned since the layout was made).
        var carried: [(id: PropertyID, kept: ObjectTable.KeptField?)] = layout.kept.map { ($0.id, $0) }
        if layout.preservesUnknownFields {
            for id in storedFields.keys
            where layout.shape.position(ofField: id) == nil && !layout.kept.contains(where: { $0.id == id }) {
                carried.append((id, nil))
            }
            carried.sort { $0.id < $1.id }
        }
        let carriedCount =
            stored == nil
            ? layout.kept.count : carried.count(where: { storedFields[$0.id] != nil })
        try RecordCodec.appendObject(writer, fieldCount: layout.fields.count + carriedCount) { body in
            var next = 0
            func appendKept(before id: PropertyID?) {
                while next < carried.count, id.map({ carried[next].id < $0 }) ?? true {
                    let field = carried[next]
                    next += 1
                    guard stored != nil else {
                        if let kept = field.kept { appendEmpty(body, kept) }
                        continue
                    }
                    // Copied byte for byte: this app cannot read the value, only keep it.
                    if let bytes = storedFields[field.id] {
                        body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes.field))
                    }
                }
            }
            for inner in layout.fields {
                appendKept(before: inner.id)
                let value: Value
                if let given = properties[inner.name] {
                    value = given.coerced(to: inner.type)
                } else if let defaultValue = inner.defaultValue {
                    value = defaultValue
                } else if inner.isOptional || inner.type == .list || inner.type == .embedded {
                    value = inner.valueWhenAbsent
                } else {
                    throw StrataError.missingValue(
                        typeName: layout.name, property: inner.name, embeddedIn: owner, path: path)
                }
                guard value.fits(inner.type, optional: inner.isOptional) else {
                    throw invalid(
                        "'\(owner).\(inner.name)' is \(describe(inner, inner.type))\(inner.isOptional ? "?" : ""), but \(value) was given",
                        path: path)
                }
                if inner.type.isComposite {
                    try appendField(
                        body, inner, value, owner: owner, path: path, replacing: storedFields[inner.id]?.value)
                } else {
                    RecordCodec.appendField(body, id: inner.id, value: value)
                }
            }
            appendKept(before: nil)
        }
    }

    private static func checkLinkKey(_ key: Value, _ field: ObjectTable.Field, owner: String, path: String) throws {
        let expected = field.linkKeyType ?? .int
        let fits: Bool
        if case .int(let id) = key, field.linkKeyType == nil {
            fits = id > 0
        } else {
            fits = key.propertyType == expected && StoredKind(expected)?.canBePrimaryKey == true
        }
        guard fits else {
            let what = field.linkKeyType.map { "its primary key, of type \($0)" } ?? "its automatic id, a positive int"
            throw invalid(
                "'\(owner).\(field.name)' links to '\(field.target ?? "?")' by \(what), but the key \(key) was given",
                path: path)
        }
    }

    static func describe(_ field: ObjectTable.Field, _ type: PropertyType) -> String {
        switch type {
        case .link: "link(\(field.target ?? "?"))"
        case .embedded: "embedded(\(field.target ?? "?"))"
        case .list: "list(\(field.elementType.map { describe(field, $0) } ?? "?"))"
        default: "\(type)"
        }
    }

    private static func invalid(_ what: String, path: String) -> StrataError {
        .invalidValue("Property \(what) (in \(path)).", nothingWritten: true, path: path)
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
            guard var contents = CompositeBytes(base, at: p, end: end) else { return nil }
            p = contents.end
            let layout = field.embedded
            var elements: [Value] = []
            while let element = contents.nextElement({ readObject(layout, base, &$0, $1) }) { elements.append(element) }
            return contents.isDamaged ? nil : .list(elements)
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
    static func readObject(_ layout: EmbeddedLayout?, _ base: UnsafeRawPointer, _ p: inout Int, _ end: Int)
        -> Value?
    {
        guard let layout, p < end, base.load(fromByteOffset: p, as: UInt8.self) == RecordCodec.Tag.object.rawValue,
            var contents = CompositeBytes(base, at: p, end: end)
        else { return nil }
        p = contents.end
        let contentEnd = contents.end
        // Per field of the layout, the offset of its stored value (or -1):
        // found through the shape's ids, without a dictionary per object.
        var stored = [Int](repeating: -1, count: layout.fields.count)
        while let field = contents.nextField() {
            if let position = layout.shape.position(ofField: field.id) { stored[position] = field.value }
        }
        guard !contents.isDamaged else { return nil }
        var properties: [String: Value] = [:]
        properties.reserveCapacity(layout.fields.count)
        for inner in layout.fields {
            var value: Value?
            if stored[inner.position] >= 0 {
                var at = stored[inner.position]
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
