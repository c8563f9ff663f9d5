import Foundation

/// A property value: one of the types a ``PropertyType`` describes, or null.
///
/// Relationships have values of their own: a link is ``link(_:)`` with the
/// target's primary key (or automatic id), a list is ``list(_:)``, and an
/// embedded object is ``object(_:)``, its properties by name:
///
/// ```swift
/// try tx.insert("Dog", ["id": 7, "name": "Rex", "owner": .link(1),
///                       "tags": ["good", "loud"],
///                       "address": ["street": "1 Main St", "city": "Leeds"]])
/// ```
///
/// Values are written with literals where Swift allows it:
///
/// ```swift
/// let values: [String: Value] = ["id": 1, "name": "Ada", "score": 9.5, "email": nil]
/// ```
///
/// or from Swift values with ``init(_:)``, which spares `.int(Int64(i))`
/// and gives the type checker the dictionary's type inside closures:
///
/// ```swift
/// let people = (1...100).map { i in ["id": Value(i), "name": Value("Person \(i)")] }
/// ```
///
/// Read them back through the typed accessors, which return `nil` when the
/// value holds another type: `object["age"].int`.
public enum Value: Hashable, Sendable {
    /// No value; only optional properties hold it.
    case null
    /// A boolean.
    case bool(Bool)
    /// A 64-bit signed integer.
    case int(Int64)
    /// A 64-bit floating-point number, NaN and infinities included.
    case double(Double)
    /// A string of Unicode text.
    case string(String)
    /// Raw bytes.
    case data(Data)
    /// A point in time, stored with `Date`'s full precision.
    case date(Date)
    /// A universally unique identifier.
    case uuid(UUID)
    /// A base-10 number, stored exactly. Keys, indexes and every equality
    /// test compare decimals by number, so 1.0 and 1.00 are one key.
    case decimal(Decimal)
    /// A link to one object of the property's target type, by that object's
    /// primary key (or automatic id): `.link(1)`, `.link("ada")`. Writing a
    /// bare key to a link property means the same.
    ///
    /// The only case that holds a `Value` directly, so the only one
    /// stored in a box of its own: every other value lives inline, and
    /// handing one over allocates nothing.
    indirect case link(Value)
    /// An ordered list: of values of one primitive type, of links, or of
    /// embedded objects.
    case list([Value])
    /// An embedded object: its properties by name. Properties left out take
    /// their defaults when it is written.
    case object([String: Value])

    /// Whether this is ``null``.
    public var isNull: Bool { if case .null = self { true } else { false } }
    /// The boolean, or nil for another type.
    public var bool: Bool? { if case .bool(let v) = self { v } else { nil } }
    /// The integer, or nil for another type.
    public var int: Int64? { if case .int(let v) = self { v } else { nil } }
    /// The number, or nil for another type. An integer value is converted.
    public var double: Double? {
        switch self {
        case .double(let v): v
        case .int(let v): Double(v)
        default: nil
        }
    }
    /// The string, or nil for another type.
    public var string: String? { if case .string(let v) = self { v } else { nil } }
    /// The bytes, or nil for another type.
    public var data: Data? { if case .data(let v) = self { v } else { nil } }
    /// The date, or nil for another type.
    public var date: Date? { if case .date(let v) = self { v } else { nil } }
    /// The UUID, or nil for another type.
    public var uuid: UUID? { if case .uuid(let v) = self { v } else { nil } }
    /// The decimal, or nil for another type.
    public var decimal: Decimal? { if case .decimal(let v) = self { v } else { nil } }
    /// The primary key (or automatic id) a link points to, or nil for
    /// another type.
    public var linkKey: Value? { if case .link(let v) = self { v } else { nil } }
    /// The elements of a list, or nil for another type.
    public var list: [Value]? { if case .list(let v) = self { v } else { nil } }
    /// The properties of an embedded object, or nil for another type.
    public var object: [String: Value]? { if case .object(let v) = self { v } else { nil } }

    /// The property `name` of an embedded object; null when this is not an
    /// object or the object has no such property.
    public subscript(name: String) -> Value {
        if case .object(let v) = self { return v[name] ?? .null }
        return .null
    }

    /// The ``PropertyType`` this value has, or nil for ``null``.
    public var propertyType: PropertyType? {
        switch self {
        case .null: nil
        case .link: .link
        case .list: .list
        case .object: .embedded
        default: StoredKind(of: self)?.propertyType
        }
    }
}

extension Value: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// Creates ``null``.
    public init(nilLiteral: ()) { self = .null }
    /// Creates a ``bool(_:)`` value.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// Creates an ``int(_:)`` value.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// Creates a ``double(_:)`` value.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// Creates a ``string(_:)`` value.
    public init(stringLiteral value: String) { self = .string(value) }
    /// Creates a ``list(_:)`` value.
    public init(arrayLiteral elements: Value...) { self = .list(elements) }
    /// Creates an ``object(_:)`` value: an embedded object's properties.
    public init(dictionaryLiteral elements: (String, Value)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension Value: CustomStringConvertible {
    /// The value as a person would read it: strings quoted, `null` for null.
    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let v): String(v)
        case .int(let v): String(v)
        case .double(let v): String(v)
        case .string(let v): "\"\(v)\""
        case .data(let v): "<\(v.count) bytes>"
        case .date(let v): v.formatted(.iso8601)
        case .uuid(let v): v.uuidString
        case .decimal(let v): v.description
        case .link(let key): "link(\(key))"
        case .list(let elements): "[" + elements.map(\.description).joined(separator: ", ") + "]"
        case .object(let properties):
            "{" + properties.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        }
    }
}

extension Value: Codable {
    private enum CodingKeys: String, CodingKey {
        case null, bool, int, double, string, data, date, uuid, decimal, link, list, object
    }

    /// Decodes the one-key JSON form written by ``encode(to:)``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "A value is an object with exactly one key naming its type."))
        }
        switch key {
        case .null: self = .null
        case .bool: self = .bool(try container.decode(Bool.self, forKey: key))
        case .int: self = .int(try container.decode(Int64.self, forKey: key))
        case .double: self = .double(Double(bitPattern: try container.decode(UInt64.self, forKey: key)))
        case .string: self = .string(try container.decode(String.self, forKey: key))
        case .data: self = .data(try container.decode(Data.self, forKey: key))
        case .date:
            self = .date(
                Date(timeIntervalSinceReferenceDate: Double(bitPattern: try container.decode(UInt64.self, forKey: key)))
            )
        case .uuid: self = .uuid(try container.decode(UUID.self, forKey: key))
        case .decimal:
            let text = try container.decode(String.self, forKey: key)
            guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), !decimal.isNaN
            else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container, debugDescription: "'\(text)' is not a decimal number.")
            }
            self = .decimal(decimal)
        case .link: self = .link(try container.decode(Value.self, forKey: key))
        case .list: self = .list(try container.decode([Value].self, forKey: key))
        case .object: self = .object(try container.decode([String: Value].self, forKey: key))
        }
    }

    /// Encodes the value as a JSON object with one key naming its type.
    /// Doubles and dates are stored as their bit patterns, so that NaN,
    /// infinities and every fraction of a second survive exactly; a
    /// decimal as the string of its exact digits.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .null: try container.encodeNil(forKey: .null)
        case .bool(let v): try container.encode(v, forKey: .bool)
        case .int(let v): try container.encode(v, forKey: .int)
        case .double(let v): try container.encode(v.bitPattern, forKey: .double)
        case .string(let v): try container.encode(v, forKey: .string)
        case .data(let v): try container.encode(v, forKey: .data)
        case .date(let v): try container.encode(v.timeIntervalSinceReferenceDate.bitPattern, forKey: .date)
        case .uuid(let v): try container.encode(v, forKey: .uuid)
        case .decimal(let v): try container.encode(v.description, forKey: .decimal)
        case .link(let v): try container.encode(v, forKey: .link)
        case .list(let v): try container.encode(v, forKey: .list)
        case .object(let v): try container.encode(v, forKey: .object)
        }
    }
}

extension Value {
    /// Whether two values are stored as the same key, which is how keys
    /// and indexes compare them: strings by their exact UTF-8 bytes (so a
    /// precomposed "é" and "e" followed by a combining accent differ, unlike
    /// with `==`), doubles and dates with -0.0 equal to 0.0 and every NaN
    /// equal to NaN, decimals by number (1.0 and 1.00). Every equality test Strata makes uses this, so a lookup
    /// gives the same answer with and without an index.
    public func isStored(identicallyTo other: Value) -> Bool {
        if let identical = StoredKind.identical(self, other) { return identical }
        switch (self, other) {
        case (.link(let a), .link(let b)):
            return a.isStored(identicallyTo: b)
        case (.list(let a), .list(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isStored(identicallyTo: $1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count
                && a.allSatisfy { name, value in b[name].map { value.isStored(identicallyTo: $0) } ?? false }
        default:
            return self == other
        }
    }
}
