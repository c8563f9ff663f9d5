/// Running a ``ModelQuery``: its ``QueryPlan`` walks the records, and the
/// query decodes each one that passes the plan's conditions as a model
/// value and runs its filters on it.
extension ModelQuery {
    /// Walks the matching values until `body` returns false.
    ///
    /// Inlinable, like the public walks that call it, so that the work per
    /// object (decoding the model, its filters, `body`) is compiled in the
    /// app's module for its concrete model, as `MigrationStep.Builder.map`
    /// is: compiled here, generic over a model of another module, each
    /// object went through the model's value witnesses (a copy into
    /// generic storage and a destroy) and a witness call of `init(from:)`.
    /// A plain plan walks through ``walkPlain(_:)``, which is not generic
    /// over the model; any other through the plan's generic executor.
    @inlinable
    func iterate(_ body: (M) throws -> Bool) throws {
        let predicates = self.predicates
        let walked = try walkPlain { decoder in
            let model = try M(from: &decoder)
            for predicate in predicates where try !predicate(model) { return true }
            return try body(model)
        }
        if !walked { try iterateThroughPlan(body) }
    }

    /// Walks every record of a plain plan (``QueryPlan/isPlain``), calling
    /// `visit` with a decoder over each until it returns false; false, and
    /// nothing walked, for any other plan.
    @usableFromInline
    func walkPlain(_ visit: (inout ModelDecoder) throws -> Bool) throws -> Bool {
        guard plan.isPlain else { return false }
        let binding = self.binding
        try plan.scanRecords(in: context) { key, record in
            var decoder = ModelDecoder(binding: binding, record: record, key: key)
            return try visit(&decoder)
        }
        return true
    }

    /// Walks the matching values of a plan that is not plain until `body`
    /// returns false: conditions, an order or a limit.
    @usableFromInline
    func iterateThroughPlan(_ body: (M) throws -> Bool) throws {
        let binding = self.binding
        let predicates = self.predicates
        try plan.run(in: context) { key, record in
            try Self.decode(key, record, binding, predicates)
        } _: { model, _, _ in
            try body(model)
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
