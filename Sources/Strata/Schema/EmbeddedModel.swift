import Foundation

/// A type whose values can be the elements of a list property: the
/// primitive types (`Bool`, `Int`, `Int64`, `Double`, `String`, `Data`,
/// `Date`, `UUID`, `Decimal`), a ``Link`` and an ``EmbeddedModel``. An array of any
/// of them is a ``PropertyType/list`` property.
public protocol ListElement: PropertyValue {
    /// The stored list property named `name` whose elements are of this
    /// type.
    static func listProperty(named name: String) -> Property
}

extension ListElement {
    /// A list of ``PropertyValue/propertyType`` values.
    public static func listProperty(named name: String) -> Property {
        .list(name, of: propertyType)
    }
}

extension Bool: ListElement {}
extension Int: ListElement {}
extension Int64: ListElement {}
extension Double: ListElement {}
extension String: ListElement {}
extension Data: ListElement {}
extension Date: ListElement {}
extension UUID: ListElement {}
extension Decimal: ListElement {}

extension Array: PropertyValue where Element: ListElement {
    /// ``PropertyType/list``.
    public static var propertyType: PropertyType { .list }
    /// ``Value/list(_:)`` of the elements' values.
    public var propertyValue: Value { .list(map(\.propertyValue)) }
    /// The elements of a ``Value/list(_:)``; nil when it is not a list or
    /// an element does not fit `Element`.
    public init?(propertyValue value: Value) {
        guard case .list(let elements) = value else { return nil }
        var result: [Element] = []
        result.reserveCapacity(elements.count)
        for element in elements {
            guard let typed = Element(propertyValue: element) else { return nil }
            result.append(typed)
        }
        self = result
    }
    /// The element type's list property.
    public static func storedProperty(named name: String) -> Property { Element.listProperty(named: name) }
    /// The element type's.
    public static var embeddedType: (any EmbeddedModel.Type)? { Element.embeddedType }
}

/// A struct stored inside the record of the object that holds it: owned by
/// exactly one parent, without a primary key, deleted with its parent.
/// Declare it with the `@Embedded` macro, which writes this conformance:
///
/// ```swift
/// @Embedded struct Address {
///     var street: String
///     var city: String = "Leeds"
/// }
///
/// @Model struct Person {
///     @PrimaryKey var id: Int
///     var home: Address          // required: always has an address
///     var work: Address?         // optional
///     var past: [Address]        // a list of embedded objects
/// }
/// ```
///
/// An embedded type may embed others (not itself, directly or through
/// others), and may hold lists of primitive values; it holds no links.
/// Adding a property to it later is as cheap as adding one to a model:
/// objects stored before read the property's default.
public protocol EmbeddedModel: ListElement, SendableMetatype {
    /// The stored type name, the same as ``ModelSchema/name`` of
    /// ``schema``: what the properties that hold this type name, read
    /// without making ``schema``. The `@Embedded` macro writes it.
    static var storedTypeName: String { get }

    /// The stored type name and properties, with
    /// ``ObjectSchema/isEmbedded`` set.
    static var schema: ModelSchema<Self> { get }
}

extension EmbeddedModel {
    /// ``ModelSchema/name`` of ``schema``.
    public static var storedTypeName: String { schema.name }
    /// ``PropertyType/embedded``.
    public static var propertyType: PropertyType { .embedded }
    /// A required embedded object of this type (its optional is optional).
    public static func storedProperty(named name: String) -> Property {
        .embedded(name, storedTypeName, optional: false)
    }
    /// A list of embedded objects of this type.
    public static func listProperty(named name: String) -> Property { .list(name, embedded: storedTypeName) }
    /// Itself.
    public static var embeddedType: (any EmbeddedModel.Type)? { Self.self }
}

/// The stored properties of one embedded object, read by position of the
/// embedded model's schema: what the `init?(propertyValue:)` that
/// `@Embedded` writes reads from.
public struct EmbeddedFields {
    private let fields: [String: Value]
    private let properties: [Property]

    /// The properties of `value`, an embedded object of `E`; nil when
    /// `value` is not an object.
    public init?<E: EmbeddedModel>(_ value: Value, of type: E.Type) {
        guard case .object(let fields) = value else { return nil }
        self.fields = fields
        self.properties = E.schema.objectSchema.properties
    }

    /// The value of the property at `position` as `V`: the stored one, or
    /// the property's default when the object has none (it was stored
    /// before the property was added); nil when it does not fit `V`.
    public func decode<V: PropertyValue>(_ type: V.Type, at position: Int) -> V? {
        let property = properties[position]
        return V(propertyValue: fields[property.name] ?? property.valueWhenAbsent)
    }

    /// The value of the property at `position`, of the type of the
    /// property `keyPath` names: as ``decode(_:at:)``, for a type that
    /// would have to be spelled out otherwise.
    public func decode<Root, V: PropertyValue>(_ keyPath: KeyPath<Root, V>, at position: Int) -> V? {
        decode(V.self, at: position)
    }
}

extension ModelSchema {
    /// Every embedded type this schema's properties reach, directly or
    /// through other embedded types, once each, nearest first, with the
    /// original names its properties declare (`@Renamed(from:)`). A type
    /// that embeds itself is listed once; validation then reports the
    /// cycle.
    var reachableEmbeddedSchemas: [(schema: ObjectSchema, originalNames: [String?])] {
        func describe<E: EmbeddedModel>(_ type: E.Type) -> (ObjectSchema, [String?], [any EmbeddedModel.Type]) {
            (E.schema.objectSchema, E.schema.originalNames, E.schema.embeddedTypes)
        }
        var seen = Set<ObjectIdentifier>()
        var queue = embeddedTypes
        var result: [(schema: ObjectSchema, originalNames: [String?])] = []
        while !queue.isEmpty {
            let type = queue.removeFirst()
            guard seen.insert(ObjectIdentifier(type)).inserted else { continue }
            let (schema, originalNames, nested) = describe(type)
            result.append((schema, originalNames))
            queue += nested
        }
        return result
    }
}

extension [ObjectSchema] {
    /// The schemas without repeats of one that is identical (an embedded
    /// type that several models hold); differing schemas of one name stay,
    /// for validation to report.
    var withoutRepeats: [ObjectSchema] {
        var result: [ObjectSchema] = []
        for schema in self where !result.contains(schema) { result.append(schema) }
        return result
    }
}
