import StrataMacros
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

/// Expands Strata's macros in `source` and checks the result and the
/// diagnostics, recording a Swift Testing issue for each difference.
///
/// `conformances` are the protocols the compiler asks `@Model` (or
/// `@Embedded`) to add: none when the struct already declares `Model`.
func expectExpansion(
    _ source: String, _ expanded: String, diagnostics: [DiagnosticSpec] = [], conformances: [TypeSyntax] = ["Model"],
    sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
    let macros: [String: MacroSpec] = [
        "Model": MacroSpec(type: ModelMacro.self, conformances: conformances),
        "PrimaryKey": MacroSpec(type: PrimaryKeyMacro.self),
        "Indexed": MacroSpec(type: IndexedMacro.self),
        "Transient": MacroSpec(type: TransientMacro.self),
        "Renamed": MacroSpec(type: RenamedMacro.self),
        "Embedded": MacroSpec(type: EmbeddedMacro.self, conformances: conformances),
        "Relationship": MacroSpec(type: RelationshipMacro.self),
    ]
    assertMacroExpansion(
        source, expandedSource: expanded, diagnostics: diagnostics, macroSpecs: macros,
        failureHandler: { Issue.record(Comment(rawValue: $0.message), sourceLocation: sourceLocation) })
}

/// The `@available` line of the check that `@Model` and `@Embedded` write
/// for a property whose type they take for an `@Embedded` struct, as it
/// appears in an expansion.
func uncheckedTypeAttribute(_ property: String, of model: String, type: String) -> String {
    "@available(*, unavailable, message: \"Property '\(property)' of '\(model)' has type '\(type)', which Strata cannot store. Supported types: Bool, Int, Int64, Double, String, Data, Date, UUID, Decimal, Link<Model>, an @Embedded struct, an enum with Int or String raw values that conforms to PersistableEnum, the optional of each (String? or Optional<String>), and arrays of them but optionals ([String], [Link<Dog>], [Address]). An enum is stored when it conforms to PersistableEnum (enum Status: String, PersistableEnum); a model is linked to, not stored inside another (Link<Model>?). Mark '\(property)' @Transient if it is not stored.\")"
}
