import Foundation
import Testing

@testable import Strata

/// The verifier finds each kind of damage it claims to, so that a clean
/// report from it means something.
@Suite(.temporaryFolder) struct FileVerifierTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    static let schema = Schema([Fixtures.person, ObjectSchema("Note") { Property("text", .string) }])

    /// A damage done to a sound file through the storage layer, and a
    /// fragment of the problem the verifier must report.
    struct Damage: Sendable, CustomTestStringConvertible {
        let name: String
        let fragment: String
        let apply: @Sendable (LMDBTransaction) throws -> Void
        var testDescription: String { name }

        static func records(_ txn: LMDBTransaction, _ type: TypeID = TypeID(1)) throws -> DatabaseHandle {
            try #require(try txn.openDatabase(FileLayout.records(type), create: false))
        }

        static func ageIndex(_ txn: LMDBTransaction) throws -> DatabaseHandle {
            try #require(try txn.openDatabase(FileLayout.index(TypeID(1), PropertyID(4)), create: false))
        }

        static func meta(_ txn: LMDBTransaction) throws -> DatabaseHandle {
            try #require(try txn.openDatabase(FileLayout.meta, create: false))
        }

        static func ageKey(_ age: Int64) -> [UInt8] {
            let writer = ByteWriter()
            KeyCodec.appendIndexKey(.int(age), to: writer)
            return writer.bytes
        }

        static func rewriteCatalog(_ txn: LMDBTransaction, _ change: (inout Catalog) -> Void) throws {
            let meta = try meta(txn)
            var catalog = try Catalog.decode(try #require(try txn.get(meta, FileLayout.MetaKey.catalog)), path: "")
            change(&catalog)
            try txn.put(meta, FileLayout.MetaKey.catalog, catalog.encoded())
        }

        static let all: [Damage] = [
            Damage(name: "an index entry removed", fragment: "has 2 entries for 3 objects") { txn in
                try RawFile.key(1).withUnsafeBytes { object in
                    try ageKey(36).withUnsafeBytes { _ = try txn.delete(ageIndex(txn), $0, value: object) }
                }
            },
            Damage(name: "an index entry moved to another value", fragment: "files object 1 under") { txn in
                try RawFile.key(1).withUnsafeBytes { object in
                    try ageKey(36).withUnsafeBytes { _ = try txn.delete(ageIndex(txn), $0, value: object) }
                    try ageKey(99).withUnsafeBytes { _ = try txn.put(ageIndex(txn), $0, object) }
                }
            },
            Damage(name: "an object deleted without its index entry", fragment: "names an object that does not exist") {
                txn in
                try txn.delete(records(txn), RawFile.key(2))
            },
            Damage(name: "a damaged record", fragment: "is damaged") { txn in
                try txn.put(records(txn), RawFile.key(3), [0x01, 0x01, 0x05, 0xFF])
            },
            Damage(name: "a record under another object's key", fragment: "holds another primary key") { txn in
                let charles = try #require(try txn.get(records(txn), RawFile.key(2)).map { Array($0) })
                try txn.put(records(txn), RawFile.key(7), charles)
            },
            Damage(name: "a record from a newer schema version", fragment: "above the file's 1") { txn in
                var record = try #require(try txn.get(records(txn), RawFile.key(1)).map { Array($0) })
                record[1] = 5
                try txn.put(records(txn), RawFile.key(1), record)
            },
            Damage(name: "a stray named database", fragment: "'__strata.t99' is not accounted for") { txn in
                _ = try txn.openDatabase(FileLayout.records(TypeID(99)), create: true)
            },
            Damage(name: "a catalog that does not decode", fragment: "the catalog does not decode") { txn in
                try txn.put(meta(txn), FileLayout.MetaKey.catalog, Array("{}".utf8))
            },
            Damage(name: "a generation of the wrong length", fragment: "the generation is 3 bytes") { txn in
                try txn.put(meta(txn), FileLayout.MetaKey.generation, [0, 0, 1])
            },
            Damage(
                name: "no schema snapshot for the file's version",
                fragment: "no schema snapshot for the file's version 1"
            ) { txn in
                try txn.delete(meta(txn), FileLayout.MetaKey.schemaSnapshot(1))
            },
            Damage(name: "an unexpected meta key", fragment: "unexpected meta key 'stray'") { txn in
                try txn.put(meta(txn), Array("stray".utf8), [1])
            },
            Damage(name: "an automatic-id counter behind its objects", fragment: "is at 1, behind id 2") { txn in
                try txn.put(meta(txn), Array("seq.t2".utf8), [0, 0, 0, 0, 0, 0, 0, 1])
            },
            Damage(name: "an index in use listed as orphaned", fragment: "in use and also listed as orphaned") { txn in
                try rewriteCatalog(txn) { $0.orphanedDatabases = ["__strata.t1.i4"] }
            },
            Damage(name: "an orphaned database that still holds entries", fragment: "still holds 1 entries") { txn in
                let orphan = try #require(
                    try txn.openDatabase(FileLayout.index(TypeID(1), PropertyID(77)), create: true))
                try txn.put(orphan, [1], [2])
                try rewriteCatalog(txn) { $0.orphanedDatabases = ["__strata.t1.i77"] }
            },
        ]
    }

    static func seed(_ path: String) throws {
        let db = try Database(configuration: Fixtures.configuration(path, schema: schema))
        try db.write { tx in
            for person in [Fixtures.ada, Fixtures.charles, Fixtures.annabella] { try tx.insert("Person", person) }
            try tx.insert("Note", ["text": "one"])
            try tx.insert("Note", ["text": "two"])
        }
    }

    @Test func aSoundFileHasNoProblemsAndItsContentsAreSummedUp() throws {
        let path = folder.path()
        try Self.seed(path)
        let verifier = try FileVerifier.verify(path)
        #expect(verifier.problems.isEmpty, "\(verifier.problems)")
        #expect(verifier.objectCounts == ["Person": 3, "Note": 2])
        #expect(Set(verifier.digests.keys) == ["__strata.meta", "__strata.t1", "__strata.t1.i4", "__strata.t2"])
        #expect(verifier.digests["__strata.t1.i4"]?.entries == 3)
        #expect(try FileVerifier.verify(path).digests == verifier.digests)
        // One changed value changes the digest of its table and index.
        try Database(configuration: Fixtures.configuration(path, schema: Self.schema)).write { tx in
            try tx.update("Person", key: 2, ["age": 80])
        }
        let changed = try FileVerifier.verify(path).digests
        #expect(Set(changed.keys.filter { changed[$0] != verifier.digests[$0] }) == ["__strata.t1", "__strata.t1.i4"])
    }

    @Test(arguments: Damage.all)
    func eachDamageIsReported(_ damage: Damage) throws {
        let path = folder.path()
        try Self.seed(path)
        try RawFile.withWrite(path) { try damage.apply($0) }
        let problems = try FileVerifier.verify(path).problems
        #expect(problems.contains { $0.contains(damage.fragment) }, "\(problems)")
    }
}
