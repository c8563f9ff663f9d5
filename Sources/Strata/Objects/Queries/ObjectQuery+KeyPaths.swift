import Foundation

/// The members of a model query that name properties by key path:
/// `where`, `sorted` and what they share with `#Predicate`.
extension ObjectQuery where Element: Model {
    /// The values whose property at `keyPath` equals `value`.
    ///
    /// On the primary key this reads at most one object; on an indexed
    /// property, only the matching objects (index order: by primary key);
    /// on any other property it reads every record and decodes only the
    /// matching ones. Strings are equal when their UTF-8 bytes are.
    ///
    /// ```swift
    /// let thirty = try tx.objects(Person.self).where(\.age, equals: 30).array()
    /// let noEmail = try tx.objects(Person.self).where(\.email, equals: nil).count
    /// ```
    ///
    /// A key path that is not a stored property (a computed or
    /// `@Transient` one) makes the query throw a ``StrataError`` with code
    /// ``StrataError/Code/unknownProperty`` when it runs; use a closure
    /// `filter(_:)` for those.
    public func `where`<V: PropertyValue>(_ keyPath: KeyPath<Element, V>, equals value: V) -> ObjectQuery {
        let bound = QueryRange.Bound(value: value.propertyValue, inclusive: true)
        return adding(keyPath, lower: bound, upper: bound, "where(_:equals:)")
    }

    /// The values whose property at `keyPath` lies in `range`.
    ///
    /// On an indexed property this walks only the index entries in the
    /// range; on the primary key, only the records in it; on any other
    /// property it reads every record and decodes only the matching ones.
    /// See the type's documentation for how values compare.
    ///
    /// ```swift
    /// let young = try tx.objects(Person.self).where(\.age, in: 18..<30).array()
    /// ```
    public func `where`<V: PropertyValue & Comparable>(_ keyPath: KeyPath<Element, V>, in range: Range<V>)
        -> ObjectQuery
    {
        adding(keyPath, lower: .init(range.lowerBound, true), upper: .init(range.upperBound, false), "where(_:in:)")
    }

    /// The values whose property at `keyPath` lies in `range`.
    ///
    /// ```swift
    /// let twenties = try tx.objects(Person.self).where(\.age, in: 20...29).count
    /// ```
    ///
    /// Uses an index as `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ keyPath: KeyPath<Element, V>, in range: ClosedRange<V>)
        -> ObjectQuery
    {
        adding(keyPath, lower: .init(range.lowerBound, true), upper: .init(range.upperBound, true), "where(_:in:)")
    }

    /// The values whose property at `keyPath` is at least `range`'s lower
    /// bound.
    ///
    /// ```swift
    /// let adults = try tx.objects(Person.self).where(\.age, in: 18...).count
    /// ```
    ///
    /// Uses an index as `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ keyPath: KeyPath<Element, V>, in range: PartialRangeFrom<V>)
        -> ObjectQuery
    {
        adding(keyPath, lower: .init(range.lowerBound, true), upper: nil, "where(_:in:)")
    }

    /// The values whose property at `keyPath` is at most `range`'s upper
    /// bound.
    ///
    /// ```swift
    /// let children = try tx.objects(Person.self).where(\.age, in: ...12).count
    /// ```
    ///
    /// Uses an index as `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ keyPath: KeyPath<Element, V>, in range: PartialRangeThrough<V>)
        -> ObjectQuery
    {
        adding(keyPath, lower: nil, upper: .init(range.upperBound, true), "where(_:in:)")
    }

    /// The values whose property at `keyPath` is below `range`'s upper
    /// bound.
    ///
    /// ```swift
    /// let minors = try tx.objects(Person.self).where(\.age, in: ..<18).count
    /// ```
    ///
    /// Uses an index as `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ keyPath: KeyPath<Element, V>, in range: PartialRangeUpTo<V>)
        -> ObjectQuery
    {
        adding(keyPath, lower: nil, upper: .init(range.upperBound, false), "where(_:in:)")
    }

    /// The values ordered by their property at `keyPath`, smallest first,
    /// or largest first when `ascending` is false. Equal values are
    /// ordered by primary key (reversed when descending). A later `sorted`
    /// replaces an earlier one; to sort by several keys, give them
    /// together: ``sorted(using:)-([SortDescriptor<Element>])``.
    ///
    /// On the primary key this walks the table in key order; on an
    /// indexed property it walks the index, bounded by a `where` on the
    /// same property when there is one. On any other property it decodes
    /// every matching object and sorts them in memory, which costs time
    /// and memory in the number of matching objects even with a
    /// ``limit(_:)``.
    ///
    /// `keyPath` may name a property inside required embedded objects, at
    /// any depth (`\.home.city`): its value is read inside the record, and
    /// sorted in memory.
    ///
    /// ```swift
    /// let oldestFirst = try tx.objects(Person.self).sorted(by: \.age, ascending: false).limit(3).array()
    /// ```
    public func sorted<V: PropertyValue>(by keyPath: KeyPath<Element, V>, ascending: Bool = true) -> ObjectQuery {
        sorted([(keyPath, ascending)], "sorted(by:)")
    }

    /// The values ordered by `descriptors`: the first orders, each later
    /// one orders the values the earlier ones leave equal, each forward or
    /// reverse, and the primary key orders what they all leave equal (in
    /// the first one's direction). Replaces an earlier `sorted`.
    ///
    /// The first key decides the walk as in `sorted(by:ascending:)`: on
    /// an indexed property the walk follows the index and sorts only the
    /// values that share a key by the further keys. Strata orders values
    /// as it stores and indexes them: strings by their UTF-8 bytes, not by
    /// a descriptor's localized comparator. A descriptor may name a `Bool`
    /// or a ``PersistableEnum`` that is not `Comparable` (Strata's
    /// `SortDescriptor` initializers; an enum by its raw value) and a
    /// property inside embedded objects, as `sorted(by:ascending:)`.
    ///
    /// ```swift
    /// let people = try tx.objects(Person.self)
    ///     .sorted(using: [SortDescriptor(\.lastName), SortDescriptor(\.age, order: .reverse)])
    ///     .array()
    /// ```
    public func sorted(using descriptors: [SortDescriptor<Element>]) -> ObjectQuery {
        var keys: [(PartialKeyPath<Element>, Bool)] = []
        for descriptor in descriptors {
            guard let keyPath = descriptor.keyPath else {
                var copy = self
                copy.plan.fail(notStored(\Element.self, "sorted(using:) with a descriptor that has no key path"))
                return copy
            }
            keys.append((keyPath, descriptor.order == .forward))
        }
        return sorted(keys, "sorted(using:)")
    }

    /// The values ordered by `descriptors`: ``sorted(using:)-([SortDescriptor<Element>])``.
    public func sorted(using descriptors: SortDescriptor<Element>...) -> ObjectQuery {
        sorted(using: descriptors)
    }

    private func sorted(_ keys: [(PartialKeyPath<Element>, Bool)], _ operation: String) -> ObjectQuery {
        var copy = self
        var positions: [(position: Int, ascending: Bool)] = []
        for (keyPath, ascending) in keys {
            guard let place = Self.storedPlace(of: keyPath) else {
                copy.plan.fail(notStored(keyPath, operation))
                return copy
            }
            // A property the table lacks reads as one value in every
            // object: it orders nothing.
            if let position = planPosition(of: place, paths: &copy.plan.embeddedPaths) {
                positions.append((position, ascending))
            }
        }
        copy.plan.sort(by: positions)
        return copy
    }

    /// The plan position of the stored property at `place`: its table
    /// field's, or, for a property inside embedded objects, one of
    /// `paths` (added when new); nil when the table lacks it.
    func planPosition(of place: PredicatePlace, paths: inout [QueryPlan.EmbeddedPath]) -> Int? {
        guard let field = binding.field(at: place.position) else { return nil }
        guard !place.names.isEmpty else { return field.position }
        var inner: [ObjectTable.Field] = []
        var layout = field.embedded
        for name in place.names {
            guard let found = layout?.field(name) else { return nil }
            inner.append(found)
            layout = found.embedded
        }
        let path = QueryPlan.EmbeddedPath(field: field, inner: inner)
        let index = paths.firstIndex(of: path) ?? paths.count
        if index == paths.count { paths.append(path) }
        return binding.table.fields.count + index
    }

    private func adding(
        _ keyPath: PartialKeyPath<Element>, lower: QueryRange.Bound?, upper: QueryRange.Bound?, _ operation: String
    ) -> ObjectQuery {
        adding(keyPath, operation) { .range(QueryRange(position: $0, lower: lower, upper: upper)) }
    }

    /// The query with the condition `make` builds for the plan position
    /// of the property at `keyPath`: the model's, or one inside its
    /// embedded objects (`\.home.city`).
    func adding(
        _ keyPath: PartialKeyPath<Element>, _ operation: String, _ make: (Int) -> QueryCondition
    ) -> ObjectQuery {
        var copy = self
        guard let place = Self.storedPlace(of: keyPath) else {
            copy.plan.fail(notStored(keyPath, operation))
            return copy
        }
        let condition = condition(at: place, paths: &copy.plan.embeddedPaths, make)
        copy.plan.add(condition, declaredAt: declaredPosition)
        return copy
    }

    /// The condition `make` builds for the plan position of the stored
    /// property at `place` (adding its path to `paths` when it is inside
    /// embedded objects); for a property the table or its embedded type
    /// lacks, whether the value every object reads as passes it.
    func condition(
        at place: PredicatePlace, paths: inout [QueryPlan.EmbeddedPath], _ make: (Int) -> QueryCondition
    ) -> QueryCondition {
        guard !place.names.isEmpty else { return condition(at: place.position, make) }
        if let position = planPosition(of: place, paths: &paths) { return make(position) }
        let absent =
            binding.field(at: place.position) == nil
            ? place.value(in: binding.absentValues[place.position]) : place.absent
        return .constant(make(-1).holds { _ in absent })
    }

    /// The condition `make` builds for the table field position of the
    /// stored property at model position `position`; for a property the
    /// table lacks, whether the value every object reads as passes it.
    func condition(at position: Int, _ make: (Int) -> QueryCondition) -> QueryCondition {
        if let field = binding.field(at: position) { return make(field.position) }
        let absent = binding.absentValues[position]
        return .constant(make(-1).holds { _ in absent })
    }

    /// Where the property at table field position `position` is declared
    /// in the model.
    func declaredPosition(_ position: Int) -> Int {
        binding.properties.indices.first { binding.field(at: $0)?.position == position } ?? position
    }

    /// The error for a key path on embedded type `E` that is not one of
    /// its stored properties.
    func notStoredInside<E: EmbeddedModel>(_ embedded: E.Type, _ keyPath: PartialKeyPath<E>, _ operation: String)
        -> StrataError
    {
        .notAStoredProperty(
            Self.describe(keyPath), operation: operation, model: "\(E.self)", typeName: E.schema.name,
            known: E.schema.objectSchema.properties.map(\.name).joined(separator: ", "), path: binding.table.path)
    }

    /// A key path as an error message names it: a computed property's
    /// describes itself by an address, so it is named by its value type.
    private static func describe(_ keyPath: AnyKeyPath) -> String {
        let described = "\(keyPath)"
        return described.contains("<computed") ? "a key path to a computed \(type(of: keyPath).valueType)" : described
    }

    func notStored(_ keyPath: PartialKeyPath<Element>, _ operation: String) -> StrataError {
        let table = binding.table
        let known = binding.properties.map(\.name).joined(separator: ", ")
        return .notAStoredProperty(
            Self.describe(keyPath), operation: operation, model: binding.modelName, typeName: table.name, known: known,
            path: table.path)
    }
}

extension QueryRange.Bound {
    init<V: PropertyValue>(_ value: V, _ inclusive: Bool) {
        self.init(value: value.propertyValue, inclusive: inclusive)
    }
}
