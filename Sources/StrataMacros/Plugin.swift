import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plug-in that holds Strata's macros.
@main
struct StrataMacrosPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [
        ModelMacro.self,
        PrimaryKeyMacro.self,
        IndexedMacro.self,
        TransientMacro.self,
        RenamedMacro.self,
        EmbeddedMacro.self,
        RelationshipMacro.self,
    ]
}
