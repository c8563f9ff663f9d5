import Foundation
import Testing

@_spi(Hub) @testable import Strata

/// Typed writes of an older app in a synced file whose records hold fields
/// it does not declare (kept at open, or learned from a peer after): the
/// model's record is written straight from the model, and the fields the
/// app does not declare are spliced in from the stored record, byte for
/// byte (a new object: the kept fields' empty values). In
/// ``SyncExchangeTests``, whose files they open.
extension SyncExchangeTests {
    func notesV2(_ db: Database) throws -> [Int: NoteV2] {
        try db.read { tx in Dictionary(uniqueKeysWithValues: try tx.objects(NoteV2.self).map { ($0.id, $0) }) }
    }

    @Test func aTypedWriteKeepsAFieldKeptSinceTheFileWasOpened() throws {
        let path = "kept.strata"
        do {
            let newer = try open(path, version: 2, [NoteV2.self])
            try newer.write { tx in
                try tx.insert(NoteV2(id: 1, title: "one", stars: 1, tag: "red"))
                try tx.insert(NoteV2(id: 2, title: "two", stars: 2, tag: "blue"))
            }
            newer.close()
        }
        do {
            let older = try open(path, version: 1, [NoteV1.self])
            #expect(try older.read { tx in try tx.context.table("Note").keptFields.count } == 1)
            try older.write { tx in
                try tx.update(NoteV1(id: 1, title: "one, edited", stars: 5))
                _ = try tx.upsert(NoteV1(id: 2, title: "two, upserted", stars: 6))
                try tx.insert(NoteV1(id: 3, title: "three", stars: 3))
            }
            older.close()
        }
        let upgraded = try open(path, version: 2, [NoteV2.self])
        #expect(
            try notesV2(upgraded) == [
                1: NoteV2(id: 1, title: "one, edited", stars: 5, tag: "red"),
                2: NoteV2(id: 2, title: "two, upserted", stars: 6, tag: "blue"),
                3: NoteV2(id: 3, title: "three", stars: 3, tag: nil),
            ])
    }

    @Test func aTypedWriteKeepsAFieldLearnedAfterTheFileWasOpened() throws {
        let older = try open("old.strata", version: 1, [NoteV1.self])
        let newer = try open("new.strata", version: 2, [NoteV2.self])
        try newer.write { tx in try tx.insert(NoteV2(id: 1, title: "one", stars: 1, tag: "red")) }
        try newer.sync.exchange(with: older)
        #expect(try older.sync.status().keptFields == ["Note.tag: string?"])
        // The older app's table was opened before it learned 'tag'.
        try older.write { tx in try tx.update(NoteV1(id: 1, title: "edited by v1", stars: 4)) }
        try older.sync.exchange(with: newer)
        #expect(try notesV2(newer)[1] == NoteV2(id: 1, title: "edited by v1", stars: 4, tag: "red"))
        older.close()
        let upgraded = try open("old.strata", version: 2, [NoteV2.self])
        #expect(try notesV2(upgraded)[1] == NoteV2(id: 1, title: "edited by v1", stars: 4, tag: "red"))
    }

    @Test func theSplicedRecordIsTheOneTheGeneralEncoderWrites() throws {
        // The same change to the same object of two files, typed in one
        // and by property name in the other.
        func record(_ name: String, _ change: (WriteTransaction) throws -> Void) throws -> [UInt8]? {
            let newer = try open(name, version: 2, [NoteV2.self])
            try newer.write { tx in try tx.insert(NoteV2(id: 1, title: "one", stars: 1, tag: "red")) }
            newer.close()
            let older = try open(name, version: 1, [NoteV1.self])
            try older.write(change)
            return try older.read { tx in
                let key = ByteWriter(capacity: 16)
                _ = KeyCodec.appendPrimaryKey(.int(1), type: .int, to: key)
                return try key.withUnsafeBytes { key in
                    try tx.context.lmdb.get(try tx.context.table("Note").records, key).map(Array.init)
                }
            }
        }
        let typed = try record("typed.strata") { tx in try tx.update(NoteV1(id: 1, title: "same", stars: 9)) }
        let named = try record("named.strata") { tx in try tx.update("Note", key: 1, ["title": "same", "stars": 9]) }
        #expect(
            typed != nil && typed == named, "typed \(String(describing: typed)), by name \(String(describing: named))")
    }
}
