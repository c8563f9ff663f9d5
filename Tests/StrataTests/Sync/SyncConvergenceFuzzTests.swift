import Foundation
import Testing

@_spi(Hub) @testable import Strata

/// The seeded convergence fuzz (issue 26): five files of one dataset at
/// app versions {1, 1, 2, 3, 3} make random writes through their own app
/// version (inserts, updates of one to all fields, deletes, re-inserts,
/// links set and cleared, lists and embedded objects replaced) while
/// changesets travel between random pairs of a randomly partitioned
/// network (whole, or in pages of one to six objects, which split the
/// larger transactions and relayed changesets), each dropped
/// (10 %), delivered up to three times and in any order. After quiescence (all in flight
/// delivered, then full exchanges in a ring and between all pairs, twice):
///
/// - every file has the same canonical state: each type, object, field by
///   name and descriptor (the ones its app does not declare included, read
///   through the file's catalog) and causal length;
/// - no register's winning value is lost: each holds the value of its
///   highest-stamped write of the object's last life (read from the
///   writer's clock row right after the write), and each object's causal
///   length is the highest any writer gave it;
/// - `verify` finds nothing wrong in any file.
///
/// `make test` runs 4 seeds of 5,000 operations (20,000 in all; about 4 s
/// per seed in a debug build, the seeds in parallel). For more seeds, or
/// longer runs (20,000 operations: about 14 s per seed):
///
/// ```
/// STRATA_SYNC_FUZZ_SEEDS=200 swift test --filter SyncConvergenceFuzz
/// STRATA_SYNC_FUZZ_SEEDS=10 STRATA_SYNC_FUZZ_OPERATIONS=20000 swift test --filter SyncConvergenceFuzz
/// ```
///
/// `STRATA_SYNC_FUZZ_FIRST_SEED` starts the seeds elsewhere (a failing
/// seed's number is in its message).
@Suite(.temporaryFolder) struct SyncConvergenceFuzzTests {
    let folder = TemporaryFolder.current

    static let environment = ProcessInfo.processInfo.environment
    static let firstSeed = environment["STRATA_SYNC_FUZZ_FIRST_SEED"].flatMap(UInt64.init) ?? 1
    static let seeds: [UInt64] = Array(
        firstSeed ..< firstSeed + (environment["STRATA_SYNC_FUZZ_SEEDS"].flatMap(UInt64.init) ?? 4))
    static let operations = environment["STRATA_SYNC_FUZZ_OPERATIONS"].flatMap(Int.init) ?? 5_000

    @Test(arguments: seeds)
    func filesAtThreeAppVersionsConvergeAndLoseNoWinningValue(seed: UInt64) throws {
        try run(seed: seed, pageSizes: nil)
    }

    @Test(arguments: seeds)
    func filesExchangingPagesOfAFewObjectsConverge(seed: UInt64) throws {
        try run(seed: seed, pageSizes: 1 ... 6)
    }

    private func run(seed: UInt64, pageSizes: ClosedRange<Int>?) throws {
        let world = try SyncFuzzWorld(folder: folder, seed: seed, pageSizes: pageSizes)
        defer { world.close() }
        try world.run(operations: SyncConvergenceFuzzTests.operations)
        try world.quiesce()
        // The run did what it is for: deletes and re-inserts, pages lost
        // and pages applied.
        let counts = world.counts
        #expect(counts["deletes", default: 0] > 0 && counts["dropped", default: 0] > 0, "\(counts)")
        #expect(world.ledger.causalLengths.values.contains { $0 >= 3 }, "no re-insert")
        if pageSizes != nil { #expect(counts["split pages", default: 0] > 0, "no page ended inside a transaction") }
        try SyncConvergenceFuzzTests.check(world)
    }

    /// Checks convergence, the ledger's winners and `verify` on every file.
    static func check(_ world: SyncFuzzWorld, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let seed = world.seed
        let states = try world.devices.map { try SyncFuzzState.canonicalState(of: $0.db) }
        let union = SyncFuzzState.union(states)
        let reference = states[0].over(union)
        for (index, state) in states.enumerated().dropFirst() {
            let differences = SyncFuzzState.differences(reference, state.over(union))
            #expect(
                differences.isEmpty,
                "seed \(seed): device 0 (v\(world.devices[0].version)) and device \(index) (v\(world.devices[index].version)) differ: \(differences.prefix(6))",
                sourceLocation: sourceLocation)
        }
        let lost = lostWinners(world.ledger, reference)
        #expect(
            lost.isEmpty, "seed \(seed): \(lost.count) winning values lost: \(lost.prefix(6))",
            sourceLocation: sourceLocation)
        for device in world.devices {
            let problems = try device.db.verify()
            #expect(
                problems.isEmpty, "seed \(seed): \(device.db.path): \(problems.prefix(4))",
                sourceLocation: sourceLocation)
        }
    }

    /// The registers whose winner `state` does not hold, and the objects
    /// whose causal length is not the highest a writer gave them.
    static func lostWinners(_ ledger: SyncFuzzLedger, _ state: SyncFuzzState) -> [String] {
        var lost: [String] = []
        for (object, length) in ledger.causalLengths {
            let found = state.causalLengths[object.type]?[.int(object.key)]
            if found != length {
                lost.append(
                    "\(object.type)[\(object.key)] has causal length \(found.map(String.init) ?? "none"), written \(length)"
                )
            }
            if (state.objects[object.type]?[.int(object.key)] != nil) != (length % 2 == 1) {
                lost.append("\(object.type)[\(object.key)] lives: \(length % 2 == 1), but the file says otherwise")
            }
        }
        let people = Set((state.objects["Person"] ?? [:]).keys)
        for (type, objects) in state.objects {
            for (key, values) in objects {
                guard let number = key.int, let length = state.causalLengths[type]?[key] else { continue }
                var names = SyncFuzzSchema.properties(type, version: 3).filter { $0 != "id" }
                if type == "Person" {
                    // The address per path: its life, and its fields while
                    // it holds one.
                    let home = SyncFuzzRegister(type: type, key: number, field: "home")
                    let life = ledger.life(home, causalLength: length)
                    let found = values.first { $0.key.hasPrefix("home: ") }?.value
                    if found != .int(Int64(life)) {
                        lost.append("\(home) has life \(found.map { "\($0)" } ?? "none"), written \(life)")
                    }
                    names.removeAll { $0 == "home" }
                    if life % 2 == 1 { names += SyncFuzzSchema.addressFields(version: 3).map { "home.\($0)" } }
                }
                for name in names {
                    guard let (field, value) = values.first(where: { $0.key.hasPrefix("\(name): ") }),
                        let property = state.fields[type]?[field]
                    else {
                        lost.append("\(type)[\(key)] has no field \(name)")
                        continue
                    }
                    let register = SyncFuzzRegister(type: type, key: number, field: name)
                    let expected = ledger.expected(
                        register, causalLength: length, empty: property.valueWhenAbsent, liveTargets: people)
                    if value != expected { lost.append("\(register) holds \(value), the winner is \(expected)") }
                }
            }
        }
        return lost
    }
}

extension SyncFuzzState {
    /// What differs between two states, one line each.
    static func differences(_ a: SyncFuzzState, _ b: SyncFuzzState) -> [String] {
        var lines: [String] = []
        for type in Set(a.causalLengths.keys).union(b.causalLengths.keys).sorted() {
            let (x, y) = (a.causalLengths[type] ?? [:], b.causalLengths[type] ?? [:])
            for key in Set(x.keys).union(y.keys) where x[key] != y[key] {
                lines.append(
                    "\(type)[\(key)] causal length \(x[key].map(String.init) ?? "none") ≠ \(y[key].map(String.init) ?? "none")"
                )
            }
        }
        for type in Set(a.objects.keys).union(b.objects.keys).sorted() {
            let (x, y) = (a.objects[type] ?? [:], b.objects[type] ?? [:])
            for key in Set(x.keys).union(y.keys) where x[key] != y[key] {
                guard let left = x[key], let right = y[key] else {
                    lines.append("\(type)[\(key)] is only in \(x[key] == nil ? "the second" : "the first")")
                    continue
                }
                for field in Set(left.keys).union(right.keys).sorted() where left[field] != right[field] {
                    lines.append(
                        "\(type)[\(key)].\(field): \(left[field].map(String.init(describing:)) ?? "none") ≠ \(right[field].map(String.init(describing:)) ?? "none")"
                    )
                }
            }
        }
        return lines
    }
}
