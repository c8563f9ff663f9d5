import Foundation
import Testing

@testable import Strata

/// The three schema versions have names that say whose they are: the
/// file's (`Database.fileSchemaVersion`), the app's
/// (`Configuration.schemaVersion`, `ReadTransaction.appSchemaVersion`) and
/// an object's effective one (`DynamicObject.schemaVersion`). They differ
/// when an older app opens a synced file.
@Suite(.temporaryFolder) struct SchemaVersionNameTests {
    let folder = TemporaryFolder.current

    @Test func anOlderAppOnASyncedFileSeesEachVersionUnderItsOwnName() throws {
        let path = folder.path()
        do {
            let newer = try Database(configuration: Fixtures.configuration(path, version: 3, mode: .synced))
            try newer.write { tx in try tx.insert("Person", Fixtures.ada) }
        }
        let older = try Database(configuration: Fixtures.configuration(path, version: 2, mode: .synced))
        #expect(older.fileSchemaVersion == 3)
        #expect(older.configuration.schemaVersion == 2)
        try older.write { tx in
            #expect(tx.appSchemaVersion == 2)
            try tx.insert("Person", Fixtures.charles)
        }
        let versions = try older.read { tx in try tx.objects("Person").map(\.schemaVersion) }
        #expect(versions == [3, 2])
    }
}
