/// The objects of one type, read lazily in primary-key order.
///
/// A collection is a description, not a copy: nothing is read until you
/// iterate it with ``forEach(_:)``, ``map(_:)``, ``first()`` or ``count``.
/// Narrow it with ``filter(_:)`` (a closure run on each object) or
/// ``where(_:equals:)`` (an equality test that uses the property's index
/// when it has one).
///
/// ```swift
/// let adults = try db.read { tx in
///     try tx.objects("Person").filter { $0["age"].int! >= 18 }.count
/// }
/// let named = try db.read { tx in
///     try tx.objects("Person").where("lastName", equals: "Lovelace").map { $0["id"] }
/// }
/// ```
///
/// A collection is valid only inside the transaction that made it.
public struct ObjectCollection {
    let context: ObjectContext
    let table: ObjectTable
    private var lookup: (field: ObjectTable.Field, value: Value)?
    private var predicates: [(DynamicObject) throws -> Bool] = []

    init(context: ObjectContext, table: ObjectTable) {
        self.context = context
        self.table = table
    }

    /// The name of the collection's object type.
    public var typeName: String { table.name }

    /// The objects for which `isIncluded` returns true. Lazy: the closure
    /// runs while the result is iterated.
    public func filter(_ isIncluded: @escaping (DynamicObject) throws -> Bool) -> ObjectCollection {
        var copy = self
        copy.predicates.append(isIncluded)
        return copy
    }

    /// The objects whose effective schema version — the version under which
    /// each was last written — is in `versions`.
    ///
    /// ```swift
    /// // Objects not rewritten since version 6 was introduced:
    /// let stale = try tx.objects("Issue").whereSchemaVersion(..<6).count
    /// // Objects written by a newer app version than this one (synced mode):
    /// let newer = try tx.objects("Issue").whereSchemaVersion((tx.appSchemaVersion + 1)...).count
    /// ```
    public func whereSchemaVersion(_ versions: some RangeExpression<UInt64>) -> ObjectCollection {
        filter { versions.contains($0.schemaVersion) }
    }

    /// The objects whose `property` equals `value`.
    ///
    /// On an indexed property, or the primary key, this reads only the
    /// matching objects; otherwise it scans the type.
    ///
    /// - Throws: ``StrataError`` when the type has no such property or the
    ///   value has the wrong type.
    public func `where`(_ property: String, equals value: Value) throws -> ObjectCollection {
        let field = try table.field(named: property)
        let value = value.coerced(to: field.type)
        guard value.fits(field.type, optional: true) else {
            throw StrataError.invalidValue(
                "Property '\(table.name).\(property)' is \(field.type); it cannot equal \(value) (in \(context.path)).",
                typeName: table.name, property: property, remedy: "Compare it with a value of type \(field.type).",
                path: context.path)
        }
        var copy = self
        if copy.lookup == nil {
            copy.lookup = (field, value)
        } else {
            copy.predicates.append { $0.value(of: field).isStored(identicallyTo: value) }
        }
        return copy
    }

    /// Calls `body` with each object, in primary-key order (index order for
    /// an indexed ``where(_:equals:)``).
    ///
    /// - Throws: What `body` or a filter throws, or a ``StrataError`` for a
    ///   damaged record.
    public func forEach(_ body: (DynamicObject) throws -> Void) throws {
        try iterate {
            try body($0)
            return true
        }
    }

    /// The results of `transform` on each object.
    public func map<T>(_ transform: (DynamicObject) throws -> T) throws -> [T] {
        var result: [T] = []
        try iterate {
            result.append(try transform($0))
            return true
        }
        return result
    }

    /// The first object, or nil when there is none.
    public func first() throws -> DynamicObject? {
        var found: DynamicObject?
        try iterate {
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

    /// The number of objects. Without filters this reads one counter and
    /// does not depend on the number of objects.
    public var count: Int {
        get throws {
            if lookup == nil && predicates.isEmpty { return try context.lmdb.entryCount(table.records) }
            var n = 0
            try iterate { _ in
                n += 1
                return true
            }
            return n
        }
    }

    /// Whether there are no objects.
    public var isEmpty: Bool {
        get throws { try first() == nil }
    }

    // MARK: Iteration

    /// Walks the matching objects until `body` returns false.
    private func iterate(_ body: (DynamicObject) throws -> Bool) throws {
        // The common full scan, without the layer that filters need.
        if lookup == nil && predicates.isEmpty { return try scan(body) }
        let predicates = self.predicates
        func visit(_ object: DynamicObject) throws -> Bool {
            for predicate in predicates where try !predicate(object) { return true }
            return try body(object)
        }
        guard let lookup else { return try scan(visit) }
        if lookup.field.isPrimaryKey {
            if let object = try context.object(table.name, key: lookup.value) { _ = try visit(object) }
        } else if let index = lookup.field.index {
            try indexLookup(index: index, field: lookup.field, value: lookup.value, visit)
        } else {
            try scan { object in
                object.value(of: lookup.field).isStored(identicallyTo: lookup.value) ? try visit(object) : true
            }
        }
    }

    /// Walks the table in key order. In a write transaction the walk stops
    /// at the key that was last when it began, so that objects the body
    /// inserts after it are not visited (a body that inserts one object per
    /// object visited would otherwise never finish).
    @inline(__always)
    private func scan(_ body: (DynamicObject) throws -> Bool) throws {
        try context.lmdb.withCursor(table.records) { cursor in
            let end = context.copiesObjects ? try cursor.last().map { Array($0.key) } : nil
            var entry = try cursor.first()
            let token = context.lifetime.token
            let copies = context.copiesObjects
            while let (key, record) = entry {
                if let end, KeyCodec.compare(key, end) > 0 { return }
                if copies {
                    let emptied = context.engine.tablesEmptied
                    guard try body(try context.object(table: table, key: key, record: record)),
                        context.engine.tablesEmptied == emptied
                    else { return }
                } else {
                    // Built here rather than by `context.object`, which makes
                    // the compiler copy the object once more on its way to `body`.
                    let view = try table.validatedView(key: key, record: record)
                    guard try body(DynamicObject(table: table, key: key, record: view, lifetime: token, copy: nil))
                    else { return }
                }
                entry = try cursor.next()
            }
        }
    }

    private func indexLookup(
        index: DatabaseHandle, field: ObjectTable.Field, value: Value, _ body: (DynamicObject) throws -> Bool
    ) throws {
        var writer = ByteWriter(capacity: 64)
        let truncated = FileLayout.appendIndexKey(value, to: &writer)
        try writer.withUnsafeBytes { indexKey in
            try context.lmdb.withCursor(index) { indexCursor in
                try context.lmdb.withCursor(table.records) { records in
                    guard try indexCursor.seek(exactly: indexKey) != nil else { return }
                    // As in `scan`: in a write transaction, stop at the entry
                    // that was last when the walk began.
                    let end = context.copiesObjects ? try indexCursor.lastDuplicate().map { Array($0.value) } : nil
                    var entry = try indexCursor.firstDuplicate()
                    while let (_, objectKey) = entry {
                        if let end, KeyCodec.compare(objectKey, end) > 0 { return }
                        guard let (key, record) = try records.seek(exactly: objectKey) else {
                            throw table.missingIndexedObject(indexed: field.name)
                        }
                        let object = try context.object(table: table, key: key, record: record)
                        // A cut key matches every value with the same prefix.
                        if !truncated || object.value(of: field).isStored(identicallyTo: value) {
                            let emptied = context.engine.tablesEmptied
                            guard try body(object), context.engine.tablesEmptied == emptied else { return }
                        }
                        entry = try indexCursor.nextDuplicate()
                    }
                }
            }
        }
    }
}

@available(*, unavailable, message: "An ObjectCollection is valid only inside its transaction.")
extension ObjectCollection: Sendable {}
