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
    /// each one's element, running the query's filters on it and calling
    /// `body` with each element they keep, until `body` returns false. An
    /// element the query's offset passes over is made only when there are
    /// filters to run on it.
    ///
    /// The whole work per record is here, in one closure, so that a
    /// model's is compiled for the concrete model in the app's module,
    /// where Strata's walk calls it: one indirect call per record.
    static func _iterate(_ query: ObjectQuery<Self>, _ body: (Self) throws -> Bool) throws

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

    public static func _iterate(_ query: ObjectQuery<Self>, _ body: (Self) throws -> Bool) throws {
        let (context, table, predicates) = (query.context, query.table, query.predicates)
        try query.walkRecords { key, record, passOver in
            if passOver && predicates.isEmpty { return true }
            let object = context.object(table: table, key: key, view: record)
            let goesOn = try ObjectQuery.visit(object, passOver: passOver, predicates, body)
            // A damaged field that the filters or `body` read stops the
            // scan at its object.
            try context.lifetime.throwDamage()
            return goesOn
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
    /// the public walks that call it, so that the work per object
    /// (decoding, the filters, `body`) is compiled in the app's module for
    /// its concrete model, as `MigrationStep.Builder.map` is: compiled
    /// here, generic over a model of another module, each object went
    /// through the model's value witnesses (a copy into generic storage
    /// and a destroy) and a witness call of `init(from:)`.
    @inlinable
    public static func _iterate(_ query: ObjectQuery<Self>, _ body: (Self) throws -> Bool) throws {
        let predicates = query.predicates
        try query.walk { decoder, passOver in
            // A value the offset passes over is decoded only for filters.
            if passOver && predicates.isEmpty { return true }
            return try ObjectQuery.visit(Self(from: &decoder), passOver: passOver, predicates, body)
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
