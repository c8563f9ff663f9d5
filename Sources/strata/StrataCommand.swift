import ArgumentParser
import Foundation
import Strata

@main
struct StrataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Look inside and exercise Strata databases.",
        discussion: """
            Every subcommand exits with 0 when it succeeds, and otherwise with a non-zero \
            code and one line on standard error that starts with "Error: ".
            """,
        subcommands: [
            Demo.self, Info.self, ShowSchema.self, Dump.self, Plan.self, Verify.self, Compact.self, Sync.self,
            SyncStatusCommand.self,
        ]
    )

    /// Runs the command, reporting any failure in one line on stderr.
    ///
    /// ArgumentParser's own `main()` prints a thrown error's whole
    /// description, and the usage after a validation error: several lines
    /// for a StrataError that lists changes or problems.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            fail(with: error)
        }
    }

    static func fail(with error: any Error) -> Never {
        let code = exitCode(for: error)
        // Help and other clean exits print what ArgumentParser prints.
        guard code != .success else { exit(withError: error) }
        var line =
            switch error {
            case let error as StrataError: oneLine(error)
            default: oneLine(message(for: error))
            }
        if code == .validationFailure,
            let hint = fullMessage(for: error, columns: Int.max).split(separator: "\n").last(where: {
                $0.contains("--help")
            })
        {
            if !line.hasSuffix(".") { line += "." }
            line += " " + hint.trimmingCharacters(in: .whitespaces)
        }
        FileHandle.standardError.write(Data("Error: \(line)\n".utf8))
        // Foundation's exit flushes what `print` buffered on stdout.
        Foundation.exit(code.rawValue)
    }

    /// A StrataError on one line, from its parts: the summary, a restated
    /// cause, the items after a colon joined with "; ", the remedy and the
    /// outcome.
    static func oneLine(_ error: StrataError) -> String {
        var text = body(of: error, itemSeparator: "; ")
        if let outcome = error.outcome { text += " " + outcome }
        return text
    }

    /// A StrataError as lines, from its parts: the summary (with a restated
    /// cause), each item as a "- " line, then the remedy and the outcome.
    static func lines(of error: StrataError) -> [String] {
        var lines = [restated(error)]
        if !error.items.isEmpty {
            lines[0] += ":"
            lines += error.items.map { "- " + $0 }
        }
        let ending = [error.remedy, error.outcome].compactMap { $0 }.joined(separator: " ")
        if !ending.isEmpty { lines.append(ending) }
        return lines
    }

    /// The summary, followed by the cause's parts when the error restates it.
    private static func restated(_ error: StrataError) -> String {
        guard error.restatesCause, let inner = error.cause as? StrataError else { return error.summary }
        return error.summary + " " + body(of: inner, itemSeparator: "; ")
    }

    /// The parts of an error but its outcome, on one line.
    private static func body(of error: StrataError, itemSeparator: String) -> String {
        var text = restated(error)
        if !error.items.isEmpty { text += ": " + error.items.joined(separator: itemSeparator) }
        if let remedy = error.remedy { text += " " + remedy }
        return text
    }

    /// ArgumentParser's message of several lines on one line: after a
    /// first line ending in a colon, the listed items ("- " dropped) joined
    /// with "; "; otherwise the lines joined with spaces. (A StrataError is
    /// put on one line from its parts instead.)
    static func oneLine(_ message: String) -> String {
        let lines = message.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        guard let first = lines.first else { return message }
        let rest = lines.dropFirst().map { $0.hasPrefix("- ") ? String($0.dropFirst(2)) : $0 }
        guard !rest.isEmpty else { return first }
        return first.hasSuffix(":")
            ? first + " " + rest.joined(separator: "; ") : ([first] + rest).joined(separator: " ")
    }
}

/// A failure a subcommand reports after what it printed, such as `verify`
/// finding problems: one line, without ArgumentParser's usage text.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
