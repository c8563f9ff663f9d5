extension ModelBinding {
    /// The first raw value in `stored`, a stored value that a property of
    /// type `type` cannot read, that an enum without an
    /// ``PersistableEnum/unknownCase`` does not know: in the property
    /// itself, an element of its list, or a property of an embedded object
    /// it holds, at any depth; with the enum. Nil when the value does not
    /// fit for another reason.
    static func unknownRawValue(in stored: Value, as type: Any.Type) -> (Value, any PersistableEnum.Type)? {
        if let enumType = carriedEnum(type) {
            return enumType.unknownRawValue(in: stored).map { ($0, enumType) }
        }
        guard let embedded = (type as? any PropertyValue.Type)?.embeddedType else { return nil }
        return unknownRawValue(in: stored, embedded: embedded, depth: 0)
    }

    private static func unknownRawValue<E: EmbeddedModel>(in stored: Value, embedded: E.Type, depth: Int)
        -> (Value, any PersistableEnum.Type)?
    {
        switch stored {
        case .list(let elements):
            return elements.lazy.compactMap { unknownRawValue(in: $0, embedded: E.self, depth: depth) }.first
        case .object(let fields):
            let schema = E.schema
            for (position, property) in schema.objectSchema.properties.enumerated() {
                guard let value = fields[property.name] else { continue }
                if let enumType = schema.enumTypes[position], let raw = enumType.unknownRawValue(in: value) {
                    return (raw, enumType)
                }
                // An embedding cycle is refused when the database opens.
                if let nested = schema.embeddedTypesByPosition[position], depth < 16,
                    let found = unknownRawValue(in: value, embedded: nested, depth: depth + 1)
                {
                    return found
                }
            }
            return nil
        default:
            return nil
        }
    }
}

extension ModelBinding {
    /// What an older app's write of a property holding `type` (an enum
    /// with an ``PersistableEnum/unknownCase`` or an embedded type that
    /// reaches one; itself, optional or in a list) stores, given the value
    /// `stored` in the file and the value `written` by the app: `written`,
    /// except where the app wrote back what it read of a raw value its enum
    /// does not know. There the stored raw value stays.
    ///
    /// The rule holds per field, at every depth:
    ///
    /// - An enum keeps its stored raw value when the app wrote the case it
    ///   read it as.
    /// - An embedded object (optional or not) is merged field by field:
    ///   changing its `label` keeps the newer case in its `state`.
    /// - A list is aligned with what the app read of it by a difference
    ///   of the two (elements equal as read are the same element): each
    ///   element the app left in place keeps its stored value, merged field
    ///   by field for embedded objects; a run of elements replaced by as
    ///   many others is taken as edits of those elements, position by
    ///   position, and merged the same way; an inserted element is written
    ///   as given and a removed one is gone.
    static func keeping(stored: Value, written: Value, as type: any PropertyValue.Type, depth: Int = 0) -> Value {
        if stored == written { return written }
        switch (stored, written) {
        case (.list(let storedElements), .list(let writtenElements)):
            return .list(keeping(stored: storedElements, written: writtenElements, as: type, depth: depth))
        case (.object(let storedFields), .object(let writtenFields)):
            guard let embedded = type as? any EmbeddedModel.Type else { return written }
            return .object(keeping(stored: storedFields, written: writtenFields, as: embedded, depth: depth))
        default:
            return type.writtenBack(stored) == written ? stored : written
        }
    }

    /// ``keeping(stored:written:as:depth:)`` for the declared fields of an
    /// embedded object of type `E`.
    private static func keeping<E: EmbeddedModel>(
        stored: [String: Value], written: [String: Value], as embedded: E.Type, depth: Int
    ) -> [String: Value] {
        // An embedding cycle is refused when the database opens.
        guard depth < 16 else { return written }
        let schema = E.schema
        var result = written
        for (position, property) in schema.objectSchema.properties.enumerated() {
            guard let storedValue = stored[property.name], let writtenValue = written[property.name] else { continue }
            let type: (any PropertyValue.Type)?
            if let enumType = schema.enumTypes[position], enumType.hasUnknownCase {
                type = enumType
            } else {
                type = schema.embeddedTypesByPosition[position]
            }
            guard let type else { continue }
            result[property.name] = keeping(stored: storedValue, written: writtenValue, as: type, depth: depth + 1)
        }
        return result
    }

    /// ``keeping(stored:written:as:depth:)`` for the elements of a list.
    private static func keeping(
        stored: [Value], written: [Value], as type: any PropertyValue.Type, depth: Int
    ) -> [Value] {
        let read = stored.map { type.writtenBack($0) ?? $0 }
        var removed = Set<Int>()
        var inserted = Set<Int>()
        for change in written.difference(from: read) {
            switch change {
            case .remove(let offset, _, _): removed.insert(offset)
            case .insert(let offset, _, _): inserted.insert(offset)
            }
        }
        var result = written
        var old = 0
        var new = 0
        while old < stored.count || new < written.count {
            let removedStart = old
            while old < stored.count, removed.contains(old) { old += 1 }
            let insertedStart = new
            while new < written.count, inserted.contains(new) { new += 1 }
            // A run replaced by as many elements: edits in place.
            if old - removedStart == new - insertedStart {
                for offset in 0 ..< old - removedStart {
                    result[insertedStart + offset] = keeping(
                        stored: stored[removedStart + offset], written: written[insertedStart + offset], as: type,
                        depth: depth)
                }
            }
            guard old < stored.count, new < written.count else { break }
            result[new] = keeping(stored: stored[old], written: written[new], as: type, depth: depth)
            old += 1
            new += 1
        }
        return result
    }
}
