/// The objects of one model type, read lazily and decoded as model values.
///
/// A query is a description, not a copy: nothing is read until a terminal
/// operation (``forEach(_:)``, ``map(_:)``, ``array()``, ``first()``,
/// ``count``) walks it. Narrow it with ``filter(_:)``, a closure run on
/// each decoded value.
///
/// ```swift
/// let names = try db.read { tx in
///     try tx.objects(Person.self).filter { $0.age >= 18 }.map(\.name)
/// }
/// ```
///
/// A query is valid only inside the transaction that made it. It is not a
/// Swift `Sequence`, whose iterator cannot throw: reading a damaged record
/// is an error, never a crash.
public struct ModelQuery<M: Model> {
    let context: ObjectContext
    let binding: ModelBinding
    var predicates: [(M) throws -> Bool] = []

    init(context: ObjectContext, binding: ModelBinding) {
        self.context = context
        self.binding = binding
    }

    /// The values for which `isIncluded` returns true. Lazy: the closure
    /// runs while the result is walked.
    public func filter(_ isIncluded: @escaping (M) throws -> Bool) -> ModelQuery {
        var copy = self
        copy.predicates.append(isIncluded)
        return copy
    }

    /// Calls `body` with each value, in primary-key order.
    ///
    /// - Throws: What `body` or a filter throws, or a ``StrataError`` for a
    ///   damaged record or a stored value the model cannot hold.
    public func forEach(_ body: (M) throws -> Void) throws {
        try iterate {
            try body($0)
            return true
        }
    }

    /// The results of `transform` on each value.
    public func map<T>(_ transform: (M) throws -> T) throws -> [T] {
        var result: [T] = []
        try iterate {
            result.append(try transform($0))
            return true
        }
        return result
    }

    /// Every value, in an array.
    public func array() throws -> [M] {
        try map { $0 }
    }

    /// The first value, or nil when there is none.
    public func first() throws -> M? {
        var found: M?
        try iterate {
            found = $0
            return false
        }
        return found
    }

    /// The number of values. Without filters this reads one counter and
    /// does not depend on the number of objects.
    public var count: Int {
        get throws {
            if predicates.isEmpty { return try context.lmdb.entryCount(binding.table.records) }
            var n = 0
            try iterate { _ in
                n += 1
                return true
            }
            return n
        }
    }

    /// Whether there are no values.
    public var isEmpty: Bool {
        get throws { try first() == nil }
    }

    /// Walks the matching values until `body` returns false.
    func iterate(_ body: (M) throws -> Bool) throws {
        if predicates.isEmpty { return try scan(body) }
        let predicates = self.predicates
        try scan { value in
            for predicate in predicates where try !predicate(value) { return true }
            return try body(value)
        }
    }

    /// Walks the table in key order, decoding each record. In a write
    /// transaction the walk stops at the key that was last when it began,
    /// as ``ObjectCollection`` does.
    private func scan(_ body: (M) throws -> Bool) throws {
        let table = binding.table
        let binding = self.binding
        try context.lmdb.withCursor(table.records) { cursor in
            let end = context.copiesObjects ? try cursor.last().map { Array($0.key) } : nil
            var entry = try cursor.first()
            while let (key, record) = entry {
                if let end, KeyCodec.compare(key, end) > 0 { return }
                let view = try table.validatedView(key: key, record: record)
                let emptied = context.engine.tablesEmptied
                guard try body(try binding.decode(M.self, record: view, key: key)),
                    context.engine.tablesEmptied == emptied
                else { return }
                entry = try cursor.next()
            }
        }
    }
}

@available(*, unavailable, message: "A ModelQuery is valid only inside its transaction.")
extension ModelQuery: Sendable {}
