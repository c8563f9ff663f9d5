import Foundation

/// What the hub knows of a device's user: a JSON object of strings,
/// numbers, booleans and arrays of them, which sync rules read as
/// parameters (`claims.sub`, `claims.projects`). A device of the hub's
/// own tokens has those `strata-hub device add --claim` gave it; a device
/// of the app's identity provider, those of its last JWT (every claim of
/// these kinds, `sub`, `iss` and the tenant claim among them; claims
/// holding objects, `null` or nested arrays are left out).
///
/// ``json`` is its canonical text (keys sorted, no spaces), which
/// PostgreSQL reads as `jsonb`: `devices.claims` holds it.
public struct DeviceClaims: Sendable, Equatable, CustomStringConvertible {
    /// One claim's value.
    public enum Value: Sendable, Equatable {
        /// A string.
        case string(String)
        /// A number (JSON's: a `Double`, whole ones written without a
        /// fraction).
        case number(Double)
        /// `true` or `false`.
        case bool(Bool)
        /// An array of strings, numbers and booleans.
        case array([Value])
    }

    /// The claims by name.
    public var values: [String: Value]

    /// Claims with `values`.
    public init(_ values: [String: Value] = [:]) { self.values = values }

    /// The claim `name`, nil when there is none.
    public subscript(name: String) -> Value? { values[name] }

    /// The canonical JSON text of the object: keys in the order of their
    /// UTF-8 bytes, no spaces, whole numbers without a fraction.
    public var json: String {
        var text = "{"
        for (index, name) in values.keys.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
            .enumerated()
        {
            if index > 0 { text += "," }
            text += Self.quoted(name) + ":" + Self.json(values[name]!)
        }
        return text + "}"
    }

    public var description: String { json }

    private static func json(_ value: Value) -> String {
        switch value {
        case .string(let string): return quoted(string)
        case .bool(let bool): return bool ? "true" : "false"
        case .number(let number):
            if number == number.rounded(), abs(number) < 9e15 { return String(Int64(number)) }
            return String(number)
        case .array(let values): return "[" + values.map(json).joined(separator: ",") + "]"
        }
    }

    private static func quoted(_ string: String) -> String {
        var text = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20: text += String(format: "\\u%04x", scalar.value)
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text + "\""
    }

    /// The claims of the JSON object `text` (as PostgreSQL returns
    /// `jsonb`, or a JWT's payload): members of other kinds are left out.
    ///
    /// - Throws: `DecodingError` when `text` is no JSON object.
    public init(json text: String) throws {
        self.init(try JSONDecoder().decode(Object.self, from: Data(text.utf8)).values)
    }

    /// A claim as `device add --claim` takes it, `name=value`: a value
    /// with a comma is an array of strings (`projects=a,b`; `projects=a,`
    /// is `["a"]`, `projects=,` is `[]`), any other a string.
    ///
    /// - Throws: ``HubError`` `invalidRequest` without a name and `=`.
    public static func parse(assignment: String) throws -> (name: String, value: Value) {
        guard let equals = assignment.firstIndex(of: "="), equals != assignment.startIndex else {
            throw HubError.invalidRequest("A claim is written name=value, not '\(assignment)'.")
        }
        let name = String(assignment[..<equals])
        let text = assignment[assignment.index(after: equals)...]
        guard text.contains(",") else { return (name, .string(String(text))) }
        var items = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        if items.last == "" { items.removeLast() }
        if items == [""] { items = [] }
        return (name, .array(items.map(Value.string)))
    }

    /// A JSON object decoded leniently: members of unsupported kinds are
    /// dropped, not refused.
    struct Object: Decodable {
        var values: [String: Value] = [:]

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            for key in container.allKeys {
                if let member = try? container.decode(Member.self, forKey: key), let value = member.value {
                    values[key.stringValue] = value
                }
            }
        }
    }

    /// One member: a scalar, an array of scalars, or nil for another kind.
    struct Member: Decodable {
        var value: Value?

        init(from decoder: any Decoder) throws {
            if var array = try? decoder.unkeyedContainer() {
                var items: [Value] = []
                while !array.isAtEnd {
                    guard let item = try? array.decode(Scalar.self) else { return }
                    items.append(item.value)
                }
                value = .array(items)
            } else if let scalar = try? Scalar(from: decoder) {
                value = scalar.value
            }
        }
    }

    struct Scalar: Decodable {
        var value: Value

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let bool = try? container.decode(Bool.self) {
                value = .bool(bool)
            } else if let number = try? container.decode(Double.self) {
                value = .number(number)
            } else {
                value = .string(try container.decode(String.self))
            }
        }
    }
}
