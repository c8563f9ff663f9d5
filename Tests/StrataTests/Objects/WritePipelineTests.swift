import Foundation
import Testing

@testable import Strata

/// Every kind of write reaches the transaction's change subscribers through
/// the one write path, with the fields whose bytes changed.
@Suite(.temporaryFolder) struct WritePipelineTests {
    let folder = TemporaryFolder.current

    /// What a subscriber heard, in a form tests compare: the key decoded and
    /// the changed fields by name.
    struct Heard: Equatable, CustomStringConvertible {
        var kind: ChangeRecord.Kind
        var type: String
        var key: Value
        var fields: [String]

        var description: String { "\(kind) \(type) \(key) \(fields)" }
    }

    // @unchecked: written by the one write transaction at a time that holds it, read after it ends.
    final class Recorder: ChangeSubscriber, @unchecked Sendable {
        var heard: [Heard] = []
        var emptied: [String] = []

        func objectChanged(_ change: ChangeRecord) throws {
            let table = change.table
            let key = try KeyCodec.decodeKey(change.key, type: table.primaryKey?.type)
            let names = change.changedFields().map { id in
                table.fields.first { $0.id == id }?.name ?? "#\(id)"
            }
            heard.append(Heard(kind: change.kind, type: table.name, key: key, fields: names))
        }

        func tableWillEmpty(_ table: ObjectTable, in engine: TableEngine) throws {
            emptied.append(table.name)
        }

        func take() -> [Heard] {
            defer { heard.removeAll() }
            return heard
        }
    }

    func open(_ mode: Database.Mode, ownerRule: DeleteRule = .nullify, recorder: Recorder) throws -> Database {
        var config = Fixtures.configuration(
            folder.path(), schema: RelationshipTests.schema(ownerRule: ownerRule), mode: mode)
        config.changeSubscribers = [{ recorder }]
        return try Database(configuration: config)
    }

    @Test(arguments: Fixtures.modes)
    func insertsUpdatesAndUpsertsNameTheFieldsWhoseBytesChanged(mode: Database.Mode) throws {
        let recorder = Recorder()
        let db = try open(mode, recorder: recorder)
        try db.write { tx in
            try tx.insert("Person", ["id": 1, "name": "Ada", "address": ["street": "1 Main St"]])
        }
        #expect(
            recorder.take() == [
                Heard(
                    kind: .inserted, type: "Person", key: 1,
                    fields: ["id", "name", "friends", "address", "nicknames"])
            ])

        try db.write { tx in try tx.update("Person", key: 1, ["name": "Ada L."]) }
        #expect(recorder.take() == [Heard(kind: .replaced, type: "Person", key: 1, fields: ["name"])])

        // An embedded object's change names the property that holds it.
        try db.write { tx in try tx.update("Person", key: 1, ["address": ["street": "2 High St"]]) }
        #expect(recorder.take() == [Heard(kind: .replaced, type: "Person", key: 1, fields: ["address"])])

        // The same values again: replaced, nothing changed.
        try db.write { tx in
            try tx.upsert(
                "Person", ["id": 1, "name": "Ada L.", "address": ["street": "2 High St"]])
        }
        #expect(recorder.take() == [Heard(kind: .replaced, type: "Person", key: 1, fields: [])])

        // An upsert of a new key inserts.
        try db.write { tx in try tx.upsert("Person", ["id": 2, "name": "Charles"]) }
        #expect(recorder.take().map(\.kind) == [.inserted])
    }

    @Test(arguments: Fixtures.modes)
    func aNullifyIsAReplacementOfTheLinkAndADeleteNamesEveryField(mode: Database.Mode) throws {
        let recorder = Recorder()
        let db = try open(mode, recorder: recorder)
        try RelationshipTests().seed(db)
        _ = recorder.take()
        try db.write { tx in _ = try tx.delete("Person", key: 1) }
        let heard = recorder.take()
        // Rex and Fido lose their owner, Charles his friend, then Ada goes.
        #expect(
            Set(heard.filter { $0.kind == .replaced }.map(\.description)) == [
                Heard(kind: .replaced, type: "Dog", key: "Rex", fields: ["owner"]).description,
                Heard(kind: .replaced, type: "Dog", key: "Fido", fields: ["owner"]).description,
                Heard(kind: .replaced, type: "Person", key: 2, fields: ["friends"]).description,
            ])
        #expect(
            heard.last
                == Heard(
                    kind: .deleted, type: "Person", key: 1, fields: ["id", "name", "friends", "address", "nicknames"]))
        #expect(heard.count == 4)
    }

    @Test(arguments: Fixtures.modes)
    func aCascadeIsOneDeleteForEveryObjectItReaches(mode: Database.Mode) throws {
        let recorder = Recorder()
        let db = try open(mode, ownerRule: .cascade, recorder: recorder)
        try RelationshipTests().seed(db)
        _ = recorder.take()
        try db.write { tx in _ = try tx.delete("Person", key: 1) }
        let heard = recorder.take()
        #expect(
            Set(heard.filter { $0.kind == .deleted }.map { "\($0.type) \($0.key)" }) == [
                "Person 1", "Dog \"Rex\"", "Dog \"Fido\"",
            ])
        #expect(heard.filter { $0.kind == .replaced }.map(\.type) == ["Person"])
        #expect(recorder.emptied.isEmpty)
    }

    @Test func deletingEveryObjectOfATypeNobodyLinksToEmptiesItOnce() throws {
        let recorder = Recorder()
        let db = try open(.local, recorder: recorder)
        try RelationshipTests().seed(db)
        _ = recorder.take()
        // Dogs link out, nothing links to a dog: one emptying, no deletes.
        try db.write { tx in try tx.deleteAll("Dog") }
        #expect(recorder.emptied == ["Dog"])
        #expect(recorder.take().isEmpty)
    }

    @Test func aDeleteOfAMissingKeyAndARefusedInsertAreNotHeard() throws {
        let recorder = Recorder()
        let db = try open(.local, recorder: recorder)
        try db.write { tx in
            try tx.insert("Person", ["id": 1, "name": "Ada"])
            #expect(try !tx.delete("Person", key: 9))
            #expect(throws: StrataError.self) { try tx.insert("Person", ["id": 1, "name": "Again"]) }
        }
        #expect(recorder.take().map(\.kind) == [.inserted])
    }

    @Test(arguments: Fixtures.modes)
    func typedWritesGoThroughTheSamePath(mode: Database.Mode) throws {
        let recorder = Recorder()
        var config = Database.Configuration(path: folder.path(), models: [Card.self])
        config.mode = mode
        config.changeSubscribers = [{ recorder }]
        let db = try Database(configuration: config)
        try db.write { tx in try tx.insert(Card(id: 1, score: 5, title: "A")) }
        try db.write { tx in try tx.update(Card(id: 1, score: 6, title: "A")) }
        try db.write { tx in _ = try tx.delete(Card.self, primaryKey: 1) }
        #expect(
            recorder.take() == [
                Heard(kind: .inserted, type: "Card", key: 1, fields: ["id", "score", "rank", "title"]),
                Heard(kind: .replaced, type: "Card", key: 1, fields: ["score"]),
                Heard(kind: .deleted, type: "Card", key: 1, fields: ["id", "score", "rank", "title"]),
            ])
    }

    @Test func aMigrationsRewriteIsHeardWithTheFieldsTheClosureChanged() throws {
        try Fixtures.seed(folder.path())
        let recorder = Recorder()
        var config = Fixtures.configuration(folder.path(), version: 2)
        config.migration = { migration, _ in
            try migration.enumerateObjects(ofType: "Person") { old, new in
                if old?["firstName"] == "Ada" { new?["lastName"] = "King" }
            }
        }
        config.changeSubscribers = [{ recorder }]
        _ = try Database(configuration: config)
        // Only the object whose bytes the closure changed is written.
        #expect(recorder.take() == [Heard(kind: .replaced, type: "Person", key: 1, fields: ["lastName"])])
    }

    @Test func withoutSubscribersAWriteRecordsNothing() throws {
        let db = try Database(configuration: Fixtures.configuration(folder.path()))
        try db.write { tx in
            #expect(tx.context.engine.subscribers.isEmpty)
            #expect(!tx.context.engine.notifies)
            try tx.insert("Person", Fixtures.ada)
        }
    }

    @Test func changedFieldsCompareRecordsFieldByField() throws {
        let writer = ByteWriter(capacity: 64)
        func record(_ fields: [(UInt32, Value)]) -> [UInt8] {
            writer.removeAll()
            RecordCodec.beginRecord(writer, schemaVersion: 1, fieldCount: fields.count)
            for (id, value) in fields { RecordCodec.appendField(writer, id: PropertyID(id), value: value) }
            return writer.withUnsafeBytes { Array($0) }
        }
        let old = record([(1, 1), (2, "a"), (4, 3.5)])
        let new = record([(1, 1), (2, "b"), (3, true)])
        let table = try #require(
            try Database(configuration: Fixtures.configuration(folder.path())).tables["Person"])
        try old.withUnsafeBytes { old in
            try new.withUnsafeBytes { new in
                try [0].withUnsafeBytes { key in
                    let change = ChangeRecord(
                        kind: .replaced, table: table, key: key, before: try RecordView(validating: old),
                        after: try RecordView(validating: new))
                    // 2 differs, 3 is new, 4 is gone; 1 is the same.
                    #expect(change.changedFields().map(\.rawValue) == [2, 3, 4])
                }
            }
        }
    }

    /// Records of random fields, compared side by side, name exactly the
    /// fields a field-by-field comparison of their values names.
    @Test func changedFieldsMatchAComparisonOfRandomRecords() throws {
        let writer = ByteWriter(capacity: 64)
        let table = try #require(
            try Database(configuration: Fixtures.configuration(folder.path())).tables["Person"])
        var random = SplitMix64(seed: 26)
        let values: [Value] = [1, 2, 300_000, "a", "ab", "", true, false, .null, 3.5, .data(Data([1, 2]))]
        func fields() -> [UInt32: Value] {
            var fields: [UInt32: Value] = [:]
            for id in 1 ... 9 where random.below(3) != 0 { fields[UInt32(id)] = values[random.below(values.count)] }
            return fields
        }
        func record(_ fields: [UInt32: Value]) -> [UInt8] {
            writer.removeAll()
            RecordCodec.beginRecord(writer, schemaVersion: 1, fieldCount: fields.count)
            for (id, value) in fields.sorted(by: { $0.key < $1.key }) {
                RecordCodec.appendField(writer, id: PropertyID(id), value: value)
            }
            return writer.withUnsafeBytes { Array($0) }
        }
        for _ in 0 ..< 500 {
            let (a, b) = (fields(), fields())
            let expected = Set(a.keys).union(b.keys).filter { a[$0] != b[$0] }.sorted()
            try record(a).withUnsafeBytes { old in
                try record(b).withUnsafeBytes { new in
                    try [0].withUnsafeBytes { key in
                        let change = ChangeRecord(
                            kind: .replaced, table: table, key: key, before: try RecordView(validating: old),
                            after: try RecordView(validating: new))
                        #expect(change.changedFields().map(\.rawValue) == expected, "\(a) → \(b)")
                    }
                }
            }
        }
    }
}
