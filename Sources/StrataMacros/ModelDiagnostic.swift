import SwiftDiagnostics
import SwiftSyntax

/// An error of the `@Model` macro, attached to the node it is about.
struct ModelDiagnostic: DiagnosticMessage {
    let message: String
    let diagnosticID: MessageID
    var severity: DiagnosticSeverity { .error }

    static func error(_ node: some SyntaxProtocol, id: String, _ message: String) -> Diagnostic {
        Diagnostic(
            node: Syntax(node),
            message: ModelDiagnostic(message: message, diagnosticID: MessageID(domain: "StrataMacros", id: id)))
    }
}
