import Foundation

/// A Swift type whose values are stored as objects: usually a struct
/// declared with the `@Model` macro, which writes this conformance.
///
/// A conformance has three parts: the static ``schema`` (the stored type
/// name and the stored properties, in order), ``encode(to:)``, which hands
/// the stored properties to the encoder in that order, and
/// ``init(from:)``, which reads them back in the same order. Properties are
/// matched by position, never by name: writing a model costs no dictionary
/// and no string hashing.
///
/// Written by hand, it looks like this:
///
/// ```swift
/// struct Person: Model {
///     typealias Key = Int
///     var id: Int
///     var name: String
///     var age: Int = 0
///
///     static let schema = ModelSchema<Person>(name: "Person", properties: [
///         .init(\.id, "id", primaryKey: true),
///         .init(\.name, "name"),
///         .init(\.age, "age", indexed: true, default: 0),
///     ])
///
///     func encode(to encoder: inout ModelEncoder) {
///         encoder.encode(id)
///         encoder.encode(name)
///         encoder.encode(age)
///     }
///
///     init(from decoder: inout ModelDecoder) throws {
///         id = try decoder.decode(Int.self)
///         name = try decoder.decode(String.self)
///         age = try decoder.decode(Int.self)
///     }
/// }
/// ```
///
/// A property that a stored object has no value for (one added in a later
/// schema version) reads as the schema's default, else as null when it is
/// optional, else as its type's empty value.
public protocol Model: QueryElement, SendableMetatype where Observed == Self, ObservedKey == Key {
    /// The type of the primary key: the ``ModelSchema`` property declared
    /// `primaryKey: true`, or `Int64` (the automatic id) for a model
    /// without one.
    associatedtype Key: PrimaryKeyValue

    /// The stored type name, the same as ``ModelSchema/name`` of
    /// ``schema``.
    ///
    /// Links to the model read this name instead of ``schema``, so that
    /// models may link to each other in a cycle (a `Person` whose
    /// `friends` are people): a schema that named its link targets through
    /// their schemas would need itself while it is being made. The
    /// `@Model` macro writes it; the default reads ``schema``, which a
    /// hand-written model in such a cycle must not rely on: give it
    /// `static var storedTypeName: String { "Person" }`.
    static var storedTypeName: String { get }

    /// The stored type name and properties.
    static var schema: ModelSchema<Self> { get }

    /// Hands each stored property to `encoder`, in the order of ``schema``.
    func encode(to encoder: inout ModelEncoder)

    /// Reads each stored property from `decoder`, in the order of ``schema``.
    ///
    /// - Throws: What the decoder throws, a ``StrataError`` for a stored
    ///   value that does not fit the property.
    init(from decoder: inout ModelDecoder) throws
}

extension Model {
    /// ``ModelSchema/name`` of ``schema``.
    public static var storedTypeName: String { schema.name }

    /// The stored object type of the model: ``ModelSchema/objectSchema``
    /// of ``schema``.
    public static var objectSchema: ObjectSchema { schema.objectSchema }

    /// The model's schema, without its Swift type.
    static var declaration: ModelDeclaration {
        schema.declaration(swiftName: String(describing: Self.self), storedTypeName: storedTypeName)
    }
}

/// The declaration of a model known by its existential metatype.
func declaration(of model: any Model.Type) -> ModelDeclaration {
    func open<M: Model>(_ model: M.Type) -> ModelDeclaration { M.declaration }
    return open(model)
}

extension Model {
    /// The value's stored properties by stored name: what the dynamic API
    /// reads for the object once it is written.
    ///
    /// For tests, fixtures and tools; writing a model never builds this
    /// dictionary.
    public var storedValues: [String: Value] {
        let properties = Self.schema.objectSchema.properties
        let slots = UnsafeMutablePointer<Value>.allocate(capacity: max(properties.count, 1))
        slots.initialize(repeating: .null, count: properties.count)
        defer {
            slots.deinitialize(count: properties.count)
            slots.deallocate()
        }
        var encoder = ModelEncoder(slots: slots, capacity: properties.count)
        encode(to: &encoder)
        var values: [String: Value] = [:]
        for (position, property) in properties.enumerated() { values[property.name] = slots[position] }
        return values
    }
}
