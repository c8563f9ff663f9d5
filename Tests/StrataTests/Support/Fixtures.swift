import Foundation
import Testing

@testable import Strata

/// The schemas, objects and configurations most tests start from.
enum Fixtures {
    /// Both modes, for the behaviours that do not depend on the mode:
    /// `@Test(arguments: Fixtures.modes)`.
    static let modes: [Database.Mode] = [.local, .synced]

    static let person = ObjectSchema("Person", primaryKey: "id") {
        Property("id", .int)
        Property("firstName", .string)
        Property("lastName", .string)
        Property("age", .int, default: 0, indexed: true)
        Property("email", .string, optional: true)
    }

    static let schema = Schema([person])

    /// A configuration that does not wait for the disk, in `mode`.
    static func configuration(
        _ path: String, version: UInt64 = 1, schema: Schema = schema,
        mode: Database.Mode = .local
    ) -> Database.Configuration {
        var config = Database.Configuration(path: path, schemaVersion: version, schema: schema)
        config.durability = .noSync
        config.mode = mode
        return config
    }

    static func person(
        _ id: Int64, _ first: String = "First", _ last: String = "Last", age: Int64 = 30, email: String? = nil
    ) -> [String: Value] {
        [
            "id": .int(id), "firstName": .string(first), "lastName": .string(last), "age": .int(age),
            "email": email.map(Value.string) ?? .null,
        ]
    }

    static let ada = person(1, "Ada", "Lovelace", age: 36, email: "ada@example.org")
    static let charles = person(2, "Charles", "Babbage", age: 79)
    static let annabella = person(3, "Annabella", "Lovelace", age: 40)

    /// Creates a file at `version` holding Ada (1), Charles (2) and
    /// Annabella (3), and closes it.
    static func seed(_ path: String, version: UInt64 = 1, mode: Database.Mode = .local) throws {
        let db = try Database(configuration: configuration(path, version: version, mode: mode))
        try db.write { tx in
            for person in [ada, charles, annabella] { try tx.insert("Person", person) }
        }
    }

    /// Every Person's values, in primary-key order.
    static func people(_ db: Database) throws -> [[String: Value]] {
        try db.read { tx in try tx.objects("Person").map(\.values) }
    }

    /// Every Person's values, read through a Database that is closed again
    /// before this returns.
    static func people(opening configuration: Database.Configuration) throws -> [[String: Value]] {
        try people(Database(configuration: configuration))
    }

    /// The UUID whose bytes are all zero: the first in byte order.
    static let zeroUUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    /// One value of each type.
    static let valueOfEachType: [Value] = [
        .bool(true), .int(7), .double(1.5), .string("seven"), .data(Data([1, 2, 3])),
        .date(Date(timeIntervalSinceReferenceDate: 86_400)),
        .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!), .decimal(Decimal(string: "7.25")!),
    ]
}

/// Large binary values, for the tests that fill a map or a disk.
enum Blobs {
    static let schema = Schema([
        ObjectSchema("Blob", primaryKey: "id") {
            Property("id", .int)
            Property("payload", .data)
        }
    ])

    /// Bytes that differ per id, so a mixed-up record would be noticed.
    static func payload(_ id: Int, size: Int) -> Data {
        var data = Data(count: size)
        data.withUnsafeMutableBytes { bytes in
            let words = bytes.bindMemory(to: UInt64.self)
            var x = UInt64(id) &* 0x9E37_79B9_7F4A_7C15 | 1
            for i in words.indices {
                x ^= x << 13
                x ^= x >> 7
                x ^= x << 17
                words[i] = x
            }
        }
        return data
    }
}

/// Items indexed on a property of every indexable type, for the index tests.
enum Items {
    static let epoch = Date(timeIntervalSinceReferenceDate: 0)

    static let schema = Schema([
        ObjectSchema("Item", primaryKey: "id") {
            Property("id", .int)
            Property("tag", .string, indexed: true)
            Property("rank", .int, default: 0, indexed: true)
            Property("flag", .bool, default: false, indexed: true)
            Property("when", .date, default: .date(epoch), indexed: true)
            Property("ref", .uuid, optional: true, indexed: true)
            Property("note", .string, optional: true, indexed: true)
            Property("plain", .string, default: "")
        },
        ObjectSchema("Log") {
            Property("level", .int, indexed: true)
            Property("message", .string, default: "")
        },
    ])

    static func item(
        _ id: Int64, _ tag: String, rank: Int64 = 0, flag: Bool = false, when: Date = epoch,
        ref: UUID? = nil, note: String? = nil, plain: String = ""
    ) -> [String: Value] {
        [
            "id": .int(id), "tag": .string(tag), "rank": .int(rank), "flag": .bool(flag), "when": .date(when),
            "ref": ref.map(Value.uuid) ?? .null, "note": note.map(Value.string) ?? .null, "plain": .string(plain),
        ]
    }
}
