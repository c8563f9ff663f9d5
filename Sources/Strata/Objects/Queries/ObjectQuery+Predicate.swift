import Foundation

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension ObjectQuery where Element: Model {
    /// The values that `predicate` accepts, with the parts of it that
    /// compare stored properties translated into the query's plan: those
    /// use an index as the matching `where` does and test stored values
    /// without decoding an object.
    ///
    /// ```swift
    /// let minimum = 18
    /// let names = ["Ann", "Bob"]
    /// let found = try tx.objects(Person.self)
    ///     .filter(#Predicate { $0.age >= minimum && (names.contains($0.name) || $0.email == nil) })
    ///     .array()
    /// ```
    ///
    /// The translation happens once, here. It plans comparisons of a
    /// stored property with a constant or captured value (`==`, `!=`,
    /// `<`, `<=`, `>`, `>=`, a `Bool` property alone), `&&`, `||`, `!`,
    /// `== nil`, optional chaining on a stored optional
    /// (`$0.email?.starts(with: "a") ?? false`), `values.contains($0.x)`
    /// for a captured array or set, `starts(with:)` and `contains(_:)` on a
    /// string property, link equality and enum cases (captured, of a
    /// `Codable` enum), on the model's properties and on those of its
    /// embedded objects (`$0.home.city`, `$0.work?.city`), which are read
    /// inside the record. A planned comparison compares stored values as
    /// `where` does (see "Order and comparison": strings by UTF-8 bytes,
    /// NaN equal to NaN and after infinity).
    ///
    /// Anything else (a computed expression such as `$0.name.count`, a
    /// property of a link's target, `localizedStandardContains`) is not
    /// planned. The predicate is taken as the AND of its top-level `&&`
    /// parts: the planned ones narrow the walk, and Foundation evaluates
    /// the others on each decoded object they let through, as a closure
    /// filter would. A part it cannot plan inside `||` or `!` leaves that
    /// whole OR or NOT to Foundation.
    ///
    /// A key path to a property that is not stored (a computed or
    /// `@Transient` one, of the model or of an embedded object), anywhere
    /// in the predicate — either side of `||` or `&&`, inside `!`, in a
    /// part left to Foundation — makes the query throw a ``StrataError``
    /// with code ``StrataError/Code/unknownProperty`` when it runs, before
    /// anything is read: Foundation would read its in-memory value (a
    /// transient's initial value) and answer wrongly.
    public func filter(_ predicate: Predicate<Element>) -> ObjectQuery {
        var translator = PredicateTranslator(query: self, predicate: predicate)
        var copy = self
        // Every key path first, planned or not: Foundation would read an
        // unstored property's in-memory value instead of failing.
        translator.checkKeyPaths(predicate.expression)
        if let error = translator.error {
            copy.plan.fail(error)
            return copy
        }
        let (conditions, unplanned) = translator.conjuncts(predicate.expression)
        copy.plan.embeddedPaths = translator.embeddedPaths
        for condition in conditions { copy.plan.add(condition, declaredAt: declaredPosition) }
        if !unplanned.isEmpty {
            let variable = predicate.variable
            copy.predicates.append { model in
                let bindings = PredicateBindings((variable, model))
                for part in unplanned where try !part.evaluate(bindings) { return false }
                return true
            }
        }
        return copy
    }
}
