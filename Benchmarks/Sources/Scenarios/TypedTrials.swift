import Foundation
import GRDB
import Strata

/// The benchmark's Person as a typed model, written by hand in the shape
/// the `@Model` macro writes: the same stored type, properties and records
/// as `StrataTrials.person()`, so both APIs read and write the same files.
///
/// The names the dataset generates ("First999", "Last9999") are at most 15
/// UTF-8 bytes, so Swift keeps them inline in the `String` value: a
/// `TypedPerson` owns no heap memory, and the malloc counts of the typed
/// scenarios are Strata's own.
public struct TypedPerson: Model, Equatable, Sendable {
    public typealias Key = Int
    public var id: Int
    public var firstName: String
    public var lastName: String
    public var age: Int

    public static let schema = ModelSchema<TypedPerson>(
        name: "Person",
        properties: [
            .init(\.id, "id", primaryKey: true),
            .init(\.firstName, "firstName"),
            .init(\.lastName, "lastName"),
            .init(\.age, "age"),
        ])

    public init(id: Int, firstName: String, lastName: String, age: Int) {
        self.id = id
        self.firstName = firstName
        self.lastName = lastName
        self.age = age
    }

    /// The dataset's object with this id.
    public init(_ id: Int) {
        self.init(id: id, firstName: Dataset.firstName(id), lastName: Dataset.lastName(id), age: Dataset.age(id))
    }

    public func encode(to encoder: inout ModelEncoder) {
        encoder.encode(id)
        encoder.encode(firstName)
        encoder.encode(lastName)
        encoder.encode(age)
    }

    public init(from decoder: inout ModelDecoder) throws {
        id = try decoder.decode(Int.self)
        firstName = try decoder.decode(String.self)
        lastName = try decoder.decode(String.self)
        age = try decoder.decode(Int.self)
    }
}

/// Version 2 of the benchmark's Person for the typed migration (scenario a):
/// firstName and lastName become fullName.
public struct TypedPersonV2: Model, Sendable {
    public typealias Key = Int
    public var id: Int
    public var fullName: String
    public var age: Int

    public static let schema = ModelSchema<TypedPersonV2>(
        name: "Person",
        properties: [.init(\.id, "id", primaryKey: true), .init(\.fullName, "fullName"), .init(\.age, "age")])

    public init(id: Int, fullName: String, age: Int) {
        self.id = id
        self.fullName = fullName
        self.age = age
    }

    public func encode(to encoder: inout ModelEncoder) {
        encoder.encode(id)
        encoder.encode(fullName)
        encoder.encode(age)
    }

    public init(from decoder: inout ModelDecoder) throws {
        id = try decoder.decode(Int.self)
        fullName = try decoder.decode(String.self)
        age = try decoder.decode(Int.self)
    }
}

enum TypedAppV1: VersionedSchema {
    static let version: UInt64 = 1
    static let models: [any Model.Type] = [TypedPerson.self]
}

enum TypedAppV2: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [TypedPersonV2.self]

    static let fullNames = MigrationStep.step(from: TypedAppV1.self, to: TypedAppV2.self) {
        $0.map(TypedPerson.self, to: TypedPersonV2.self) { old in
            TypedPersonV2(id: old.id, fullName: old.firstName + " " + old.lastName, age: old.age)
        }
    }
}

/// Typed insert (e), typed full scan (f), typed primary-key lookups (g) and
/// typed closure migration (a) through Strata's `Model` API:
/// `tx.insert(TypedPerson(...))`, `tx.objects(TypedPerson.self)` and
/// `tx.object(TypedPerson.self, primaryKey:)`, every object decoded into
/// the struct.
struct StrataTypedTrials {
    let n: Int
    let folder: URL

    var dynamic: StrataTrials { StrataTrials(n: n, folder: folder) }
    var path: String { dynamic.path }

    func configuration() -> Strata.Database.Configuration {
        Strata.Database.Configuration(path: path, models: [TypedPerson.self])
    }

    func trial(_ scenario: Scenario) -> Trial? {
        switch scenario {
        case .insert:
            return Trial(
                setup: { removeFiles(in: folder, keepingTemplates: true) },
                run: {
                    let db = try Strata.Database(configuration: configuration())
                    try db.write { tx in
                        for id in 0 ..< n { try tx.insert(TypedPerson(id)) }
                    }
                    db.close()
                },
                verify: { try dynamic.sumOfAges(StrataTrials.person(), version: 1) },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .scan:
            let box = ResultBox<Strata.Database>()
            let result = ResultBox<UInt64>()
            return Trial(
                setup: {
                    // The dynamic trials' input file: the same records.
                    try dynamic.input("v1", StrataTrials.person())
                    box.value = try Strata.Database(configuration: configuration())
                },
                run: {
                    result.value = try box.value!.read { tx in
                        var sum = 0
                        var nameBytes = 0
                        try tx.objects(TypedPerson.self).forEach { person in
                            sum &+= person.age
                            nameBytes &+= person.firstName.utf8.count &+ person.lastName.utf8.count
                        }
                        // Uses every decoded property, so no decode can be
                        // skipped; the check below compares the ages.
                        guard nameBytes > 0 || n == 0 else { throw ScenarioError("no names decoded") }
                        return UInt64(sum)
                    }
                },
                verify: { result.value ?? 0 },
                cleanup: {
                    box.value?.close()
                    box.value = nil
                    removeFiles(in: folder, keepingTemplates: true)
                })
        case .lookups:
            // The dynamic trials' input file, read by key into the struct:
            // `tx.object(TypedPerson.self, primaryKey:)` decodes each
            // object whole, where the C floor reads the age alone.
            let box = ResultBox<Strata.Database>()
            let result = ResultBox<UInt64>()
            let keys = Dataset.lookupKeys(n)
            return Trial(
                setup: {
                    try dynamic.input("v1", StrataTrials.person())
                    box.value = try Strata.Database(configuration: configuration())
                },
                run: {
                    result.value = try box.value!.read { tx in
                        var sum = 0
                        var nameBytes = 0
                        for key in keys {
                            guard let person = try tx.object(TypedPerson.self, primaryKey: key) else {
                                throw ScenarioError("no person \(key)")
                            }
                            sum &+= person.age
                            nameBytes &+= person.firstName.utf8.count &+ person.lastName.utf8.count
                        }
                        guard nameBytes > 0 else { throw ScenarioError("no names decoded") }
                        return UInt64(sum)
                    }
                },
                verify: { result.value ?? 0 },
                cleanup: {
                    box.value?.close()
                    box.value = nil
                    removeFiles(in: folder, keepingTemplates: true)
                })
        case .closureMigration:
            // Scenario a through a typed step: TypedPerson (firstName,
            // lastName) in, TypedPersonV2 (fullName) out.
            let v2 = ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("fullName", .string)
                Property("age", .int)
            }
            let config = Strata.Database.Configuration(
                path: path, schema: TypedAppV2.self, versions: [TypedAppV1.self], migrations: [TypedAppV2.fullNames])
            return Trial(
                setup: { try dynamic.input("v1", StrataTrials.person()) },
                run: { try Strata.Database(configuration: config).close() },
                verify: {
                    let db = try Strata.Database(configuration: dynamic.configuration(version: 2, v2))
                    defer { db.close() }
                    return try db.read { tx in
                        var hash = Checksum()
                        try tx.objects("Person").forEach { hash.add($0["fullName"].string!) }
                        return hash.value
                    }
                },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        default:
            return nil
        }
    }
}

/// The benchmark's Person as a GRDB record, with GRDB's hand-written
/// conformances (columns read and written by position), the fastest form
/// GRDB's documentation gives: a Codable record would be slower.
struct PersonRecord: FetchableRecord, PersistableRecord {
    static let databaseTableName = "person"
    var id: Int64
    var firstName: String
    var lastName: String
    var age: Int64

    init(id: Int64, firstName: String, lastName: String, age: Int64) {
        self.id = id
        self.firstName = firstName
        self.lastName = lastName
        self.age = age
    }

    init(row: Row) {
        id = row[0]
        firstName = row[1]
        lastName = row[2]
        age = row[3]
    }

    func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["firstName"] = firstName
        container["lastName"] = lastName
        container["age"] = age
    }
}

/// Insert (e) and full scan (f) as a GRDB app with record types writes
/// them: `record.insert(db)` per object in one transaction, and
/// `PersonRecord.fetchCursor(db)` decoding every row into the struct.
struct GRDBRecordTrials {
    let n: Int
    let folder: URL

    var sql: GRDBTrials { GRDBTrials(n: n, folder: folder, pureSQL: false) }

    func trial(_ scenario: Scenario) -> Trial? {
        switch scenario {
        case .insert:
            return Trial(
                setup: { removeFiles(in: folder, keepingTemplates: true) },
                run: {
                    let queue = try sql.queue()
                    try sql.migrator(v1: GRDBTrials.createV1).migrate(queue)
                    try queue.write { db in
                        for id in 0 ..< n {
                            try PersonRecord(
                                id: Int64(id), firstName: Dataset.firstName(id), lastName: Dataset.lastName(id),
                                age: Int64(Dataset.age(id))
                            ).insert(db)
                        }
                    }
                    try queue.close()
                },
                verify: { try sql.sumOfAges() },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .scan:
            let box = ResultBox<DatabaseQueue>()
            let result = ResultBox<UInt64>()
            return Trial(
                setup: {
                    try sql.input("v1", GRDBTrials.createV1)
                    box.value = try sql.queue()
                },
                run: {
                    result.value = try box.value!.read { db in
                        var sum: Int64 = 0
                        var nameBytes = 0
                        let people = try PersonRecord.fetchCursor(db)
                        while let person = try people.next() {
                            sum &+= person.age
                            nameBytes &+= person.firstName.utf8.count &+ person.lastName.utf8.count
                        }
                        guard nameBytes > 0 || n == 0 else { throw ScenarioError("no names decoded") }
                        return UInt64(sum)
                    }
                },
                verify: { result.value ?? 0 },
                cleanup: {
                    try? box.value?.close()
                    box.value = nil
                    removeFiles(in: folder, keepingTemplates: true)
                })
        default:
            return nil
        }
    }
}
