/// The members of a dynamic query that name properties by their stored
/// names: `where`, `sorted`, and links followed back.
///
/// A mistake in the description (a name the type lacks, a value of the
/// wrong type for the property) does not throw here: the query throws it
/// when it runs, as a model query does for a key path that is not stored
/// (see ``ObjectQuery``, "When a mistake is reported").
extension ObjectQuery where Element == DynamicObject {
    /// The objects whose `property` equals `value`.
    ///
    /// On the primary key this reads at most one object; on an indexed
    /// property, only the matching objects; otherwise it reads every
    /// record, comparing the stored value before making an object.
    ///
    /// ```swift
    /// let ada = try tx.objects("Person").where("name", equals: "Ada").first()
    /// ```
    ///
    /// A property the type lacks, or a value of another type, makes the
    /// query throw a ``StrataError`` (``StrataError/Code/unknownProperty``
    /// or ``StrataError/Code/invalidValue``) when it runs.
    public func `where`(_ property: String, equals value: Value) -> ObjectQuery {
        describing { query in
            let (field, value) = try checked(property, value, optional: true, "equal")
            query.add(.range(QueryRange(position: field.position, equals: value)), field)
        }
    }

    /// The objects whose `property` is not `value`: another value or null.
    /// It reads every record. Mistakes are thrown as for
    /// `where(_:equals:)`.
    public func `where`(_ property: String, notEquals value: Value) -> ObjectQuery {
        describing { query in
            let (field, value) = try checked(property, value, optional: true, "differ from")
            query.add(.notEqual(position: field.position, value), field)
        }
    }

    /// The objects whose `property` is one of `values`. On an indexed
    /// property or the primary key this seeks each value; otherwise it
    /// reads every record.
    ///
    /// ```swift
    /// let named = try tx.objects("Person").where("name", in: ["Ann", "Bob"]).count
    /// ```
    ///
    /// Mistakes are thrown as for `where(_:equals:)`.
    public func `where`(_ property: String, in values: some Sequence<Value>) -> ObjectQuery {
        describing { query in
            let field = try table.field(named: property)
            let checked = try values.map { try self.checked(property, $0, optional: true, "equal").1 }
            query.add(.oneOf(position: field.position, checked), field)
        }
    }

    /// The objects whose string `property` starts with `prefix` (by UTF-8
    /// bytes). On an indexed property this walks only the index entries
    /// with the prefix; otherwise it reads every record. Mistakes (a
    /// property that is not a string) are thrown as for
    /// `where(_:equals:)`.
    public func `where`(_ property: String, hasPrefix prefix: String) -> ObjectQuery {
        describing { query in
            let (field, _) = try checked(property, .string(prefix), optional: false, "start with")
            query.add(.prefix(position: field.position, prefix), field)
        }
    }

    /// The objects whose `property` lies in `range`.
    ///
    /// On an indexed property this walks only the index entries in the
    /// range; on the primary key, only the records in it; otherwise it
    /// reads every record. Values compare as ``ObjectQuery`` documents.
    ///
    /// ```swift
    /// let young = try tx.objects("Person").where("age", in: 18..<30).count
    /// ```
    ///
    /// Mistakes (bounds of another type) are thrown as for
    /// `where(_:equals:)`.
    public func `where`<V: PropertyValue & Comparable>(_ property: String, in range: Range<V>) -> ObjectQuery {
        adding(property, lower: (range.lowerBound, true), upper: (range.upperBound, false))
    }

    /// The objects whose `property` lies in `range`; uses an index as
    /// `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ property: String, in range: ClosedRange<V>)
        -> ObjectQuery
    {
        adding(property, lower: (range.lowerBound, true), upper: (range.upperBound, true))
    }

    /// The objects whose `property` is at least `range`'s lower bound;
    /// uses an index as `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ property: String, in range: PartialRangeFrom<V>)
        -> ObjectQuery
    {
        adding(property, lower: (range.lowerBound, true), upper: nil)
    }

    /// The objects whose `property` is at most `range`'s upper bound;
    /// uses an index as `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ property: String, in range: PartialRangeThrough<V>)
        -> ObjectQuery
    {
        adding(property, lower: nil, upper: (range.upperBound, true))
    }

    /// The objects whose `property` is below `range`'s upper bound; uses
    /// an index as `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ property: String, in range: PartialRangeUpTo<V>)
        -> ObjectQuery
    {
        adding(property, lower: nil, upper: (range.upperBound, false))
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
    /// A property the type lacks makes the query throw a ``StrataError``
    /// with code ``StrataError/Code/unknownProperty`` when it runs.
    public func sorted(by property: String, ascending: Bool = true) -> ObjectQuery {
        sorted(by: [SortKey(property, ascending: ascending)])
    }

    /// The objects ordered by `keys`: the first orders, each later one
    /// orders the objects the earlier ones leave equal, and the primary
    /// key orders what they all leave equal (in the first key's
    /// direction). Replaces an earlier `sorted`. The first key decides the
    /// walk as in `sorted(by:ascending:)`.
    ///
    /// ```swift
    /// let people = try tx.objects("Person").sorted(by: [.ascending("lastName"), .descending("age")]).array()
    /// ```
    ///
    /// A property the type lacks is thrown as for `sorted(by:ascending:)`.
    public func sorted(by keys: [SortKey]) -> ObjectQuery {
        describing { query in
            query.plan.sort(by: try keys.map { (try table.field(named: $0.property).position, $0.ascending) })
        }
    }

    /// The objects whose link property `property` (a link, or a list of
    /// links) links to the object with key `key`: its backlinks, walked
    /// from the property's backlinks index instead of the table, each
    /// once. Usable wherever a query is, an observation included.
    ///
    /// ```swift
    /// let dogs = try tx.objects("Dog").linking(to: 1, through: "owner").sorted(by: "name").array()
    /// ```
    ///
    /// A property that is not a link, or a key of the wrong type, is
    /// thrown as for `where(_:equals:)`.
    public func linking(to key: Value, through property: String) -> ObjectQuery {
        describing { query in
            let (position, target) = try context.backlinks(of: table, through: property, to: key)
            query.plan.keepLinking(to: target, through: position)
        }
    }

    // MARK: Building the plan

    /// Adds `condition` on `field`. The file's schema says where the
    /// property is declared: in the order the app's schema listed it when
    /// the file last recorded it.
    private mutating func add(_ condition: QueryCondition, _ field: ObjectTable.Field) {
        let properties = table.type.properties
        let declared = properties.firstIndex { $0.id == field.id } ?? properties.count + field.position
        plan.add(condition, declaredAt: { _ in declared })
    }

    private func adding<V: PropertyValue>(_ property: String, lower: (V, Bool)?, upper: (V, Bool)?) -> ObjectQuery {
        describing { query in
            func bound(_ end: (V, Bool)?) throws -> (ObjectTable.Field, QueryRange.Bound)? {
                guard let (value, inclusive) = end else { return nil }
                let (field, checked) = try checked(property, value.propertyValue, optional: false, "lie in a range of")
                return (field, QueryRange.Bound(value: checked, inclusive: inclusive))
            }
            let lower = try bound(lower)
            let upper = try bound(upper)
            guard let field = (lower ?? upper)?.0 else { preconditionFailure("A range without bounds") }
            query.add(.range(QueryRange(position: field.position, lower: lower?.1, upper: upper?.1)), field)
        }
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
}

/// One key of a dynamic query's order: a property's name, and
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
