import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

extension ModelDeclaration {
    /// The extension that makes the struct an embedded model: its schema,
    /// its value as a ``Strata.Value/object(_:)``, and its initializer from
    /// one.
    func embeddedConformance(of type: some TypeSyntaxProtocol, adding conformance: Bool) -> ExtensionDeclSyntax {
        let typeName = type.trimmedDescription
        let properties = stored.map { property in
            if property.isUserNamed { return schemaEntry(of: property, in: typeName) }
            var arguments = ["\\\(typeName).\(property.identifier)", "\"\(property.storedName)\""]
            if let value = property.defaultValue { arguments.append("default: \(value)") }
            if let original = property.originalName { arguments.append("originalName: \(original)") }
            return "            .init(\(arguments.joined(separator: ", "))),"
        }
        let fields = stored.map { property in
            let value =
                property.isUserNamed
                ? "Strata._ModelMacroSupport.value(self.\(property.identifier))"
                : "Strata.Value(self.\(property.identifier))"
            return "\"\(property.storedName)\": \(value)"
        }
        let decodes = stored.enumerated().map { position, property in
            let keyPath = "\\\(typeName).\(property.identifier)"
            let value =
                if property.isUserNamed {
                    "Strata._ModelMacroSupport.decode(fields, \(keyPath), at: \(position))"
                } else if property.namesUserType {
                    "fields.decode(\(keyPath), at: \(position))"
                } else {
                    "fields.decode(\(property.type).self, at: \(position))"
                }
            return "            let v\(position) = \(value)"
        }
        let assignments =
            stored.enumerated().map { "        self.\($1.identifier) = v\($0)" }
            + transientNils.map { "        self.\($0) = nil" }
        let source = """
            extension \(typeName)\(conformance ? ": Strata.EmbeddedModel" : "") {
                \(access)static let storedTypeName = \(storedNameLiteral)

                \(access)static let schema = Strata.ModelSchema<\(typeName)>(
                    name: \(storedNameLiteral),
                    embedded: true,
                    properties: [
            \(properties.joined(separator: "\n"))
                    ]
                )

                \(access)var propertyValue: Strata.Value {
                    .object([\(fields.joined(separator: ", "))])
                }

                \(access)init?(propertyValue value: Strata.Value) {
                    guard let fields = Strata.EmbeddedFields(value, of: \(typeName).self),
            \(decodes.joined(separator: ",\n"))
                    else { return nil }
            \(assignments.joined(separator: "\n"))
                }\(typeCheck(of: typeName))
            }
            """
        return DeclSyntax(stringLiteral: source).cast(ExtensionDeclSyntax.self)
    }
}

extension ModelDeclaration {
    /// The schema's entry for a property whose type the macro takes for an
    /// `@Embedded` struct: through `_ModelMacroSupport`, which accepts any
    /// type, so that ``typeCheck(of:)`` reports an unsupported one alone.
    func schemaEntry(of property: StoredProperty, in typeName: String) -> String {
        var arguments = ["\\\(typeName).\(property.identifier)", "\"\(property.storedName)\""]
        if property.isIndexed { arguments.append("indexed: true") }
        if let value = property.defaultValue { arguments.append("default: \(value)") }
        if let original = property.originalName { arguments.append("originalName: \(original)") }
        return "            Strata._ModelMacroSupport.property(\(arguments.joined(separator: ", "))),"
    }

    /// A static function that the compiler checks and nothing calls: for
    /// each property whose type the macro takes for an `@Embedded` struct,
    /// two overloads of `storedType`, of which a type that Strata cannot
    /// store (an enum, a model) picks the unavailable one, whose message
    /// names the property and lists the supported types. Empty when every
    /// type is one the macro knows.
    ///
    /// The macro sees syntax only: `var status: Status` reads the same
    /// whether `Status` is an embedded struct, an enum or a model.
    func typeCheck(of typeName: String) -> String {
        let checked = stored.filter(\.isUserNamed)
        guard !checked.isEmpty else { return "" }
        let lines = checked.flatMap { property in
            let label = property.identifier
            let message =
                "Property '\(property.storedName)' of '\(structName)' has type '\(property.type)', which Strata cannot store. Supported types: \(StoredType.supportedList). An enum is stored when it conforms to PersistableEnum (enum Status: String, PersistableEnum); a model is linked to, not stored inside another (Link<Model>?). Mark '\(property.storedName)' @Transient if it is not stored."
            return [
                "        @available(*, unavailable, message: \(StoredType.stringLiteral(message)))",
                "        func storedType<V>(\(label): KeyPath<\(typeName), V>) {}",
                "        func storedType<V: Strata.PropertyValue>(\(label): KeyPath<\(typeName), V>) {}",
                "        storedType(\(label): \\.\(property.identifier))",
            ]
        }
        // The compiler picks an unavailable overload only when no other
        // fits, so the check is that one of the enum's overloads fits.
        let indexLines = checked.filter(\.isIndexed).flatMap { property in
            let label = property.identifier
            let message =
                "Property '\(property.storedName)' of '\(structName)' has type '\(property.type)', which cannot be @Indexed: only \(StoredType.sentence(StoredType.supported.filter(StoredType.indexable.contains), "and")) properties, enums that conform to PersistableEnum, and their optionals can."
            return [
                "        @available(*, unavailable, message: \(StoredType.stringLiteral(message)))",
                "        func indexedType<V>(\(label): KeyPath<\(typeName), V>) {}",
                "        func indexedType<V: Strata.PersistableEnum>(\(label): KeyPath<\(typeName), V>) {}",
                "        func indexedType<V: Strata.PersistableEnum>(\(label): KeyPath<\(typeName), V?>) {}",
                "        indexedType(\(label): \\.\(property.identifier))",
            ]
        }
        return """


                private static func _strataCheckStoredTypes() {
            \((lines + indexLines).joined(separator: "\n"))
                }
            """
    }
}

/// `@Embedded`: writes a struct's `Strata.EmbeddedModel` conformance.
public struct EmbeddedMacro: ExtensionMacro {
    /// The conformance of the struct `declaration`, or none and a
    /// diagnostic for each problem.
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard let model = ModelMacro.read(node, declaration, embedded: true, in: context) else { return [] }
        return [model.embeddedConformance(of: type.trimmed, adding: !protocols.isEmpty)]
    }
}
