/// Running an ``ObjectQuery``: its ``QueryPlan`` walks the records, the
/// element type makes a value of each one that passes the plan's
/// conditions (``QueryElement/_iterate(_:_:)``), and the query runs its
/// filters on it.
extension ObjectQuery {
    /// Walks the matching values until `body` returns false.
    ///
    /// Inlinable, like the public walks that call it: for a model, the
    /// element type's walk (``QueryElement/_iterate(_:_:)``, inlinable
    /// too) is then compiled in the app's module for the concrete model.
    /// The plan's walk (``walk(_:)``) is not generic over the element.
    @inlinable
    func iterate(_ body: (Element) throws -> Bool) throws {
        try Element._iterate(self, body)
    }

    /// What a walk does with one element that passed the plan: nil when a
    /// filter rejects it (it then counts toward neither the offset nor
    /// the limit), true when the offset passes it over, else what `body`
    /// returns (false stops the walk). Always inlined: it is the body of
    /// each element kind's loop.
    @inlinable @inline(__always)
    static func visit(
        _ element: Element, passOver: Bool, _ predicates: [(Element) throws -> Bool], _ body: (Element) throws -> Bool
    ) throws -> Bool? {
        for predicate in predicates where try !predicate(element) { return nil }
        return passOver ? true : try body(element)
    }

    /// Walks the records the plan matches, in its order, calling `visit`
    /// with a decoder over each, and whether the offset passes the value
    /// over (run the filters only), until it returns false; nil from
    /// `visit`: a filter rejected the value, which counts toward neither
    /// the offset nor the limit. For a model query only.
    @usableFromInline
    func walk(_ visit: (inout ModelDecoder, _ passOver: Bool) throws -> Bool?) throws {
        let binding = self.binding
        if plan.isPlain {
            // The common walk, without the executor's layers.
            return try plan.scanRecords(in: context, checkingHeaders: true) { key, record in
                var decoder = ModelDecoder(binding: binding, record: record, key: key)
                return try visit(&decoder, false) ?? true
            }
        }
        try plan.run(in: context) { key, record, _, passOver in
            var decoder = ModelDecoder(binding: binding, record: record, key: key)
            return try visit(&decoder, passOver)
        }
    }

    /// Walks the records the plan matches as ``walk(_:)`` does, handing
    /// `visit` each one's key and record: for a plain plan a record whose
    /// header only is checked (``RecordView/isValidated`` false), which
    /// `visit` must read as a ``DynamicObject`` does.
    func walkRecords(_ visit: (UnsafeRawBufferPointer, RecordView, _ passOver: Bool) throws -> Bool?) throws {
        if plan.isPlain {
            return try plan.scanRecords(in: context, checkingHeaders: true) { key, record in
                try visit(key, record, false) ?? true
            }
        }
        try plan.run(in: context) { key, record, _, passOver in try visit(key, record, passOver) }
    }

    /// The number of matching values, making values only for filters, in
    /// no particular order: a count needs none, so a sort on a property
    /// without an index sorts nothing.
    func countValues() throws -> Int {
        guard !predicates.isEmpty else { return try plan.count(in: context) }
        var unordered = self
        unordered.plan = plan.unordered
        var n = 0
        try unordered.iterate { _ in
            n += 1
            return true
        }
        return n
    }

    /// How a model reads the table. Only a model query asks.
    var binding: ModelBinding {
        guard let modelBinding else { preconditionFailure("A query of \(Element.self) has no model binding") }
        return modelBinding
    }
}
