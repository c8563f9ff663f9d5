import Foundation

/// The type of a property's values.
///
/// Every type can be required or optional (see ``Property/isOptional``).
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

    /// Whether a property of this type can be an object type's primary key.
    public var canBePrimaryKey: Bool { self == .int || self == .string || self == .uuid }

    /// Whether a property of this type can be indexed.
    public var canBeIndexed: Bool { self != .double && self != .data }

    /// The value a required property of this type reads as when a record has
    /// no value for it and the schema gives no default: `false`, `0`, `0.0`,
    /// `""`, empty data, the reference date (2001-01-01) or the all-zero UUID.
    public var emptyValue: Value {
        switch self {
        case .bool: .bool(false)
        case .int: .int(0)
        case .double: .double(0)
        case .string: .string("")
        case .data: .data(Data())
        case .date: .date(Date(timeIntervalSinceReferenceDate: 0))
        case .uuid: .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        }
    }

    /// The type's name as written in schemas, e.g. `int`.
    public var description: String { rawValue }
}
