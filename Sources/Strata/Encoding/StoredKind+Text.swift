import Foundation

/// How each stored kind's values read as text: `strata dump`'s JSON and
/// the CLI's table cells.
extension StoredKind {

    /// A primitive value as plain JSON, as `strata dump` writes it: a
    /// number, a boolean, or a string; data as base64, a date as ISO-8601
    /// in UTC with milliseconds, a UUID as its string, a NaN or infinite
    /// double as "NaN", "Infinity" or "-Infinity", a decimal as a string of
    /// its exact digits ("12.50" reads back as 12.5, its number, where a
    /// JSON number would lose digits past a double's); nil for null and
    /// the relationships.
    static func json(_ value: Value) -> String? {
        switch value {
        case .bool(let v): v ? "true" : "false"
        case .int(let v): String(v)
        case .double(let v) where v.isNaN: "\"NaN\""
        case .double(let v) where v.isInfinite: v < 0 ? "\"-Infinity\"" : "\"Infinity\""
        // Swift prints the shortest text that reads back as the same double.
        case .double(let v): String(v)
        case .string(let v): v.jsonQuoted
        case .data(let v): v.base64EncodedString().jsonQuoted
        case .date(let v): isoDate.format(v).jsonQuoted
        case .uuid(let v): v.uuidString.jsonQuoted
        case .decimal(let v): v.description.jsonQuoted
        case .null, .link, .list, .object: nil
        }
    }

    /// A primitive value in a table cell: as in JSON, on one line; data as
    /// its size.
    static func cell(_ value: Value) -> String? {
        if case .data(let v) = value { return "<\(v.count) bytes>" }
        return json(value)
    }

    private static let isoDate = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}

extension Value {
    /// The value as plain JSON when it is a primitive value (see
    /// `StoredKind.json`), for the command-line tool; nil for null and the
    /// relationships, which the tool writes itself.
    package var primitiveJSON: String? { StoredKind.json(self) }

    /// The value in a table cell when it is a primitive value; nil for null
    /// and the relationships.
    package var primitiveCell: String? { StoredKind.cell(self) }
}

extension String {
    /// The string as a JSON string literal.
    package var jsonQuoted: String {
        var quoted = "\""
        for scalar in unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\t": quoted += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || scalar == "\u{2028}" || scalar == "\u{2029}":
                quoted += String(format: "\\u%04x", scalar.value)
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }
}
