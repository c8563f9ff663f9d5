/// A type whose values an ``ObjectQuery`` lists: a ``Model``, decoded
/// from each record, or ``DynamicObject``, a view of it.
///
/// Strata conforms these two and no others: every model conforms through
/// ``Model``, and the requirements, whose names start with an underscore,
/// are Strata's own. Do not conform another type.
///
/// The one query type is generic over its element so that its members
/// are declared once; the element decides how a record becomes a value,
/// and what an observation of the query hands over for it
/// (``Observed``, named by ``ObservedKey``).
public protocol QueryElement {
    /// What an observation of a query hands over for one element, a value
    /// that outlives the transaction: the model value itself, or a dynamic
    /// object's stored values by property name (``DynamicObject/values``).
    associatedtype Observed

    /// What an observation names an element by in its change lists: the
    /// model's ``Model/Key``, or the dynamic object's
    /// ``DynamicObject/primaryKey``.
    associatedtype ObservedKey

    /// Strata's: walks the records `query` matches, in its order, making
    /// each one's element and calling `visit` with it and whether the
    /// query's offset passes it over, until `visit` returns false (nil: a
    /// filter rejected the element). An element passed over is made only
    /// when the query has filters to run on it.
    static func _walk(_ query: ObjectQuery<Self>, _ visit: (Self, _ passOver: Bool) throws -> Bool?) throws

    /// Strata's: the element of the record that `object` views, which
    /// `query` matched.
    static func _element(of object: DynamicObject, in query: ObjectQuery<Self>) throws -> Self

    /// Strata's: what an observation hands over for `element`.
    static func _observed(_ element: Self) -> Observed

    /// Strata's: the stored values of `observed`, in the order of the
    /// query's stored properties, to tell whether an object changed.
    static func _storedValues(of observed: Observed, in query: ObjectQuery<Self>) -> [Value]

    /// Strata's: `key`, a stored primary key, as an observation names it;
    /// nil when it is not of that type.
    static func _observedKey(_ key: Value) -> ObservedKey?
}

extension DynamicObject: QueryElement {
    public typealias Observed = [String: Value]
    public typealias ObservedKey = Value

    public static func _walk(_ query: ObjectQuery<Self>, _ visit: (Self, _ passOver: Bool) throws -> Bool?) throws {
        let (context, table) = (query.context, query.table)
        let decodesPassedOver = !query.predicates.isEmpty
        try query.walkRecords { key, record, passOver in
            if passOver && !decodesPassedOver { return true }
            return try visit(context.object(table: table, key: key, view: record), passOver)
        }
    }

    public static func _element(of object: DynamicObject, in query: ObjectQuery<Self>) throws -> Self { object }

    public static func _observed(_ element: Self) -> Observed { element.values }

    public static func _storedValues(of observed: Observed, in query: ObjectQuery<Self>) -> [Value] {
        query.table.type.properties.map { observed[$0.property.name] ?? .null }
    }

    public static func _observedKey(_ key: Value) -> Value? { key }
}

extension Model {
    /// Decodes each record with the model's `init(from:)`. Inlinable, like
    /// the public walks that call it, so that the decoding is compiled in
    /// the app's module for its concrete model (see
    /// ``ObjectQuery/iterate(_:)``).
    @inlinable
    public static func _walk(_ query: ObjectQuery<Self>, _ visit: (Self, _ passOver: Bool) throws -> Bool?) throws {
        let decodesPassedOver = !query.predicates.isEmpty
        try query.walk { decoder, passOver in
            // A value the offset passes over is decoded only for filters.
            if passOver && !decodesPassedOver { return true }
            return try visit(Self(from: &decoder), passOver)
        }
    }

    public static func _element(of object: DynamicObject, in query: ObjectQuery<Self>) throws -> Self {
        try query.binding.decode(Self.self, record: object.record, key: object.key)
    }

    public static func _observed(_ element: Self) -> Self { element }

    public static func _storedValues(of observed: Self, in query: ObjectQuery<Self>) -> [Value] {
        query.binding.encode(observed)
        return Array(query.binding.slots)
    }

    public static func _observedKey(_ key: Value) -> Key? { Key(propertyValue: key) }
}
