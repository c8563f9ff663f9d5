/// What an observation of a query needs from it: the order it keeps its
/// values in, its values with their keys, and whether one object matches.
/// The element type says what is handed over for a value
/// (``QueryElement/Observed``); the rest is the same for both kinds.
extension ObjectQuery {
    /// The stable id of the observed type.
    var observedTypeID: TypeID { table.type.id }

    /// The observed type as an error names it: the model, or the stored
    /// type of dynamic objects.
    var observedTypeName: String { modelBinding?.modelName ?? table.name }

    /// Whether the query has a ``limit(_:)`` or an ``offset(_:)``: its
    /// values then depend on objects outside them, so an observation runs
    /// it again.
    var isLimited: Bool { plan.isBounded }

    /// The order an observation keeps the values in: the plan's
    /// ``QueryPlan/resultOrder``.
    ///
    /// - Throws: The query's first mistake.
    func observedOrder() throws -> QueryOrder { try plan.resultOrder }

    /// The query with its order made explicit, so that its walk lists the
    /// values in ``observedOrder()``.
    func inObservedOrder() throws -> ObjectQuery {
        var copy = self
        copy.plan = try plan.inResultOrder()
        return copy
    }

    /// Walks the matching values in the plan's order, calling `visit` with
    /// each one's key, its value as an observation hands it over, and its
    /// order value when `orderValues` is true and the plan orders by a
    /// property.
    func walkObserved(
        orderValues: Bool, _ visit: (UnsafeRawBufferPointer, Element.Observed, Value?) throws -> Void
    ) throws {
        let predicates = self.predicates
        try plan.run(in: context, orderValues: orderValues) { key, record, orderValue, passOver in
            let element = try Element._element(of: row(key, record), in: self)
            for predicate in predicates where try !predicate(element) { return nil }
            guard !passOver else { return true }
            try visit(key, Element._observed(element), orderValue)
            return true
        }
    }

    /// The object with `key` when it exists and passes every `where` and
    /// filter, with its value in `order` (nil in primary-key order); nil
    /// otherwise.
    func matchingObject(key: [UInt8], order: QueryOrder? = nil) throws -> (
        observed: Element.Observed, orderValue: Value?
    )? {
        if let error = plan.error { throw error }
        guard key.count <= KeyCodec.maxKeySize else { return nil }
        return try key.withUnsafeBytes { key in
            guard let record = try context.lmdb.get(table.records, key) else { return nil }
            let view = try table.validatedView(key: key, record: record)
            guard plan.matches(view) else { return nil }
            let element = try Element._element(of: row(key, view), in: self)
            for predicate in predicates where try !predicate(element) { return nil }
            let value = order.flatMap { $0.position == nil ? nil : plan.orderValue($0, in: view) }
            return (Element._observed(element), value)
        }
    }

    /// The dynamic object over `record`, without the copy a write
    /// transaction's objects take: an observation reads in a read
    /// transaction, where the bytes do not move.
    private func row(_ key: UnsafeRawBufferPointer, _ record: RecordView) -> DynamicObject {
        DynamicObject(table: table, key: key, record: record, lifetime: context.lifetime.token, copy: nil)
    }

    /// The values `observed` stores, in the query's property order.
    func storedValues(of observed: Element.Observed) -> [Value] {
        Element._storedValues(of: observed, in: self)
    }

    /// The LMDB transaction id of the snapshot the query reads.
    var snapshotID: Int { context.lmdb.id }

    /// The primary key of the object with stored key `key`, as an
    /// observation names it.
    func observedKey(_ key: [UInt8]) throws -> Element.ObservedKey {
        let table = self.table
        let value = try key.withUnsafeBytes { bytes in
            do {
                return try KeyCodec.decodeKey(bytes, type: table.primaryKey?.type)
            } catch let failure as DecodingFailure {
                throw StrataError.corruptFile(
                    path: table.path, "A key of '\(table.name)' in \(table.path) is damaged: \(failure.reason).",
                    typeName: table.name, remedy: "Run `strata verify` on it.")
            }
        }
        guard let observed = Element._observedKey(value) else {
            throw StrataError.invalidValue(
                "The key \(value) of '\(table.name)' in \(table.path) is not a \(Element.ObservedKey.self), the key type of \(observedTypeName).",
                typeName: table.name, key: "\(value)", path: table.path)
        }
        return observed
    }
}

extension ObjectQuery where Element: Model {
    /// The stored key of the object whose primary key is `key`: longer
    /// than ``KeyCodec/maxKeySize`` for a key too long to store, which no
    /// object has.
    func encodedKey(_ key: Element.Key) throws -> [UInt8] {
        let encoder = context.engine.encoder
        _ = try encoder.encodeLookupKey(key.propertyValue, table: binding.table)
        return encoder.key.bytes
    }

    /// The names of the stored properties, by model position.
    var propertyNames: [String] { binding.properties.map(\.name) }
}
