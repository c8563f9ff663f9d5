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
