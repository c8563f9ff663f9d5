import Foundation
import Strata

/// How `strata dump` writes values: as plain JSON, and as table cells.
extension Value {
    /// The value as a plain JSON value: a primitive value as its kind writes
    /// it (a string, number or boolean; data as base64, a date as ISO-8601
    /// in UTC with milliseconds, a UUID as its string, a NaN or infinite
    /// double as "NaN", "Infinity" or "-Infinity", a decimal as a string of
    /// its exact digits), null as null; a link as `{"link":{"key":...}}`, a list as an array and
    /// an embedded object as a nested object with its properties in name
    /// order. ``json(as:in:)`` knows the property: it names a link's target
    /// type and writes an embedded object's properties in schema order.
    var json: String {
        if let primitive = primitiveJSON { return primitive }
        switch self {
        case .link(let key): return Value.linkJSON(key, to: nil)
        case .list(let elements): return "[" + elements.map(\.json).joined(separator: ",") + "]"
        case .object(let properties):
            return "{"
                + properties.sorted { $0.key < $1.key }.map { "\($0.key.jsonQuoted):\($0.value.json)" }
                .joined(separator: ",") + "}"
        default: return "null"
        }
    }

    /// The value of `property` as plain JSON, as ``json`` writes it, except
    /// that a link, alone or in a list, names its target type,
    /// `{"link":{"type":"Person","key":1}}`, and an embedded object, alone
    /// or in a list, lists its properties in the order of its type in
    /// `schema` (properties the type no longer has follow, by name).
    func json(as property: Property, in schema: Schema) -> String {
        switch self {
        case .link(let key):
            return Value.linkJSON(key, to: property.target)
        case .list(let elements):
            // The elements, each read as a property of the element type.
            let element = Property(property.name, property.elementType ?? .int, target: property.target)
            return "[" + elements.map { $0.json(as: element, in: schema) }.joined(separator: ",") + "]"
        case .object(let values):
            let known = property.target.flatMap { schema[$0] }?.properties ?? []
            let fields =
                known.compactMap { inner in
                    values[inner.name].map { "\(inner.name.jsonQuoted):\($0.json(as: inner, in: schema))" }
                }
                + values.filter { name, _ in !known.contains { $0.name == name } }.sorted { $0.key < $1.key }.map {
                    "\($0.key.jsonQuoted):\($0.value.json)"
                }
            return "{" + fields.joined(separator: ",") + "}"
        default:
            return json
        }
    }

    private static func linkJSON(_ key: Value, to target: String?) -> String {
        "{\"link\":{" + (target.map { "\"type\":\($0.jsonQuoted)," } ?? "") + "\"key\":\(key.json)}}"
    }

    /// The value in a table cell: as in JSON, on one line; data as its size.
    func cell(as property: Property, in schema: Schema) -> String {
        primitiveCell ?? json(as: property, in: schema)
    }
}
