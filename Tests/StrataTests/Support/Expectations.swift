import Foundation
import Testing

@testable import Strata

/// Something a test does wrong to a `Subject` (a file's path, a write
/// transaction), and how Strata must refuse it: the error's code and a
/// fragment of its message.
struct Refusal<Subject>: Sendable, CustomTestStringConvertible {
    let name: String
    let code: StrataError.Code
    let fragment: String
    /// Whether the message names the file, as Strata's messages do.
    var namesTheFile = true
    let act: @Sendable (Subject) throws -> Void
    var testDescription: String { name }

    init(
        _ name: String, _ code: StrataError.Code, _ fragment: String, namesTheFile: Bool = true,
        _ act: @escaping @Sendable (Subject) throws -> Void
    ) {
        self.name = name
        self.code = code
        self.fragment = fragment
        self.namesTheFile = namesTheFile
        self.act = act
    }
}

/// Runs `body`, expecting a StrataError with `code`; returns it for more checks.
@discardableResult
func expectStrataError(
    _ code: StrataError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> StrataError? {
    do {
        try body()
        Issue.record("Expected StrataError \(code), but nothing was thrown", sourceLocation: sourceLocation)
        return nil
    } catch let error as StrataError {
        #expect(error.code == code, "got \(error.code): \(error.message)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("Expected StrataError \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
