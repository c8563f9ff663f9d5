import Foundation
import Testing
@testable import Strata

/// A temporary folder removed when the test ends.
final class TemporaryFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("strata-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String = "test.strata") -> String { url.appendingPathComponent(name).path }
}

enum Fixtures {
    static let person = ObjectSchema("Person", primaryKey: "id") {
        Property("id", .int)
        Property("firstName", .string)
        Property("lastName", .string)
        Property("age", .int, default: 0, indexed: true)
        Property("email", .string, optional: true)
    }

    static let schema = Schema([person])

    static func configuration(_ path: String, version: UInt64 = 1, schema: Schema = schema) -> Database.Configuration {
        var config = Database.Configuration(path: path, schemaVersion: version, schema: schema)
        config.durability = .noSync
        return config
    }

    static func person(_ id: Int64, _ first: String = "First", _ last: String = "Last", age: Int64 = 30, email: String? = nil) -> [String: Value] {
        ["id": .int(id), "firstName": .string(first), "lastName": .string(last), "age": .int(age), "email": email.map(Value.string) ?? .null]
    }
}

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

    init(_ name: String, _ code: StrataError.Code, _ fragment: String, namesTheFile: Bool = true,
         _ act: @escaping @Sendable (Subject) throws -> Void) {
        self.name = name
        self.code = code
        self.fragment = fragment
        self.namesTheFile = namesTheFile
        self.act = act
    }
}

/// Runs `body`, expecting a StrataError with `code`; returns it for more checks.
@discardableResult
func expectStrataError(_ code: StrataError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) -> StrataError? {
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

/// SplitMix64: a tiny seeded generator, so that every run sees the same bytes.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}


/// Runs blocking work on a Dispatch thread and waits for it without
/// holding a thread of Swift's cooperative pool, which has one thread per
/// core and which every other test's tasks share. Record issues after it
/// returns, in the test's task: `work` runs outside it.
func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}

/// The sanitizer the tests run under, if any (`make sanitize`).
enum Sanitizer {
    /// Whether AddressSanitizer's runtime is loaded.
    static let address = isLoaded("__asan_init")
    /// Whether ThreadSanitizer's runtime is loaded.
    static let thread = isLoaded("__tsan_init")

    private static func isLoaded(_ symbol: String) -> Bool {
        #if os(Linux)
        let everywhere: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
        #else
        let everywhere = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
        #endif
        return dlsym(everywhere, symbol) != nil
    }
}
