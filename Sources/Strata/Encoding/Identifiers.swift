/// The stable id of an object type: named in the catalog, in the names of
/// the type's LMDB databases and in its sequence key. Never reused.
///
/// A type of its own, not a bare `UInt32`, so that a type id cannot be
/// passed where a property id is meant. Stored in the catalog's JSON as a
/// plain number.
struct TypeID: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    let rawValue: UInt32

    init(rawValue: UInt32) { self.rawValue = rawValue }
    init(_ rawValue: UInt32) { self.rawValue = rawValue }

    init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(UInt32.self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    static func < (a: TypeID, b: TypeID) -> Bool { a.rawValue < b.rawValue }

    /// The next id a counter hands out.
    var successor: TypeID { TypeID(rawValue + 1) }

    var description: String { "\(rawValue)" }
}

/// The stable id of a property: the tag of its field in every record, and
/// part of the name of its index database. Never reused; a property whose
/// value type changes gets a new one.
struct PropertyID: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    let rawValue: UInt32

    init(rawValue: UInt32) { self.rawValue = rawValue }
    init(_ rawValue: UInt32) { self.rawValue = rawValue }

    init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(UInt32.self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    static func < (a: PropertyID, b: PropertyID) -> Bool { a.rawValue < b.rawValue }

    /// The next id a counter hands out.
    var successor: PropertyID { PropertyID(rawValue + 1) }

    var description: String { "\(rawValue)" }
}
