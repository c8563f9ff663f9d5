import Foundation

/// The type of a property's values.
///
/// Every primitive type can be required or optional (see
/// ``Property/isOptional``). The relationship types take the rest of their
/// description from the ``Property``: a ``link`` names its target type
/// (``Property/target``) and is always optional; a ``list`` names its
/// element type (``Property/elementType``); an ``embedded`` object names
/// its embedded type.
public enum PropertyType: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// `true` or `false`.
    case bool
    /// A 64-bit signed integer (`Int64`).
    case int
    /// A 64-bit floating-point number (`Double`).
    case double
    /// Unicode text (`String`).
    case string
    /// Raw bytes (`Data`).
    case data
    /// A point in time (`Date`).
    case date
    /// A universally unique identifier (`UUID`).
    case uuid
    /// A base-10 number (`Decimal`): up to 38 digits and an exponent from
    /// -128 to 127, stored exactly. NaN cannot be stored.
    case decimal
    /// A to-one link to an object of a top-level type, stored as the
    /// target's primary key (or automatic id).
    case link
    /// An ordered list of primitive values, of links, or of embedded objects.
    case list
    /// An object of an embedded type, stored inside its parent's record.
    case embedded

    /// The types whose values stand on their own, `bool` through `decimal`:
    /// every type but the relationship types. Each has one entry in the table of stored kinds.
    public static let primitives: [PropertyType] = StoredKind.allCases.map(\.propertyType)

    /// Whether a property of this type can be an object type's primary key.
    public var canBePrimaryKey: Bool { StoredKind(self)?.canBePrimaryKey ?? false }

    /// Whether a property of this type can be indexed.
    public var canBeIndexed: Bool { StoredKind(self)?.canBeIndexed ?? false }

    /// Whether this is one of the relationship types (``link``, ``list``,
    /// ``embedded``), whose values are read and written through their
    /// property's description rather than on their own.
    @inline(__always)
    public var isComposite: Bool { self == .link || self == .list || self == .embedded }

    /// Whether a list may hold elements of this type: every primitive type,
    /// links and embedded objects, but not lists.
    public var canBeListElement: Bool { self != .list }

    /// The value a required property of this type reads as when a record has
    /// no value for it and the schema gives no default: `false`, `0`, `0.0`,
    /// `""`, empty data, the reference date (2001-01-01), the all-zero UUID
    /// or a decimal zero; for a link, null (no target); for a list, the
    /// empty list; for an embedded object, an object whose every property
    /// has its default.
    public var emptyValue: Value {
        switch self {
        case .link: .null
        case .list: .list([])
        case .embedded: .object([:])
        default: StoredKind(self)!.emptyValue
        }
    }

    /// The names of `types` in a sentence: "int, string or uuid".
    static func sentence(_ types: [PropertyType], _ conjunction: String) -> String {
        let names = types.map(\.rawValue)
        guard names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " \(conjunction) " + names.last!
    }

    /// The type's name as written in schemas, e.g. `int`.
    public var description: String { rawValue }
}
