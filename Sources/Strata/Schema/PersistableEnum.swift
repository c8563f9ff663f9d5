/// An enum whose cases a model stores as their raw values, `Int` or
/// `String`: declare the conformance, and a model property can hold it,
/// its optional or an array of it.
///
/// ```swift
/// enum Status: String, PersistableEnum {
///     case open, done
///     /// What a raw value this version does not know reads as (optional).
///     static var unknownCase: Status? { .open }
/// }
///
/// @Model struct Task {
///     @PrimaryKey var id: Int
///     @Indexed var status: Status = .open
/// }
/// // try tx.objects(Task.self).where(\.status, equals: .done)
/// ```
///
/// The stored type is the raw value's (`int` or `string`), so the file
/// format does not change, other apps and the dynamic API read the raw
/// value, and the property can be indexed and queried by case.
///
/// **Raw values this version does not know.** A newer app (or another
/// device, in synced mode) may store a case this enum lacks. Reading one
/// never crashes and never guesses silently:
///
/// - with an ``unknownCase``, the property reads as that case, and writing
///   the object back (`update`, `upsert`) keeps the stored raw value as
///   long as the property still holds that case: an older app that changes
///   another property, another field of an embedded object that holds the
///   enum, or other elements of a list does not erase the newer app's
///   value. Setting any other case writes it.
/// - without one (the default), reading the object throws ``StrataError``
///   with code ``StrataError/Code/unknownEnumValue``, naming the type, the
///   property, the object's key and the raw value.
///
/// An enum that must keep every raw value through any write can also hold
/// it in a case of its own: a hand-written `RawRepresentable` enum whose
/// `init(rawValue:)` never fails (`case other(String)`) has no unknown
/// values.
public protocol PersistableEnum: RawRepresentable, ListElement, SendableMetatype
where RawValue: PersistableEnumRawValue {
    /// The case a stored raw value that no case has reads as, or nil
    /// (the default) to make reading it an error.
    static var unknownCase: Self? { get }
}

/// The raw value types a ``PersistableEnum`` can have: `Int` and `String`.
public protocol PersistableEnumRawValue: PropertyValue, Equatable {}

extension Int: PersistableEnumRawValue {}
extension String: PersistableEnumRawValue {}

extension PersistableEnum {
    /// Nil: a raw value that no case has makes reading the object an error.
    public static var unknownCase: Self? { nil }
    /// The raw value's stored type.
    public static var propertyType: PropertyType { RawValue.propertyType }
    /// The raw value, as stored.
    public var propertyValue: Value { rawValue.propertyValue }
    /// The case whose raw value `value` is, else ``unknownCase``; nil when
    /// `value` is not a raw value or no case has it and there is no
    /// ``unknownCase``.
    public init?(propertyValue value: Value) {
        guard let raw = RawValue(propertyValue: value) else { return nil }
        guard let known = Self(rawValue: raw) ?? Self.unknownCase else { return nil }
        self = known
    }

    /// Whether the enum reads unknown raw values as ``unknownCase``.
    static var hasUnknownCase: Bool { unknownCase != nil }

    /// The first raw value in `value` (itself, or an element of a list)
    /// that no case has, or nil.
    static func unknownRawValue(in value: Value) -> Value? {
        if case .list(let elements) = value { return elements.lazy.compactMap(unknownRawValue).first }
        guard let raw = RawValue(propertyValue: value), Self(rawValue: raw) == nil else { return nil }
        return value
    }
}

/// An optional or an array of a ``PersistableEnum``; see
/// ``carriedEnum(_:)``.
protocol EnumCarrying {
    static var carriedEnum: any PersistableEnum.Type { get }
}

extension Optional: EnumCarrying where Wrapped: PersistableEnum {
    static var carriedEnum: any PersistableEnum.Type { Wrapped.self }
}

extension Array: EnumCarrying where Element: PersistableEnum {
    static var carriedEnum: any PersistableEnum.Type { Element.self }
}

/// The enum that a property of type `type` holds (itself, in an optional
/// or in an array), or nil.
func carriedEnum(_ type: Any.Type) -> (any PersistableEnum.Type)? {
    if let type = type as? any PersistableEnum.Type { return type }
    return (type as? any EnumCarrying.Type)?.carriedEnum
}
