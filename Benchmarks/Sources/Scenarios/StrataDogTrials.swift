import Foundation
import Strata

/// The relationships' dog as a typed model, written by hand in the shape
/// the `@Model` macro writes for
/// `@Relationship(deleteRule: .cascade) var owner: Link<TypedPerson>?`:
/// the same stored type as `StrataDogTrials.dog`.
public struct TypedDog: Model, Equatable, Sendable {
    public typealias Key = Int
    public var id: Int
    public var name: String
    public var owner: Link<TypedPerson>?

    public static let schema = ModelSchema<TypedDog>(
        name: "Dog",
        properties: [
            .init(\.id, "id", primaryKey: true),
            .init(\.name, "name"),
            .init(\.owner, "owner", onDelete: .cascade),
        ])

    public init(id: Int, name: String, owner: Link<TypedPerson>?) {
        self.id = id
        self.name = name
        self.owner = owner
    }

    public func encode(to encoder: inout ModelEncoder) {
        encoder.encode(id)
        encoder.encode(name)
        encoder.encode(owner)
    }

    public init(from decoder: inout ModelDecoder) throws {
        id = try decoder.decode(Int.self)
        name = try decoder.decode(String.self)
        owner = try decoder.decode(Link<TypedPerson>?.self)
    }
}

/// The relationships (scenarios i to o) through Strata's dynamic API, or
/// through typed models (i to k).
struct StrataDogTrials {
    let n: Int
    let folder: URL
    let typed: Bool

    var path: String { folder.appendingPathComponent("dogs.strata").path }

    static func dog() -> ObjectSchema {
        ObjectSchema("Dog", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property.link("owner", to: "Person", onDelete: .cascade)
        }
    }

    func configuration(at path: String? = nil) -> Database.Configuration {
        typed
            ? Database.Configuration(path: path ?? self.path, models: [TypedPerson.self, TypedDog.self])
            : Database.Configuration(
                path: path ?? self.path, schemaVersion: 1, schema: Schema([StrataTrials.person(), Self.dog()]))
    }

    /// Writes the input file once per kind and copies it for each trial.
    func input(_ file: Dogs.File) throws {
        let template = folder.appendingPathComponent("template-strata-dogs-\(file.rawValue)-\(n).strata")
        if !FileManager.default.fileExists(atPath: template.path) {
            var config = configuration(at: template.path)
            config.durability = .noSync
            let db = try Database(configuration: config)
            try db.write { tx in
                for id in 0 ..< n {
                    try tx.insert(
                        "Person",
                        [
                            "id": .int(Int64(id)), "firstName": .string(Dataset.firstName(id)),
                            "lastName": .string(Dataset.lastName(id)), "age": .int(Int64(Dataset.age(id))),
                        ])
                }
                for id in 0 ..< n {
                    try tx.insert(
                        "Dog",
                        [
                            "id": .int(Int64(id)), "name": .string(Dogs.name(id)),
                            "owner": .link(.int(Int64(Dogs.owner(id, n: n, in: file)))),
                        ])
                }
            }
            db.close()
            try? FileManager.default.removeItem(atPath: template.path + "-lock")
        }
        try? FileManager.default.removeItem(atPath: path)
        try? FileManager.default.removeItem(atPath: path + "-lock")
        try copyInput(template, to: path)
    }

    func trial(_ scenario: Scenario) -> Trial? {
        switch scenario {
        case .followLinks, .ownerLookups:
            return typed
                ? typedLinkTrial(follow: scenario == .followLinks) : linkTrial(follow: scenario == .followLinks)
        case .backlinks:
            return backlinkTrial()
        case .cascadeDelete, .directDelete:
            return typed ? nil : deleteTrial(cascade: scenario == .cascadeDelete)
        case .addLink, .addInt:
            return typed ? nil : addPropertyTrial(link: scenario == .addLink)
        default:
            return nil
        }
    }

    /// A read trial on an open database.
    private func readTrial(
        _ file: Dogs.File, prepare: @escaping (Database) throws -> Void = { _ in },
        split: Split? = nil, run body: @escaping (ReadTransaction) throws -> UInt64
    ) -> Trial {
        let box = ResultBox<Database>()
        let result = ResultBox<UInt64>()
        return Trial(
            setup: {
                try input(file)
                box.value = try Database(configuration: configuration())
                try prepare(box.value!)
            },
            run: { result.value = try box.value!.read(body) },
            verify: { result.value ?? 0 },
            cleanup: {
                box.value?.close()
                box.value = nil
                removeFiles(in: folder, keepingTemplates: true)
            },
            split: split)
    }

    /// Scenario i (`follow`) or j through the dynamic API. The dogs are
    /// read first, in the timed transaction because a `DynamicObject` is
    /// valid only there, but outside the measured part: i resolves each
    /// dog's owner with `tx.object(linkedFrom:through:)`, j looks up the
    /// same people with `tx.object(_:key:)`, their keys taken from the
    /// dogs beforehand.
    private func linkTrial(follow: Bool) -> Trial {
        let ids = Dogs.followedDogs(n)
        let split = Split()
        return readTrial(.owners, split: split) { tx in
            let dogs = try ids.map { try tx.object("Dog", key: .int(Int64($0)))! }
            var sum: Int64 = 0
            if follow {
                try split.measure {
                    for dog in dogs { sum &+= try tx.object(linkedFrom: dog, through: "owner")!["age"].int! }
                }
            } else {
                let owners = dogs.map { $0["owner"].linkKey! }
                try split.measure {
                    for owner in owners { sum &+= try tx.object("Person", key: owner)!["age"].int! }
                }
            }
            return UInt64(sum)
        }
    }

    /// Scenario i (`follow`) or j through typed models: the dogs are
    /// decoded before the run; i resolves `tx.object(dog.owner!)`, j looks
    /// up `tx.object(TypedPerson.self, primaryKey:)` with the same keys.
    private func typedLinkTrial(follow: Bool) -> Trial {
        let ids = Dogs.followedDogs(n)
        let dogs = ResultBox<[TypedDog]>()
        return readTrial(
            .owners,
            prepare: { db in
                dogs.value = try db.read { tx in try ids.map { try tx.object(TypedDog.self, primaryKey: $0)! } }
            },
            run: { tx in
                var sum = 0
                if follow {
                    for dog in dogs.value! { sum &+= try tx.object(dog.owner!)!.age }
                } else {
                    for key in dogs.value!.map(\.owner!.key) {
                        sum &+= try tx.object(TypedPerson.self, primaryKey: key)!.age
                    }
                }
                return UInt64(sum)
            })
    }

    /// Scenario k: the dogs of 10,000 people, ten each, from the backlinks
    /// of `Dog.owner`, every dog read (its id and name).
    private func backlinkTrial() -> Trial {
        let people = Dogs.queriedOwners(n)
        return readTrial(.owners) { tx in
            var sum: UInt64 = 0
            if typed {
                for person in people {
                    try tx.objects(TypedDog.self, linkingTo: person, through: \.owner).forEach { dog in
                        sum &+= Dogs.backlinkSum(id: dog.id, name: dog.name)
                    }
                }
            } else {
                for person in people {
                    try tx.objects("Dog", linkingTo: .int(Int64(person)), through: "owner").forEach { dog in
                        sum &+= Dogs.backlinkSum(id: Int(dog["id"].int!), name: dog["name"].string!)
                    }
                }
            }
            return sum
        }
    }

    /// Scenario l (`cascade`): delete person 0, whose 100k dogs cascade;
    /// or m: delete the same dogs by key, in one transaction.
    private func deleteTrial(cascade: Bool) -> Trial {
        let box = ResultBox<Database>()
        let children = Dogs.childIDs(n)
        return Trial(
            setup: {
                try input(.kennel)
                box.value = try Database(configuration: configuration())
            },
            run: {
                try box.value!.write { tx in
                    if cascade {
                        guard try tx.delete("Person", key: 0) else { throw ScenarioError("no person 0") }
                    } else {
                        for id in children {
                            guard try tx.delete("Dog", key: .int(Int64(id))) else {
                                throw ScenarioError("no dog \(id)")
                            }
                        }
                    }
                }
            },
            verify: {
                try box.value!.read { tx in
                    var count = 0
                    var idSum = 0
                    try tx.objects("Dog").forEach {
                        count += 1
                        idSum += Int($0["id"].int!)
                    }
                    let linking = try tx.objects("Dog", linkingTo: 0, through: "owner").count
                    return Dogs.afterDelete(count: count, idSum: idSum, linkingToZero: linking)
                }
            },
            cleanup: {
                box.value?.close()
                box.value = nil
                removeFiles(in: folder, keepingTemplates: true)
            })
    }

    /// Scenario n (`link`): open the people's file with schema version 2,
    /// which adds `bestFriend`, a link to Person; or o: version 2 adds
    /// `luckyNumber`, an optional int. Both new properties read null.
    private func addPropertyTrial(link: Bool) -> Trial {
        let people = StrataTrials(n: n, folder: folder)
        let v2 = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("firstName", .string)
            Property("lastName", .string)
            Property("age", .int)
            if link {
                Property.link("bestFriend", to: "Person")
            } else {
                Property("luckyNumber", .int, optional: true)
            }
        }
        let added = link ? "bestFriend" : "luckyNumber"
        return Trial(
            setup: { try people.input("v1", StrataTrials.person()) },
            run: { try Database(configuration: people.configuration(version: 2, v2)).close() },
            verify: {
                let db = try Database(configuration: people.configuration(version: 2, v2))
                defer { db.close() }
                return try db.read { tx in
                    var sum: Int64 = 0
                    try tx.objects("Person").forEach { if $0[added] == .null { sum += $0["age"].int! } }
                    let linking = link ? try tx.objects("Person", linkingTo: 0, through: added).count : 0
                    return UInt64(sum) &+ UInt64(linking) << 60
                }
            },
            cleanup: { removeFiles(in: folder, keepingTemplates: true) })
    }
}
