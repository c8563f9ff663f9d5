import CLMDBBench
import CLMDBFloor
import Foundation

/// The scenarios through LMDB's C API, written in C (`Sources/CLMDBFloor`):
/// the floor. The C code writes the same keys and record bytes as Strata, so
/// the checks of the Swift raw trial read its files back.
struct CFloorTrials {
    let n: Int
    let folder: URL
    /// The migrations write into a fresh tree (the migration floor); the
    /// other scenarios are left to the in-place engine.
    var appending = false

    /// The Swift raw trial on the same folder: it checks the results.
    var reader: LMDBTrials { LMDBTrials(n: n, folder: folder) }
    var path: String { reader.path }

    func trial(_ scenario: Scenario) -> Trial? {
        if appending {
            return switch scenario {
            case .closureMigration:
                migration(
                    "v1",
                    run: { try call("floor_closure_migration_append") { floor_closure_migration_append(path, $0) } },
                    verify: { try reader.checksum { hash, record in hash.add(RawRecord.fields3(record).2.bytes) } })
            case .typeChange:
                migration(
                    "ageText", run: { try call("floor_type_change_append") { floor_type_change_append(path, $0) } },
                    verify: { try reader.sumOfAges() })
            default: nil
            }
        }
        switch scenario {
        case .closureMigration:
            return migration(
                "v1", run: { try call("floor_closure_migration") { floor_closure_migration(path, $0) } },
                verify: { try reader.checksum { hash, record in hash.add(RawRecord.fields3(record).2.bytes) } })
        case .additiveMigration:
            return migration(
                "v1", run: { try call("floor_additive_migration") { floor_additive_migration(path, $0) } },
                verify: {
                    try reader.checksum { hash, record in
                        hash.add(RawRecord.fields(record).2.bytes)
                        hash.add("-")
                    }
                })
        case .typeChange:
            return migration(
                "ageText", run: { try call("floor_type_change") { floor_type_change(path, $0) } },
                verify: { try reader.sumOfAges() })
        case .openUpToDate:
            return migration(
                "v1", run: { try call("floor_open_up_to_date") { floor_open_up_to_date(path, $0) } },
                verify: {
                    try reader.withEnvironment { env in
                        try reader.read(env) { txn, people in
                            var stat = MDB_stat()
                            try check(mdb_stat(txn, people, &stat), "mdb_stat")
                            return UInt64(stat.ms_entries)
                        }
                    }
                })
        case .insert:
            return Trial(
                setup: { removeFiles(in: folder, keepingTemplates: true) },
                run: { try call("floor_create") { floor_create(path, Int64(n), 0, 0, 1, $0) } },
                verify: { try reader.sumOfAges() },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .scan, .lookups, .indexLookups:
            return readTrial(scenario)
        case .followLinks, .ownerLookups, .backlinks, .cascadeDelete, .directDelete, .addLink, .addInt:
            return nil  // makeTrial gives the relationships to their own trials
        }
    }

    private func migration(_ kind: String, run: @escaping () throws -> Void, verify: @escaping () throws -> UInt64)
        -> Trial
    {
        Trial(
            setup: { try input(kind) }, run: run, verify: verify,
            cleanup: { removeFiles(in: folder, keepingTemplates: true) })
    }

    private func readTrial(_ scenario: Scenario) -> Trial {
        let environment = ResultBox<OpaquePointer>()
        let result = ResultBox<UInt64>()
        let keys = scenario == .lookups ? Dataset.lookupKeys(n).map(Int64.init) : []
        // The names back to back, and the length of each.
        let names = scenario == .indexLookups ? Dataset.lookupNames(n) : []
        let nameBytes = names.flatMap { Array($0.utf8) }
        let nameLengths = names.map { $0.utf8.count }
        return Trial(
            setup: {
                try input(scenario == .indexLookups ? "indexed" : "v1")
                var env: OpaquePointer?
                try call("floor_open") { floor_open(path, 1, &env, $0) }
                environment.value = env
            },
            run: {
                var sum: UInt64 = 0
                let env = environment.value
                switch scenario {
                case .scan:
                    try call("floor_scan") { floor_scan(env, &sum, $0) }
                case .lookups:
                    try call("floor_lookups") { failed in
                        keys.withUnsafeBufferPointer { floor_lookups(env, $0.baseAddress, $0.count, &sum, failed) }
                    }
                default:
                    try call("floor_index_lookups") { failed in
                        nameBytes.withUnsafeBufferPointer { bytes in
                            nameLengths.withUnsafeBufferPointer { lengths in
                                floor_index_lookups(
                                    env, bytes.baseAddress, lengths.baseAddress, lengths.count, &sum, failed)
                            }
                        }
                    }
                }
                result.value = sum
            },
            verify: { result.value ?? 0 },
            cleanup: {
                if let env = environment.value { floor_close(env) }
                environment.value = nil
                removeFiles(in: folder, keepingTemplates: true)
            })
    }

    /// Writes the input file once per kind, through the C code, and copies
    /// it for each trial.
    func input(_ kind: String) throws {
        let template = folder.appendingPathComponent("template-c-\(kind)-\(n).lmdb")
        if !FileManager.default.fileExists(atPath: template.path) {
            try call("floor_create") {
                floor_create(template.path, Int64(n), kind == "ageText" ? 1 : 0, kind == "indexed" ? 1 : 0, 0, $0)
            }
            try? FileManager.default.removeItem(atPath: template.path + "-lock")
        }
        removeFiles(in: folder, keepingTemplates: true)
        try copyInput(template, to: path)
    }
}

/// Runs one function of the C floor, turning its LMDB error code and the
/// name of the call that failed into a thrown error.
func call(_ function: String, _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> Int32) throws {
    var failed: UnsafePointer<CChar>?
    let rc = body(&failed)
    guard rc == 0 else {
        let name = failed.map { String(cString: $0) } ?? "?"
        throw ScenarioError("\(function): \(name): \(String(cString: mdb_strerror(rc)))")
    }
}
