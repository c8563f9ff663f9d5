import Foundation
import Testing

@testable import Strata

/// The catalog decoder, fed random and mutated JSON in a child process,
/// throws or decodes a valid catalog, within bounded memory.
@Suite struct HostileCatalogTests {
    static let catalogSchema = Schema([
        Fixtures.person,
        ObjectSchema("Note") {
            Property("text", .string)
            Property("score", .double, default: 1.0)
            Property("done", .bool, default: false, indexed: true)
            Property("due", .date, optional: true, indexed: true)
            Property("attachment", .data, optional: true, default: .data(Data([1, 2, 3])))
            Property("ref", .uuid, default: .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!))
        },
        ObjectSchema("Tag", primaryKey: "name") {
            Property("name", .string)
            Property("uses", .int, default: 0)
        },
    ])

    static let jsonAlphabet = Array("{}[]\":,.-+0123456789eEtruefalsnidmgcpyNT \\".utf8)

    @Test(.timeLimit(.minutes(5)))
    func catalogDecoderSurvivesRandomAndMutatedJSON() async {
        await #expect(processExitsWith: .success) {
            let limits = try MemoryLimits()
            try HostileCatalogTests.feedTheCatalogDecoder(100_000)
            limits.expectResidentGrowthBelow(32 << 20)
        }
    }

    /// One in ten inputs random JSON characters, the others a real catalog
    /// with bytes changed, spans cut out or repeated.
    static func feedTheCatalogDecoder(_ inputs: Int) throws {
        let path = "hostile.strata"
        let original = Catalog(schema: Self.catalogSchema, schemaVersion: 4).encoded()
        let control = try original.withUnsafeBytes { try Catalog.decode($0, path: path) }
        #expect(control.schema == Self.catalogSchema)
        var rng = SplitMix64(seed: 4)
        var problems: [String] = []
        var accepted = 0
        var rejected = 0
        for iteration in 0 ..< inputs {
            var input: [UInt8]
            if iteration % 10 == 0 {
                input = (0 ..< Int.random(in: 0 ... 256, using: &rng)).map { _ in
                    Self.jsonAlphabet.randomElement(using: &rng)!
                }
            } else {
                input = original
                for _ in 0 ..< Int.random(in: 1 ... 3, using: &rng) where !input.isEmpty {
                    let at = Int.random(in: 0 ..< input.count, using: &rng)
                    switch Int.random(in: 0 ..< 3, using: &rng) {
                    case 0:
                        input[at] =
                            Int.random(in: 0 ..< 8, using: &rng) == 0
                            ? UInt8.random(in: 0 ... 255, using: &rng) : Self.jsonAlphabet.randomElement(using: &rng)!
                    case 1:
                        input.removeSubrange(at ..< min(input.count, at + Int.random(in: 1 ... 24, using: &rng)))
                    default:
                        let span = Array(input[at ..< min(input.count, at + Int.random(in: 1 ... 40, using: &rng))])
                        let target =
                            Bool.random(using: &rng) ? at + span.count : Int.random(in: 0 ... input.count, using: &rng)
                        input.insert(contentsOf: span, at: target)
                    }
                }
            }
            do {
                let catalog = try input.withUnsafeBytes { try Catalog.decode($0, path: path) }
                accepted += 1
                if let problem = catalog.consistencyProblem() {
                    problems.append(
                        "accepted an inconsistent catalog (\(problem)): \(String(decoding: input, as: UTF8.self))")
                }
                if catalog.magic != Catalog.magic || catalog.formatVersion > Catalog.currentFormatVersion {
                    problems.append("accepted magic \(catalog.magic), format \(catalog.formatVersion)")
                }
                let again = try catalog.encoded().withUnsafeBytes { try Catalog.decode($0, path: path) }
                if again.encoded() != catalog.encoded() {
                    problems.append(
                        "an accepted catalog does not survive re-encoding: \(String(decoding: input, as: UTF8.self))")
                }
            } catch let error as StrataError {
                rejected += 1
                if error.code != .corruptFile && error.code != .unsupportedFormatVersion {
                    problems.append("rejected with \(error.code): \(error.message)")
                }
                if !error.message.contains(path) { problems.append("a message without the path: \(error.message)") }
            } catch {
                problems.append("threw \(type(of: error)), not a StrataError: \(error)")
            }
            if problems.count >= 10 { break }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        // Both outcomes must occur, or the mutations test nothing.
        #expect(accepted > inputs / 200, "accepted \(accepted)")
        #expect(rejected > inputs / 2, "rejected \(rejected)")
    }
}
