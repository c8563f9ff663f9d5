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
