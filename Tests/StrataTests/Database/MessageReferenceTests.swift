import Foundation
import Testing

/// Every string in Strata's and the hub's sources that names an API (a call
/// form such as `Database.resetSyncIdentity(at:)` or `sync.cursor(of:)`, a
/// backticked identifier) or a command (`strata verify`, `strata-hub
/// migrate`) names one that is declared: a remedy that sends the reader to a
/// method that does not exist is worse than none.
@Suite(.temporaryFolder) struct MessageReferenceTests {
    @Test func everyMessageNamesDeclaredAPIsAndCommands() throws {
        let files = try SourceFile.load(roots: ["Sources", "Hub/Sources"])
        #expect(files.count > 100)
        let index = DeclarationIndex(files)
        var checked = 0
        var wrong: [String] = []
        for file in files {
            for literal in StringLiteral.all(in: file.text) where literal.isProse {
                for reference in NamedReference.all(in: literal.text) {
                    checked += 1
                    if let problem = index.problem(with: reference) {
                        wrong.append("\(file.path):\(literal.line): \(problem)")
                    }
                }
            }
        }
        #expect(checked > 30, "the scan found too few references to be reading the messages")
        #expect(wrong.isEmpty, "Messages that name what does not exist:\n\(wrong.joined(separator: "\n"))")
    }

    @Test func theCheckRefusesWhatIsNotDeclared() throws {
        let index = DeclarationIndex(try SourceFile.load(roots: ["Sources", "Hub/Sources"]))
        func problems(_ text: String) -> [String] {
            NamedReference.all(in: text).compactMap(index.problem(with:))
        }
        #expect(problems("Call sync.resetIdentity() on the copy before it exchanges changes.").count == 1)
        #expect(problems("Call Database.resetSyncIdentity(path:) first.").count == 1)
        #expect(problems("Call SchemaSnapshot.resetSyncIdentity(at:) first.").count == 1)
        #expect(problems("Run `strata reset-identity FILE`.").count == 1)
        #expect(problems("Run `strata-hub device remove`.").count == 1)
        #expect(problems("Set `noSuchSetting`.").count == 1)
        #expect(problems("Call Database.resetSyncIdentity(at:) on the closed copy.").isEmpty)
        #expect(problems("Run `strata verify FILE`, then `strata-hub device add --tenant T`.").isEmpty)
        #expect(problems("Some field(s) of u(t, k, p) in version 3 (people.strata).").isEmpty)
    }
}

/// One Swift file of the package, read as text.
private struct SourceFile {
    var path: String
    var text: String

    /// Every `.swift` file under the given folders of the package.
    static func load(roots: [String]) throws -> [SourceFile] {
        let package = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var files: [SourceFile] = []
        for root in roots {
            let folder = package.appendingPathComponent(root)
            guard let walker = FileManager.default.enumerator(atPath: folder.path) else { continue }
            for case let relative as String in walker where relative.hasSuffix(".swift") {
                let url = folder.appendingPathComponent(relative)
                files.append(
                    SourceFile(path: root + "/" + relative, text: try String(contentsOf: url, encoding: .utf8)))
            }
        }
        return files.sorted { $0.path < $1.path }
    }
}

/// The text of one string literal, its interpolations replaced by a NUL.
private struct StringLiteral {
    var text: String
    var line: Int

    /// Whether the literal is words for a person: it has a space, and is
    /// not SQL (the hub's statements, whose calls are PostgreSQL's
    /// functions). A literal without a space is data (`list()`, a key).
    var isProse: Bool {
        text.contains(" ")
            && text.range(
                of: #"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|GRANT|REVOKE|DROP|WHERE|RETURNING|SET LOCAL)\b"#,
                options: .regularExpression) == nil
    }

    /// Every string literal of Swift source, outside comments: plain,
    /// multi-line and raw, including those inside interpolations.
    static func all(in source: String) -> [StringLiteral] {
        var lexer = Lexer(bytes: Array(source.utf8))
        lexer.code(untilParenthesis: false)
        return lexer.literals
    }

    private struct Lexer {
        let bytes: [UInt8]
        var index = 0
        var line = 1
        var literals: [StringLiteral] = []

        init(bytes: [UInt8]) { self.bytes = bytes }

        func peek(_ offset: Int = 0) -> UInt8? {
            index + offset < bytes.count ? bytes[index + offset] : nil
        }

        func starts(with text: String) -> Bool {
            let prefix = Array(text.utf8)
            return index + prefix.count <= bytes.count && Array(bytes[index ..< index + prefix.count]) == prefix
        }

        mutating func advance(_ count: Int = 1) {
            for _ in 0 ..< count where index < bytes.count {
                if bytes[index] == UInt8(ascii: "\n") { line += 1 }
                index += 1
            }
        }

        /// Reads code, collecting the literals in it, to the end or, inside
        /// an interpolation, to its closing parenthesis.
        mutating func code(untilParenthesis: Bool) {
            var depth = 0
            while let byte = peek() {
                if starts(with: "//") {
                    while let next = peek(), next != UInt8(ascii: "\n") { advance() }
                } else if starts(with: "/*") {
                    var nesting = 0
                    repeat {
                        if starts(with: "/*") {
                            nesting += 1
                            advance(2)
                        } else if starts(with: "*/") {
                            nesting -= 1
                            advance(2)
                        } else {
                            advance()
                        }
                    } while nesting > 0 && peek() != nil
                } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "#") && rawQuoteFollows() {
                    string()
                } else if byte == UInt8(ascii: "(") {
                    depth += 1
                    advance()
                } else if byte == UInt8(ascii: ")") {
                    advance()
                    if depth == 0 && untilParenthesis { return }
                    depth -= 1
                } else {
                    advance()
                }
            }
        }

        func rawQuoteFollows() -> Bool {
            var offset = 0
            while peek(offset) == UInt8(ascii: "#") { offset += 1 }
            return peek(offset) == UInt8(ascii: "\"")
        }

        /// Reads one literal from its opening delimiter to its closing one.
        mutating func string() {
            var hashes = 0
            while peek() == UInt8(ascii: "#") {
                hashes += 1
                advance()
            }
            let quote = starts(with: "\"\"\"") ? "\"\"\"" : "\""
            let start = line
            advance(quote.utf8.count)
            let closing = Array((quote + String(repeating: "#", count: hashes)).utf8)
            let escape = Array(("\\" + String(repeating: "#", count: hashes)).utf8)
            var text: [UInt8] = []
            while index < bytes.count {
                if Array(bytes[index ..< min(bytes.count, index + closing.count)]) == closing {
                    advance(closing.count)
                    break
                }
                if Array(bytes[index ..< min(bytes.count, index + escape.count)]) == escape {
                    advance(escape.count)
                    if peek() == UInt8(ascii: "(") {
                        advance()
                        code(untilParenthesis: true)
                        text.append(0)
                    } else if let escaped = peek() {
                        text.append(escaped)
                        advance()
                    }
                    continue
                }
                text.append(bytes[index])
                advance()
            }
            literals.append(StringLiteral(text: String(decoding: text, as: UTF8.self), line: start))
        }
    }
}

/// An API or a command a message names.
private enum NamedReference: CustomStringConvertible {
    /// `Type.member(label:)`, `variable.member()`, `Type(label:)` or
    /// `member(_:)`; `labels` is nil when the text passes values or elides
    /// them (`rename(...)`, `enumerateObjects(ofType: "Person")`).
    case call(qualifiers: [String], name: String, labels: [String]?)
    /// A backticked identifier or dotted path: `versions`, `Peer.acknowledged`.
    case identifier(path: [String])
    /// A backticked command line: the program and its words, `strata-hub
    /// device add`.
    case command(program: String, words: [String])

    var description: String {
        switch self {
        case .call(let qualifiers, let name, let labels):
            return (qualifiers + [name]).joined(separator: ".") + "(" + (labels?.map { $0 + ":" }.joined() ?? "…") + ")"
        case .identifier(let path): return "`" + path.joined(separator: ".") + "`"
        case .command(let program, let words): return "`" + ([program] + words).joined(separator: " ") + "`"
        }
    }

    private static let callPattern = try! NSRegularExpression(
        pattern: #"(?<![\w.])((?:[A-Za-z_]\w*\.)*)([A-Za-z_]\w*)\(([^()]*)\)"#)
    private static let backtickPattern = try! NSRegularExpression(pattern: #"`([^`\n]+)`"#)

    static func all(in text: String) -> [NamedReference] {
        let whole = NSRange(text.startIndex..., in: text)
        func group(_ match: NSTextCheckingResult, _ number: Int) -> String {
            Range(match.range(at: number), in: text).map { String(text[$0]) } ?? ""
        }
        var found: [NamedReference] = []
        for match in callPattern.matches(in: text, range: whole) {
            let qualifiers = group(match, 1).split(separator: ".").map(String.init)
            let name = group(match, 2)
            let arguments = group(match, 3).trimmingCharacters(in: .whitespaces)
            if arguments.isEmpty {
                found.append(.call(qualifiers: qualifiers, name: name, labels: []))
            } else if arguments.range(of: #"^(?:[A-Za-z_]\w*:)+$"#, options: .regularExpression) != nil {
                let labels = arguments.split(separator: ":").map(String.init)
                found.append(.call(qualifiers: qualifiers, name: name, labels: labels))
            } else if arguments == "..." || arguments == "…" {
                found.append(.call(qualifiers: qualifiers, name: name, labels: nil))
            } else if arguments.range(of: #"^[A-Za-z_]\w*: "#, options: .regularExpression) != nil,
                qualifiers.isEmpty ? name.first!.isLowercase : true
            {
                found.append(.call(qualifiers: qualifiers, name: name, labels: nil))
            }
            // Anything else is prose ("field(s)", "version 3 (people.strata)")
            // or a value shown as a person reads it (`Note(id: 1, title: "…")`).
        }
        for match in backtickPattern.matches(in: text, range: whole) {
            let inside = group(match, 1)
            let words = inside.split(separator: " ").map(String.init)
            if let program = words.first, program == "strata" || program == "strata-hub" {
                let subcommands = words.dropFirst().prefix {
                    $0.range(of: #"^[a-z][a-z-]*$"#, options: .regularExpression) != nil
                }
                found.append(.command(program: program, words: Array(subcommands)))
            } else if inside.range(of: #"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$"#, options: .regularExpression) != nil {
                found.append(.identifier(path: inside.split(separator: ".").map(String.init)))
            }
        }
        return found
    }
}

/// What the sources declare, read from their text: types, members with their
/// argument labels, parameter names, string keys and command names.
private struct DeclarationIndex {
    /// One function, initializer or enum case with associated values.
    struct Callable {
        var labels: [String]
        var defaulted: [Bool]
        var file: Int

        /// Whether a call form with these labels reaches it: the labels in
        /// order, skipping only parameters that have a default value.
        func accepts(_ given: [String]) -> Bool {
            var remaining = given[...]
            for (label, hasDefault) in zip(labels, defaulted) {
                if remaining.first == label {
                    remaining = remaining.dropFirst()
                } else if !hasDefault {
                    return false
                }
            }
            return remaining.isEmpty
        }
    }

    /// The standard library's and Foundation's types a message may name
    /// (`= Date()`): the sources do not declare them.
    static let externalTypes: Set<String> = [
        "Array", "Bool", "Data", "Date", "Decimal", "Dictionary", "Double", "Int", "Optional", "Set", "String",
        "URL", "UUID",
    ]

    var types: Set<String> = DeclarationIndex.externalTypes
    /// The types each file declares or extends, by file number.
    var typesOfFile: [Set<String>] = []
    var callables: [String: [Callable]] = [:]
    var initializers: [String: [Callable]] = [:]
    /// Properties and cases without parameters, and the files declaring them.
    var members: [String: Set<Int>] = [:]
    var parameterNames: Set<String> = []
    var stringKeys: Set<String> = []
    var commandNames: [String: Set<String>] = [:]

    init(_ files: [SourceFile]) {
        for (number, file) in files.enumerated() {
            let text = file.text
            var declared: Set<String> = []
            for match in Self.matches(
                #"\b(?:struct|class|enum|actor|protocol|extension|typealias)\s+([A-Za-z_][\w.]*)"#, in: text)
            {
                let name = String(match[0].split(separator: ".").last ?? "")
                declared.insert(name)
            }
            for match in Self.matches(#"\b(?:struct|class|enum|actor|protocol|typealias)\s+([A-Za-z_]\w*)"#, in: text) {
                types.insert(match[0])
            }
            typesOfFile.append(declared)
            for (name, parameters) in Self.parameterLists(
                after: #"\b(?:func|case|macro)\s+`?([A-Za-z_]\w*)`?\s*(?:<[^>{]*>)?\s*\("#, in: text)
            {
                let callable = Self.callable(parameters, file: number)
                callables[name, default: []].append(callable)
                parameterNames.formUnion(Self.parameterNames(parameters))
            }
            for (_, parameters) in Self.parameterLists(after: #"\b(init)[?!]?\s*(?:<[^>{]*>)?\s*\("#, in: text) {
                let callable = Self.callable(parameters, file: number)
                for type in declared { initializers[type, default: []].append(callable) }
                parameterNames.formUnion(Self.parameterNames(parameters))
            }
            for match in Self.matches(#"\b(?:var|let|case)\s+`?([A-Za-z_]\w*)"#, in: text) {
                members[match[0], default: []].insert(number)
            }
            for match in Self.matches(#"\bcase\s+[A-Za-z_]\w*(?:\s*,\s*([A-Za-z_]\w*))+"#, in: text) {
                members[match[0], default: []].insert(number)
            }
            for literal in StringLiteral.all(in: text)
            where literal.text.range(of: #"^[A-Za-z_]\w*$"#, options: .regularExpression) != nil {
                stringKeys.insert(literal.text)
            }
            let program = file.path.hasPrefix("Hub/") ? "strata-hub" : "strata"
            for match in Self.matches(#"commandName:\s*"([a-z-]+)""#, in: text) {
                commandNames[program, default: []].insert(match[0])
            }
            // A command without a commandName is named after its type, in kebab case.
            for match in Self.matches(#"struct\s+(\w+)\s*:\s*(?:Async)?ParsableCommand"#, in: text) {
                let kebab = match[0].replacingOccurrences(
                    of: #"([a-z])([A-Z])"#, with: "$1-$2", options: .regularExpression
                ).lowercased()
                commandNames[program, default: []].insert(kebab)
            }
        }
    }

    /// Why the reference is wrong, or nil when it names something declared.
    func problem(with reference: NamedReference) -> String? {
        switch reference {
        case .call(let qualifiers, let name, let labels):
            let type = qualifiers.last.flatMap { $0.first!.isUppercase ? $0 : nil }
            if let type, !types.contains(type) { return "\(reference) names the type \(type), which is not declared" }
            var candidates: [Callable]
            if qualifiers.isEmpty && name.first!.isUppercase {
                // A type's initializer, or an attached macro (`@Renamed(from:)`).
                let macros = callables[name] ?? []
                guard types.contains(name) || !macros.isEmpty else {
                    return "\(reference) names the type \(name), which is not declared"
                }
                if Self.externalTypes.contains(name) { return nil }
                candidates = (initializers[name] ?? []) + macros
            } else {
                candidates = callables[name] ?? []
                if let type { candidates = candidates.filter { typesOfFile[$0.file].contains(type) } }
            }
            if let labels { candidates = candidates.filter { $0.accepts(labels) } }
            return candidates.isEmpty ? "\(reference) is not declared\(type.map { " on \($0)" } ?? "")" : nil
        case .identifier(let path):
            if path.count == 1, let name = path.first, name.first!.isUppercase {
                return types.contains(name) ? nil : "\(reference) is not a declared type"
            }
            let name = path.last!
            let known =
                members[name] != nil || callables[name] != nil || types.contains(name) || parameterNames.contains(name)
                || stringKeys.contains(name)
            return known ? nil : "\(reference) is not declared"
        case .command(let program, let words):
            let names = commandNames[program] ?? []
            if let missing = words.first(where: { !names.contains($0) }) {
                return "\(reference) names the command \(missing), which \(program) does not have"
            }
            return nil
        }
    }

    static func matches(_ pattern: String, in text: String) -> [[String]] {
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (1 ..< match.numberOfRanges).compactMap { Range(match.range(at: $0), in: text).map { String(text[$0]) } }
        }
    }

    /// The parameter list (the text between the balanced parentheses) after
    /// each match of `pattern`, whose first group is the name.
    static func parameterLists(after pattern: String, in text: String) -> [(String, String)] {
        let regex = try! NSRegularExpression(pattern: pattern)
        let utf16 = Array(text.utf16)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
            guard let nameRange = Range(match.range(at: 1), in: text) else { return nil }
            var depth = 1
            var end = match.range.upperBound
            while end < utf16.count && depth > 0 {
                if utf16[end] == UInt16(UInt8(ascii: "(")) { depth += 1 }
                if utf16[end] == UInt16(UInt8(ascii: ")")) { depth -= 1 }
                end += 1
            }
            let inside = String(
                utf16CodeUnits: Array(utf16[match.range.upperBound ..< max(match.range.upperBound, end - 1)]),
                count: max(0, end - 1 - match.range.upperBound))
            return (String(text[nameRange]), inside)
        }
    }

    /// The parameters of a list, split at its top-level commas.
    static func parameters(_ list: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var depth = 0
        var previous: Character = " "
        for character in list {
            switch character {
            case "(", "[", "<", "{": depth += 1
            case ")", "]", "}": depth -= 1
            case ">" where previous != "-": depth -= 1
            case "," where depth == 0:
                parts.append(current)
                current = ""
                previous = character
                continue
            default: break
            }
            current.append(character)
            previous = character
        }
        if !current.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { parts.append(current) }
        return parts
    }

    /// The part of a parameter before its type: `label name`, `_ name`, `name`.
    static func head(_ parameter: String) -> [String] {
        let beforeColon = parameter.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
        return beforeColon.split(whereSeparator: { $0.isWhitespace }).map(String.init).filter { !$0.hasPrefix("@") }
    }

    static func callable(_ list: String, file: Int) -> Callable {
        let parameters = parameters(list)
        return Callable(
            labels: parameters.map { $0.contains(":") ? head($0).first ?? "_" : "_" },
            defaulted: parameters.map { parameter in
                var depth = 0
                for character in parameter {
                    if "([<{".contains(character) { depth += 1 }
                    if ")]}".contains(character) { depth -= 1 }
                    if character == "=" && depth == 0 { return true }
                }
                return false
            },
            file: file)
    }

    static func parameterNames(_ list: String) -> [String] {
        parameters(list).flatMap(head).filter { $0 != "_" }
    }
}
