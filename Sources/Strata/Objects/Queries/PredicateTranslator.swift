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
/// A property inside an embedded object (`$0.step.label`, at any depth,
/// through a required embedded object or an optional chain on an
/// optional one) is planned as the model's own are: its value is read
/// inside the record.
///
/// The predicate is an AND of parts (its top-level `&&`s): a part it
/// plans becomes a condition of the plan, which compares stored values as
/// `where` does; a part it does not plan is evaluated as Foundation does,
/// on each decoded object that the planned parts let through. A part it
/// cannot plan under `||` or `!` leaves that whole OR or NOT unplanned.
///
/// Before planning, every key path of the whole tree is checked
/// (``checkKeyPaths(_:)``): one on the input or an embedded object that
/// names a property Strata does not store fails the query, planned part
/// or not, because Foundation would read such a property's in-memory
/// value (a transient's initial value) and answer wrongly.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
struct PredicateTranslator<M: Model> {
    let query: ObjectQuery<M>
    /// The predicate's input.
    let root: PredicateExpressions.VariableID
    /// The variables of optional chains (`flatMap`) in scope: each is the
    /// unwrapped value of a stored property.
    var bound: [PredicateExpressions.VariableID: PredicatePlace] = [:]
    /// The properties inside embedded objects that conditions test, by
    /// the plan's position for them: the plan's own, then new ones.
    var embeddedPaths: [QueryPlan.EmbeddedPath]
    /// The first key path that is not a stored property.
    var error: StrataError?

    init(query: ObjectQuery<M>, predicate: Predicate<M>) {
        self.query = query
        self.root = predicate.variable.key
        self.embeddedPaths = query.plan.embeddedPaths
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

    /// Checks every key path of `expression`, at any depth, planned or
    /// not: the first one on the input, or on an embedded object the
    /// input holds, that is not a stored property is recorded in
    /// ``error``.
    ///
    /// The tree is read by reflection, so that an expression the
    /// translator does not know (`%`, a string's `count`, a `filter`) is
    /// searched too; a constant (`PredicateExpressions.Value`) is not
    /// looked into.
    mutating func checkKeyPaths(_ expression: any PredicateExpression) {
        if let keyPath = expression as? any PredicateKeyPathParts {
            _ = place(ofKeyPath: keyPath.erasedKeyPath, on: keyPath.keyPathRoot)
        }
        if expression is any PredicateConstant { return }
        var scoped: (PredicateExpressions.VariableID, PredicatePlace?)?
        if let chain = expression as? any PredicateOptionalChainParts {
            // The chain's variable is the unwrapped wrapped value: key paths
            // on it name properties of an optional embedded object.
            scoped = (chain.variableID, optionalEmbeddedPlace(chain.wrappedExpression))
        }
        if let (variable, place) = scoped, let place { bound[variable] = place }
        defer { if let (variable, _) = scoped { bound[variable] = nil } }
        for child in Self.children(of: expression) { checkKeyPaths(child) }
    }

    /// The subexpressions of `value`: its stored properties that are
    /// expressions, and those inside tuples and arrays of them.
    static func children(of value: Any) -> [any PredicateExpression] {
        var found: [any PredicateExpression] = []
        for child in Mirror(reflecting: value).children {
            if let expression = child.value as? any PredicateExpression {
                found.append(expression)
            } else if let style = Mirror(reflecting: child.value).displayStyle,
                style == .tuple || style == .collection
            {
                found += children(of: child.value)
            }
        }
        return found
    }

    /// The condition of a Boolean expression; nil when it is not planned.
    mutating func condition(_ expression: any PredicateExpression) -> QueryCondition? {
        (expression as? any PlannableCondition)?.condition(in: &self)
    }

    /// What an expression reads: a stored property or a constant.
    mutating func operand(_ expression: any PredicateExpression) -> PredicateOperand? {
        (expression as? any PlannableOperand)?.operand(in: &self)
    }

    /// The stored property at `place` against the constant: `make` builds
    /// the test for the plan's position of the property (a table field
    /// position, or one of the plan's ``QueryPlan/EmbeddedPath``s).
    mutating func test(_ place: PredicatePlace, _ make: (Int) -> QueryCondition) -> QueryCondition {
        query.condition(at: place, paths: &embeddedPaths, make)
    }

    /// A comparison of two operands, one a property and one a constant:
    /// `make` gets the property's plan position and the constant, and
    /// whether the constant is on the left.
    mutating func compare(
        _ lhs: any PredicateExpression, _ rhs: any PredicateExpression,
        _ make: (Int, Value, _ flipped: Bool) -> QueryCondition
    ) -> QueryCondition? {
        switch (operand(lhs), operand(rhs)) {
        case (.property(let place), .constant(let value)):
            test(place) { make($0, value, false) }
        case (.constant(let value), .property(let place)):
            test(place) { make($0, value, true) }
        default:
            nil
        }
    }

    /// The stored property that `keyPath` on the expression `root` reads:
    /// a property of the input, or of an embedded object that a stored
    /// property holds. Nil for a key path on anything else (`$0.name.count`,
    /// a link's key); nil, recording the error, for one on the input or an
    /// embedded object that names a property that is not stored.
    mutating func place(ofKeyPath keyPath: AnyKeyPath, on root: any PredicateExpression) -> PredicatePlace? {
        if let variable = root as? PredicateExpressions.Variable<M>, variable.key == self.root {
            guard let keyPath = keyPath as? PartialKeyPath<M> else { return nil }
            guard let position = M.schema.position(of: keyPath) else {
                if error == nil { error = query.notStored(keyPath, "filter(_:) with a #Predicate") }
                return nil
            }
            let property = M.schema.objectSchema.properties[position]
            let embedded = property.type == .embedded ? M.schema.embeddedTypesByPosition[position] : nil
            return PredicatePlace(position: position, embedded: embedded, isOptional: property.isOptional)
        }
        let outer: PredicatePlace?
        if let variable = root as? any PredicateVariableParts {
            outer = bound[variable.variableID]
        } else if let parent = root as? any PredicateKeyPathParts {
            outer = place(ofKeyPath: parent.erasedKeyPath, on: parent.keyPathRoot).flatMap { $0.isOptional ? nil : $0 }
        } else {
            outer = nil
        }
        guard let outer, let type = outer.embedded else { return nil }
        return inside(type, outer, keyPath)
    }

    /// The property of embedded type `type` at `keyPath`, inside `outer`.
    private mutating func inside<E: EmbeddedModel>(
        _ type: E.Type, _ outer: PredicatePlace, _ keyPath: AnyKeyPath
    ) -> PredicatePlace? {
        guard let keyPath = keyPath as? PartialKeyPath<E> else { return nil }
        guard let position = E.schema.position(of: keyPath) else {
            if error == nil { error = query.notStoredInside(E.self, keyPath, "filter(_:) with a #Predicate") }
            return nil
        }
        let property = E.schema.objectSchema.properties[position]
        return PredicatePlace(
            position: outer.position, names: outer.names + [property.name],
            embedded: property.type == .embedded ? E.schema.embeddedTypesByPosition[position] : nil,
            isOptional: outer.isOptional || property.isOptional, absent: property.valueWhenAbsent)
    }

    /// The place of an expression whose value is an optional embedded
    /// object (the wrapped value of an optional chain), else nil.
    mutating func optionalEmbeddedPlace(_ expression: any PredicateExpression) -> PredicatePlace? {
        guard let keyPath = expression as? any PredicateKeyPathParts,
            var place = place(ofKeyPath: keyPath.erasedKeyPath, on: keyPath.keyPathRoot), place.embedded != nil
        else { return nil }
        // Inside the chain the object is unwrapped; a nil one reads every
        // property inside as null.
        place.isOptional = false
        return place
    }
}

/// A stored property that a predicate reads: a property of the model, or
/// one inside the embedded objects its properties hold.
struct PredicatePlace {
    /// The model position of the model's property.
    let position: Int
    /// The stored names of the properties inside embedded objects,
    /// outermost first; empty for the model's own property.
    var names: [String] = []
    /// The embedded type whose object the property holds, or nil.
    var embedded: (any EmbeddedModel.Type)?
    /// Whether the value may be nil: the property is optional, or an
    /// embedded object on the way to it is.
    var isOptional = false
    /// What an object that lacks the property inside its embedded
    /// object reads (the property's default).
    var absent: Value = .null

    /// The value of the property inside `value`, the model property's.
    func value(in value: Value) -> Value {
        var value = value
        for name in names {
            guard case .object(let properties) = value else { return .null }
            value = properties[name] ?? .null
        }
        return value
    }
}

/// What a predicate's expression reads.
enum PredicateOperand {
    /// A stored property.
    case property(PredicatePlace)
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

/// A key path applied to an expression.
protocol PredicateKeyPathParts {
    var keyPathRoot: any PredicateExpression { get }
    var erasedKeyPath: AnyKeyPath { get }
}

/// A variable of a predicate.
protocol PredicateVariableParts {
    var variableID: PredicateExpressions.VariableID { get }
}

/// An optional chain (`flatMap`): the optional it unwraps, and the
/// variable that holds the unwrapped value in its transform.
protocol PredicateOptionalChainParts {
    var wrappedExpression: any PredicateExpression { get }
    var variableID: PredicateExpressions.VariableID { get }
}
