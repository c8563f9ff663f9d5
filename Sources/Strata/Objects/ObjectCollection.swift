/// The objects of one type, read lazily, in primary-key order unless a
/// `where` on an index or a sort orders them.
///
/// A collection is a description, not a copy: nothing is read until you
/// walk it with ``forEach(_:)``, ``map(_:)``, ``array()``, ``first()``,
/// ``count`` or ``isEmpty``. It offers what a typed ``ModelQuery`` offers,
/// by property name except a `#Predicate`: narrow it with
/// ``where(_:equals:)``, ``where(_:notEquals:)``, `where(_:in:)` (a range
/// or a set of values) and ``where(_:hasPrefix:)`` (which use an index or
/// the primary key when they can), or with ``filter(_:)`` (a closure run
/// on each object); order it with
/// ``sorted(by:ascending:)``; cut it with ``limit(_:)``. Both APIs run the
/// same query plan, so a collection chooses its walk, orders and compares
/// values exactly as the typed query documents (see ``ModelQuery``, "Which
/// operations use an index" and "Order and comparison").
///
/// ```swift
/// let adults = try db.read { tx in
///     try tx.objects("Person").filter { $0["age"].int! >= 18 }.count
/// }
/// let youngest = try db.read { tx in
///     try tx.objects("Person").where("age", in: 18..<30).sorted(by: "age").limit(3).map { $0["id"] }
/// }
/// ```
///
/// A collection is valid only inside the transaction that made it. In a
/// write transaction it sees the transaction's own writes, and a walk
/// does not go past the object that was last when it began.
public struct ObjectCollection {
    let context: ObjectContext
    let table: ObjectTable
    /// The `where`s, order and limit, shared with the typed API.
    private var plan: QueryPlan
    private var predicates: [(DynamicObject) throws -> Bool] = []

    init(context: ObjectContext, table: ObjectTable, plan: QueryPlan? = nil) {
        self.context = context
        self.table = table
        self.plan = plan ?? QueryPlan(table: table)
    }

    /// The name of the collection's object type.
    public var typeName: String { table.name }

    /// The objects for which `isIncluded` returns true. Lazy: the closure
    /// runs while the result is walked, on each object that the `where`s
    /// let through.
    public func filter(_ isIncluded: @escaping (DynamicObject) throws -> Bool) -> ObjectCollection {
        var copy = self
        copy.predicates.append(isIncluded)
        return copy
    }

    /// The objects whose effective schema version — the version under which
    /// each was last written — is in `versions`. Read from each record's
    /// header before an object is made.
    ///
    /// ```swift
    /// // Objects not rewritten since version 6 was introduced:
    /// let stale = try tx.objects("Issue").whereSchemaVersion(..<6).count
    /// // Objects written by a newer app version than this one (synced mode):
    /// let newer = try tx.objects("Issue").whereSchemaVersion((tx.appSchemaVersion + 1)...).count
    /// ```
    public func whereSchemaVersion(_ versions: some RangeExpression<UInt64> & Sendable) -> ObjectCollection {
        var copy = self
        copy.plan.keepSchemaVersions(versions)
        return copy
    }

    /// The objects that hold a value for a property this app does not
    /// declare, at any nesting level (see
    /// ``ModelQuery/holdingUndeclaredFields()``).
    public func holdingUndeclaredFields() -> ObjectCollection {
        var copy = self
        copy.plan.keepHoldingUndeclaredFields()
        return copy
    }

    /// The objects whose `property` equals `value`.
    ///
    /// On the primary key this reads at most one object; on an indexed
    /// property, only the matching objects; otherwise it reads every
    /// record, comparing the stored value before making an object.
    ///
    /// - Throws: ``StrataError`` when the type has no such property or the
    ///   value has the wrong type.
    public func `where`(_ property: String, equals value: Value) throws -> ObjectCollection {
        let (field, value) = try checked(property, value, optional: true, "equal")
        return adding(.range(QueryRange(position: field.position, equals: value)), field)
    }

    /// The objects whose `property` is not `value`: another value or null.
    /// It reads every record.
    ///
    /// - Throws: ``StrataError`` when the type has no such property or the
    ///   value has the wrong type.
    public func `where`(_ property: String, notEquals value: Value) throws -> ObjectCollection {
        let (field, value) = try checked(property, value, optional: true, "differ from")
        return adding(.notEqual(position: field.position, value), field)
    }

    /// The objects whose `property` is one of `values`. On an indexed
    /// property or the primary key this seeks each value; otherwise it
    /// reads every record.
    ///
    /// ```swift
    /// let named = try tx.objects("Person").where("name", in: ["Ann", "Bob"]).count
    /// ```
    ///
    /// - Throws: ``StrataError`` when the type has no such property or a
    ///   value has the wrong type.
    public func `where`(_ property: String, in values: some Sequence<Value>) throws -> ObjectCollection {
        let field = try table.field(named: property)
        let checked = try values.map { try self.checked(property, $0, optional: true, "equal").1 }
        return adding(.oneOf(position: field.position, checked), field)
    }

    /// The objects whose string `property` starts with `prefix` (by UTF-8
    /// bytes). On an indexed property this walks only the index entries
    /// with the prefix; otherwise it reads every record.
    ///
    /// - Throws: ``StrataError`` when the type has no such property or it
    ///   is not a string.
    public func `where`(_ property: String, hasPrefix prefix: String) throws -> ObjectCollection {
        let (field, _) = try checked(property, .string(prefix), optional: false, "start with")
        return adding(.prefix(position: field.position, prefix), field)
    }

    /// The objects whose `property` lies in `range`.
    ///
    /// On an indexed property this walks only the index entries in the
    /// range; on the primary key, only the records in it; otherwise it
    /// reads every record. Values compare as ``ModelQuery`` documents.
    ///
    /// ```swift
    /// let young = try tx.objects("Person").where("age", in: 18..<30).count
    /// ```
    ///
    /// - Throws: ``StrataError`` when the type has no such property or the
    ///   bounds have the wrong type.
    public func `where`<V: PropertyValue & Comparable>(_ property: String, in range: Range<V>) throws
        -> ObjectCollection
    {
        try adding(property, lower: (range.lowerBound, true), upper: (range.upperBound, false))
    }

    /// The objects whose `property` lies in `range`; uses an index as
    /// `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ property: String, in range: ClosedRange<V>) throws
        -> ObjectCollection
    {
        try adding(property, lower: (range.lowerBound, true), upper: (range.upperBound, true))
    }

    /// The objects whose `property` is at least `range`'s lower bound;
    /// uses an index as `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ property: String, in range: PartialRangeFrom<V>) throws
        -> ObjectCollection
    {
        try adding(property, lower: (range.lowerBound, true), upper: nil)
    }

    /// The objects whose `property` is at most `range`'s upper bound;
    /// uses an index as `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ property: String, in range: PartialRangeThrough<V>) throws
        -> ObjectCollection
    {
        try adding(property, lower: nil, upper: (range.upperBound, true))
    }

    /// The objects whose `property` is below `range`'s upper bound; uses
    /// an index as `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ property: String, in range: PartialRangeUpTo<V>) throws
        -> ObjectCollection
    {
        try adding(property, lower: nil, upper: (range.upperBound, false))
    }

    /// The objects ordered by `property`, smallest first, or largest first
    /// when `ascending` is false. Equal values are ordered by primary key
    /// (reversed when descending). A later `sorted` replaces an earlier
    /// one; to sort by several keys, give them together:
    /// `sorted(by: [SortKey])`.
    ///
    /// On the primary key this walks the table in key order; on an indexed
    /// property it walks the index. On any other property it reads every
    /// matching object and sorts them in memory, even with a ``limit(_:)``.
    ///
    /// ```swift
    /// let oldest = try tx.objects("Person").sorted(by: "age", ascending: false).first()
    /// ```
    ///
    /// - Throws: ``StrataError`` when the type has no such property.
    public func sorted(by property: String, ascending: Bool = true) throws -> ObjectCollection {
        try sorted(by: [SortKey(property, ascending: ascending)])
    }

    /// The objects ordered by `keys`: the first orders, each later one
    /// orders the objects the earlier ones leave equal, and the primary
    /// key orders what they all leave equal (in the first key's
    /// direction). Replaces an earlier `sorted`. The first key decides the
    /// walk as in ``sorted(by:ascending:)``.
    ///
    /// ```swift
    /// let people = try tx.objects("Person").sorted(by: [.ascending("lastName"), .descending("age")]).array()
    /// ```
    ///
    /// - Throws: ``StrataError`` when the type has no such property.
    public func sorted(by keys: [SortKey]) throws -> ObjectCollection {
        var copy = self
        copy.plan.sort(by: try keys.map { (try table.field(named: $0.property).position, $0.ascending) })
        return copy
    }

    /// The objects after the first `count` in the collection's order
    /// (counted after the `where`s and filters): with ``limit(_:)``, a
    /// page. Whichever is given first, the offset applies before the
    /// limit; a later offset replaces an earlier one.
    ///
    /// - Precondition: `count` is not negative.
    public func offset(_ count: Int) -> ObjectCollection {
        var copy = self
        copy.plan.skip(count)
        return copy
    }

    /// At most `count` objects: the first ones in the collection's order.
    /// The walk stops as soon as it has them (after an in-memory sort, once
    /// the sort is done).
    ///
    /// - Precondition: `count` is not negative.
    public func limit(_ count: Int) -> ObjectCollection {
        var copy = self
        copy.plan.cut(to: count)
        return copy
    }

    /// Calls `body` with each object, in the collection's order.
    ///
    /// - Throws: What `body` or a filter throws, or a ``StrataError`` for a
    ///   damaged record.
    public func forEach(_ body: (DynamicObject) throws -> Void) throws {
        try iterate {
            try body($0)
            return true
        }
    }

    /// The results of `transform` on each object, in the collection's order.
    public func map<T>(_ transform: (DynamicObject) throws -> T) throws -> [T] {
        var result: [T] = []
        try iterate {
            result.append(try transform($0))
            return true
        }
        return result
    }

    /// Every object, in an array, in the collection's order.
    public func array() throws -> [DynamicObject] {
        try map { $0 }
    }

    /// The first object, or nil when there is none. It stops the walk at
    /// that object, except after an in-memory sort.
    public func first() throws -> DynamicObject? {
        var found: DynamicObject?
        try limit(1).iterate {
            found = $0
            return false
        }
        return found
    }

    /// The first object that satisfies `predicate`, or nil.
    public func first(where predicate: (DynamicObject) throws -> Bool) throws -> DynamicObject? {
        var found: DynamicObject?
        try iterate {
            if try predicate($0) {
                found = $0
                return false
            }
            return true
        }
        return found
    }

    /// Whether any object satisfies `predicate`.
    public func contains(where predicate: (DynamicObject) throws -> Bool) throws -> Bool {
        try first(where: predicate) != nil
    }

    /// The number of objects. Without `where`s or filters this reads one
    /// counter and does not depend on the number of objects; with `where`s
    /// only, it makes no object.
    public var count: Int {
        get throws {
            if predicates.isEmpty { return try plan.count(in: context) }
            let (context, table, predicates) = (self.context, self.table, self.predicates)
            return try plan.count(in: context) { key, record in
                let object = context.object(table: table, key: key, view: record)
                return try predicates.allSatisfy { try $0(object) }
            }
        }
    }

    /// Whether there are no objects; it stops at the first one.
    public var isEmpty: Bool {
        get throws { try limit(1).count == 0 }
    }

    // MARK: Building and running the plan

    /// The collection with `condition` on `field`. The file's schema says
    /// where the property is declared: in the order the app's schema
    /// listed it when the file last recorded it.
    private func adding(_ condition: QueryCondition, _ field: ObjectTable.Field) -> ObjectCollection {
        let properties = table.type.properties
        let declared = properties.firstIndex { $0.id == field.id } ?? properties.count + field.position
        var copy = self
        copy.plan.add(condition, declaredAt: { _ in declared })
        return copy
    }

    private func adding<V: PropertyValue>(_ property: String, lower: (V, Bool)?, upper: (V, Bool)?) throws
        -> ObjectCollection
    {
        func bound(_ end: (V, Bool)?) throws -> (ObjectTable.Field, QueryRange.Bound)? {
            guard let (value, inclusive) = end else { return nil }
            let (field, checked) = try checked(property, value.propertyValue, optional: false, "lie in a range of")
            return (field, QueryRange.Bound(value: checked, inclusive: inclusive))
        }
        let lower = try bound(lower)
        let upper = try bound(upper)
        guard let field = (lower ?? upper)?.0 else { preconditionFailure("A range without bounds") }
        return adding(.range(QueryRange(position: field.position, lower: lower?.1, upper: upper?.1)), field)
    }

    /// The field named `property`, and `value` in its type.
    private func checked(_ property: String, _ value: Value, optional: Bool, _ verb: String) throws
        -> (ObjectTable.Field, Value)
    {
        let field = try table.field(named: property)
        let value = value.coerced(to: field.type)
        guard value.fits(field.type, optional: optional) else {
            throw StrataError.invalidValue(
                "Property '\(table.name).\(property)' is \(field.type); it cannot \(verb) \(value) (in \(context.path)).",
                typeName: table.name, property: property, remedy: "Compare it with a value of type \(field.type).",
                path: context.path)
        }
        return (field, value)
    }

    /// Walks the matching objects until `body` returns false.
    private func iterate(_ body: (DynamicObject) throws -> Bool) throws {
        let context = self.context
        let table = self.table
        let predicates = self.predicates
        if plan.isPlain {
            // The common walk, without the executor's layers.
            return try plan.scanRecords(in: context) { key, record in
                let object = context.object(table: table, key: key, view: record)
                for predicate in predicates where try !predicate(object) { return true }
                return try body(object)
            }
        }
        try plan.run(in: context) { key, record, _, passOver in
            if passOver && predicates.isEmpty { return true }
            let object = context.object(table: table, key: key, view: record)
            for predicate in predicates where try !predicate(object) { return nil }
            return passOver ? true : try body(object)
        }
    }
}

/// One key of an ``ObjectCollection``'s order: a property's name, and
/// whether its values go smallest first.
public struct SortKey: Sendable, Hashable {
    /// The stored name of the property the key orders by.
    public var property: String
    /// Whether the key's values go smallest first.
    public var ascending: Bool

    /// The key on `property`, smallest first unless `ascending` is false.
    public init(_ property: String, ascending: Bool = true) {
        self.property = property
        self.ascending = ascending
    }

    /// The key on `property`, smallest first.
    public static func ascending(_ property: String) -> SortKey { SortKey(property) }
    /// The key on `property`, largest first.
    public static func descending(_ property: String) -> SortKey { SortKey(property, ascending: false) }
}

@available(*, unavailable, message: "An ObjectCollection is valid only inside its transaction.")
extension ObjectCollection: Sendable {}
