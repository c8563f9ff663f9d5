import Foundation
import Strata

/// How `strata dump` writes values: as plain JSON, and as table cells.
extension Value {
    /// The value as a plain JSON value: a string, number, boolean or null;
    /// data as base64, a date as ISO-8601 in UTC with milliseconds, a UUID as
    /// its string, and a NaN or infinite double as "NaN", "Infinity" or
    /// "-Infinity"; a link as `{"link":{"key":...}}`, a list as an array and
    /// an embedded object as a nested object with its properties in name
    /// order. ``json(as:in:)`` knows the property: it names a link's target
    /// type and writes an embedded object's properties in schema order.
    var json: String {
        switch self {
        case .null: "null"
        case .bool(let v): v ? "true" : "false"
        case .int(let v): String(v)
        case .double(let v) where v.isNaN: "\"NaN\""
        case .double(let v) where v.isInfinite: v < 0 ? "\"-Infinity\"" : "\"Infinity\""
        // Swift prints the shortest text that reads back as the same double.
        case .double(let v): String(v)
        case .string(let v): v.jsonQuoted
        case .data(let v): v.base64EncodedString().jsonQuoted
        case .date(let v): Value.isoDate.format(v).jsonQuoted
        case .uuid(let v): v.uuidString.jsonQuoted
        case .link(let key): Value.linkJSON(key, to: nil)
        case .list(let elements): "[" + elements.map(\.json).joined(separator: ",") + "]"
        case .object(let properties):
            "{"
                + properties.sorted { $0.key < $1.key }.map { "\($0.key.jsonQuoted):\($0.value.json)" }
                .joined(separator: ",") + "}"
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
        switch self {
        case .data(let v): "<\(v.count) bytes>"
        default: json(as: property, in: schema)
        }
    }

    private static let isoDate = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}

extension String {
    /// The string as a JSON string literal.
    var jsonQuoted: String {
        var text = "\""
        for scalar in unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\u{2028}" || scalar == "\u{2029}":
                text += String(format: "\\u%04x", scalar.value)
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text + "\""
    }
}
