/// One property of an object type: a name, a type, and how it behaves.
///
/// ```swift
/// Property("id", .int)
/// Property("age", .int, default: 0, indexed: true)
/// Property("email", .string, optional: true)
/// ```
///
/// Relationships have factories of their own:
///
/// ```swift
/// Property.link("owner", to: "Person", onDelete: .cascade)
/// Property.list("tags", of: .string)
/// Property.list("friends", linksTo: "Person")
/// Property.embedded("address", "Address")
/// Property.list("addresses", embedded: "Address")
/// ```
public struct Property: Hashable, Sendable, Codable {
    /// The property's name, unique within its object type.
    public var name: String
    /// The type of the property's values.
    public var type: PropertyType
    /// Whether the property may hold ``Value/null``. Default: `false`.
    public var isOptional: Bool
    /// The value used when an object is inserted without one, and the value
    /// existing objects read when the property is added later. When nil, a
    /// required property reads as its type's ``PropertyType/emptyValue`` and
    /// an optional one as null. Default: nil.
    public var defaultValue: Value?
    /// Whether an index is kept for equality lookups with
    /// `ObjectQuery.where(_:equals:)`. Default: `false`.
    public var isIndexed: Bool
    /// The object type a ``PropertyType/link`` points to, or the embedded
    /// type of an ``PropertyType/embedded`` property; for a
    /// ``PropertyType/list``, the same for its elements. Nil for the rest.
    public var target: String?
    /// The type of a list's elements; nil for a property that is not a
    /// ``PropertyType/list``.
    public var elementType: PropertyType?
    /// What deleting a link's target does to the object holding the link
    /// (a ``PropertyType/link``, or a list of links). Default:
    /// ``DeleteRule/nullify``.
    public var deleteRule: DeleteRule

    /// Creates a property.
    ///
    /// - Parameters:
    ///   - name: The property's name.
    ///   - type: The type of its values.
    ///   - optional: Whether it may hold null.
    ///   - default: The value it takes when none is given.
    ///   - indexed: Whether to keep an index on it.
    ///   - target: A link's target type, or an embedded property's type;
    ///     for a list, its elements'.
    ///   - elementType: The type of a list's elements.
    ///   - deleteRule: What deleting a link's target does to the object
    ///     holding the link.
    public init(
        _ name: String, _ type: PropertyType, optional: Bool = false, default: Value? = nil, indexed: Bool = false,
        target: String? = nil, elementType: PropertyType? = nil, deleteRule: DeleteRule = .nullify
    ) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.defaultValue = `default`
        self.isIndexed = indexed
        self.target = target
        self.elementType = elementType
        self.deleteRule = deleteRule
    }

    /// A to-one link to an object of the top-level type `target`. Links are
    /// always optional: null is "no target".
    ///
    /// - Parameters:
    ///   - name: The property's name.
    ///   - target: The type of the object linked to.
    ///   - onDelete: What deleting the target does to the object holding
    ///     the link: set the link to null (the default), delete the holder
    ///     too, or refuse the delete.
    public static func link(_ name: String, to target: String, onDelete: DeleteRule = .nullify) -> Property {
        Property(name, .link, optional: true, target: target, deleteRule: onDelete)
    }

    /// An ordered list of primitive values (``PropertyType/primitives``).
    public static func list(_ name: String, of elementType: PropertyType) -> Property {
        Property(name, .list, elementType: elementType)
    }

    /// An ordered list of links to objects of the top-level type `target`.
    /// A deleted target drops out of the list, unless `onDelete` is
    /// ``DeleteRule/deny``, which refuses to delete a listed object.
    public static func list(_ name: String, linksTo target: String, onDelete: DeleteRule = .nullify) -> Property {
        Property(name, .list, target: target, elementType: .link, deleteRule: onDelete)
    }

    /// An ordered list of objects of the embedded type `type`.
    public static func list(_ name: String, embedded type: String) -> Property {
        Property(name, .list, target: type, elementType: .embedded)
    }

    /// An object of the embedded type `type`, stored inside its parent's
    /// record. Optional by default; a required one reads, when absent, as
    /// an object whose every property has its default.
    public static func embedded(_ name: String, _ type: String, optional: Bool = true) -> Property {
        Property(name, .embedded, optional: optional, target: type)
    }

    /// The value an object reads for this property when its record has none.
    public var valueWhenAbsent: Value {
        if let defaultValue { return defaultValue }
        return isOptional ? .null : type.emptyValue
    }

    /// The JSON keys of catalogs and snapshots, spelled out so that renaming
    /// a Swift property never changes the file format.
    private enum CodingKeys: String, CodingKey {
        case name, type, isOptional, defaultValue, isIndexed, target, elementType, deleteRule
    }

    /// Decodes a property; the relationship keys are absent from files and
    /// snapshots written before relationships.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        type = try container.decode(PropertyType.self, forKey: .type)
        isOptional = try container.decode(Bool.self, forKey: .isOptional)
        defaultValue = try container.decodeIfPresent(Value.self, forKey: .defaultValue)
        isIndexed = try container.decode(Bool.self, forKey: .isIndexed)
        target = try container.decodeIfPresent(String.self, forKey: .target)
        elementType = try container.decodeIfPresent(PropertyType.self, forKey: .elementType)
        deleteRule = try container.decodeIfPresent(DeleteRule.self, forKey: .deleteRule) ?? .nullify
    }

    /// Encodes a property. A key that does not apply (a target, an element
    /// type, the default delete rule) is left out, so a schema without
    /// relationships is written exactly as before them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(type, forKey: .type)
        try container.encode(isOptional, forKey: .isOptional)
        try container.encodeIfPresent(defaultValue, forKey: .defaultValue)
        try container.encode(isIndexed, forKey: .isIndexed)
        try container.encodeIfPresent(target, forKey: .target)
        try container.encodeIfPresent(elementType, forKey: .elementType)
        if deleteRule != .nullify { try container.encode(deleteRule, forKey: .deleteRule) }
    }

    /// The type without its optionality, as written in messages: `int`,
    /// `link(Person)`, `list(string)`, `list(link(Dog))`, `embedded(Address)`.
    var shapeDescription: String {
        switch type {
        case .link, .embedded: "\(type)(\(target ?? "?"))"
        case .list:
            switch elementType {
            case .link?, .embedded?: "list(\(elementType!)(\(target ?? "?")))"
            case let element?: "list(\(element))"
            case nil: "list(?)"
            }
        default: "\(type)"
        }
    }

    /// The type as written in messages: `int`, or `int?` when optional.
    var typeDescription: String { isOptional ? "\(shapeDescription)?" : shapeDescription }

    /// Whether this property links to objects of top-level types: a link,
    /// or a list of links.
    var isLink: Bool { type == .link || (type == .list && elementType == .link) }

    /// Whether values of this property are embedded objects, or lists of them.
    var isEmbedding: Bool { type == .embedded || (type == .list && elementType == .embedded) }

    /// Whether the field may hold null: always for a link (null is "no
    /// target"), never for a list (an empty list is its empty value),
    /// else when the property is optional.
    var storesNull: Bool { type == .link || (type != .list && isOptional) }

    /// Whether `other` is the same field as this property, whatever their
    /// names, defaults, indexes and delete rules: the same shape and the
    /// same ``storesNull``. Two files agree on a field of one name when
    /// this holds (a sync descriptor spells exactly this).
    func isSameField(as other: Property) -> Bool {
        storesNull == other.storesNull && hasSameShape(as: other)
    }

    /// Whether two properties store their values in the same shape: the
    /// same type, element type and target (under `renamedTargets`, the
    /// target names a migration renamed).
    func hasSameShape(as other: Property, renamedTargets: [String: String] = [:]) -> Bool {
        guard type == other.type, elementType == other.elementType else { return false }
        guard let target else { return other.target == nil }
        return (renamedTargets[target] ?? target) == other.target
    }
}

/// What deleting an object does to the objects that link to it.
///
/// The rule belongs to the link property, as `ON DELETE` belongs to a
/// foreign key in SQL: `Property.link("owner", to: "Person", onDelete:
/// .cascade)` on `Dog` deletes a person's dogs with the person.
public enum DeleteRule: String, Sendable, Hashable, Codable, CaseIterable {
    /// The link becomes null; a list drops the deleted object.
    case nullify
    /// The object holding the link is deleted too, and its own links'
    /// rules apply in turn. Only for to-one links.
    case cascade
    /// The delete is refused with an error naming the linking objects;
    /// nothing is written.
    case deny
}

extension Value {
    /// Whether the value may be stored in a property of `type`: null when
    /// optional, else a value of the type that its kind admits (not a
    /// decimal NaN; see ``StoredKind/admits(_:)``).
    @inline(__always)
    func fits(_ type: PropertyType, optional: Bool) -> Bool {
        if case .null = self { return optional }
        return propertyType == type && StoredKind.admits(self)
    }

    /// The value converted to `type` where that loses nothing (an integer
    /// literal given for a double or decimal property, see
    /// ``StoredKind/coerce(_:to:)``; a bare key given for a link), else the
    /// value itself.
    @inline(__always)
    func coerced(to type: PropertyType) -> Value {
        if type == .link {
            return StoredKind(of: self)?.canBePrimaryKey == true ? .link(self) : self
        }
        return StoredKind.coerce(self, to: type) ?? self
    }
}
