import SwiftSyntax
import SwiftSyntaxMacros

/// The attributes that `@Model` reads on a stored property. Each expands
/// to nothing: `@Model` reads them and checks their use, since only it
/// sees the property's type and its neighbours.
protocol MarkerMacro: PeerMacro {}

extension MarkerMacro {
    /// Nothing, and a diagnostic when the attribute is not on a property.
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        if !declaration.is(VariableDeclSyntax.self) {
            let name = node.attributeName.trimmedDescription
            context.diagnose(
                ModelDiagnostic.error(
                    node, id: "markerPlacement",
                    "@\(name) applies to a stored property of a @Model struct."))
        }
        return []
    }
}

/// `@PrimaryKey`: the property identifies the objects.
public struct PrimaryKeyMacro: MarkerMacro {}
/// `@Indexed`: an index is kept on the property.
public struct IndexedMacro: MarkerMacro {}
/// `@Transient`: the property is not stored.
public struct TransientMacro: MarkerMacro {}
/// `@Renamed(from:)`: the property's name in the previous schema version.
public struct RenamedMacro: MarkerMacro {}
/// `@Relationship(deleteRule:)`: what deleting a link's target does.
public struct RelationshipMacro: MarkerMacro {}
