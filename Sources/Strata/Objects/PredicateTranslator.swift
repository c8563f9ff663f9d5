import Foundation

/// Translates a Foundation `Predicate` on a model into ``QueryCondition``s
/// of the query's plan, once, when the query is built.
///
/// It reads the predicate's expression tree (`Predicate.expression`, made
/// of `PredicateExpressions` values) through the protocols below, which
/// the expressions it knows conform to; any other expression is not
/// planned. What it plans:
/// - a stored property (`$0.age`, a key path on the predicate's input)
///   compared with a constant or captured value: `==`, `!=`, `<`, `<=`,
///   `>`, `>=`, a `Bool` property alone;
/// - `&&`, `||`, `!`;
/// - `== nil`, `!= nil`, and optional chaining on a stored optional
///   (`$0.email?.starts(with: "a") ?? false`, `if let`);
/// - `values.contains($0.x)` for a captured array or set (an `in:` set),
///   `$0.name.starts(with: "Ab")`, `$0.name.contains("b")`.
///
/// The predicate is an AND of parts (its top-level `&&`s): a part it
/// plans becomes a condition of the plan, which compares stored values as
/// `where` does; a part it does not plan is evaluated as Foundation does,
/// on each decoded object that the planned parts let through. A part it
/// cannot plan under `||` or `!` leaves that whole OR or NOT unplanned.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
struct PredicateTranslator<M: Model> {
    let query: ModelQuery<M>
    /// The predicate's input.
    let root: PredicateExpressions.VariableID
    /// The variables of optional chains (`flatMap`) in scope: each is the
    /// unwrapped value of the stored property at a model position.
    var bound: [PredicateExpressions.VariableID: Int] = [:]
    /// The first key path on the input that is not a stored property.
    var error: StrataError?

    init(query: ModelQuery<M>, predicate: Predicate<M>) {
        self.query = query
        self.root = predicate.variable.key
    }

    /// The parts of the predicate's top-level AND: the conditions of those
    /// it plans, and those it does not.
    mutating func conjuncts(_ expression: any PredicateExpression<Bool>) -> (
        conditions: [QueryCondition], unplanned: [any PredicateExpression<Bool>]
    ) {
        if let conjunction = expression as? any PredicateConjunctionParts {
            let (left, right) = conjunction.parts
            let a = conjuncts(left)
            let b = conjuncts(right)
            return (a.conditions + b.conditions, a.unplanned + b.unplanned)
        }
        guard let condition = condition(expression) else { return ([], [expression]) }
        return ([condition], [])
    }

    /// The condition of a Boolean expression; nil when it is not planned.
    mutating func condition(_ expression: any PredicateExpression) -> QueryCondition? {
        (expression as? any PlannableCondition)?.condition(in: &self)
    }

    /// What an expression reads: a stored property or a constant.
    mutating func operand(_ expression: any PredicateExpression) -> PredicateOperand? {
        (expression as? any PlannableOperand)?.operand(in: &self)
    }

    /// The property at model position `position` against the constant:
    /// `make` builds the test for the table field position.
    func test(_ position: Int, _ make: (Int) -> QueryCondition) -> QueryCondition {
        query.condition(at: position, make)
    }

    /// A comparison of two operands, one a property and one a constant:
    /// `make` gets the property's table field position and the constant,
    /// and whether the constant is on the left.
    mutating func compare(
        _ lhs: any PredicateExpression, _ rhs: any PredicateExpression,
        _ make: (Int, Value, _ flipped: Bool) -> QueryCondition
    ) -> QueryCondition? {
        switch (operand(lhs), operand(rhs)) {
        case (.property(let position), .constant(let value)):
            test(position) { make($0, value, false) }
        case (.constant(let value), .property(let position)):
            test(position) { make($0, value, true) }
        default:
            nil
        }
    }

    /// The position of the stored property at `keyPath` on the input; nil,
    /// recording the error, when it is not one.
    mutating func storedPosition(_ keyPath: AnyKeyPath) -> Int? {
        guard let keyPath = keyPath as? PartialKeyPath<M> else { return nil }
        if let position = M.schema.position(of: keyPath) { return position }
        if error == nil { error = query.notStored(keyPath, "filter(_:) with a #Predicate") }
        return nil
    }
}

/// What a predicate's expression reads.
enum PredicateOperand {
    /// The stored property at a model position.
    case property(Int)
    case constant(Value)
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
protocol PlannableCondition {
    func condition<M>(in translator: inout PredicateTranslator<M>) -> QueryCondition?
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
protocol PlannableOperand {
    func operand<M>(in translator: inout PredicateTranslator<M>) -> PredicateOperand?
}

/// The two sides of an `&&`.
protocol PredicateConjunctionParts {
    var parts: (any PredicateExpression<Bool>, any PredicateExpression<Bool>) { get }
}

/// The value of a constant expression, whatever its type.
protocol PredicateConstant {
    var constant: Any { get }
}
