import Foundation
import Testing

@testable import Strata

/// `strata dump`, `info` and `verify` on a file with links, lists and
/// embedded objects, and `verify` on such a file damaged behind Strata's
/// back.
@Suite(.temporaryFolder) struct RelationshipCommandTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    func seeded(_ mode: Database.Mode = .local) throws -> String {
        let path = folder.path()
        try RelationshipFixtures.seed(path, mode: mode)
        return path
    }

    // MARK: dump

    @Test(arguments: Fixtures.modes)
    func dumpJSONNamesEachLinksTargetAndNestsEmbeddedObjects(mode: Database.Mode) throws {
        let path = try seeded(mode)
        let people = try StrataBinary.run(["dump", path, "--type", "Person", "--json"])
        #expect(people.status == 0, "stderr: \(people.error)")
        #expect(
            StrataBinary.lines(people.output) == [
                #"{"id":1,"name":"Ada","friends":[{"link":{"type":"Person","key":2}}],"address":{"street":"1 Main St","city":"Leeds","geo":{"lat":1.5,"lon":-0.5}},"nicknames":[],"past":[{"street":"2 Old Rd","city":"London","geo":null}],"_schemaVersion":1}"#,
                #"{"id":2,"name":"Charles","friends":[{"link":{"type":"Person","key":1}}],"address":null,"nicknames":["Chuck"],"past":[],"_schemaVersion":1}"#,
                #"{"id":3,"name":"Annabella","friends":[],"address":null,"nicknames":[],"past":[],"_schemaVersion":1}"#,
                "",
            ])
        let dogs = try StrataBinary.run(["dump", path, "--type", "Dog", "--json"])
        #expect(dogs.status == 0, "stderr: \(dogs.error)")
        #expect(
            StrataBinary.lines(dogs.output) == [
                #"{"name":"Fido","owner":{"link":{"type":"Person","key":1}},"vet":null,"tags":[],"_schemaVersion":1}"#,
                #"{"name":"Rex","owner":{"link":{"type":"Person","key":1}},"vet":{"link":{"type":"Vet","key":1}},"tags":["good","loud"],"_schemaVersion":1}"#,
                #"{"name":"Stray","owner":null,"vet":null,"tags":[],"_schemaVersion":1}"#,
                "",
            ])
        // Every line is plain JSON.
        for line in (people.output + dogs.output).split(separator: "\n") {
            #expect(try JSONSerialization.jsonObject(with: Data(line.utf8)) is [String: Any], "\(line)")
        }
    }

    @Test func helpDescribesHowRelationshipsAreShownAndChecked() throws {
        func text(_ command: String) throws -> String {
            let result = try StrataBinary.run([command, "--help"])
            #expect(result.status == 0)
            return result.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        }
        #expect(try text("dump").contains(#"{"link":{"type":"Person","key":1}}"#))
        #expect(try text("info").contains("how many links each holds"))
        #expect(try text("schema").contains("list(link(Dog))"))
        #expect(try text("verify").contains("every link names an object that exists"))
    }

    @Test func dumpTableWritesRelationshipsAsJSONCells() throws {
        let path = try seeded()
        let result = try StrataBinary.run(["dump", path, "--type", "Dog"])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(
            result.output == """
                name     owner                               vet                              tags             _schemaVersion
                -------  ----------------------------------  -------------------------------  ---------------  --------------
                "Fido"   {"link":{"type":"Person","key":1}}  null                             []               1
                "Rex"    {"link":{"type":"Person","key":1}}  {"link":{"type":"Vet","key":1}}  ["good","loud"]  1
                "Stray"  null                                null                             []               1
                (3 objects)

                """)
    }

    // MARK: schema

    @Test func schemaShowsTargetsElementsRulesAndEmbeddedTypes() throws {
        let path = try seeded()
        let result = try StrataBinary.run(["schema", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(
            result.output == """
                Schema version 1, local mode, 5 types

                Address (embedded)
                  street  string
                  city    string         default "Leeds"
                  geo     embedded(Geo)  optional

                Dog (primary key: name)
                  name   string        primary key
                  owner  link(Person)  optional, on delete: cascade
                  vet    link(Vet)     optional, on delete: deny
                  tags   list(string)

                Geo (embedded)
                  lat  double
                  lon  double

                Person (primary key: id)
                  id         int                      primary key
                  name       string
                  friends    list(link(Person))       on delete: nullify
                  address    embedded(Address)        optional
                  nicknames  list(string)
                  past       list(embedded(Address))

                Vet (no primary key: automatic ids)
                  name  string

                """)
    }

    @Test func dumpOfAnEmbeddedTypeSaysWhereItsObjectsAre() throws {
        let path = try seeded()
        let result = try StrataBinary.run(["dump", path, "--type", "Address"])
        StrataBinary.expectOneLineError(result, containing: ["'Address' is an embedded type", "Person"])
    }

    // MARK: info

    @Test(arguments: Fixtures.modes)
    func infoCountsTheLinksOfEachLinkProperty(mode: Database.Mode) throws {
        let path = try seeded(mode)
        let result = try StrataBinary.run(["info", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        let lines = StrataBinary.lines(result.output)
        #expect(
            Array(lines.dropFirst(4).prefix(9)) == [
                "Types: 3",
                "  Dog     3 objects  (version 1: 3)",
                "  Person  3 objects  (version 1: 3)",
                "  Vet     1 object   (version 1: 1)",
                "Links:",
                "  Dog.owner       (link to Person)           2 links",
                "  Dog.vet         (link to Vet)              1 link",
                "  Person.friends  (list of links to Person)  2 links",
                try #require(lines.dropFirst(12).first.flatMap { $0.hasPrefix("File size: ") ? $0 : nil }),
            ], "\(result.output)")
    }

    @Test func infoCountsALinkAgainAfterItsTargetIsDeleted() throws {
        let path = try seeded()
        do {
            let db = try Database(configuration: Fixtures.configuration(path, schema: RelationshipFixtures.schema))
            // Ada's dogs cascade; Charles loses his friend.
            try db.write { tx throws in #expect(try tx.delete("Person", key: 1)) }
            db.close()
        }
        let result = try StrataBinary.run(["info", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        let lines = StrataBinary.lines(result.output)
        #expect(lines.contains("  Dog.owner       (link to Person)           0 links"), "\(result.output)")
        #expect(lines.contains("  Dog.vet         (link to Vet)              0 links"), "\(result.output)")
        #expect(lines.contains("  Person.friends  (list of links to Person)  0 links"), "\(result.output)")
        #expect(lines.contains("  Dog     1 object   (version 1: 1)"), "\(result.output)")
    }

    // MARK: verify

    @Test(arguments: Fixtures.modes)
    func verifyPassesAndSaysTheLinksWereChecked(mode: Database.Mode) throws {
        let path = try seeded(mode)
        let result = try StrataBinary.run(["verify", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(
            result.output
                == "OK: \(path): 3 types, 7 objects; the catalog is consistent, every record decodes and every index matches its table; every link resolves and every backlink matches a link.\n"
        )
        #expect(result.error.isEmpty)
    }

    @Test func compactKeepsTheLinksAndRebuildsTheBacklinks() throws {
        let path = try seeded()
        let before = try ["Person", "Dog", "Vet"].map { try StrataBinary.run(["dump", path, "--type", $0, "--json"]) }
        let result = try StrataBinary.run(["compact", path])
        #expect(result.status == 0, "stderr: \(result.error)")
        let after = try ["Person", "Dog", "Vet"].map { try StrataBinary.run(["dump", path, "--type", $0, "--json"]) }
        #expect(after.map(\.output) == before.map(\.output))
        let verify = try StrataBinary.run(["verify", path])
        #expect(verify.status == 0 && verify.output.contains("every link resolves"), "\(verify)")
        let info = try StrataBinary.run(["info", path])
        #expect(info.output.contains("  Dog.owner       (link to Person)           2 links"), "\(info.output)")
    }

    /// The seeded file, sound, then changed by `damage` in a write
    /// transaction of the storage layer, past every check of Strata's.
    func damaged(_ damage: (LMDBTransaction, Catalog) throws -> Void) throws -> String {
        let path = try seeded()
        let sound = try StrataBinary.run(["verify", path])
        #expect(sound.status == 0 && sound.output.hasPrefix("OK: "), "\(sound)")
        let db = try Database(configuration: Fixtures.configuration(path, schema: RelationshipFixtures.schema))
        let catalog = db.catalog
        db.close()
        try RawFile.withWrite(path) { txn in try damage(txn, catalog) }
        return path
    }

    @Test func verifyReportsADanglingLink() throws {
        let path = try damaged { txn, catalog in
            // The vet goes without its delete rule (deny) being asked.
            let vet = try #require(catalog[type: "Vet"])
            let records = try #require(try txn.openDatabase(vet.recordsDatabase, create: false))
            let key = ByteWriter()
            KeyCodec.appendAutomaticID(1, to: key)
            #expect(try key.bytes.withUnsafeBytes { try txn.delete(records, $0) })
        }
        let result = try StrataBinary.run(["verify", path])
        StrataBinary.expectOneLineError(result, containing: [path, "has a problem (listed above)."])
        #expect(
            result.output
                == "- The object of 'Dog' with key \"Rex\" links through 'vet' to the 'Vet' 1, which does not exist.\n")
    }

    @Test func verifyReportsALinkMissingFromTheBacklinksAndABacklinkWithoutItsLink() throws {
        let path = try damaged { txn, catalog in
            let person = try #require(catalog[type: "Person"])
            let friends = try #require(person[property: "friends"])
            let backlinks = try #require(try txn.openDatabase(person.backlinksDatabase(friends), create: false))
            // Ada (1) links to Charles (2): her backlink is moved to Annabella (3).
            #expect(
                try RawFile.key(2).withUnsafeBytes { target in
                    try RawFile.key(1).withUnsafeBytes { try txn.delete(backlinks, target, value: $0) }
                })
            try txn.put(backlinks, RawFile.key(3), RawFile.key(1))
        }
        let result = try StrataBinary.run(["verify", path])
        StrataBinary.expectOneLineError(result, containing: [path, "has 2 problems (listed above)."])
        #expect(
            StrataBinary.lines(result.output) == [
                "- The backlinks of 'Person.friends' lack the link of the object with key 1 to 2.",
                "- The backlinks of 'Person.friends' say the object with key 1 links to the 'Person' 3, but it does not.",
                "",
            ])
    }

    @Test func verifyReportsAnEmbeddedObjectThatDoesNotDecodeByItsType() throws {
        let path = try damaged { txn, catalog in
            // Annabella's record, written again with an address whose street
            // is an int and a list of past addresses holding a string.
            let person = try #require(catalog[type: "Person"])
            let address = try #require(catalog[type: "Address"])
            let ids = try ["id", "name", "address", "past"].map { try #require(person[property: $0]?.id) }
            let street = try #require(address[property: "street"]?.id)
            let record = ByteWriter()
            RecordCodec.beginRecord(record, schemaVersion: 1, fieldCount: 4)
            RecordCodec.appendField(record, id: ids[0], value: 3)
            RecordCodec.appendField(record, id: ids[1], value: "Annabella")
            record.appendVarint(UInt64(ids[2].rawValue))
            RecordCodec.appendObject(record, fieldCount: 1) { RecordCodec.appendField($0, id: street, value: 7) }
            RecordCodec.appendField(record, id: ids[3], value: ["not an address"])
            let records = try #require(try txn.openDatabase(person.recordsDatabase, create: false))
            try txn.put(records, RawFile.key(3), record.bytes)
        }
        let result = try StrataBinary.run(["verify", path])
        StrataBinary.expectOneLineError(result, containing: [path, "has 2 problems (listed above)."])
        #expect(
            StrataBinary.lines(result.output) == [
                "- The object of 'Person' with key 3 does not decode: 'address.street' holds an int, but 'Address.street' is string.",
                "- The object of 'Person' with key 3 does not decode: 'past[0]' holds a string, but it holds embedded 'Address' objects.",
                "",
            ])
    }
}
