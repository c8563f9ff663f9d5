/// Makes a struct a ``Model`` stored under the struct's name.
///
/// The macro writes the conformance a hand-written ``Model`` has: the
/// ``Model/Key`` type, the static ``Model/schema``, ``Model/encode(to:)``
/// and ``Model/init(from:)``. Every stored property, in declaration order,
/// becomes a stored property of the same name; computed, `static` and
/// `lazy` properties are left out, and so is a property marked
/// ``Transient()``.
///
/// ```swift
/// @Model
/// struct Person {
///     @PrimaryKey var id: Int
///     var fullName: String
///     @Indexed var age: Int = 0          // the schema default is 0
///     @Renamed(from: "mail") var email: String?
///     var created: Date = Date()         // no schema default: see below
///     @Transient var isSelected = false  // not stored
/// }
/// ```
///
/// A property's type is one of `Bool`, `Int`, `Int64`, `Double`, `String`,
/// `Data`, `Date`, `UUID`, `Decimal`, a ``Link`` to a model, an ``Embedded()`` struct,
/// the optional of one (`String?`, `Optional<String>`), or an array of any
/// of them but optionals; any other type is a compile-time error that
/// names the property and lists these types. The macro sees syntax only,
/// so it takes any other type name (`Status`, `V1.Address`) for an
/// embedded struct and writes a check that the compiler runs: an enum or
/// a model there fails it with that one error. A property without a type
/// annotation needs a literal initial value to infer it from
/// (`var count = 0` is an `Int`).
///
/// A model may be nested in another type, such as the ``VersionedSchema``
/// enum of the version it belongs to; it is stored under the struct's own
/// name (`Person` for `V1.Person`).
///
/// **Defaults.** A literal initial value (a number, a negative number,
/// `true`, `false`, a string without interpolation) is also the schema
/// default: the value that objects stored before the property existed
/// read. Any other initial value (`Date()`, `UUID()`, a constant) serves
/// Swift's memberwise initializer only and gives no schema default, since
/// a schema default must be the same on every launch; objects without a
/// value then read null for an optional and the type's empty value
/// otherwise. `= nil` adds nothing: an optional reads null anyway.
///
/// A `let` with an initial value cannot be stored, since a value read back
/// could not replace it: make it `var`, or mark it ``Transient()``. A
/// generic struct cannot be a model (Swift allows no static stored
/// property in a generic type), nor can a class, an enum or an actor.
@attached(
    extension, conformances: Model, names: named(Key), named(storedTypeName), named(schema), named(encode(to:)),
    named(init(from:)), named(_strataCheckStoredTypes))
public macro Model() = #externalMacro(module: "StrataMacros", type: "ModelMacro")

/// Makes a struct a ``Model`` stored under another name than the struct's.
///
/// Keep the model of each shipped schema version as a type of its own,
/// all stored under one name, so that a migration can read a file of any
/// version:
///
/// ```swift
/// @Model(name: "Person")
/// struct PersonV1 {
///     @PrimaryKey var id: Int
///     var firstName: String
///     var lastName: String
/// }
/// ```
///
/// Everything else is as for ``Model()``.
///
/// - Parameter name: The stored type name, a string literal.
@attached(
    extension, conformances: Model, names: named(Key), named(storedTypeName), named(schema), named(encode(to:)),
    named(init(from:)), named(_strataCheckStoredTypes))
public macro Model(name: String) = #externalMacro(module: "StrataMacros", type: "ModelMacro")

/// Makes a property of a ``Model()`` struct its primary key: the value
/// that identifies an object, and the key of ``Model/Key``.
///
/// A model has at most one; one without gets automatic `Int64` ids. The
/// property is an `Int`, `Int64`, `String` or `UUID`, not optional.
///
/// ```swift
/// @Model
/// struct Person {
///     @PrimaryKey var id: Int
///     var name: String
/// }
/// // try tx.object(Person.self, primaryKey: 1)
/// ```
@attached(peer)
public macro PrimaryKey() = #externalMacro(module: "StrataMacros", type: "PrimaryKeyMacro")

/// Keeps an index on a property of a ``Model()`` struct, for equality and
/// range queries and sorting without a scan.
///
/// Any property type can be indexed but `Double` and `Data` (and their
/// optionals).
///
/// ```swift
/// @Model
/// struct Person {
///     @PrimaryKey var id: Int
///     @Indexed var age: Int = 0
/// }
/// ```
@attached(peer)
public macro Indexed() = #externalMacro(module: "StrataMacros", type: "IndexedMacro")

/// Leaves a property of a ``Model()`` struct out of the stored object.
///
/// It is never written, and an object read from the database has the
/// property's initial value, or nil for an optional without one; so it
/// needs one or the other. Its type is not restricted.
///
/// ```swift
/// @Model
/// struct Person {
///     @PrimaryKey var id: Int
///     @Transient var isSelected = false
///     @Transient var thumbnail: Image?
/// }
/// ```
@attached(peer)
public macro Transient() = #externalMacro(module: "StrataMacros", type: "TransientMacro")

/// Declares that a property of a ``Model()`` struct had another name in
/// the previous schema version: opening an older file renames it and keeps
/// its values, with no migration code.
///
/// ```swift
/// @Model
/// struct Person {
///     @PrimaryKey var id: Int
///     @Renamed(from: "mail") var email: String?
/// }
/// ```
///
/// - Parameter from: The property's stored name in the previous schema
///   version, a string literal.
@attached(peer)
public macro Renamed(from: String) = #externalMacro(module: "StrataMacros", type: "RenamedMacro")

/// Makes a struct an ``EmbeddedModel``: stored inside the record of the
/// model (or embedded struct) that holds it, owned by that one parent,
/// without a primary key, deleted with it.
///
/// ```swift
/// @Embedded struct Address {
///     var street: String
///     var city: String = "Leeds"
/// }
/// ```
///
/// Its properties follow a model's rules (`@Transient`, `@Renamed(from:)`,
/// literal defaults), except that it has no `@PrimaryKey`, no `@Indexed`
/// and no links. `@Embedded(name:)` gives a stored type name of its own.
@attached(
    extension, conformances: EmbeddedModel, names: named(storedTypeName), named(schema), named(propertyValue),
    named(init(propertyValue:)), named(_strataCheckStoredTypes))
public macro Embedded() = #externalMacro(module: "StrataMacros", type: "EmbeddedMacro")

/// ``Embedded()`` with a stored type name other than the struct's.
@attached(
    extension, conformances: EmbeddedModel, names: named(storedTypeName), named(schema), named(propertyValue),
    named(init(propertyValue:)), named(_strataCheckStoredTypes))
public macro Embedded(name: String) = #externalMacro(module: "StrataMacros", type: "EmbeddedMacro")

/// Sets what deleting the target of a ``Link`` property (or of an element
/// of an array of links) does to the object holding it:
///
/// ```swift
/// @Relationship(deleteRule: .cascade) var owner: Link<Person>?
/// ```
///
/// ``DeleteRule/nullify`` (the default, without the attribute) sets the
/// link to nil or drops the element; ``DeleteRule/cascade`` deletes the
/// holder too (to-one links only); ``DeleteRule/deny`` refuses to delete
/// a target that is still linked to, naming the objects that link to it.
@attached(peer)
public macro Relationship(deleteRule: DeleteRule) = #externalMacro(module: "StrataMacros", type: "RelationshipMacro")
