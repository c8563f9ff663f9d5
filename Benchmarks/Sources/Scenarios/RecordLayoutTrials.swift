import CLMDBBench
import CLMDBFloor
import Foundation

/// The rewrite of scenario a four ways, to tell what the gap between the
/// Swift raw trial and the C floor is made of: the language (C or Swift
/// around the same LMDB calls) and the records (Strata's tagged varint
/// layout, or plain fixed 40-byte records that need no decoding).
public enum RecordLayoutVariant: String, CaseIterable, Sendable {
    case cStrataRecords = "c-strata"
    case cFixedRecords = "c-fixed"
    case swiftStrataRecords = "swift-strata"
    case swiftFixedRecords = "swift-fixed"

    public var title: String {
        switch self {
        case .cStrataRecords: "C, Strata records"
        case .cFixedRecords: "C, fixed 40-byte records"
        case .swiftStrataRecords: "Swift, Strata records"
        case .swiftFixedRecords: "Swift, fixed 40-byte records"
        }
    }
}

/// The trial of one variant of the rewrite; its checksum is scenario a's.
public func makeRecordLayoutTrial(_ variant: RecordLayoutVariant, n: Int, folder: URL) -> Trial {
    let raw = LMDBTrials(n: n, folder: folder)
    switch variant {
    case .cStrataRecords:
        return CFloorTrials(n: n, folder: folder).trial(.closureMigration)!
    case .swiftStrataRecords:
        return raw.trial(.closureMigration)!
    case .cFixedRecords, .swiftFixedRecords:
        return Trial(
            setup: { try raw.fixedInput() },
            run: {
                if variant == .cFixedRecords {
                    try call("floor_closure_migration_fixed") { floor_closure_migration_fixed(raw.path, $0) }
                } else {
                    try raw.rewrite(LMDBTrials.fixedFullName)
                }
            },
            verify: {
                var checksum: UInt64 = 0
                try call("floor_checksum_fixed") { floor_checksum_fixed(raw.path, &checksum, $0) }
                return checksum
            },
            cleanup: { removeFiles(in: folder, keepingTemplates: true) })
    }
}

extension LMDBTrials {
    /// Copies in a file of fixed 40-byte records, written once by the C code.
    func fixedInput() throws {
        let template = folder.appendingPathComponent("template-fixed-\(n).lmdb")
        if !FileManager.default.fileExists(atPath: template.path) {
            try call("floor_create_fixed") { floor_create_fixed(template.path, Int64(n), 0, $0) }
            try? FileManager.default.removeItem(atPath: template.path + "-lock")
        }
        removeFiles(in: folder, keepingTemplates: true)
        try copyInput(template, to: path)
    }

    /// A fixed record's id and age, then firstName + " " + lastName
    /// zero-padded to 24 bytes (the same bytes as the C code writes).
    static func fixedFullName(_ record: MDB_val, _ out: inout [UInt8]) {
        let bytes = UnsafeRawBufferPointer(start: record.mv_data, count: 40)
        let first = bytes[16 ..< 28].prefix { $0 != 0 }
        let last = bytes[28 ..< 40].prefix { $0 != 0 }
        out.append(contentsOf: bytes[0 ..< 16])
        out.append(contentsOf: first)
        out.append(0x20)
        out.append(contentsOf: last.prefix(23 - first.count))
        while out.count < 40 { out.append(0) }
    }
}
