import Foundation
import Testing

@testable import Strata

/// The structural check (`LMDBFileCheck`) on a real file and on damaged
/// copies of it: it must never crash, and a copy it passes must never crash
/// LMDB either.
@Suite(.temporaryFolder)
struct StructuralCheckTests {
    let folder = TemporaryFolder.current

    /// A file with every kind of LMDB page: several types, an index whose
    /// keys have thousands of duplicates (subtrees) and one with three per key
    /// (sub-pages), values long enough for overflow pages, and deletes that
    /// leave free pages.
    enum Sample {
        static let person = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property("age", .int, default: 0, indexed: true)
            Property("team", .int, default: 0, indexed: true)
            Property("bio", .string)
        }
        static let note = ObjectSchema("Note") {
            Property("text", .string)
            Property("day", .int, default: 0, indexed: true)
        }
        static let schema = Schema([person, note])

        static func make(_ path: String) throws {
            let db = try Database(configuration: Fixtures.configuration(path, schema: schema))
            defer { db.close() }
            try db.write { tx in
                for id in 0 ..< 2_400 {
                    let bio = String(repeating: "bio \(id) ", count: id % 37 == 0 ? 700 : 60)
                    _ = try tx.insert(
                        "Person",
                        [
                            "id": .int(Int64(id)), "name": .string("Person \(id)"), "age": .int(Int64(id % 8)),
                            "team": .int(Int64(id / 3)), "bio": .string(bio),
                        ])
                }
                for day in 0 ..< 800 {
                    _ = try tx.insert("Note", ["text": .string("note of day \(day)"), "day": .int(Int64(day % 50))])
                }
            }
            try db.write { tx in
                for id in stride(from: 0, to: 2_400, by: 4) { _ = try tx.delete("Person", key: .int(Int64(id))) }
            }
        }
    }

    @Test func aSoundFilePassesAndEveryPageIsAccountedFor() throws {
        let path = folder.path()
        try Sample.make(path)
        let summary = try LMDBFileCheck.run(path: path)
        // The meta database, two types' records and three indexes.
        #expect(summary.namedDatabases == 6)
        #expect(summary.freePages > 0)
        #expect(summary.duplicateSubtrees > 0 && summary.duplicateSubpages > 0 && summary.overflowPages > 0)
        #expect(summary.pageCount * summary.pageSize > 2 << 20)
        #expect(summary.reachedPages + summary.freePages <= summary.pageCount - 2)
        #expect(try Database.verify(path: path) == [])
        var config = Fixtures.configuration(path, schema: Sample.schema)
        config.verifiesFileOnOpen = true
        try Database(configuration: config).close()
        // LMDB's compacting copy writes its meta pages and trees its own way.
        try Database.compact(path: path)
        #expect(try LMDBFileCheck.run(path: path).freePages == 0)
        #expect(try Database.verify(path: path) == [])
    }

    @Test func aDamagedPageIsReportedByOpenVerifyAndTheCommand() throws {
        let path = folder.path()
        try Sample.make(path)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let pageSize = try LMDBFileCheck.run(path: path).pageSize
        // The main database's root: zero it.
        let metas = [0, pageSize].map { LMDBMeta(LMDBBytes(bytes: Array(bytes[$0 ..< $0 + 152]))) }
        let newest = metas[1].transactionID > metas[0].transactionID ? metas[1] : metas[0]
        let root = Int(newest.main.root) * pageSize
        bytes.replaceSubrange(root ..< root + pageSize, with: [UInt8](repeating: 0, count: pageSize))
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        var config = Fixtures.configuration(path, schema: Sample.schema)
        config.verifiesFileOnOpen = true
        let error = #expect(throws: StrataError.self) { try Database(configuration: config) }
        #expect(error?.code == .corruptFile)
        #expect(error?.message.contains("page \(newest.main.root) (a leaf of the main database)") == true)
        let problems = try Database.verify(path: path)
        #expect(problems.count == 1 && problems[0].hasPrefix("\(path) is damaged: page \(newest.main.root)"))
        let command = try StrataBinary.run(["verify", path])
        StrataBinary.expectOneLineError(
            command, containing: ["\(path) is damaged: page \(newest.main.root)", "Restore it from a backup."])
    }

    /// The cost of the check at a million objects, printed rather than
    /// asserted: `STRATA_MEASURE_FILE_CHECK=1 swift test -c release
    /// -Xswiftc -enable-testing --filter StructuralCheckTests/costAtAMillionObjects`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["STRATA_MEASURE_FILE_CHECK"] != nil))
    func costAtAMillionObjects() throws {
        let path = folder.path()
        let db = try Database(configuration: Fixtures.configuration(path))
        try db.write { tx in
            for id in 0 ..< 1_000_000 {
                _ = try tx.insert("Person", Fixtures.person(Int64(id), "First \(id)", "Last", age: Int64(id % 100)))
            }
        }
        db.close()
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        var times: [Double] = []
        var summary: LMDBFileCheck.Summary?
        for _ in 0 ..< 5 {
            let start = Date()
            summary = try LMDBFileCheck.run(path: path)
            times.append(Date().timeIntervalSince(start))
        }
        let plain = Fixtures.configuration(path)
        var checked = plain
        checked.verifiesFileOnOpen = true
        var opens: [(Double, Double)] = []
        for _ in 0 ..< 5 {
            var start = Date()
            try Database(configuration: plain).close()
            let without = Date().timeIntervalSince(start)
            start = Date()
            try Database(configuration: checked).close()
            opens.append((without, Date().timeIntervalSince(start)))
        }
        let start = Date()
        let problems = try Database.verify(path: path)
        let full = Date().timeIntervalSince(start)
        print(
            """
            1,000,000 objects, \(size) bytes, \(summary.map { "\($0)" } ?? ""): structural check \
            \(times.map { String(format: "%.3f", $0) }) s; open without / with verifiesFileOnOpen \
            \(opens.map { String(format: "%.3f/%.3f", $0.0, $0.1) }) s; Database.verify(path:) \
            \(String(format: "%.2f", full)) s, \(problems.count) problems
            """)
    }

    @Test func damagedCopiesNeverCrashTheCheckOrLMDB() async throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["STRATA_DAMAGE_SEED"].flatMap { UInt64($0) } ?? 20_261_123
        let copies = environment["STRATA_DAMAGE_COPIES"].flatMap { Int($0) } ?? 1_000
        let original = folder.path("original.strata")
        try Sample.make(original)
        let sound = try [UInt8](Data(contentsOf: URL(fileURLWithPath: original)))
        let pageSize = try LMDBFileCheck.run(path: original).pageSize

        let started = Date()
        // The checks run in this process, on both cores: a crash fails the run.
        let halves = try await withThrowingTaskGroup(of: CheckedCopies.self) { group in
            for half in 0 ..< 2 {
                group.addTask { [folder] in
                    try Self.checkCopies(
                        stride(from: half, to: copies, by: 2), of: sound, pageSize: pageSize, seed: seed,
                        folder: folder)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let found = halves.reduce(into: [:]) { $0.merge($1.found, uniquingKeysWith: +) }
        let passed = halves.flatMap(\.passed).sorted { $0.index < $1.index }

        // Copies the check passed are opened and read in child processes, a
        // batch each: a crash there is damage the check missed.
        let checked = Date()
        var outcomes: [String: Int] = [:]
        // One batch per core at a time.
        let size = max(1, (passed.count + 5) / 6)
        let batches = stride(from: 0, to: passed.count, by: size).map {
            Array(passed[$0 ..< min($0 + size, passed.count)])
        }
        await withTaskGroup(of: [Substring].self) { group in
            for (number, batch) in batches.enumerated() {
                if number >= 2 {
                    outcomes.merge(Self.outcomes(await group.next() ?? [], seed: seed), uniquingKeysWith: +)
                }
                group.addTask {
                    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
                        [paths = batch.map(\.path) as [String], indexes = batch.map(\.index) as [Int]] in
                        for (index, path) in zip(indexes, paths) {
                            FileHandle.standardError.write(Data("start \(index)\n".utf8))
                            let outcome = Self.readWhole(path)
                            FileHandle.standardError.write(Data("outcome \(index) \(outcome)\n".utf8))
                        }
                    }
                    return String(decoding: result?.standardErrorContent ?? [], as: UTF8.self).split(separator: "\n")
                }
            }
            for await lines in group { outcomes.merge(Self.outcomes(lines, seed: seed), uniquingKeysWith: +) }
        }
        let byKind = Damage.Kind.allCases.map { "\($0): \(found[$0, default: 0])" }.joined(separator: ", ")
        print(
            """
            \(copies) damaged copies (seed \(seed)): the check found damage in \(found.values.reduce(0, +)) \
            (\(byKind)); \(passed.count) passed it, of which \(outcomes["read", default: 0]) read whole and \
            verified sound, \(outcomes["problems", default: 0]) read with problems reported by verify(), \
            \(outcomes["error", default: 0]) gave a StrataError (checks \(Int(checked.timeIntervalSince(started))) s, \
            children \(Int(Date().timeIntervalSince(checked))) s)
            """)
        #expect(outcomes.values.reduce(0, +) == passed.count)
    }

    struct CheckedCopies: Sendable {
        var found: [Damage.Kind: Int] = [:]
        var passed: [(index: Int, path: String)] = []
    }

    /// Makes the damaged copies `indexes` and checks each, keeping the files
    /// of those that pass.
    static func checkCopies(
        _ indexes: StrideTo<Int>, of sound: [UInt8], pageSize: Int, seed: UInt64, folder: TemporaryFolder
    ) throws -> CheckedCopies {
        var result = CheckedCopies()
        // One scratch file, rewritten in place for each copy: much cheaper
        // than a new file each time. Only copies that pass are kept.
        let scratch = folder.path("scratch-\(UUID().uuidString).strata")
        try #require(FileManager.default.createFile(atPath: scratch, contents: nil), "cannot create \(scratch)")
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch))
        defer { try? handle.close() }
        for index in indexes {
            let kind = Damage.Kind.allCases[index % Damage.Kind.allCases.count]
            var generator = SplitMix64(seed: seed &+ UInt64(index) &* 0x9E37_79B9)
            let bytes = Data(Damage.apply(kind, to: sound, pageSize: pageSize, using: &generator))
            try handle.seek(toOffset: 0)
            try handle.write(contentsOf: bytes)
            try handle.truncate(atOffset: UInt64(bytes.count))
            do {
                try LMDBFileCheck.run(path: scratch)
                let path = folder.path("copy-\(index).strata")
                try bytes.write(to: URL(fileURLWithPath: path))
                result.passed.append((index, path))
            } catch let error as StrataError {
                #expect(
                    [.corruptFile, .notAStrataFile].contains(error.code),
                    "copy \(index) (seed \(seed)): \(error)")
                result.found[kind, default: 0] += 1
            }
        }
        return result
    }

    /// Counts the outcomes a child reported, and records a crash at the copy
    /// it had started.
    static func outcomes(_ lines: [Substring], seed: UInt64) -> [String: Int] {
        var outcomes: [String: Int] = [:]
        for line in lines where line.hasPrefix("outcome ") {
            outcomes[String(line.split(separator: " ")[2]), default: 0] += 1
        }
        if let last = lines.last, last.hasPrefix("start ") {
            Issue.record("copy \(last.dropFirst(6)) (STRATA_DAMAGE_SEED=\(seed)) passed the check and crashed LMDB")
        }
        return outcomes
    }

    /// Opens a copy, reads every object and verifies it: "read" when it is
    /// sound, "problems" when `verify()` reports some, "error" for a
    /// `StrataError`.
    static func readWhole(_ path: String) -> String {
        do {
            let db = try Database(inspecting: path)
            defer { db.close() }
            try db.read { tx in
                for type in tx.typeNames {
                    _ = try tx.objects(type).map(\.values)
                }
            }
            return try db.verify().isEmpty ? "read" : "problems"
        } catch {
            return "error"
        }
    }

    /// Seeded damage to a file's bytes.
    enum Damage {
        enum Kind: String, CaseIterable, Sendable {
            case flippedBytes, zeroedPage, swappedPages, truncated, damagedMeta
        }

        static func apply(
            _ kind: Kind, to sound: [UInt8], pageSize: Int, using generator: inout SplitMix64
        ) -> [UInt8] {
            var bytes = sound
            let pages = bytes.count / pageSize
            func page() -> Int { Int.random(in: 2 ..< pages, using: &generator) }
            switch kind {
            case .flippedBytes:
                for _ in 0 ..< Int.random(in: 1 ... 16, using: &generator) {
                    let at = Int.random(in: 2 * pageSize ..< bytes.count, using: &generator)
                    bytes[at] ^= UInt8.random(in: 1 ... 255, using: &generator)
                }
            case .zeroedPage:
                let at = page() * pageSize
                bytes.replaceSubrange(at ..< at + pageSize, with: [UInt8](repeating: 0, count: pageSize))
            case .swappedPages:
                let (a, b) = (page() * pageSize, page() * pageSize)
                let first = Array(bytes[a ..< a + pageSize])
                bytes.replaceSubrange(a ..< a + pageSize, with: bytes[b ..< b + pageSize])
                bytes.replaceSubrange(b ..< b + pageSize, with: first)
            case .truncated:
                bytes.removeLast(Int.random(in: 1 ... bytes.count, using: &generator))
            case .damagedMeta:
                let meta = Int.random(in: 0 ... 1, using: &generator) * pageSize
                if Bool.random(using: &generator) {
                    for _ in 0 ..< Int.random(in: 1 ... 4, using: &generator) {
                        let at = meta + Int.random(in: 0 ..< 152, using: &generator)
                        bytes[at] ^= UInt8.random(in: 1 ... 255, using: &generator)
                    }
                } else {
                    bytes.replaceSubrange(meta ..< meta + pageSize, with: [UInt8](repeating: 0, count: pageSize))
                }
            }
            return bytes
        }
    }
}
