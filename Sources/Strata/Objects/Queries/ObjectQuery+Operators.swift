/// The key-path conditions beyond equality and ranges: not-equals, a set
/// of values, a string prefix.
extension ObjectQuery where Element: Model {
    /// The values whose property at `keyPath` is not `value`: another
    /// value or, for an optional, `nil` (as Swift's `!=`).
    ///
    /// It reads every record (no index holds "everything but"), and decodes
    /// only the matching ones.
    ///
    /// ```swift
    /// let others = try tx.objects(Person.self).where(\.name, notEquals: "Ann").count
    /// let withEmail = try tx.objects(Person.self).where(\.email, notEquals: nil).array()
    /// ```
    public func `where`<V: PropertyValue>(_ keyPath: KeyPath<Element, V>, notEquals value: V) -> ObjectQuery {
        adding(keyPath, "where(_:notEquals:)") { .notEqual(position: $0, value.propertyValue) }
    }

    /// The values whose property at `keyPath` is one of `values`.
    ///
    /// On an indexed property this seeks each value in the index and walks
    /// only its entries (the values then come in index order, by value); on
    /// the primary key, it reads each key's record; on any other property it
    /// reads every record and decodes only the matching ones. An empty set
    /// matches nothing.
    ///
    /// ```swift
    /// let some = try tx.objects(Person.self).where(\.age, in: [18, 21, 30] as Set).array()
    /// ```
    public func `where`<V: PropertyValue & Hashable>(_ keyPath: KeyPath<Element, V>, in values: Set<V>) -> ObjectQuery {
        adding(keyPath, "where(_:in:)") { .oneOf(position: $0, values.map(\.propertyValue)) }
    }

    /// The values whose property at `keyPath` is one of `values`; uses an
    /// index as `where(_:in:)` with a set does.
    ///
    /// ```swift
    /// let named = try tx.objects(Person.self).where(\.name, in: ["Ann", "Bob"]).array()
    /// ```
    public func `where`<V: PropertyValue>(_ keyPath: KeyPath<Element, V>, in values: [V]) -> ObjectQuery {
        adding(keyPath, "where(_:in:)") { .oneOf(position: $0, values.map(\.propertyValue)) }
    }

    /// The values whose string property at `keyPath` starts with `prefix`,
    /// compared by UTF-8 bytes (see the type's "Order and comparison").
    ///
    /// On an indexed property this walks only the index entries that start
    /// with the prefix, in index order; on any other property it reads
    /// every record and decodes only the matching ones.
    ///
    /// ```swift
    /// let abs = try tx.objects(Person.self).where(\.name, hasPrefix: "Ab").array()
    /// ```
    public func `where`(_ keyPath: KeyPath<Element, String>, hasPrefix prefix: String) -> ObjectQuery {
        adding(keyPath, "where(_:hasPrefix:)") { .prefix(position: $0, prefix) }
    }

    /// The values whose optional string property at `keyPath` is not nil
    /// and starts with `prefix`; uses an index as the non-optional
    /// `where(_:hasPrefix:)` does.
    public func `where`(_ keyPath: KeyPath<Element, String?>, hasPrefix prefix: String) -> ObjectQuery {
        adding(keyPath, "where(_:hasPrefix:)") { .prefix(position: $0, prefix) }
    }
}
