/// The calls that the code of `@Model` and `@Embedded` makes for a property
/// whose type the macro cannot judge by its name, such as `address:
/// Address`: an `@Embedded` struct, which Strata stores, or an enum or a
/// model, which it does not. Not for hand-written code.
///
/// For each such property the macro also writes a check whose failure is a
/// compile-time error that names the property and lists the types Strata
/// stores. Each call here has an overload that accepts any type, so that
/// the check's error is the only one about the property instead of one
/// among several "requires that 'Status' conform to 'PropertyValue'". A
/// type that fails the check never compiles, so those overloads never run.
public enum _ModelMacroSupport {
    /// The schema's description of the property. `default`, the initial
    /// value when it names a case (`= .open`), is the schema default of a
    /// ``PersistableEnum`` property and ignored for an embedded struct,
    /// whose initial value serves Swift's memberwise initializer only.
    /// `indexed` is set only when the macro's check allows it (an enum).
    @inlinable
    public static func property<Root, V: PropertyValue>(
        _ keyPath: KeyPath<Root, V> & Sendable, _ name: String, indexed: Bool = false, default: V? = nil,
        originalName: String? = nil
    ) -> ModelProperty<Root> {
        ModelProperty(
            keyPath, name, indexed: indexed, default: ModelProperty<Root>.isEnum(V.self) ? `default` : nil,
            originalName: originalName)
    }

    /// Never runs: the macro's check of the property fails to compile.
    public static func property<Root, V>(
        _ keyPath: KeyPath<Root, V> & Sendable, _ name: String, indexed: Bool = false, default: V? = nil,
        originalName: String? = nil
    ) -> ModelProperty<Root> {
        unreachable(V.self)
    }

    /// Stores the property's value, as ``ModelEncoder/encode(_:)`` does.
    @inlinable
    public static func encode<V: PropertyValue>(_ value: V, to encoder: inout ModelEncoder) {
        encoder.encode(value)
    }

    /// Never runs: the macro's check of the property fails to compile.
    public static func encode<V>(_ value: V, to encoder: inout ModelEncoder) {
        unreachable(V.self)
    }

    /// The property's value, as ``ModelDecoder/decode(_:)`` reads it.
    @inlinable
    public static func decode<V: PropertyValue>(from decoder: inout ModelDecoder) throws -> V {
        try decoder.decode(V.self)
    }

    /// Never runs: the macro's check of the property fails to compile.
    public static func decode<V>(from decoder: inout ModelDecoder) throws -> V {
        unreachable(V.self)
    }

    /// The property's value in an embedded object's ``Value/object(_:)``.
    @inlinable
    public static func value<V: PropertyValue>(_ value: V) -> Value {
        value.propertyValue
    }

    /// Never runs: the macro's check of the property fails to compile.
    public static func value<V>(_ value: V) -> Value {
        unreachable(V.self)
    }

    /// The property's value in an embedded object, as
    /// ``EmbeddedFields/decode(_:at:)`` reads it.
    @inlinable
    public static func decode<Root, V: PropertyValue>(
        _ fields: EmbeddedFields, _ keyPath: KeyPath<Root, V>, at position: Int
    ) -> V? {
        fields.decode(V.self, at: position)
    }

    /// Never runs: the macro's check of the property fails to compile.
    public static func decode<Root, V>(_ fields: EmbeddedFields, _ keyPath: KeyPath<Root, V>, at position: Int) -> V? {
        unreachable(V.self)
    }

    private static func unreachable<V>(_ type: V.Type) -> Never {
        preconditionFailure("Strata cannot store a value of type \(V.self); @Model's check should have refused it.")
    }
}
