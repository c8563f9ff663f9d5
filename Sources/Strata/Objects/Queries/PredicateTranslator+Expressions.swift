import Foundation

// The `PredicateExpressions` that ``PredicateTranslator`` plans, each
// telling what it means as a condition or an operand.

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Conjunction: PredicateConjunctionParts, PlannableCondition {
    var parts: (any PredicateExpression<Bool>, any PredicateExpression<Bool>) { (lhs, rhs) }

    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        guard let a = translator.condition(lhs), let b = translator.condition(rhs) else { return nil }
        return .all([a, b])
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Disjunction: PlannableCondition {
    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        guard let a = translator.condition(lhs), let b = translator.condition(rhs) else { return nil }
        return .any([a, b])
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Negation: PlannableCondition {
    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        translator.condition(wrapped).map { .not($0) }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Equal: PlannableCondition {
    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        translator.compare(lhs, rhs) { position, value, _ in .range(QueryRange(position: position, equals: value)) }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.NotEqual: PlannableCondition {
    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        translator.compare(lhs, rhs) { position, value, _ in .notEqual(position: position, value) }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Comparison: PlannableCondition {
    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        let op = self.op
        return translator.compare(lhs, rhs) { position, value, flipped in
            // `5 < $0.x` is `$0.x > 5`.
            let below = (op == .lessThan || op == .lessThanOrEqual) != flipped
            let bound = QueryRange.Bound(value: value, inclusive: op == .lessThanOrEqual || op == .greaterThanOrEqual)
            return .range(QueryRange(position: position, lower: below ? nil : bound, upper: below ? bound : nil))
        }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.SequenceContains: PlannableCondition {
    /// `values.contains($0.x)` with captured `values`: an `in:` set.
    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        guard let constant = (sequence as? any PredicateConstant)?.constant as? any Sequence,
            case .property(let place) = translator.operand(element)
        else { return nil }
        func elements(_ sequence: some Sequence) -> [Any] { sequence.map { $0 } }
        var values: [Value] = []
        for element in elements(constant) {
            guard let value = element as? any PropertyValue else { return nil }
            values.append(value.propertyValue)
        }
        return translator.test(place) { .oneOf(position: $0, values) }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.SequenceStartsWith: PlannableCondition {
    /// `$0.name.starts(with: "Ab")`.
    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        guard case .property(let place) = translator.operand(base),
            case .constant(.string(let prefix)) = translator.operand(self.prefix)
        else { return nil }
        return translator.test(place) { .prefix(position: $0, prefix) }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.CollectionContainsCollection: PlannableCondition {
    /// `$0.name.contains("b")`.
    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        guard case .property(let place) = translator.operand(base),
            case .constant(.string(let part)) = translator.operand(other)
        else { return nil }
        return translator.test(place) { .substring(position: $0, part) }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.NilCoalesce: PlannableCondition {
    /// `$0.email?.starts(with: "a") ?? false` (optional chaining and
    /// `if let`), and `$0.optionalFlag ?? false`.
    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        guard case .constant(.bool(let whenNil)) = translator.operand(rhs) else { return nil }
        if let chain = lhs as? any PlannableOptionalChain {
            return chain.condition(in: &translator, whenNil: whenNil)
        }
        guard case .property(let place) = translator.operand(lhs) else { return nil }
        return translator.test(place) { position in
            let isNil = QueryCondition.range(QueryRange(position: position, equals: .null))
            let isTrue = QueryCondition.range(QueryRange(position: position, equals: .bool(true)))
            return whenNil ? .any([isNil, isTrue]) : isTrue
        }
    }
}

/// An optional chain on a stored property whose result is a `Bool?`.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
protocol PlannableOptionalChain {
    func condition<M>(in translator: inout PredicateTranslator<M>, whenNil: Bool) -> QueryCondition?
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.OptionalFlatMap: PlannableOptionalChain, PlannableOperand, PredicateOptionalChainParts {
    var wrappedExpression: any PredicateExpression { wrapped }
    var variableID: PredicateExpressions.VariableID { variable.key }

    func condition<M>(in translator: inout PredicateTranslator<M>, whenNil: Bool) -> QueryCondition? {
        guard case .property(let place) = translator.operand(wrapped) else { return nil }
        var unwrapped = place
        unwrapped.isOptional = false
        translator.bound[variable.key] = unwrapped
        defer { translator.bound[variable.key] = nil }
        guard let inside = translator.condition(transform) else { return nil }
        let isNil = translator.test(place) { .range(QueryRange(position: $0, equals: .null)) }
        return whenNil ? .any([isNil, inside]) : .all([.not(isNil), inside])
    }

    /// A property of an optional embedded object, `$0.work?.city`: null
    /// when the object is.
    func operand<M>(in translator: inout PredicateTranslator<M>) -> PredicateOperand? {
        guard let object = translator.optionalEmbeddedPlace(wrapped) else { return nil }
        translator.bound[variable.key] = object
        defer { translator.bound[variable.key] = nil }
        guard let keyPath = transform as? any PredicateKeyPathParts,
            let variable = keyPath.keyPathRoot as? any PredicateVariableParts, variable.variableID == self.variable.key,
            let place = translator.place(ofKeyPath: keyPath.erasedKeyPath, on: keyPath.keyPathRoot)
        else { return nil }
        return .property(place)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.KeyPath: PlannableOperand, PlannableCondition, PredicateKeyPathParts {
    var keyPathRoot: any PredicateExpression { root }
    var erasedKeyPath: AnyKeyPath { keyPath }

    /// A stored property of the input (`$0.name`), or of an embedded
    /// object it holds (`$0.step.label`). A key path on anything else
    /// (`$0.name.count`, a link's target) is not a stored property.
    func operand<M>(in translator: inout PredicateTranslator<M>) -> PredicateOperand? {
        translator.place(ofKeyPath: keyPath, on: root).map { .property($0) }
    }

    /// A `Bool` property alone: `$0.isDone`.
    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        guard Output.self == Bool.self, case .property(let place) = operand(in: &translator) else { return nil }
        return translator.test(place) { .range(QueryRange(position: $0, equals: .bool(true))) }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Variable: PlannableOperand, PlannableCondition, PredicateVariableParts {
    var variableID: PredicateExpressions.VariableID { key }

    /// The variable of an optional chain: its stored property, unwrapped.
    func operand<M>(in translator: inout PredicateTranslator<M>) -> PredicateOperand? {
        translator.bound[key].map { .property($0) }
    }

    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        guard Output.self == Bool.self, let place = translator.bound[key] else { return nil }
        return translator.test(place) { .range(QueryRange(position: $0, equals: .bool(true))) }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Value: PredicateConstant, PlannableOperand, PlannableCondition {
    var constant: Any { value }

    /// A constant the model could store, as stored: an enum case by its
    /// raw value. A constant of another type leaves its part unplanned.
    func operand<M>(in translator: inout PredicateTranslator<M>) -> PredicateOperand? {
        (value as? any PropertyValue).map { .constant($0.propertyValue) }
    }

    /// `true` or `false`.
    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition? {
        (value as? Bool).map { .constant($0) }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.NilLiteral: PlannableOperand {
    func operand<M>(in translator: inout PredicateTranslator<M>) -> PredicateOperand? { .constant(.null) }
}
