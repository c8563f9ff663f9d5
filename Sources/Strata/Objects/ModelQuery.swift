import Foundation

/// The objects of one model type, read lazily and decoded as model values.
///
/// A query is a description, not a copy: nothing is read until a terminal
/// operation (``forEach(_:)``, ``map(_:)``, ``array()``, ``first()``,
/// ``count``, ``isEmpty``) walks it. Narrow it by key path with
/// ``where(_:equals:)``, `where(_:notEquals:)`, `where(_:in:)` (a range
/// or a set of values) and `where(_:hasPrefix:)`, with a Foundation
/// `#Predicate` (`filter(_:)`, translated into the same plan), or with a
/// closure run on each decoded value (`filter(_:)`); order it with
/// ``sorted(by:ascending:)``; cut it with ``limit(_:)``.
///
/// ```swift
/// let young = try db.read { tx in
///     try tx.objects(Person.self)
///         .where(\.age, in: 18..<30)
///         .sorted(by: \.age)
///         .limit(10)
///         .map(\.name)
/// }
/// ```
///
/// ## Which operations use an index
///
/// - A `where` on the primary key reads only the matching objects, in key
///   order; on an indexed property it walks only the matching index
///   entries. On any other property it decodes nothing it can skip: the
///   stored value is compared in the record before the object is decoded,
///   but every record is read.
/// - With several `where`s, one of them chooses the walk (an equality on
///   the primary key, else on an index, else a range, a set of values or
///   a prefix on the primary key, else on an index; between two of one
///   kind, the property declared first); the others are checked on each
///   record it reaches.
/// - ``sorted(by:ascending:)`` on the primary key walks the table in key
///   order, forward or backward; on an indexed property, it walks the
///   index, and a `where` on the same property bounds that one walk. On
///   any other property the matching objects are decoded, kept in memory
///   and sorted: O(n log n) time and memory for every matching object,
///   even with a ``limit(_:)`` or for ``first()``.
/// - ``limit(_:)`` and ``first()`` stop the walk as soon as they have
///   their values, except after an in-memory sort.
/// - ``count`` without filters reads one counter; with `where`s only, it
///   walks without decoding (an index equality counts the entries of one
///   key without reading a record).
///
/// ## Order and comparison
///
/// Without ``sorted(by:ascending:)``, values come in primary-key order,
/// or in index order (by value, then primary key) when an indexed `where`
/// chooses the walk. `where` and `sorted` compare stored values as the
/// index orders them: numbers, decimals and dates numerically (`-0.0`
/// equals `0.0`, `2.5` equals `2.50`, NaN sorts after infinity), strings by their UTF-8 bytes (Unicode
/// scalar order, which agrees with Swift's `<` on NFC-normalized text),
/// `false` before `true`, links by their target's primary key, and `nil`
/// before every value. Equal values are ordered by primary key (in its
/// key order: strings by their UTF-8 bytes), and a descending sort is the
/// exact reverse of the ascending one. The order in which `where`,
/// `filter`, `sorted` and `limit` are chained does not matter: the limit
/// applies last, to the sorted matching values.
///
/// A query is valid only inside the transaction that made it. In a write
/// transaction it sees the transaction's own writes; a walk does not go
/// past the entry that was last (first, walking backward) when it began,
/// so a body that inserts objects still finishes. A query is not a Swift
/// `Sequence`, whose iterator cannot throw: reading a damaged record is an
/// error, never a crash.
public struct ModelQuery<M: Model> {
    let context: ObjectContext
    let binding: ModelBinding
    @usableFromInline var predicates: [(M) throws -> Bool] = []
    /// The `where`s, order and limit, shared with the dynamic API.
    var plan: QueryPlan

    init(context: ObjectContext, binding: ModelBinding, plan: QueryPlan? = nil) {
        self.context = context
        self.binding = binding
        self.plan = plan ?? QueryPlan(table: binding.table)
    }

    /// The values for which `isIncluded` returns true. Lazy: the closure
    /// runs while the result is walked, on each value that the `where`s
    /// let through.
    ///
    /// ```swift
    /// let gmail = try tx.objects(Person.self).filter { $0.email?.hasSuffix("@gmail.com") == true }.count
    /// ```
    public func filter(_ isIncluded: @escaping (M) throws -> Bool) -> ModelQuery {
        var copy = self
        copy.predicates.append(isIncluded)
        return copy
    }

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
    public func `where`<V: PropertyValue>(_ keyPath: KeyPath<M, V>, equals value: V) -> ModelQuery {
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
    public func `where`<V: PropertyValue & Comparable>(_ keyPath: KeyPath<M, V>, in range: Range<V>) -> ModelQuery {
        adding(keyPath, lower: .init(range.lowerBound, true), upper: .init(range.upperBound, false), "where(_:in:)")
    }

    /// The values whose property at `keyPath` lies in `range`.
    ///
    /// ```swift
    /// let twenties = try tx.objects(Person.self).where(\.age, in: 20...29).count
    /// ```
    ///
    /// Uses an index as `where(_:in:)` does.
    public func `where`<V: PropertyValue & Comparable>(_ keyPath: KeyPath<M, V>, in range: ClosedRange<V>)
        -> ModelQuery
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
    public func `where`<V: PropertyValue & Comparable>(_ keyPath: KeyPath<M, V>, in range: PartialRangeFrom<V>)
        -> ModelQuery
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
    public func `where`<V: PropertyValue & Comparable>(_ keyPath: KeyPath<M, V>, in range: PartialRangeThrough<V>)
        -> ModelQuery
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
    public func `where`<V: PropertyValue & Comparable>(_ keyPath: KeyPath<M, V>, in range: PartialRangeUpTo<V>)
        -> ModelQuery
    {
        adding(keyPath, lower: nil, upper: .init(range.upperBound, false), "where(_:in:)")
    }

    /// The values ordered by their property at `keyPath`, smallest first,
    /// or largest first when `ascending` is false. Equal values are
    /// ordered by primary key (reversed when descending). A later `sorted`
    /// replaces an earlier one; to sort by several keys, give them
    /// together: ``sorted(using:)-([SortDescriptor<M>])``.
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
    public func sorted<V: PropertyValue>(by keyPath: KeyPath<M, V>, ascending: Bool = true) -> ModelQuery {
        sorted([(keyPath, ascending)], "sorted(by:)")
    }

    /// The values ordered by `descriptors`: the first orders, each later
    /// one orders the values the earlier ones leave equal, each forward or
    /// reverse, and the primary key orders what they all leave equal (in
    /// the first one's direction). Replaces an earlier `sorted`.
    ///
    /// The first key decides the walk as in ``sorted(by:ascending:)``: on
    /// an indexed property the walk follows the index and sorts only the
    /// values that share a key by the further keys. Strata orders values
    /// as it stores and indexes them: strings by their UTF-8 bytes, not by
    /// a descriptor's localized comparator. A descriptor may name a `Bool`
    /// or a ``PersistableEnum`` that is not `Comparable` (Strata's
    /// `SortDescriptor` initializers; an enum by its raw value) and a
    /// property inside embedded objects, as ``sorted(by:ascending:)``.
    ///
    /// ```swift
    /// let people = try tx.objects(Person.self)
    ///     .sorted(using: [SortDescriptor(\.lastName), SortDescriptor(\.age, order: .reverse)])
    ///     .array()
    /// ```
    public func sorted(using descriptors: [SortDescriptor<M>]) -> ModelQuery {
        var keys: [(PartialKeyPath<M>, Bool)] = []
        for descriptor in descriptors {
            guard let keyPath = descriptor.keyPath else {
                var copy = self
                copy.plan.fail(notStored(\M.self, "sorted(using:) with a descriptor that has no key path"))
                return copy
            }
            keys.append((keyPath, descriptor.order == .forward))
        }
        return sorted(keys, "sorted(using:)")
    }

    /// The values ordered by `descriptors`: ``sorted(using:)-([SortDescriptor<M>])``.
    public func sorted(using descriptors: SortDescriptor<M>...) -> ModelQuery {
        sorted(using: descriptors)
    }

    private func sorted(_ keys: [(PartialKeyPath<M>, Bool)], _ operation: String) -> ModelQuery {
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

    /// The values whose effective schema version — the version of the app
    /// that last wrote each object — is in `versions`. Read from each
    /// record's header before anything is decoded.
    ///
    /// ```swift
    /// // Objects a newer app version wrote (synced mode):
    /// let newer = try tx.objects(Issue.self).whereSchemaVersion((tx.appSchemaVersion + 1)...).count
    /// ```
    public func whereSchemaVersion(_ versions: some RangeExpression<UInt64> & Sendable) -> ModelQuery {
        var copy = self
        copy.plan.keepSchemaVersions(versions)
        return copy
    }

    /// The values after the first `count` in the query's order (counted
    /// after the `where`s and filters): with ``limit(_:)``, a page.
    /// Whichever is given first, the offset applies before the limit; a
    /// later offset replaces an earlier one.
    ///
    /// ```swift
    /// let thirdPage = try tx.objects(Person.self).sorted(by: \.lastName).offset(40).limit(20).array()
    /// ```
    ///
    /// The walk still passes over the first `count` values, one by one; an
    /// index on the first sort key saves sorting them, not reading them.
    ///
    /// - Precondition: `count` is not negative.
    public func offset(_ count: Int) -> ModelQuery {
        var copy = self
        copy.plan.skip(count)
        return copy
    }

    /// At most `count` values: the first ones in the query's order. The
    /// walk stops as soon as it has them (after an in-memory sort, once
    /// the sort is done).
    ///
    /// ```swift
    /// let youngestThree = try tx.objects(Person.self).sorted(by: \.age).limit(3).array()
    /// ```
    ///
    /// - Precondition: `count` is not negative.
    public func limit(_ count: Int) -> ModelQuery {
        var copy = self
        copy.plan.cut(to: count)
        return copy
    }

    /// Calls `body` with each value, in the query's order.
    ///
    /// - Throws: What `body` or a filter throws, or a ``StrataError`` for a
    ///   key path that is not a stored property, a damaged record, or a
    ///   stored value the model cannot hold.
    @inlinable
    public func forEach(_ body: (M) throws -> Void) throws {
        try iterate {
            try body($0)
            return true
        }
    }

    /// The results of `transform` on each value, in the query's order.
    ///
    /// ```swift
    /// let names = try tx.objects(Person.self).sorted(by: \.name).map(\.name)
    /// ```
    ///
    /// - Throws: As ``forEach(_:)``.
    @inlinable
    public func map<T>(_ transform: (M) throws -> T) throws -> [T] {
        var result: [T] = []
        try iterate {
            result.append(try transform($0))
            return true
        }
        return result
    }

    /// Every value, in an array, in the query's order.
    ///
    /// - Throws: As ``forEach(_:)``.
    @inlinable
    public func array() throws -> [M] {
        try map { $0 }
    }

    /// The first value in the query's order, or nil when there is none.
    /// It stops the walk at that value, except after an in-memory sort.
    ///
    /// ```swift
    /// let oldest = try tx.objects(Person.self).sorted(by: \.age, ascending: false).first()
    /// ```
    ///
    /// - Throws: As ``forEach(_:)``.
    @inlinable
    public func first() throws -> M? {
        var found: M?
        try limit(1).iterate {
            found = $0
            return false
        }
        return found
    }

    /// The number of values.
    ///
    /// Without `where`s or filters this reads one counter and does not
    /// depend on the number of objects. With `where`s only, it walks
    /// without decoding an object; an equality on an indexed property
    /// counts the entries of one index key. Filters make it decode each
    /// object that the `where`s let through.
    ///
    /// - Throws: As ``forEach(_:)``.
    public var count: Int {
        get throws { try countValues() }
    }

    /// Whether there are no values; it stops at the first one.
    ///
    /// - Throws: As ``forEach(_:)``.
    public var isEmpty: Bool {
        get throws { try limit(1).count == 0 }
    }

    private func adding(
        _ keyPath: PartialKeyPath<M>, lower: QueryRange.Bound?, upper: QueryRange.Bound?, _ operation: String
    ) -> ModelQuery {
        adding(keyPath, operation) { .range(QueryRange(position: $0, lower: lower, upper: upper)) }
    }

    /// The query with the condition `make` builds for the plan position
    /// of the property at `keyPath`: the model's, or one inside its
    /// embedded objects (`\.home.city`).
    func adding(
        _ keyPath: PartialKeyPath<M>, _ operation: String, _ make: (Int) -> QueryCondition
    ) -> ModelQuery {
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

    func notStored(_ keyPath: PartialKeyPath<M>, _ operation: String) -> StrataError {
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

@available(*, unavailable, message: "A ModelQuery is valid only inside its transaction.")
extension ModelQuery: Sendable {}
