import Foundation
import Testing

@testable import Strata

/// A scan and a typed read check the bytes of the fields they read, not
/// the whole record first: a damaged field that a read touches gives
/// `.corruptFile` naming the object, one it does not touch goes unnoticed
/// by that read, and `verify` walks every record whole and reports both.
@Suite(.temporaryFolder) struct TouchedFieldCheckTests {
    let folder = TemporaryFolder.current

    /// Ada's record (`Fixtures.ada`), ending with her email field:
    /// `05 05 0f` and 15 bytes of "ada@example.org".
    enum Damage {
        /// The email's length says 127 bytes: past the record's end.
        case emailLengthPastTheEnd
        /// The age's tag is one no kind has.
        case unknownAgeTag
        /// Two bytes after the last field.
        case trailingBytes

        func apply(to record: inout [UInt8]) throws {
            let emailTag = record.count - 17
            try #require(Array(record[emailTag - 1 ... emailTag + 1]) == [0x05, 0x05, 0x0f])
            switch self {
            case .emailLengthPastTheEnd:
                record[emailTag + 1] = 0x7f
            case .unknownAgeTag:
                // `04 03 48`: field 4 (age), int, 36.
                try #require(Array(record[emailTag - 4 ... emailTag - 2]) == [0x04, 0x03, 0x48])
                record[emailTag - 3] = 0xee
            case .trailingBytes:
                record += [0x06, 0x00]
            }
        }
    }

    /// Seeds Ada, Charles and Annabella and damages Ada's record.
    func seedDamaged(_ damage: Damage, mode: Database.Mode) throws -> String {
        let path = folder.path()
        try Fixtures.seed(path, mode: mode)
        try RawFile.withWrite(path) { txn in
            let records = try #require(try txn.openDatabase(FileLayout.records(TypeID(1)), create: false))
            var record = try #require(try txn.get(records, RawFile.key(1)).map { Array($0) })
            try damage.apply(to: &record)
            try txn.put(records, RawFile.key(1), record)
        }
        return path
    }

    func expectDamagedAda(
        _ path: String, sourceLocation: SourceLocation = #_sourceLocation, _ read: () throws -> Void
    ) {
        let error = expectStrataError(.corruptFile, sourceLocation: sourceLocation, read)
        #expect(
            error?.message.contains("'Person' with key 1 in \(path) is damaged") == true, "\(error?.message ?? "")",
            sourceLocation: sourceLocation)
    }

    func typedConfiguration(_ path: String, mode: Database.Mode) -> Database.Configuration {
        var config = Database.Configuration(path: path, models: [HandPerson.self])
        config.durability = .noSync
        config.mode = mode
        return config
    }

    @Test(arguments: Fixtures.modes)
    func aDamagedFieldThatAScanDoesNotReadGoesUnnoticedByItAndVerifyReportsIt(_ mode: Database.Mode) throws {
        let path = try seedDamaged(.emailLengthPastTheEnd, mode: mode)
        let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
        let ages = try db.read { tx in try tx.objects("Person").map { $0["age"] } }
        #expect(ages == [36, 79, 40])
        let problems = try db.verify()
        #expect(problems.contains { $0.contains("'Person' with key 1 in \(path) is damaged") }, "\(problems)")
        db.close()
    }

    @Test(arguments: Fixtures.modes)
    func aDamagedFieldThatAScanReadsStopsItAtThatObject(_ mode: Database.Mode) throws {
        let path = try seedDamaged(.emailLengthPastTheEnd, mode: mode)
        let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
        var visited = 0
        expectDamagedAda(path) {
            try db.read { tx in
                try tx.objects("Person").forEach { person in
                    visited += 1
                    _ = person["email"]
                }
            }
        }
        #expect(visited == 1)
        expectDamagedAda(path) { _ = try db.read { tx in try tx.objects("Person").map(\.values) } }
        // A lookup hands out an object whose record is validated whole.
        expectDamagedAda(path) { _ = try db.read { tx in try tx.object("Person", key: 1) } }
        #expect(try db.read { tx in try tx.object("Person", key: 2)?.values } == Fixtures.charles)
        db.close()
    }

    /// A read through an object that outlived its scan cannot throw: the
    /// transaction throws when its closure returns, and a write keeps
    /// nothing.
    @Test(arguments: Fixtures.modes)
    func aDamagedFieldReadAfterTheScanFailsTheTransaction(_ mode: Database.Mode) throws {
        let path = try seedDamaged(.unknownAgeTag, mode: mode)
        let db = try Database(configuration: Fixtures.configuration(path, mode: mode))
        expectDamagedAda(path) {
            try db.read { tx in
                let people = try tx.objects("Person").array()
                #expect(people[0]["age"] == 0, "a damaged field reads as its default")
            }
        }
        expectDamagedAda(path) {
            try db.write { tx in
                let people = try tx.objects("Person").array()
                // Charles's update succeeds; Ada's damaged age then fails
                // the transaction, which keeps nothing.
                try tx.update("Person", key: 2, ["age": .int(people[0]["age"].int! + 100)])
            }
        }
        #expect(try db.read { tx in try tx.object("Person", key: 2)?["age"] } == 79)
        // The transaction after it starts clean.
        #expect(
            try db.read { tx in try tx.objects("Person").map { $0["firstName"] } } == ["Ada", "Charles", "Annabella"])
        db.close()
    }

    @Test(arguments: [Damage.emailLengthPastTheEnd, .unknownAgeTag], Fixtures.modes)
    func aTypedReadOfADamagedFieldThrows(_ damage: Damage, _ mode: Database.Mode) throws {
        let path = try seedDamaged(damage, mode: mode)
        let db = try Database(configuration: typedConfiguration(path, mode: mode))
        expectDamagedAda(path) { _ = try db.read { tx in try tx.object(HandPerson.self, primaryKey: 1) } }
        expectDamagedAda(path) { _ = try db.read { tx in try tx.objects(HandPerson.self).array() } }
        #expect(
            try db.read { tx in try tx.object(HandPerson.self, primaryKey: 2) }
                == HandPerson(id: 2, firstName: "Charles", lastName: "Babbage", age: 79))
        db.close()
    }

    /// Bytes after the last field are outside every field: a typed read
    /// of every property does not see them; `verify` does.
    @Test(arguments: Fixtures.modes)
    func bytesAfterTheLastFieldAreLeftToVerify(_ mode: Database.Mode) throws {
        let path = try seedDamaged(.trailingBytes, mode: mode)
        let db = try Database(configuration: typedConfiguration(path, mode: mode))
        let ada = try db.read { tx in try tx.object(HandPerson.self, primaryKey: 1) }
        #expect(ada == HandPerson(id: 1, firstName: "Ada", lastName: "Lovelace", age: 36, email: "ada@example.org"))
        #expect(try db.read { tx in try tx.objects(HandPerson.self).map(\.age) } == [36, 79, 40])
        let problems = try db.verify()
        #expect(
            problems.contains { $0.contains("'Person' with key 1 in \(path) is damaged") && $0.contains("unexpected") },
            "\(problems)")
        db.close()
    }
}
