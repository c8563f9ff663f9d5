import Foundation
import Testing

@testable import Strata

/// A type the schema no longer names stays in the file (synced mode keeps
/// it for older app versions; local mode until `deleteData`), and
/// inspection reads it: `Database(inspecting:)` and `strata dump`.
@Suite(.temporaryFolder) struct KeptTypeInspectionTests {
    let folder = TemporaryFolder.current

    static let withNote = Schema([
        Fixtures.person,
        ObjectSchema("Note") { Property("text", .string) },
    ])

    @Test(arguments: Fixtures.modes)
    func inspectionReadsATypeTheSchemaNoLongerNames(mode: Database.Mode) throws {
        let path = folder.path()
        do {
            let db = try Database(configuration: Fixtures.configuration(path, schema: Self.withNote, mode: mode))
            try db.write { tx in
                try tx.insert("Person", Fixtures.ada)
                try tx.insert("Note", ["text": "kept"])
            }
        }
        do {
            // The same version drops Note: automatic in both modes.
            let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
            #expect(db.schema.typeNames == ["Person"])
            _ = expectStrataError(.unknownObjectType) { _ = try db.read { tx in try tx.objects("Note").count } }
        }
        let inspected = try Database(inspecting: path)
        #expect(try inspected.read { tx in try tx.objects("Note").map { $0["text"].string! } } == ["kept"])
        #expect(try inspected.read { tx in tx.typeNames } == ["Note", "Person"])
        #expect(try inspected.statistics().types.first { $0.name == "Note" }?.isKept == true)
        inspected.close()

        let dump = try StrataBinary.run(["dump", path, "--type", "Note", "--json"])
        #expect(dump.status == 0, "stderr: \(dump.error)")
        #expect(dump.output == "{\"text\":\"kept\",\"_schemaVersion\":1}\n")
        StrataBinary.expectOneLineError(
            try StrataBinary.run(["dump", path, "--type", "Gone"]),
            containing: ["no object type 'Gone'", "Note, Person"])
    }
}
