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
    /// The plan's walk (``walk(_:)``) is not generic over the model.
    @inlinable
    func iterate(_ body: (M) throws -> Bool) throws {
        let predicates = self.predicates
        try walk { decoder, passOver in
            // A value the offset passes over is decoded only for filters.
            if passOver && predicates.isEmpty { return true }
            let model = try M(from: &decoder)
            for predicate in predicates where try !predicate(model) { return nil }
            return passOver ? true : try body(model)
        }
    }

    /// Walks the records the plan matches, in its order, calling `visit`
    /// with a decoder over each, and whether the offset passes the value
    /// over (run the filters only), until it returns false; nil from
    /// `visit`: a filter rejected the value, which counts toward neither
    /// the offset nor the limit.
    @usableFromInline
    func walk(_ visit: (inout ModelDecoder, _ passOver: Bool) throws -> Bool?) throws {
        let binding = self.binding
        if plan.isPlain {
            // The common walk, without the executor's layers.
            return try plan.scanRecords(in: context) { key, record in
                var decoder = ModelDecoder(binding: binding, record: record, key: key)
                return try visit(&decoder, false) ?? true
            }
        }
        try plan.run(in: context) { key, record, _, passOver in
            var decoder = ModelDecoder(binding: binding, record: record, key: key)
            return try visit(&decoder, passOver)
        }
    }

    /// The number of matching values, decoding objects only for filters.
    @inlinable
    func countValues() throws -> Int {
        let predicates = self.predicates
        guard !predicates.isEmpty else { return try countMatching(nil) }
        return try countMatching { decoder in
            let model = try M(from: &decoder)
            return try predicates.allSatisfy { try $0(model) }
        }
    }

    /// The number of objects the plan matches and `accepts` keeps (all,
    /// decoding nothing, when nil).
    @usableFromInline
    func countMatching(_ accepts: ((inout ModelDecoder) throws -> Bool)?) throws -> Int {
        guard let accepts else { return try plan.count(in: context) }
        let binding = self.binding
        return try plan.count(in: context) { key, record in
            var decoder = ModelDecoder(binding: binding, record: record, key: key)
            return try accepts(&decoder)
        }
    }
}
