/// What an observation of a query needs from it: the order it keeps its
/// values in, its values with their keys, and whether one object matches.
extension ModelQuery {
    /// The stable id of the observed type.
    var observedTypeID: TypeID { binding.table.type.id }

    /// Whether the query has a ``limit(_:)`` or an ``offset(_:)``: its
    /// values then depend on objects outside them, so an observation runs
    /// it again.
    var isLimited: Bool { plan.isBounded }

    /// The order an observation keeps the values in: the plan's
    /// ``QueryPlan/resultOrder``.
    ///
    /// - Throws: The query's key-path error.
    func observedOrder() throws -> QueryOrder { try plan.resultOrder }

    /// The query with its order made explicit, so that its walk lists the
    /// values in ``observedOrder()``.
    func inObservedOrder() throws -> ModelQuery {
        var copy = self
        copy.plan = try plan.inResultOrder()
        return copy
    }

    /// The object with `key` when it exists and passes every `where` and
    /// filter, with its value in `order` (nil in primary-key order); nil
    /// otherwise.
    func matchingObject(key: [UInt8], order: QueryOrder? = nil) throws -> (model: M, orderValue: Value?)? {
        if let error = plan.error { throw error }
        let table = binding.table
        guard key.count <= KeyCodec.maxKeySize else { return nil }
        return try key.withUnsafeBytes { key in
            guard let record = try context.lmdb.get(table.records, key) else { return nil }
            let view = try table.validatedView(key: key, record: record)
            guard plan.matches(view) else { return nil }
            let model = try binding.decode(M.self, record: view, key: key)
            for predicate in predicates where try !predicate(model) { return nil }
            let value = order.flatMap { $0.position == nil ? nil : plan.orderValue($0, in: view) }
            return (model, value)
        }
    }

    /// The values `model` stores, by model position.
    func storedValues(of model: M) -> [Value] {
        binding.encode(model)
        return Array(binding.slots)
    }

    /// The LMDB transaction id of the snapshot the query reads.
    var snapshotID: Int { context.lmdb.id }

    /// The stored key of the object whose primary key is `key`: longer
    /// than ``KeyCodec/maxKeySize`` for a key too long to store, which no
    /// object has.
    func encodedKey(_ key: M.Key) throws -> [UInt8] {
        let encoder = context.engine.encoder
        _ = try encoder.encodeLookupKey(key.propertyValue, table: binding.table)
        return encoder.key.bytes
    }

    /// The names of the stored properties, by model position.
    var propertyNames: [String] { binding.properties.map(\.name) }

    /// The typed primary key of the object with `key`.
    func typedKey(_ key: [UInt8]) throws -> M.Key {
        let table = binding.table
        let value = try key.withUnsafeBytes { bytes in
            do {
                return try KeyCodec.decodeKey(bytes, type: table.primaryKey?.type)
            } catch let failure as DecodingFailure {
                throw StrataError.corruptFile(
                    path: table.path, "A key of '\(table.name)' in \(table.path) is damaged: \(failure.reason).",
                    typeName: table.name, remedy: "Run `strata verify` on it.")
            }
        }
        guard let typed = M.Key(propertyValue: value) else {
            throw StrataError.invalidValue(
                "The key \(value) of '\(table.name)' in \(table.path) is not a \(M.Key.self), the key type of \(binding.modelName).",
                typeName: table.name, key: "\(value)", path: table.path)
        }
        return typed
    }
}
