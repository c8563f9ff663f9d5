/// A stable id the catalog hands out from a counter that only grows, so
/// that it is never reused. `Kind` tells type ids from property ids: a
/// type of its own each, not a bare `UInt32`, so that one cannot be passed
/// where the other is meant. Stored in the catalog's JSON as a plain number.
struct CatalogID<Kind>: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    let rawValue: UInt32

    init(rawValue: UInt32) { self.rawValue = rawValue }
    init(_ rawValue: UInt32) { self.rawValue = rawValue }

    static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    /// The next id a counter hands out.
    var successor: Self { Self(rawValue + 1) }

    var description: String { "\(rawValue)" }
}

/// What a ``TypeID`` identifies.
enum ObjectTypeIdentity {}
/// What a ``PropertyID`` identifies.
enum PropertyIdentity {}

/// The stable id of an object type: named in the catalog, in the names of
/// the type's LMDB databases and in its sequence key.
typealias TypeID = CatalogID<ObjectTypeIdentity>

/// The stable id of a property: the tag of its field in every record, and
/// part of the name of its index database. A property whose value type
/// changes gets a new one.
typealias PropertyID = CatalogID<PropertyIdentity>
