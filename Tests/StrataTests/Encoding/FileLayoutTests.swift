import Foundation
import Testing

@testable import Strata

/// `FileLayout` declares every named database of a file with its flags,
/// and the file holds exactly what it declares.
@Suite(.temporaryFolder) struct FileLayoutTests {
    let folder = TemporaryFolder.current

    /// Two types with indexes, one without a primary key (automatic ids).
    static let schema = Schema([
        Fixtures.person,
        ObjectSchema("Note") {
            Property("text", .string)
            Property("priority", .int, default: 1, indexed: true)
            Property("day", .date, indexed: true)
        },
    ])

    /// Every named database in the file, read from LMDB's main database.
    private func databasesInFile(_ path: String) throws -> [String] {
        let environment = try Environment.open(path: path, options: EnvironmentOptions())
        defer { environment.release() }
        return try environment.withReadTransaction { try $0.namedDatabases() }
    }

    @Test(arguments: Fixtures.modes)
    func everyDatabaseTheLayoutDeclaresOpensWithItsFlags(mode: Database.Mode) throws {
        let path = folder.path()
        do {
            let db = try Database(configuration: Fixtures.configuration(path, schema: Self.schema, mode: mode))
            try db.write { tx in
                try tx.insert("Person", Fixtures.ada)
                try tx.insert("Note", ["text": "hello", "day": .date(Date(timeIntervalSinceReferenceDate: 0))])
            }
            db.close()
        }
        let catalog = try Database.migrationPlan(for: Fixtures.configuration(path, schema: Self.schema, mode: mode))
            .catalog!
        let declared = [FileLayout.meta] + catalog.types.flatMap(\.databases)
        #expect(declared.count == 6)
        #expect(Set(try databasesInFile(path)) == Set(declared.map(\.name)))

        let environment = try Environment.open(path: path, options: EnvironmentOptions())
        defer { environment.release() }
        environment.setupLock.lock()
        defer { environment.setupLock.unlock() }
        try environment.withReadTransaction { txn in
            for database in declared {
                let handle = try #require(try txn.openDatabase(database, create: false), "\(database.name) is missing")
                #expect(try txn.isDuplicateSorted(handle) == database.duplicateKeys, "\(database.name)")
                // The name alone gives back the declaration, flags included.
                #expect(FileLayout.database(named: database.name) == database)
            }
            let store = CatalogStore(meta: try #require(try CatalogStore.openMeta(txn, create: false)), path: path)
            #expect(try store.catalog(txn) == catalog)
            #expect(try store.generation(txn) == 1)
            #expect(try txn.get(store.meta, FileLayout.MetaKey.schemaSnapshot(1)) != nil)
            let note = try #require(catalog[type: "Note"])
            let sequence = try #require(try txn.get(store.meta, FileLayout.MetaKey.sequence(note.id)))
            #expect(FileLayout.counter(sequence) == 1)
        }
    }

    @Test func namesOutsideTheLayoutAreNotDatabasesOfIt() {
        for name in [
            "", "__strata.", "__strata.t", "__strata.tx", "__strata.t1.", "__strata.t1.x2", "__strata.t1.i",
            "__strata.t1.i2.i3", "other", "__strata.meta2",
        ] {
            #expect(FileLayout.database(named: name) == nil, "\(name)")
        }
        #expect(FileLayout.database(named: "__strata.t12") == FileLayout.records(TypeID(12)))
        #expect(FileLayout.database(named: "__strata.t12.i7") == FileLayout.index(TypeID(12), PropertyID(7)))
        #expect(FileLayout.index(TypeID(1), PropertyID(2)).duplicateKeys)
        #expect(!FileLayout.records(TypeID(1)).duplicateKeys)
    }

    @Test func countersAreEightBigEndianBytes() {
        let bytes = FileLayout.counterBytes(0x0102_0304_0506_0708)
        #expect(bytes == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(bytes.withUnsafeBytes { FileLayout.counter($0) } == 0x0102_0304_0506_0708)
        #expect([UInt8](repeating: 0, count: 7).withUnsafeBytes { FileLayout.counter($0) } == nil)
    }
}
