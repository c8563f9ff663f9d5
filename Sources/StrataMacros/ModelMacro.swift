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
        guard let model = read(node, declaration, embedded: false, in: context) else { return [] }
        return [model.conformance(of: type.trimmed, adding: !protocols.isEmpty)]
    }

    /// The stored properties of the struct `declaration`, or nil after
    /// diagnosing every problem.
    static func read(
        _ node: AttributeSyntax, _ declaration: some DeclGroupSyntax, embedded: Bool,
        in context: some MacroExpansionContext
    ) -> ModelDeclaration? {
        let macro = embedded ? "@Embedded" : "@Model"
        let what = embedded ? "the embedded type" : "the model"
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            let (keyword, kind) = introducer(of: declaration)
            context.diagnose(
                ModelDiagnostic.error(
                    keyword, id: "notAStruct",
                    "\(macro) applies to a struct, and this is \(kind); declare \(what) as a struct."))
            return nil
        }
        var model = ModelDeclaration(structDecl, embedded: embedded)
        model.readName(from: node)
        if let generics = structDecl.genericParameterClause {
            model.problem(
                generics, id: "generic",
                "\(macro) cannot apply to a generic struct: Swift allows no static stored property (the schema) in a generic type. Remove the generic parameters."
            )
        }
        for member in structDecl.memberBlock.members {
            if let variable = member.decl.as(VariableDeclSyntax.self) { model.read(variable) }
        }
        if model.problems.isEmpty && model.stored.isEmpty {
            model.problem(
                structDecl.name, id: "noStoredProperties",
                "\(macro) struct '\(structDecl.name.text)' has no stored properties; add at least one.")
        }
        guard model.problems.isEmpty else {
            for problem in model.problems { context.diagnose(problem) }
            return nil
        }
        return model
    }

    /// The keyword that says what a declaration is, and its kind in words.
    static func introducer(of declaration: some DeclGroupSyntax) -> (Syntax, String) {
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
        /// The `deleteRule:` expression of `@Relationship`, if any.
        let deleteRule: String?
        /// Whether the type is a name the macro takes for an `@Embedded`
        /// struct, which the compiler checks (see `StoredType.isUserNamed`).
        let isUserNamed: Bool
        /// Whether the type names a type of the user's (`Link<Person>?`,
        /// `[Address]`), which the extension cannot spell: in it, a name
        /// resolves from the file's scope, not from the struct's (`Person`
        /// of `enum V1 { @Model struct Person {...} }` is not found). The
        /// code it writes leaves such types to inference.
        let namesUserType: Bool
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
    /// Whether this is an `@Embedded` struct: no primary key, no index, no
    /// links.
    let isEmbedded: Bool
    /// The attribute's name in messages: `@Model` or `@Embedded`.
    var macroName: String { isEmbedded ? "@Embedded" : "@Model" }

    init(_ structDecl: StructDeclSyntax, embedded: Bool = false) {
        isEmbedded = embedded
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
                "\(macroName)(name:) takes a string literal, the stored type name: \(macroName)(name: \"\(structName)\")."
            )
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
                    "\(macroName) stores properties named one by one; declare '\(binding.pattern.trimmedDescription)' as separate properties."
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
                "Property '\(name)' needs a type annotation: \(macroName) infers a type only from a literal initial value (var created: Date = Date())."
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
        if isEmbedded, let marker = markers.primaryKey ?? markers.indexed {
            problem(
                marker, id: "embeddedMarker",
                "'\(name)' is in an @Embedded struct, which has no primary key and no indexes: its objects are stored inside their parent's record. Remove @\(marker.attributeName.trimmedDescription)."
            )
            return
        }
        let isLinkList = annotated.map(StoredType.isLinkList) ?? false
        if isEmbedded && (storedType.name == StoredType.link || isLinkList) {
            problem(
                typeNode, id: "embeddedLink",
                "'\(name)' is a link in an @Embedded struct; embedded objects hold no links. Put the link on the model that holds '\(structName)'."
            )
            return
        }
        if storedType.name == StoredType.list && storedType.isOptional {
            problem(
                typeNode, id: "optionalList",
                "List '\(name)' cannot be optional: an empty array already means \"none\". Declare it as a non-optional array, with the initial value []."
            )
            return
        }
        if storedType.name == StoredType.link && !storedType.isOptional {
            problem(
                typeNode, id: "requiredLink",
                "Link '\(name)' must be optional: it is nil when there is no target, and deleting the target can make it nil. Declare it as '\(typeText)?'."
            )
            problemFound = true
        }
        var deleteRule: String?
        if let relationship = markers.relationship {
            if storedType.name != StoredType.link && !isLinkList {
                problem(
                    relationship, id: "relationshipNotLink",
                    "@Relationship applies to a link (Link<Model>?) or a list of links ([Link<Model>]); '\(name)' is '\(typeText)'."
                )
                problemFound = true
            } else if case .argumentList(let arguments) = relationship.arguments,
                let argument = arguments.first(where: { $0.label?.text == "deleteRule" })
            {
                let rule = argument.expression.trimmedDescription
                if isLinkList && rule.hasSuffix(".cascade") {
                    problem(
                        argument.expression, id: "cascadeList",
                        "A list of links cannot cascade: '\(name)' drops a deleted target (.nullify) or refuses the delete (.deny). Cascade belongs on the to-one link that points the other way."
                    )
                    problemFound = true
                }
                deleteRule = rule
            }
        }
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
                    "Primary key '\(name)' is of type '\(typeText)'; a primary key must be \(StoredType.sentence(StoredType.supported.filter(StoredType.keys.contains), "or"))."
                )
                problemFound = true
            }
            if !problemFound { primaryKey = (name, typeText) }
        }
        let isUserNamed = annotated.map(StoredType.isUserNamed) ?? false
        // A user-named type that is not a list may be an enum, which can
        // be indexed: the compiler checks it (see typeCheck(of:)).
        if let indexed = markers.indexed, !StoredType.indexable.contains(storedType.name),
            !isUserNamed || storedType.name == StoredType.list
        {
            problem(
                indexed, id: "notIndexable",
                "Property '\(name)' of type '\(typeText)' cannot be @Indexed; only \(StoredType.sentence(StoredType.supported.filter(StoredType.indexable.contains), "and")) properties (and their optionals) can."
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
                isIndexed: markers.indexed != nil,
                defaultValue: isUserNamed ? initializer.flatMap(StoredType.caseName) : literal?.text,
                originalName: originalName, deleteRule: deleteRule, isUserNamed: isUserNamed,
                namesUserType: annotated.map(StoredType.namesUserType) ?? false))
    }

    /// The extension that makes the struct a model.
    func conformance(of type: some TypeSyntaxProtocol, adding conformance: Bool) -> ExtensionDeclSyntax {
        let typeName = type.trimmedDescription
        let properties = stored.map { property in
            if property.isUserNamed { return schemaEntry(of: property, in: typeName) }
            var arguments = ["\\\(typeName).\(property.identifier)", "\"\(property.storedName)\""]
            if property.isPrimaryKey { arguments.append("primaryKey: true") }
            if property.isIndexed { arguments.append("indexed: true") }
            if let value = property.defaultValue { arguments.append("default: \(value)") }
            if let original = property.originalName { arguments.append("originalName: \(original)") }
            if let rule = property.deleteRule { arguments.append("onDelete: \(rule)") }
            return "            .init(\(arguments.joined(separator: ", "))),"
        }
        let encodes = stored.map { property in
            property.isUserNamed
                ? "        Strata._ModelMacroSupport.encode(self.\(property.identifier), to: &encoder)"
                : "        encoder.encode(self.\(property.identifier))"
        }
        let decodes =
            stored.map { property in
                let value =
                    if property.isUserNamed {
                        "Strata._ModelMacroSupport.decode(from: &decoder)"
                    } else if property.namesUserType {
                        "decoder.decode()"
                    } else {
                        "decoder.decode(\(property.type).self)"
                    }
                return "        self.\(property.identifier) = try \(value)"
            }
            + transientNils.map { "        self.\($0) = nil" }
        let source = """
            extension \(typeName)\(conformance ? ": Strata.Model" : "") {
                \(access)typealias Key = \(primaryKey?.type ?? "Int64")

                \(access)static let storedTypeName = \(storedNameLiteral)

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
                }\(typeCheck(of: typeName))
            }
            """
        return DeclSyntax(stringLiteral: source).cast(ExtensionDeclSyntax.self)
    }
}
