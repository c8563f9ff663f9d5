import Foundation
import Strata
import Testing

/// The built `strata` binary, run as a user runs it.
enum StrataBinary {
    typealias Output = (status: Int32, output: String, error: String)

    /// The binary beside the test bundle.
    static var binary: URL? {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [
            folder, folder.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent(),
        ] {
            let url = candidate.appendingPathComponent("strata")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }

    /// Runs `strata` with `arguments`, or `executable` with them when given;
    /// `environment` adds to (or replaces) the test process's variables.
    static func run(_ arguments: [String], executable: URL? = nil, environment: [String: String] = [:]) throws
        -> Output
    {
        let strata: URL = try #require(binary, "the strata binary is built beside the tests")
        let process = Process()
        process.executableURL = executable ?? strata
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardInput = FileHandle.nullDevice
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    /// Expects a failure: a non-zero exit and one line on stderr, "Error: ...".
    @discardableResult
    static func expectOneLineError(
        _ result: Output, containing fragments: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) -> String {
        #expect(result.status != 0, "stdout: \(result.output)", sourceLocation: sourceLocation)
        #expect(result.error.hasPrefix("Error: "), "stderr: \(result.error)", sourceLocation: sourceLocation)
        #expect(
            result.error.hasSuffix("\n") && result.error.filter { $0 == "\n" }.count == 1, "stderr: \(result.error)",
            sourceLocation: sourceLocation)
        for fragment in fragments {
            #expect(result.error.contains(fragment), "stderr: \(result.error)", sourceLocation: sourceLocation)
        }
        return String(result.error.dropFirst("Error: ".count).dropLast())
    }

    static func lines(_ text: String) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// A file left by `strata demo`: 25 people at schema version 2.
    static func demoFile(_ folder: TemporaryFolder) throws -> String {
        let path = folder.path("people.strata")
        let result = try StrataBinary.run(["demo", "--path", path, "--objects", "20"])
        try #require(result.status == 0, "stderr: \(result.error)")
        return path
    }

    static func writeSnapshot(_ schema: Schema, version: UInt64, to path: String) throws {
        try SchemaSnapshot(schemaVersion: version, schema: schema).jsonData().write(to: URL(fileURLWithPath: path))
    }
}
