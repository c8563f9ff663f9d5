/// The fields of one embedded type, as its objects are stored inside their
/// owners' records: the embedded type's current properties sorted by id,
/// each with the layout of the objects it embeds in turn.
// @unchecked: immutable after init.
final class EmbeddedLayout: @unchecked Sendable {
    let name: String
    /// Current properties sorted by id: the order fields are written in.
    let fields: [ObjectTable.Field]
    /// Properties this app's schema does not declare but other app
    /// versions do (synced mode), sorted by id: an embedded object written
    /// over a stored one keeps their stored bytes.
    let kept: [ObjectTable.KeptField]
    /// Whether objects of this layout, or objects nested in them, have
    /// kept properties: writing one over a stored one must then read it.
    let keepsStoredFields: Bool
    private let positions: [String: Int]

    init(name: String, fields: [ObjectTable.Field], kept: [ObjectTable.KeptField] = []) {
        self.name = name
        self.fields = fields
        self.kept = kept
        self.keepsStoredFields = !kept.isEmpty || fields.contains { $0.embedded?.keepsStoredFields == true }
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
            let made = EmbeddedLayout(
                name: name, fields: fields,
                kept: type.keptProperties.sorted { $0.id < $1.id }.map(ObjectTable.KeptField.init))
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

    /// Checks `value` for `field` and appends it as the field's payload.
    /// `value` has passed the top-level check (``Value/fits(_:optional:)``).
    /// `stored` is what the field held before, for the embedded objects
    /// whose kept fields a replaced record carries over.
    static func appendField(
        _ writer: inout ByteWriter, _ field: ObjectTable.Field, _ value: Value, owner: String, path: String,
        replacing stored: Stored? = nil
    ) throws {
        writer.appendVarint(UInt64(field.id.rawValue))
        try appendValue(&writer, field, value, owner: owner, path: path, replacing: stored)
    }

    /// Appends a kept field's value for a record or embedded object that
    /// has no stored one to carry over: the empty value of its type, so
    /// that the app versions that declare it read it.
    static func appendEmpty(_ writer: inout ByteWriter, _ kept: ObjectTable.KeptField) {
        guard case .object = kept.emptyValue else {
            RecordCodec.appendField(&writer, id: kept.id, value: kept.emptyValue)
            return
        }
        // An embedded object with no fields reads as one of defaults.
        writer.appendVarint(UInt64(kept.id.rawValue))
        RecordCodec.appendObject(&writer, fieldCount: 0) { _ in }
    }

    private static func appendValue(
        _ writer: inout ByteWriter, _ field: ObjectTable.Field, _ value: Value, owner: String, path: String,
        replacing stored: Stored?
    ) throws {
        switch (field.type, value) {
        case (_, .null):
            writer.append(RecordCodec.Tag.null.rawValue)
        case (.link, .link(let key)):
            try checkLinkKey(key, field, owner: owner, path: path)
            RecordCodec.appendTagged(&writer, value)
        case (.list, .list(let elements)):
            let element = field.elementType ?? .int
            let previous =
                element == .embedded && field.embedded?.keepsStoredFields == true
                ? storedElements(field, elements, stored) : []
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
                            &body, field, properties, owner: "\(owner).\(field.name)[\(offset)]", path: path,
                            replacing: offset < previous.count ? previous[offset] : nil)
                    default:
                        RecordCodec.appendTagged(&body, item)
                    }
                }
            }
        case (.embedded, .object(let properties)):
            try appendObject(
                &writer, field, properties, owner: "\(owner).\(field.name)", path: path,
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
        _ writer: inout ByteWriter, _ field: ObjectTable.Field, _ properties: [String: Value], owner: String,
        path: String, replacing stored: Stored? = nil
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
        let storedFields = layout.keepsStoredFields ? stored.map(fields(of:)) ?? [:] : [:]
        let keptCount = stored == nil ? layout.kept.count : layout.kept.count(where: { storedFields[$0.id] != nil })
        try RecordCodec.appendObject(&writer, fieldCount: layout.fields.count + keptCount) { body in
            var nextKept = 0
            func appendKept(before id: PropertyID?) {
                while nextKept < layout.kept.count, id.map({ layout.kept[nextKept].id < $0 }) ?? true {
                    let kept = layout.kept[nextKept]
                    nextKept += 1
                    guard stored != nil else {
                        appendEmpty(&body, kept)
                        continue
                    }
                    // Copied byte for byte: this app cannot read the value, only keep it.
                    if let bytes = storedFields[kept.id] {
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
                    try appendField(
                        &body, inner, value, owner: owner, path: path, replacing: storedFields[inner.id]?.value)
                } else {
                    RecordCodec.appendField(&body, id: inner.id, value: value)
                }
            }
            appendKept(before: nil)
        }
    }

    /// The fields of the stored embedded object `object` (at its tag), by
    /// id: each field's bytes (id, tag and payload) and where its value is.
    private static func fields(of object: Stored) -> [PropertyID: (field: Slice<UnsafeRawBufferPointer>, value: Stored)]
    {
        let base = object.base
        var p = object.offset + 1
        guard let length = RecordView.readVarint(base, &p, object.end), length <= UInt64(object.end - p) else {
            return [:]
        }
        let contentEnd = p + Int(length)
        guard let count = RecordView.readVarint(base, &p, contentEnd) else { return [:] }
        let all = UnsafeRawBufferPointer(start: base, count: contentEnd)
        var fields: [PropertyID: (field: Slice<UnsafeRawBufferPointer>, value: Stored)] = [:]
        for _ in 0 ..< count {
            let start = p
            guard let id = RecordView.readVarint(base, &p, contentEnd), p < contentEnd else { return fields }
            let valueStart = p
            guard RecordView.skipValue(base, &p, contentEnd) else { return fields }
            fields[PropertyID(UInt32(truncatingIfNeeded: id))] = (
                all[start ..< p], Stored(base: base, offset: valueStart, end: contentEnd)
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
    private static func storedElements(_ field: ObjectTable.Field, _ elements: [Value], _ stored: Stored?) -> [Stored?]
    {
        guard let stored, stored.tag == RecordCodec.Tag.list.rawValue, let layout = field.embedded else { return [] }
        let base = stored.base
        var p = stored.offset + 1
        guard let length = RecordView.readVarint(base, &p, stored.end), length <= UInt64(stored.end - p) else {
            return []
        }
        let contentEnd = p + Int(length)
        guard let count = RecordView.readVarint(base, &p, contentEnd) else { return [] }
        var old: [(stored: Stored, value: Value?)] = []
        for _ in 0 ..< count {
            guard p < contentEnd else { break }
            let element = Stored(base: base, offset: p, end: contentEnd)
            var at = p
            let value = readObject(layout, base, &at, contentEnd)
            guard RecordView.skipValue(base, &p, contentEnd) else { break }
            old.append((element, value))
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
    private static func sharedValues(_ a: Value?, _ b: Value) -> Int {
        guard case .object(let first)? = a, case .object(let second) = b else { return 0 }
        return first.count(where: { second[$0.key] == $0.value })
    }

    /// An embedded object given for a layout, as reading it back after it
    /// is written would return it: every declared property, given or
    /// defaulted, nested objects likewise.
    private static func normalized(_ value: Value, _ layout: EmbeddedLayout?) -> Value {
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
