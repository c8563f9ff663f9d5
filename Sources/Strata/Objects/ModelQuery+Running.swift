/// Running a ``ModelQuery``: its ``QueryPlan`` walks the records, and the
/// query decodes each one that passes the plan's conditions as a model
/// value and runs its filters on it.
extension ModelQuery {
    /// Walks the matching values until `body` returns false.
    @inline(__always)
    func iterate(_ body: (M) throws -> Bool) throws {
        let binding = self.binding
        let predicates = self.predicates
        // A plain walk without filters hands each decoded value straight
        // over: through an optional, a model's generic value is copied by
        // its type's value witnesses (unspecialized across modules) a few
        // times per object.
        if plan.isPlain && predicates.isEmpty {
            return try plan.scanRecords(in: context) { key, record in
                try body(binding.decode(M.self, record: record, key: key))
            }
        }
        try plan.run(in: context) { key, record in
            try Self.decode(key, record, binding, predicates)
        } _: { model, _, _ in
            try body(model)
        }
    }

    /// Walks the matching values until `body` returns false; `body` gets
    /// each value, its object's key, and, when the plan has an order by a
    /// property, the value that orders it.
    func iterateWithKeys(_ body: (M, UnsafeRawBufferPointer, Value?) throws -> Bool) throws {
        let binding = self.binding
        let predicates = self.predicates
        try plan.run(in: context, orderValues: true) { key, record in
            try Self.decode(key, record, binding, predicates)
        } _: { model, key, value in
            try body(model, key, value)
        }
    }

    /// Decodes a record as a model value, or nil when a filter rejects it.
    @inline(__always)
    private static func decode(
        _ key: UnsafeRawBufferPointer, _ record: RecordView, _ binding: ModelBinding,
        _ predicates: [(M) throws -> Bool]
    ) throws -> M? {
        let model = try binding.decode(M.self, record: record, key: key)
        for predicate in predicates where try !predicate(model) { return nil }
        return model
    }

    /// The number of matching values, decoding objects only for filters.
    func countValues() throws -> Int {
        guard !predicates.isEmpty else { return try plan.count(in: context) }
        let binding = self.binding
        let predicates = self.predicates
        return try plan.count(in: context) { key, record in
            try Self.decode(key, record, binding, predicates) != nil
        }
    }
}
