import Foundation
import Strata

/// How `strata dump` writes values: as plain JSON, and as table cells.
extension Value {
    /// The value as a plain JSON value: a string, number, boolean or null;
    /// data as base64, a date as ISO-8601 in UTC with milliseconds, a UUID as
    /// its string, and a NaN or infinite double as "NaN", "Infinity" or
    /// "-Infinity"; a link as `{"link": key}`, a list as an array and an
    /// embedded object as a nested object.
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
        case .link(let key): "{\"link\":\(key.json)}"
        case .list(let elements): "[" + elements.map(\.json).joined(separator: ",") + "]"
        case .object(let properties):
            "{"
                + properties.sorted { $0.key < $1.key }.map { "\($0.key.jsonQuoted):\($0.value.json)" }
                .joined(separator: ",") + "}"
        }
    }

    /// The value in a table cell: as in JSON, on one line.
    var cell: String {
        switch self {
        case .data(let v): "<\(v.count) bytes>"
        default: json
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
