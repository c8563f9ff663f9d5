import SwiftSyntax

/// The Swift types a stored property can have, and what each allows.
enum StoredType {
    /// Every supported primitive type, by its name without a module. The
    /// plug-in cannot import Strata, so these three lists restate its table
    /// of stored kinds (`StoredKind`: `swiftTypeNames`, `canBePrimaryKey`,
    /// `canBeIndexed`); `StoredKindTableTests` reads this file and fails
    /// when they differ.
    static let supported = ["Bool", "Int", "Int64", "Double", "String", "Data", "Date", "UUID", "Decimal"]
    /// The types a primary key can have.
    static let keys: Set<String> = ["Int", "Int64", "String", "UUID"]
    /// The types that can be indexed.
    static let indexable: Set<String> = ["Bool", "Int", "Int64", "String", "Date", "UUID", "Decimal"]
    /// What ``classify(_:)`` calls a link, and a list.
    static let link = "Link"
    static let list = "Array"
    /// Standard types that are not stored, so that a property of one gets
    /// the macro's message instead of being taken for an embedded struct.
    static let unsupportedNames: Set<String> = [
        "Float", "Float16", "Float80", "CGFloat", "Int8", "Int16", "Int32", "Int128", "UInt", "UInt8",
        "UInt16", "UInt32", "UInt64", "UInt128", "Character", "Substring", "URL", "Set", "Dictionary", "Array",
        "Optional", "Any", "AnyObject", "Void", "Never", "Result",
    ]

    /// The names in a sentence: "Int, Int64, String or UUID".
    static func sentence(_ names: [String], _ conjunction: String) -> String {
        guard names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " \(conjunction) " + names.last!
    }

    /// The sentence that lists what is supported, for messages.
    static let supportedList =
        supported.joined(separator: ", ")
        + ", Link<Model>, an @Embedded struct, an enum with Int or String raw values that conforms to PersistableEnum, the optional of each (String? or Optional<String>), and arrays of them but optionals ([String], [Link<Dog>], [Address])"

    /// The supported type that `type` spells, unwrapped once from an
    /// optional, or nil when `type` is not supported: a primitive's name,
    /// ``link``, ``list``, or the name of an embedded struct.
    static func classify(_ type: TypeSyntax) -> (name: String, isOptional: Bool)? {
        if let optional = type.as(OptionalTypeSyntax.self) {
            return stored(optional.wrappedType).map { ($0, true) }
        }
        if let wrapped = optionalArgument(type) {
            return stored(wrapped).map { ($0, true) }
        }
        return stored(type).map { ($0, false) }
    }

    /// Whether `type` is a list of links, `[Link<T>]` or `Array<Link<T>>`.
    static func isLinkList(_ type: TypeSyntax) -> Bool {
        let element =
            type.as(ArrayTypeSyntax.self)?.element ?? generic(type, named: "Array", modules: ["Swift"])
        return element.map { generic($0, named: "Link", modules: ["Strata"]) != nil } ?? false
    }

    /// Whether `name`, from ``classify(_:)``, is a primitive type.
    static func isPrimitive(_ name: String) -> Bool { supported.contains(name) }

    /// `T` of `Optional<T>` or `Swift.Optional<T>`.
    private static func optionalArgument(_ type: TypeSyntax) -> TypeSyntax? {
        generic(type, named: "Optional", modules: ["Swift"])
    }

    /// The one generic argument of `Name<T>` or `Module.Name<T>`.
    private static func generic(_ type: TypeSyntax, named expected: String, modules: Set<String>) -> TypeSyntax? {
        var name: String?
        var generics: GenericArgumentClauseSyntax?
        if let identifier = type.as(IdentifierTypeSyntax.self) {
            name = identifier.name.text
            generics = identifier.genericArgumentClause
        } else if let member = type.as(MemberTypeSyntax.self), modules.contains(member.baseType.trimmedDescription) {
            name = member.name.text
            generics = member.genericArgumentClause
        }
        guard name == expected, let arguments = generics?.arguments, arguments.count == 1,
            case .type(let wrapped) = arguments.first!.argument
        else { return nil }
        return wrapped
    }

    /// A stored type that is not optional: a primitive, a link, a list of
    /// anything but optionals and lists, or an embedded struct.
    private static func stored(_ type: TypeSyntax) -> String? {
        if let name = element(type) { return name }
        let element =
            type.as(ArrayTypeSyntax.self)?.element ?? generic(type, named: "Array", modules: ["Swift"])
        if let element, self.element(element) != nil { return list }
        return nil
    }

    /// A type that can be a list's element: a primitive, a link or an
    /// embedded struct.
    private static func element(_ type: TypeSyntax) -> String? {
        if generic(type, named: "Link", modules: ["Strata"]) != nil { return link }
        if let identifier = type.as(IdentifierTypeSyntax.self), identifier.genericArgumentClause == nil {
            let name = identifier.name.text
            if supported.contains(name) { return name }
            // Any other plain type name: an @Embedded struct, which the
            // compiler checks (see isUserNamed).
            guard !unsupportedNames.contains(name), name.first?.isUppercase == true else { return nil }
            return name
        }
        guard let member = type.as(MemberTypeSyntax.self), member.genericArgumentClause == nil else { return nil }
        let name = member.name.text
        if ["Swift", "Foundation"].contains(member.baseType.trimmedDescription) {
            return supported.contains(name) ? name : nil
        }
        // `V1.Address`: an @Embedded struct in a namespace, such as the
        // enum of one schema version.
        return name.first?.isUppercase == true ? member.trimmedDescription : nil
    }

    /// Whether `type`, a supported type (see ``classify(_:)``), is a name
    /// that the macro takes for an `@Embedded` struct (`Address`,
    /// `V1.Address`), alone, optional or in an array: one that syntax
    /// cannot tell apart from an enum or a model, which Strata does not
    /// store, so the compiler checks it.
    static func isUserNamed(_ type: TypeSyntax) -> Bool {
        guard let name = element(innermost(type)) else { return false }
        return name != link && !supported.contains(name)
    }

    /// Whether `type`, a supported type, names a type of the user's: a
    /// link's target or an embedded struct, alone, optional or in an array.
    static func namesUserType(_ type: TypeSyntax) -> Bool {
        guard let name = element(innermost(type)) else { return false }
        return !supported.contains(name)
    }

    /// `T` of `T`, `T?`, `[T]`, `Optional<T>` or `Array<T>`.
    private static func innermost(_ type: TypeSyntax) -> TypeSyntax {
        var type = type
        if let optional = type.as(OptionalTypeSyntax.self) {
            type = optional.wrappedType
        } else if let wrapped = optionalArgument(type) {
            type = wrapped
        }
        return type.as(ArrayTypeSyntax.self)?.element ?? generic(type, named: "Array", modules: ["Swift"]) ?? type
    }

    /// `text` as a Swift string literal.
    static func stringLiteral(_ text: String) -> String {
        var literal = "\""
        for character in text {
            if character == "\\" || character == "\"" { literal.append("\\") }
            literal.append(character)
        }
        return literal + "\""
    }

    /// The Swift text of an enum case as an initial value, `.open` or
    /// `Status.open`, which is the schema default of a property whose type
    /// is a `PersistableEnum` (and is ignored for an `@Embedded` struct);
    /// nil for any other expression.
    static func caseName(_ expression: ExprSyntax) -> String? {
        guard let member = expression.as(MemberAccessExprSyntax.self), member.declName.argumentNames == nil,
            member.base.map({ $0.is(DeclReferenceExprSyntax.self) || $0.is(MemberAccessExprSyntax.self) }) ?? true
        else { return nil }
        return member.trimmedDescription
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
