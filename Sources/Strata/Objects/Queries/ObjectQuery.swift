import Foundation

/// The objects of one type, read lazily: as model values
/// (`ObjectQuery<Person>`, from `tx.objects(Person.self)`) or as dynamic
/// objects (`ObjectQuery<DynamicObject>`, from `tx.objects("Person")`).
///
/// A query is a description, not a copy: nothing is read until a terminal
/// operation (``forEach(_:)``, ``map(_:)``, ``array()``, ``first()``,
/// ``count``, ``isEmpty``) walks it. Both kinds share every member that
/// does not name a property: `filter(_:)` (a closure run on each
/// value), ``offset(_:)``, ``limit(_:)``, ``whereSchemaVersion(_:)`` and
/// the terminal operations. A model query names properties by key path
/// (`where(\.age, in: 18..<30)`, `sorted(by: \.age)`, a Foundation
/// `#Predicate`); a dynamic one by name (`where("age", in: 18..<30)`,
/// `sorted(by: "age")`). Either is translated into one query plan, so both
/// choose their walk, order and compare values the same way.
///
/// ```swift
/// let young = try db.read { tx in
///     try tx.objects(Person.self)
///         .where(\.age, in: 18..<30)
///         .sorted(by: \.age)
///         .limit(10)
///         .map(\.name)
/// }
/// let named = try db.read { tx in
///     try tx.objects("Person").where("age", in: 18..<30).sorted(by: "age").limit(10).map { $0["name"] }
/// }
/// ```
///
/// ## When a mistake is reported
///
/// Building a query never throws. A property the type does not store (a
/// computed or `@Transient` key path, a name the type lacks), or a value
/// of the wrong type for a dynamic `where`, is kept, and the query throws
/// it as a ``StrataError`` naming the type and the property when it runs
/// (a terminal operation, or an observation's first evaluation), before
/// anything is read. Both kinds behave alike, so a query can be built in
/// an observation's closure, which cannot throw.
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
/// - A sort on the primary key walks the table in key order, forward or
///   backward; on an indexed property, it walks the index, and a `where`
///   on the same property bounds that one walk. On any other property the
///   matching objects are decoded, kept in memory and sorted: O(n log n)
///   time and memory for every matching object, even with a
///   ``limit(_:)`` or for ``first()``.
/// - ``limit(_:)`` and ``first()`` stop the walk as soon as they have
///   their values, except after an in-memory sort.
/// - ``count`` without filters reads one counter; with `where`s only, it
///   walks without decoding (an index equality counts the entries of one
///   key without reading a record).
///
/// ## Order and comparison
///
/// Without a sort, values come in primary-key order, or in index order
/// (by value, then primary key) when an indexed `where` chooses the walk.
/// `where` and `sorted` compare stored values as the index orders them:
/// numbers, decimals and dates numerically (`-0.0` equals `0.0`, `2.5`
/// equals `2.50`, NaN sorts after infinity), strings by their UTF-8 bytes
/// (Unicode scalar order, which agrees with Swift's `<` on NFC-normalized
/// text), `false` before `true`, links by their target's primary key, and
/// `nil` before every value. Equal values are ordered by primary key (in
/// its key order: strings by their UTF-8 bytes), and a descending sort is
/// the exact reverse of the ascending one. The order in which `where`,
/// `filter`, `sorted` and `limit` are chained does not matter: the limit
/// applies last, to the sorted matching values.
///
/// A query is valid only inside the transaction that made it. In a write
/// transaction it sees the transaction's own writes; a walk does not go
/// past the entry that was last (first, walking backward) when it began,
/// so a body that inserts objects still finishes. A query is not a Swift
/// `Sequence`, whose iterator cannot throw: reading a damaged record is an
/// error, never a crash.
public struct ObjectQuery<Element: QueryElement> {
    let context: ObjectContext
    /// The object type's table.
    let table: ObjectTable
    /// How a model reads the table; nil for dynamic objects.
    let modelBinding: ModelBinding?
    /// The closure filters, run on each value the plan lets through.
    @usableFromInline var predicates: [(Element) throws -> Bool] = []
    /// The `where`s, order and limit: the one plan of both element kinds.
    var plan: QueryPlan

    init(context: ObjectContext, table: ObjectTable, binding: ModelBinding?, plan: QueryPlan? = nil) {
        self.context = context
        self.table = table
        self.modelBinding = binding
        self.plan = plan ?? QueryPlan(table: table)
    }

    /// The stored name of the object type.
    public var typeName: String { table.name }

    /// The values for which `isIncluded` returns true. Lazy: the closure
    /// runs while the result is walked, on each value that the `where`s
    /// let through.
    ///
    /// ```swift
    /// let gmail = try tx.objects(Person.self).filter { $0.email?.hasSuffix("@gmail.com") == true }.count
    /// let adults = try tx.objects("Person").filter { $0["age"].int! >= 18 }.count
    /// ```
    public func filter(_ isIncluded: @escaping (Element) throws -> Bool) -> ObjectQuery {
        var copy = self
        copy.predicates.append(isIncluded)
        return copy
    }

    /// The values whose effective schema version — the version of the app
    /// that last wrote each object — is in `versions`. Read from each
    /// record's header before anything is decoded.
    ///
    /// ```swift
    /// // Objects not rewritten since version 6 was introduced:
    /// let stale = try tx.objects("Issue").whereSchemaVersion(..<6).count
    /// // Objects a newer app version wrote (synced mode):
    /// let newer = try tx.objects(Issue.self).whereSchemaVersion((tx.appSchemaVersion + 1)...).count
    /// ```
    public func whereSchemaVersion(_ versions: some RangeExpression<UInt64> & Sendable) -> ObjectQuery {
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
    public func offset(_ count: Int) -> ObjectQuery {
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
    public func limit(_ count: Int) -> ObjectQuery {
        var copy = self
        copy.plan.cut(to: count)
        return copy
    }

    /// Calls `body` with each value, in the query's order.
    ///
    /// - Throws: What `body` or a filter throws, or a ``StrataError`` for a
    ///   property the type does not store or a value of the wrong type
    ///   (see "When a mistake is reported"), a damaged record, or a stored
    ///   value a model cannot hold.
    @inlinable
    public func forEach(_ body: (Element) throws -> Void) throws {
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
    public func map<T>(_ transform: (Element) throws -> T) throws -> [T] {
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
    public func array() throws -> [Element] {
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
    public func first() throws -> Element? {
        var found: Element?
        try limit(1).iterate {
            found = $0
            return false
        }
        return found
    }

    /// The first value in the query's order that satisfies `predicate`, or
    /// nil; the walk stops there.
    ///
    /// - Throws: As ``forEach(_:)``, or what `predicate` throws.
    @inlinable
    public func first(where predicate: (Element) throws -> Bool) throws -> Element? {
        var found: Element?
        try iterate {
            guard try predicate($0) else { return true }
            found = $0
            return false
        }
        return found
    }

    /// Whether any value satisfies `predicate`; the walk stops at the
    /// first that does.
    ///
    /// - Throws: As ``first(where:)``.
    @inlinable
    public func contains(where predicate: (Element) throws -> Bool) throws -> Bool {
        try first(where: predicate) != nil
    }

    /// The number of values.
    ///
    /// Without `where`s or filters this reads one counter and does not
    /// depend on the number of objects. With `where`s only, it walks
    /// without making a value; an equality on an indexed property counts
    /// the entries of one index key. Filters make it make each value that
    /// the `where`s let through.
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
}

/// The typed query's name before the element could be a dynamic object.
public typealias ModelQuery<M: Model> = ObjectQuery<M>

/// The dynamic query's name before it shared the typed one's type.
public typealias ObjectCollection = ObjectQuery<DynamicObject>

@available(*, unavailable, message: "An ObjectQuery is valid only inside its transaction.")
extension ObjectQuery: Sendable {}
