import SwiftSyntax

/// The Swift types a stored property can have, and what each allows.
enum StoredType {
    /// Every supported type, by its name without a module.
    static let supported = ["Bool", "Int", "Int64", "Double", "String", "Data", "Date", "UUID"]
    /// The types a primary key can have.
    static let keys: Set<String> = ["Int", "Int64", "String", "UUID"]
    /// The types that cannot be indexed.
    static let notIndexable: Set<String> = ["Double", "Data"]

    /// The sentence that lists what is supported, for messages.
    static let supportedList =
        "Bool, Int, Int64, Double, String, Data, Date, UUID, and the optional of each (String? or Optional<String>)"

    /// The supported type that `type` spells, unwrapped once from an
    /// optional, or nil when `type` is not supported.
    static func classify(_ type: TypeSyntax) -> (name: String, isOptional: Bool)? {
        if let optional = type.as(OptionalTypeSyntax.self) {
            return base(optional.wrappedType).map { ($0, true) }
        }
        if let wrapped = optionalArgument(type) {
            return base(wrapped).map { ($0, true) }
        }
        return base(type).map { ($0, false) }
    }

    /// `T` of `Optional<T>` or `Swift.Optional<T>`.
    private static func optionalArgument(_ type: TypeSyntax) -> TypeSyntax? {
        var name: String?
        var generics: GenericArgumentClauseSyntax?
        if let identifier = type.as(IdentifierTypeSyntax.self) {
            name = identifier.name.text
            generics = identifier.genericArgumentClause
        } else if let member = type.as(MemberTypeSyntax.self), member.baseType.trimmedDescription == "Swift" {
            name = member.name.text
            generics = member.genericArgumentClause
        }
        guard name == "Optional", let arguments = generics?.arguments, arguments.count == 1,
            case .type(let wrapped) = arguments.first!.argument
        else { return nil }
        return wrapped
    }

    /// The name of a supported type that is not optional: `Int`,
    /// `Swift.Int`, `Foundation.Date`.
    private static func base(_ type: TypeSyntax) -> String? {
        let name: String
        if let identifier = type.as(IdentifierTypeSyntax.self), identifier.genericArgumentClause == nil {
            name = identifier.name.text
        } else if let member = type.as(MemberTypeSyntax.self), member.genericArgumentClause == nil,
            ["Swift", "Foundation"].contains(member.baseType.trimmedDescription)
        {
            name = member.name.text
        } else {
            return nil
        }
        return supported.contains(name) ? name : nil
    }

    /// The Swift text of a literal that can be a schema default (a number,
    /// a negative number, `true`, `false`, a string without
    /// interpolation), with the type Swift infers for it; nil for any other
    /// expression.
    static func literal(_ expression: ExprSyntax) -> (text: String, type: String)? {
        if expression.is(IntegerLiteralExprSyntax.self) { return (expression.trimmedDescription, "Int") }
        if expression.is(FloatLiteralExprSyntax.self) { return (expression.trimmedDescription, "Double") }
        if expression.is(BooleanLiteralExprSyntax.self) { return (expression.trimmedDescription, "Bool") }
        if let string = expression.as(StringLiteralExprSyntax.self),
            string.segments.allSatisfy({ $0.is(StringSegmentSyntax.self) })
        {
            return (expression.trimmedDescription, "String")
        }
        if let prefix = expression.as(PrefixOperatorExprSyntax.self), prefix.operator.text == "-",
            let number = literal(prefix.expression), number.type == "Int" || number.type == "Double"
        {
            return (expression.trimmedDescription, number.type)
        }
        return nil
    }
}
