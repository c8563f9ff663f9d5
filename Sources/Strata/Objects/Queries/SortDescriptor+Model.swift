import Foundation

extension SortDescriptor where Compared: Model {
    /// Orders models by a `Bool` property, `false` first, as Strata stores
    /// and sorts it.
    ///
    /// `Bool` is not `Comparable`, so Foundation's own initializers refuse
    /// it; this one orders by the property's stored value, and
    /// ``ObjectQuery/sorted(using:)-([SortDescriptor<Element>])`` reads it as the
    /// property itself (an index on it is walked as for
    /// `sorted(by: \.isDone)`).
    ///
    /// ```swift
    /// let openFirst = try tx.objects(Task.self)
    ///     .sorted(using: [SortDescriptor(\.isDone), SortDescriptor(\.title)])
    ///     .array()
    /// ```
    ///
    /// - Parameters:
    ///   - keyPath: A stored `Bool` property.
    ///   - order: Forward puts `false` first.
    public init(_ keyPath: KeyPath<Compared, Bool> & Sendable, order: SortOrder = .forward) {
        self.init(sendable(keyPath.appending(path: \Bool.storedOrder)), order: order)
    }

    /// Orders models by an optional `Bool` property: `nil`, then `false`,
    /// then `true`, as Strata stores and sorts it.
    ///
    /// - Parameters:
    ///   - keyPath: A stored `Bool?` property.
    ///   - order: Forward puts `nil` first.
    public init(_ keyPath: KeyPath<Compared, Bool?> & Sendable, order: SortOrder = .forward) {
        self.init(sendable(keyPath.appending(path: \Bool?.?.storedOrder)), order: order)
    }

    /// Orders models by a ``PersistableEnum`` property, by its raw value,
    /// as Strata stores and sorts it; the enum need not be `Comparable`.
    ///
    /// ```swift
    /// let byStatus = try tx.objects(Task.self).sorted(using: [SortDescriptor(\.status)]).array()
    /// ```
    ///
    /// - Parameters:
    ///   - keyPath: A stored enum property.
    ///   - order: Forward puts the smallest raw value first (strings by
    ///     their UTF-8 bytes in a query).
    public init<E: PersistableEnum>(_ keyPath: KeyPath<Compared, E> & Sendable, order: SortOrder = .forward)
    where E.RawValue: Comparable {
        self.init(sendable(keyPath.appending(path: \E.rawValue)), order: order)
    }

    /// Orders models by an optional ``PersistableEnum`` property: `nil`
    /// first, then by raw value.
    ///
    /// - Parameters:
    ///   - keyPath: A stored optional enum property.
    ///   - order: Forward puts `nil` first.
    public init<E: PersistableEnum>(_ keyPath: KeyPath<Compared, E?> & Sendable, order: SortOrder = .forward)
    where E.RawValue: Comparable {
        self.init(sendable(keyPath.appending(path: \E?.?.rawValue)), order: order)
    }

    /// Orders models by a ``PersistableEnum`` property that is also
    /// `Comparable`: by its own `<` for Foundation, by its raw value in a
    /// query, as every enum property.
    ///
    /// - Parameters:
    ///   - keyPath: A stored enum property.
    ///   - order: The direction.
    public init<E: PersistableEnum & Comparable>(
        _ keyPath: KeyPath<Compared, E> & Sendable, order: SortOrder = .forward
    ) where E.RawValue: Comparable {
        self = comparableDescriptor(keyPath, order)
    }

    /// Orders models by an optional ``PersistableEnum`` property that is
    /// also `Comparable`: `nil` first, then by its own `<` for
    /// Foundation, by its raw value in a query.
    ///
    /// - Parameters:
    ///   - keyPath: A stored optional enum property.
    ///   - order: The direction.
    public init<E: PersistableEnum & Comparable>(
        _ keyPath: KeyPath<Compared, E?> & Sendable, order: SortOrder = .forward
    ) where E.RawValue: Comparable {
        self = comparableDescriptor(keyPath, order)
    }
}

/// Foundation's descriptor for a `Comparable` value: outside the
/// extension above, whose initializers would otherwise call themselves.
private func comparableDescriptor<C, V: Comparable>(_ keyPath: KeyPath<C, V> & Sendable, _ order: SortOrder)
    -> SortDescriptor<C>
{
    SortDescriptor(keyPath, order: order)
}

/// Foundation's descriptor for an optional `Comparable` value.
private func comparableDescriptor<C, V: Comparable>(_ keyPath: KeyPath<C, V?> & Sendable, _ order: SortOrder)
    -> SortDescriptor<C>
{
    SortDescriptor(keyPath, order: order)
}

/// `keyPath`, typed as the `Sendable` value it is: a `Sendable` key path
/// appended with a literal of stored properties captures nothing, but
/// `appending(path:)` returns a plain `KeyPath`. A marker protocol adds
/// nothing to the reference, so the cast does not change it.
private func sendable<C, V>(_ keyPath: KeyPath<C, V>) -> KeyPath<C, V> & Sendable {
    unsafeBitCast(keyPath, to: (KeyPath<C, V> & Sendable).self)
}

extension Bool {
    /// `false` before `true`, as stored: what a sort descriptor of a
    /// `Bool` property compares.
    var storedOrder: UInt8 { self ? 1 : 0 }
}

extension PersistableEnum {
    /// The key paths that a sort descriptor of a property of this enum
    /// appends to the property's: to the raw value, of the enum and of
    /// its optional.
    static var sortKeyPaths: [AnyKeyPath] { [\Self.rawValue, \Self?.?.rawValue] }
}

extension ModelSchema {
    /// The stored property that a `where`'s or a sort's key path names: a
    /// property (or a
    /// `Bool` or enum property through what a ``SortDescriptor`` appends
    /// to it), or one inside required embedded objects
    /// (`\.step.label`): its position, and the stored names inside the
    /// embedded objects on the way. Nil when it names none.
    func storedPlace(of keyPath: AnyKeyPath, under prefix: AnyKeyPath? = nil) -> (position: Int, names: [String])? {
        for (position, property) in objectSchema.properties.enumerated() {
            let own: AnyKeyPath = self.keyPath(at: position)
            guard let full = prefix.map({ $0.appending(path: own) }) ?? own else { continue }
            var appended: [AnyKeyPath] = []
            if property.type == .bool { appended = [\Bool.storedOrder, \Bool?.?.storedOrder] }
            if let type = enumTypes[position] { appended = type.sortKeyPaths }
            if full == keyPath || appended.contains(where: { full.appending(path: $0) == keyPath }) {
                return (position, [])
            }
            guard property.type == .embedded, !property.isOptional, let type = embeddedTypesByPosition[position]
            else { continue }
            func inside<E: EmbeddedModel>(_ type: E.Type) -> [String]? {
                E.schema.storedPlace(of: keyPath, under: full).map {
                    [E.schema.objectSchema.properties[$0.position].name] + $0.names
                }
            }
            if let names = inside(type) { return (position, names) }
        }
        return nil
    }
}

extension ObjectQuery where Element: Model {
    /// The stored property that a `where`'s or a sort's key path names (see
    /// ``ModelSchema/storedPlace(of:under:)``), or nil.
    static func storedPlace(of keyPath: PartialKeyPath<Element>) -> PredicatePlace? {
        if let position = Element.schema.position(of: keyPath) { return PredicatePlace(position: position) }
        guard let found = Element.schema.storedPlace(of: keyPath) else { return nil }
        return PredicatePlace(position: found.position, names: found.names)
    }
}
