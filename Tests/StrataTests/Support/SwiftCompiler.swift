import Foundation
import Testing

/// The Swift compiler, type-checking a snippet against the Strata module
/// and macro plug-in that the tests were built with: what an app's build
/// would say about the snippet.
enum SwiftCompiler {
    /// The folder of the test bundle, which holds `Modules/` and the
    /// `StrataMacros-tool` plug-in.
    static var buildFolder: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    /// The package's root, for the module map of CLMDB.
    static var packageRoot: URL {
        // Tests/StrataTests/Support/SwiftCompiler.swift
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
    }

    /// `swiftc -typecheck` of `source`: the exit status, the errors and the
    /// warnings, one message a line, without the source excerpts and notes.
    /// A single file is type-checked as a `main.swift`: top-level code runs.
    static func typecheck(
        _ source: String, in folder: TemporaryFolder
    ) throws -> (status: Int32, errors: [String], warnings: [String]) {
        let modules = buildFolder.appendingPathComponent("Modules")
        let plugin = buildFolder.appendingPathComponent("StrataMacros-tool")
        try #require(
            FileManager.default.fileExists(atPath: modules.appendingPathComponent("Strata.swiftmodule").path),
            "the Strata module is built beside the tests, in \(modules.path)")
        try #require(
            FileManager.default.isExecutableFile(atPath: plugin.path), "the macro plug-in is built at \(plugin.path)")
        let file = folder.path("snippet.swift")
        try source.write(toFile: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "swiftc", "-typecheck", file, "-I", modules.path,
            "-I", packageRoot.appendingPathComponent("Sources/CLMDB").path,
            "-load-plugin-executable", "\(plugin.path)#StrataMacros",
            "-module-cache-path", folder.path("ModuleCache"),
        ]
        process.standardInput = FileHandle.nullDevice
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // Each diagnostic's own line: "<file or macro expansion>:line:column: error: message".
        func messages(_ kind: String) -> [String] {
            text.split(separator: "\n").compactMap { line -> String? in
                guard !line.hasPrefix(" "), let range = line.range(of: ": \(kind): ") else { return nil }
                return String(line[range.upperBound...])
            }
        }
        return (process.terminationStatus, messages("error"), messages("warning"))
    }
}
