import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Model`: writes a struct's `Strata.Model` conformance, the same one a
/// hand-written model has (see `Model` in Strata): the `Key` type, the
/// static schema, `encode(to:)` and `init(from:)`, each listing the stored
/// properties in declaration order.
///
/// Every problem is reported at once, each at the node it is about; a
/// struct with any problem gets no conformance.
public struct ModelMacro: ExtensionMacro {
    /// The conformance of the struct `declaration`, or none and a
    /// diagnostic for each problem.
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            let (keyword, kind) = introducer(of: declaration)
            context.diagnose(
                ModelDiagnostic.error(
                    keyword, id: "notAStruct",
                    "@Model applies to a struct, and this is \(kind); declare the model as a struct."))
            return []
        }
        var model = ModelDeclaration(structDecl)
        model.readName(from: node)
        if let generics = structDecl.genericParameterClause {
            model.problem(
                generics, id: "generic",
                "@Model cannot apply to a generic struct: Swift allows no static stored property (the schema) in a generic type. Remove the generic parameters."
            )
        }
        for member in structDecl.memberBlock.members {
            if let variable = member.decl.as(VariableDeclSyntax.self) { model.read(variable) }
        }
        if model.problems.isEmpty && model.stored.isEmpty {
            model.problem(
                structDecl.name, id: "noStoredProperties",
                "@Model struct '\(structDecl.name.text)' has no stored properties; add at least one.")
        }
        guard model.problems.isEmpty else {
            for problem in model.problems { context.diagnose(problem) }
            return []
        }
        return [model.conformance(of: type.trimmed, adding: !protocols.isEmpty)]
    }

    /// The keyword that says what a declaration is, and its kind in words.
    private static func introducer(of declaration: some DeclGroupSyntax) -> (Syntax, String) {
        if let decl = declaration.as(ClassDeclSyntax.self) { return (Syntax(decl.classKeyword), "a class") }
        if let decl = declaration.as(EnumDeclSyntax.self) { return (Syntax(decl.enumKeyword), "an enum") }
        if let decl = declaration.as(ActorDeclSyntax.self) { return (Syntax(decl.actorKeyword), "an actor") }
        if let decl = declaration.as(ExtensionDeclSyntax.self) {
            return (Syntax(decl.extensionKeyword), "an extension")
        }
        if let decl = declaration.as(ProtocolDeclSyntax.self) { return (Syntax(decl.protocolKeyword), "a protocol") }
        return (Syntax(declaration), "not a struct")
    }
}

/// What `@Model` learns from a struct: its stored properties, in order,
/// and every problem found on the way.
struct ModelDeclaration {
    struct StoredProperty {
        /// The Swift name as written (with backticks, if any).
        let identifier: String
        let storedName: String
        let type: String
        let isPrimaryKey: Bool
        let isIndexed: Bool
        let defaultValue: String?
        let originalName: String?
    }

    let structName: String
    /// `public ` or `package ` for the generated members, or nothing.
    let access: String
    var storedNameLiteral: String
    var stored: [StoredProperty] = []
    /// Transient optionals without an initial value: `init(from:)` sets
    /// them to nil, since Swift does not for a `let` or an `Optional<T>`.
    var transientNils: [String] = []
    var primaryKey: (name: String, type: String)?
    var problems: [Diagnostic] = []

    init(_ structDecl: StructDeclSyntax) {
        structName = structDecl.name.text
        storedNameLiteral = "\"\(structName.trimmingBackticks)\""
        let modifiers = Set(structDecl.modifiers.map(\.name.text))
        access = modifiers.contains("public") ? "public " : modifiers.contains("package") ? "package " : ""
    }

    mutating func problem(_ node: some SyntaxProtocol, id: String, _ message: String) {
        problems.append(ModelDiagnostic.error(node, id: id, message))
    }

    /// The stored type name of `@Model(name: "Person")`.
    mutating func readName(from attribute: AttributeSyntax) {
        guard case .argumentList(let arguments) = attribute.arguments,
            let argument = arguments.first(where: { $0.label?.text == "name" })
        else { return }
        if let literal = StoredType.literal(argument.expression), literal.type == "String" {
            storedNameLiteral = literal.text
        } else {
            problem(
                argument.expression, id: "nameNotLiteral",
                "@Model(name:) takes a string literal, the stored type name: @Model(name: \"Person\").")
        }
    }

    /// Reads one `var` or `let` declaration of the struct.
    mutating func read(_ variable: VariableDeclSyntax) {
        let modifiers = Set(variable.modifiers.map(\.name.text))
        if !modifiers.isDisjoint(with: ["static", "class", "lazy"]) { return }
        let markers = Markers(variable.attributes)
        let bindings = Array(variable.bindings)
        for (index, binding) in bindings.enumerated() where !binding.isComputed {
            guard let identifier = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier else {
                problem(
                    binding.pattern, id: "pattern",
                    "@Model stores properties named one by one; declare '\(binding.pattern.trimmedDescription)' as separate properties."
                )
                continue
            }
            // `var a, b: Int`: `a` has the type of the next annotation.
            let annotated =
                binding.typeAnnotation?.type
                ?? (binding.initializer == nil
                    ? bindings[(index + 1)...].lazy.compactMap { $0.typeAnnotation?.type }.first : nil)
            read(
                identifier, of: variable, binding: binding, type: annotated, markers: markers)
        }
    }

    private mutating func read(
        _ identifier: TokenSyntax, of variable: VariableDeclSyntax, binding: PatternBindingSyntax,
        type annotated: TypeSyntax?, markers: Markers
    ) {
        let name = identifier.text.trimmingBackticks
        let initializer = binding.initializer?.value
        let literal = initializer.flatMap(StoredType.literal)
        if let transient = markers.transient {
            guard initializer == nil else { return }
            if let annotated, StoredType.isOptionalSpelling(annotated) {
                transientNils.append(identifier.text)
            } else {
                problem(
                    transient, id: "transientWithoutValue",
                    "@Transient property '\(name)' is not stored, so objects read from the database need a value for it: give it an initial value or an optional type."
                )
            }
            return
        }
        if initializer != nil && variable.bindingSpecifier.tokenKind == .keyword(.let) {
            problem(
                variable.bindingSpecifier, id: "letWithValue",
                "'\(name)' is a 'let' with an initial value, so a stored value could never be read back into it; make it 'var', or mark it @Transient if it is not stored."
            )
            return
        }
        guard let typeText = annotated?.trimmedDescription ?? literal?.type else {
            problem(
                binding.pattern, id: "typeAnnotation",
                "Property '\(name)' needs a type annotation: @Model infers a type only from a literal initial value (var created: Date = Date())."
            )
            return
        }
        let classified = annotated.map { StoredType.classify($0) } ?? literal.map { (name: $0.type, isOptional: false) }
        guard let storedType = classified else {
            problem(
                annotated!, id: "unsupportedType",
                "Property '\(name)' has type '\(typeText)', which Strata cannot store. Supported types: \(StoredType.supportedList). Mark it @Transient if it is not stored."
            )
            return
        }
        // Where a message about the type goes: the annotation, else the name.
        let typeNode = annotated.map(Syntax.init) ?? Syntax(binding.pattern)
        var problemFound = false
        if let key = markers.primaryKey {
            if let first = primaryKey {
                problem(
                    key, id: "twoPrimaryKeys",
                    "'\(name)' is a second @PrimaryKey of '\(structName)' (the first is '\(first.name)'); a model has at most one primary key."
                )
                problemFound = true
            } else if storedType.isOptional {
                problem(
                    typeNode, id: "optionalPrimaryKey",
                    "Primary key '\(name)' cannot be optional; declare it as '\(storedType.name)'.")
                problemFound = true
            } else if !StoredType.keys.contains(storedType.name) {
                problem(
                    typeNode, id: "primaryKeyType",
                    "Primary key '\(name)' is of type '\(typeText)'; a primary key must be Int, Int64, String or UUID.")
                problemFound = true
            }
            if !problemFound { primaryKey = (name, typeText) }
        }
        if let indexed = markers.indexed, StoredType.notIndexable.contains(storedType.name) {
            problem(
                indexed, id: "notIndexable",
                "Property '\(name)' of type '\(typeText)' cannot be @Indexed; only Bool, Int, Int64, String, Date and UUID properties (and their optionals) can."
            )
            problemFound = true
        }
        var originalName: String?
        if let renamed = markers.renamed {
            if case .argumentList(let arguments) = renamed.arguments, let argument = arguments.first,
                argument.label?.text == "from", let text = StoredType.literal(argument.expression),
                text.type == "String"
            {
                originalName = text.text
            } else {
                let node: Syntax =
                    if case .argumentList(let arguments) = renamed.arguments, let first = arguments.first {
                        Syntax(first.expression)
                    } else {
                        Syntax(renamed)
                    }
                problem(
                    node, id: "renamedNotLiteral",
                    "@Renamed(from:) takes a string literal, the name of '\(name)' in the previous schema version: @Renamed(from: \"oldName\")."
                )
                problemFound = true
            }
        }
        guard !problemFound else { return }
        stored.append(
            StoredProperty(
                identifier: identifier.text, storedName: name, type: typeText, isPrimaryKey: markers.primaryKey != nil,
                isIndexed: markers.indexed != nil, defaultValue: literal?.text, originalName: originalName))
    }

    /// The extension that makes the struct a model.
    func conformance(of type: some TypeSyntaxProtocol, adding conformance: Bool) -> ExtensionDeclSyntax {
        let typeName = type.trimmedDescription
        let properties = stored.map { property in
            var arguments = ["\\\(typeName).\(property.identifier)", "\"\(property.storedName)\""]
            if property.isPrimaryKey { arguments.append("primaryKey: true") }
            if property.isIndexed { arguments.append("indexed: true") }
            if let value = property.defaultValue { arguments.append("default: \(value)") }
            if let original = property.originalName { arguments.append("originalName: \(original)") }
            return "            .init(\(arguments.joined(separator: ", "))),"
        }
        let encodes = stored.map { "        encoder.encode(self.\($0.identifier))" }
        let decodes =
            stored.map { "        self.\($0.identifier) = try decoder.decode(\($0.type).self)" }
            + transientNils.map { "        self.\($0) = nil" }
        let source = """
            extension \(typeName)\(conformance ? ": Strata.Model" : "") {
                \(access)typealias Key = \(primaryKey?.type ?? "Int64")

                \(access)static let schema = Strata.ModelSchema<\(typeName)>(
                    name: \(storedNameLiteral),
                    properties: [
            \(properties.joined(separator: "\n"))
                    ]
                )

                \(access)func encode(to encoder: inout Strata.ModelEncoder) {
            \(encodes.joined(separator: "\n"))
                }

                \(access)init(from decoder: inout Strata.ModelDecoder) throws {
            \(decodes.joined(separator: "\n"))
                }
            }
            """
        return DeclSyntax(stringLiteral: source).cast(ExtensionDeclSyntax.self)
    }
}

/// The marker attributes of one property declaration.
struct Markers {
    var primaryKey: AttributeSyntax?
    var indexed: AttributeSyntax?
    var transient: AttributeSyntax?
    var renamed: AttributeSyntax?

    init(_ attributes: AttributeListSyntax) {
        for case .attribute(let attribute) in attributes {
            // `@PrimaryKey` or `@Strata.PrimaryKey`.
            let name = attribute.attributeName.trimmedDescription.split(separator: ".").last.map(String.init)
            switch name {
            case "PrimaryKey": primaryKey = attribute
            case "Indexed": indexed = attribute
            case "Transient": transient = attribute
            case "Renamed": renamed = attribute
            default: break
            }
        }
    }
}

extension PatternBindingSyntax {
    /// Whether the binding is a computed property: accessors other than
    /// `willSet` and `didSet` observers.
    var isComputed: Bool {
        guard let accessors = accessorBlock?.accessors else { return false }
        return switch accessors {
        case .getter: true
        case .accessors(let accessors):
            accessors.contains {
                $0.accessorSpecifier.tokenKind != .keyword(.willSet)
                    && $0.accessorSpecifier.tokenKind != .keyword(.didSet)
            }
        }
    }
}

extension StoredType {
    /// Whether `type` is spelled as an optional (`T?` or `Optional<T>`),
    /// whatever `T` is.
    static func isOptionalSpelling(_ type: TypeSyntax) -> Bool {
        if type.is(OptionalTypeSyntax.self) { return true }
        let name = type.as(IdentifierTypeSyntax.self)?.name.text ?? type.as(MemberTypeSyntax.self)?.name.text
        return name == "Optional"
    }
}

extension String {
    /// The identifier without the backticks of `` `default` ``.
    var trimmingBackticks: String {
        hasPrefix("`") && hasSuffix("`") && count > 1 ? String(dropFirst().dropLast()) : self
    }
}
