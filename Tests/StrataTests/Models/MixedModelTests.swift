import Foundation
import StrataTesting
import Testing

@testable import Strata

/// A model type beside a dynamic type in one file, and a typed step that
/// breaks a rule of the migration engine.
@Suite(.temporaryFolder) struct MixedModelTests {
    let folder = TemporaryFolder.current

    @Model
    struct Tag {
        @PrimaryKey var name: String
        var uses: Int = 0
    }

    static let note = ObjectSchema("Note") {
        Property("text", .string)
        Property("tag", .string, optional: true, indexed: true)
    }

    @Test(arguments: Fixtures.modes)
    func modelsAndDynamicTypesShareOneFile(mode: Database.Mode) throws {
        var config = Database.Configuration(path: folder.path(), models: [Tag.self], objectSchemas: [Self.note])
        config.durability = .noSync
        config.mode = mode
        #expect(config.schema.typeNames == ["Note", "Tag"])
        let db = try Database(configuration: config)
        try db.write { tx in
            try tx.insert(Tag(name: "swift", uses: 2))
            try tx.insert("Note", ["text": "Structs all the way down", "tag": "swift"])
            try tx.insert("Note", ["text": "Untagged"])
        }
        try db.read { tx throws in
            let tagged = try tx.objects("Note").where("tag", equals: "swift").map { $0["text"] }
            #expect(tagged == ["Structs all the way down"])
            #expect(try tx.object(Tag.self, primaryKey: "swift") == Tag(name: "swift", uses: 2))
            // The model's objects read dynamically, and a dynamic write reads typed.
            #expect(try tx.object("Tag", key: "swift")?["uses"] == 2)
        }
        try db.write { tx in try tx.update("Tag", key: "swift", ["uses": 3]) }
        #expect(try db.read { tx in try tx.objects(Tag.self).map(\.uses) } == [3])
    }

    @Test func aTypedStepThatChangesAPrimaryKeyFailsAndSaysWhatToDoInstead() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        let before = try DatabaseDump(path: path)
        let rekeying = MigrationStep.step(from: AppV1.self, to: AppV2.self) {
            $0.map(PersonV1.self, to: PersonV2.self) { old in
                PersonV2(id: old.id + 100, fullName: old.name, age: 0)
            }
        }
        let error = expectStrataError(.migrationFailed) {
            _ = try Database(configuration: Releases.configuration(path, version: 2, steps: [rekeying]))
        }
        let message = error?.message ?? ""
        #expect(message.contains("changed the primary key of a 'Person' object from 1 to 101"))
        #expect(message.contains("Return nil from the mapping"))
        #expect(message.contains("context.insert"))
        #expect(try DatabaseDump(path: path) == before)
    }
}

extension MixedModelTests.Tag: Equatable {}
