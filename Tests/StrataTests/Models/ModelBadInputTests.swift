import Foundation
import Testing

@testable import Strata

/// Models meet files they do not describe: every case is a StrataError that
/// says what and where, and nothing is written.
@Suite(.temporaryFolder) struct ModelBadInputTests {
    let folder = TemporaryFolder.current

    func configuration(_ models: [any Model.Type], version: UInt64 = 1, mode: Database.Mode = .local)
        -> Database.Configuration
    {
        var config = Database.Configuration(path: folder.path(), schemaVersion: version, models: models)
        config.durability = .noSync
        config.mode = mode
        return config
    }

    /// HandPerson with one more property: the app changed its model but
    /// not its schema version.
    struct WiderPerson: Model {
        typealias Key = Int
        var id: Int
        var firstName: String
        var lastName: String
        var age: Int
        var email: String?
        var nickname: String

        static let schema = ModelSchema<WiderPerson>(
            name: "Person",
            properties: [
                .init(\.id, "id", primaryKey: true), .init(\.firstName, "firstName"),
                .init(\.lastName, "lastName"), .init(\.age, "age", indexed: true, default: 0),
                .init(\.email, "email"), .init(\.nickname, "nickname"),
            ])

        func encode(to encoder: inout ModelEncoder) {
            encoder.encode(id)
            encoder.encode(firstName)
            encoder.encode(lastName)
            encoder.encode(age)
            encoder.encode(email)
            encoder.encode(nickname)
        }

        init(from decoder: inout ModelDecoder) throws {
            id = try decoder.decode(Int.self)
            firstName = try decoder.decode(String.self)
            lastName = try decoder.decode(String.self)
            age = try decoder.decode(Int.self)
            email = try decoder.decode(String?.self)
            nickname = try decoder.decode(String.self)
        }
    }

    /// A model that declares two primary keys, as only a hand-written
    /// conformance can (the macro refuses it at compile time).
    struct TwoKeys: Model {
        typealias Key = Int
        var a: Int
        var b: Int

        static let schema = ModelSchema<TwoKeys>(
            name: "TwoKeys", properties: [.init(\.a, "a", primaryKey: true), .init(\.b, "b", primaryKey: true)])

        func encode(to encoder: inout ModelEncoder) {
            encoder.encode(a)
            encoder.encode(b)
        }

        init(from decoder: inout ModelDecoder) throws {
            a = try decoder.decode(Int.self)
            b = try decoder.decode(Int.self)
        }
    }

    /// Another Swift type stored under HandPerson's name.
    struct OtherPerson: Model {
        typealias Key = Int
        var id: Int
        static let schema = ModelSchema<OtherPerson>(name: "Person", properties: [.init(\.id, "id", primaryKey: true)])
        func encode(to encoder: inout ModelEncoder) { encoder.encode(id) }
        init(from decoder: inout ModelDecoder) throws { id = try decoder.decode(Int.self) }
    }

    @Test(arguments: Fixtures.modes)
    func aChangedModelWithoutAVersionBumpIsRefused(mode: Database.Mode) throws {
        let db = try Database(configuration: configuration([HandPerson.self], mode: mode))
        try db.write { tx in try tx.insert(HandPerson(id: 1, firstName: "Ada", lastName: "Lovelace")) }
        db.close()
        let before = try RawFile.contents(folder.path())
        // Synced mode adds properties without a version bump; local mode
        // asks for one.
        if mode == .local {
            let error = expectStrataError(.migrationRequired) {
                _ = try Database(configuration: configuration([WiderPerson.self], mode: mode))
            }
            #expect(error?.message.contains("'Person.nickname' has been added") == true)
            #expect(try RawFile.contents(folder.path()) == before)
        } else {
            let wider = try Database(configuration: configuration([WiderPerson.self], mode: mode))
            let read = try wider.read { tx in try tx.object(WiderPerson.self, primaryKey: 1) }
            #expect(read?.nickname == "")
        }
    }

    @Test func twoModelsWithOneStoredNameAreRefusedBeforeAnythingIsWritten() throws {
        let error = expectStrataError(.invalidSchema) {
            _ = try Database(configuration: configuration([HandPerson.self, OtherPerson.self]))
        }
        #expect(error?.message.contains("2 models with the stored name 'Person': HandPerson, OtherPerson") == true)
        #expect(!RawFile.exists(folder.path()))
    }

    @Test func aPrimaryKeyDeclaredTwiceIsRefusedBeforeAnythingIsWritten() throws {
        let error = expectStrataError(.invalidSchema) {
            _ = try Database(configuration: configuration([TwoKeys.self]))
        }
        #expect(error?.message.contains("Model TwoKeys declares more than one primary key (a, b)") == true)
        #expect(!RawFile.exists(folder.path()))
        #expect(throws: StrataError.self) { try Database.migrationPlan(for: configuration([TwoKeys.self])) }
    }

    @Test(arguments: Fixtures.modes)
    func aHandEditedValueIsAnErrorNamingTypePropertyAndKey(mode: Database.Mode) throws {
        let path = folder.path()
        let db = try Database(configuration: configuration([HandPerson.self], mode: mode))
        try db.write { tx in
            try tx.insert(HandPerson(id: 1, firstName: "Ada", lastName: "Lovelace", age: 36))
            try tx.insert(HandPerson(id: 7, firstName: "Alan", lastName: "Turing", age: 41))
        }
        db.close()
        // Person 7's age becomes a string, past every check of Strata's.
        try RawFile.withWrite(path) { txn in
            let meta = try #require(try CatalogStore.openMeta(txn, create: false))
            let catalog = try #require(try CatalogStore(meta: meta, path: path).catalog(txn))
            let type = try #require(catalog[type: "Person"])
            let records = try #require(try txn.openDatabase(type.recordsDatabase, create: false))
            let key = RawFile.key(7)
            let ageID = try #require(type[property: "age"]).id
            let stored = try #require(try key.withUnsafeBytes { try txn.get(records, $0) }.map { Array($0) })
            var fields: [(PropertyID, Value)] = []
            try stored.withUnsafeBytes { bytes in
                try RecordView(validating: bytes).forEachField { id, value in
                    fields.append((id, id == ageID ? .string("forty-one") : value))
                }
            }
            let writer = ByteWriter()
            RecordCodec.beginRecord(writer, schemaVersion: 1, fieldCount: fields.count)
            for (id, value) in fields { RecordCodec.appendField(writer, id: id, value: value) }
            _ = try key.withUnsafeBytes { key in try writer.bytes.withUnsafeBytes { try txn.put(records, key, $0) } }
        }
        let reopened = try Database(configuration: configuration([HandPerson.self], mode: mode))
        let error = expectStrataError(.invalidValue) {
            _ = try reopened.read { tx in try tx.objects(HandPerson.self).array() }
        }
        let message = error?.message ?? ""
        #expect(message.contains("'Person' object 7"))
        #expect(message.contains("\"forty-one\" of type string for 'age'"))
        #expect(message.contains("HandPerson reads as Int"))
        // The other object still reads; the damaged one fails by key too.
        #expect(try reopened.read { tx in try tx.object(HandPerson.self, primaryKey: 1)?.age } == 36)
        #expect(throws: StrataError.self) { try reopened.read { tx in try tx.object(HandPerson.self, primaryKey: 7) } }
    }
}
