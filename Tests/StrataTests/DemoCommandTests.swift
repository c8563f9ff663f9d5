import Foundation
import Testing

/// Runs the built `strata` binary, as `make demo` does.
@Suite struct DemoCommandTests {
    static var binary: URL? {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [folder, folder.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()] {
            let url = candidate.appendingPathComponent("strata")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }

    static func run(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
        let executable: URL = try #require(binary, "the strata binary is built beside the tests")
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    @Test func demoTellsItsStoryAndLeavesAWorkingFile() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("demo.strata")
        let result = try Self.run(["demo", "--path", path, "--objects", "200"])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(result.output.contains("Wrote 205 people in one transaction"))
        #expect(result.output.contains("File schema version 1; 205 people"))
        #expect(result.output.contains("Lookup by primary key 1: Ada Lovelace"))
        #expect(result.output.contains("Index lookup (age == 41)"))
        #expect(result.output.contains("Property 'Person.fullName' has been added."))
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func demoRefusesAnExistingPathWithAOneLineError() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("taken.strata")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("keep me".utf8)))
        let result = try Self.run(["demo", "--path", path])
        #expect(result.status != 0)
        #expect(result.error.contains("already exists"))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "keep me")
    }
}
