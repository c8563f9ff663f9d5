/// A to-one link to an object of the model type `Target`: its primary key
/// (or automatic id), resolved in a transaction.
///
/// A link property is optional: nil is "no target", and deleting the
/// target sets it to nil (``DeleteRule/nullify``, the default), deletes the
/// holder too (``DeleteRule/cascade``) or is refused
/// (``DeleteRule/deny``), as the property's `@Relationship(deleteRule:)`
/// says. An array of links is an ordered to-many relationship; a deleted
/// target drops out of it.
///
/// ```swift
/// @Model struct Dog {
///     @PrimaryKey var name: String
///     @Relationship(deleteRule: .cascade) var owner: Link<Person>?
/// }
///
/// try db.write { tx in
///     try tx.insert(Dog(name: "Rex", owner: Link(1)))
/// }
/// let owner = try db.read { tx in try tx.object(rex.owner!) }
/// ```
///
/// A link stores only the key: reading a `Dog` never reads its owner.
/// Writing a link to an object that does not exist is an error.
public struct Link<Target: Model>: Hashable, Sendable, CustomStringConvertible {
    /// The primary key (or automatic id) of the object linked to.
    public var key: Target.Key

    /// A link to the object with primary key (or automatic id) `key`.
    public init(_ key: Target.Key) {
        self.key = key
    }

    /// A link to `object`, by its primary key.
    ///
    /// - Precondition: `Target` has a primary key property; an object of a
    ///   model without one is known only by the automatic id that `insert`
    ///   returned: link to it with ``init(_:)``.
    public init(to object: Target) {
        guard let value = Target.schema.primaryKeyValue(of: object), let key = Target.Key(propertyValue: value)
        else {
            preconditionFailure(
                "Link(to:) needs the primary key of \(Target.self), which has none; link with Link(id) to the automatic id that insert returned."
            )
        }
        self.key = key
    }

    /// `Link<Person>(1)`.
    public var description: String { "Link<\(Target.self)>(\(key))" }
}

extension Link: ListElement {
    /// ``PropertyType/link``.
    public static var propertyType: PropertyType { .link }
    /// ``Value/link(_:)`` of the key's value.
    public var propertyValue: Value { .link(key.propertyValue) }
    /// The link of a ``Value/link(_:)`` whose key fits `Target.Key`.
    public init?(propertyValue value: Value) {
        guard case .link(let key) = value, let typed = Target.Key(propertyValue: key) else { return nil }
        self.key = typed
    }
    /// A link to `Target`'s stored type (always optional).
    public static func storedProperty(named name: String) -> Property { .link(name, to: Target.storedTypeName) }
    /// A list of links to `Target`'s stored type.
    public static func listProperty(named name: String) -> Property { .list(name, linksTo: Target.storedTypeName) }
}

/// A link codes as its key alone. Foundation's `#Predicate` needs its
/// constants `Codable`: this is what lets a predicate compare a link,
/// `#Predicate<Dog> { $0.owner == ann }`.
extension Link: Codable where Target.Key: Codable {
    /// A link to the object whose key `decoder` holds as a single value.
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(Target.Key.self))
    }

    /// Encodes the target's key as a single value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(key)
    }
}
