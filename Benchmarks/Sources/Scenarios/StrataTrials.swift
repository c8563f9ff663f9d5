import Foundation
import Strata

/// The scenarios through Strata's public API, as an app would write them.
struct StrataTrials {
    let n: Int
    let folder: URL

    var path: String { folder.appendingPathComponent("people.strata").path }

    static func person(ageType: PropertyType = .int, indexedLastName: Bool = false) -> ObjectSchema {
        ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("firstName", .string)
            Property("lastName", .string, indexed: indexedLastName)
            Property("age", ageType)
        }
    }

    func configuration(version: UInt64 = 1, _ person: ObjectSchema) -> Database.Configuration {
        Database.Configuration(path: path, schemaVersion: version, schema: Schema([person]))
    }

    /// Writes the input file once per kind and copies it for each trial.
    func input(_ kind: String, _ person: ObjectSchema, ageText: Bool = false) throws {
        let template = folder.appendingPathComponent("template-strata-\(kind)-\(n).strata")
        if !FileManager.default.fileExists(atPath: template.path) {
            var config = configuration(person)
            config.path = template.path
            config.durability = .noSync
            let db = try Database(configuration: config)
            try db.write { tx in
                for id in 0 ..< n {
                    try tx.insert(
                        "Person",
                        [
                            "id": .int(Int64(id)), "firstName": .string(Dataset.firstName(id)),
                            "lastName": .string(Dataset.lastName(id)),
                            "age": ageText ? .string(Dataset.ageText(id)) : .int(Int64(Dataset.age(id))),
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

    func sumOfAges(_ person: ObjectSchema, version: UInt64) throws -> UInt64 {
        let db = try Database(configuration: configuration(version: version, person))
        defer { db.close() }
        return try db.read { tx in
            var sum: Int64 = 0
            try tx.objects("Person").forEach { sum += $0["age"].int! }
            return UInt64(sum)
        }
    }

    func trial(_ scenario: Scenario) -> Trial? {
        let v1 = StrataTrials.person()
        switch scenario {
        case .closureMigration:
            let v2 = ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("fullName", .string)
                Property("age", .int)
            }
            var config = configuration(version: 2, v2)
            config.migration = { migration, oldVersion in
                guard oldVersion < 2 else { return }
                try migration.enumerateObjects(ofType: "Person") { old, new in
                    guard let old, let new else { return }
                    new["fullName"] = .string(old["firstName"].string! + " " + old["lastName"].string!)
                }
            }
            return Trial(
                setup: { try input("v1", v1) },
                run: { try Database(configuration: config).close() },
                verify: {
                    let db = try Database(configuration: configuration(version: 2, v2))
                    defer { db.close() }
                    return try db.read { tx in
                        var hash = Checksum()
                        try tx.objects("Person").forEach { hash.add($0["fullName"].string!) }
                        return hash.value
                    }
                },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .additiveMigration:
            let v2 = ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("lastName", .string)
                Property("age", .int)
                Property("nickname", .string, default: "-")
            }
            return Trial(
                setup: { try input("v1", v1) },
                run: { try Database(configuration: configuration(version: 2, v2)).close() },
                verify: {
                    let db = try Database(configuration: configuration(version: 2, v2))
                    defer { db.close() }
                    return try db.read { tx in
                        var hash = Checksum()
                        try tx.objects("Person").forEach {
                            hash.add($0["lastName"].string!)
                            hash.add($0["nickname"].string!)
                        }
                        return hash.value
                    }
                },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .typeChange:
            let text = StrataTrials.person(ageType: .string)
            var config = configuration(version: 2, v1)
            config.migration = { migration, _ in
                try migration.enumerateObjects(ofType: "Person") { old, new in
                    guard let old, let new else { return }
                    new["age"] = .int(Int64(old["age"].string!)!)
                }
            }
            return Trial(
                setup: { try input("ageText", text, ageText: true) },
                run: { try Database(configuration: config).close() },
                verify: { try sumOfAges(v1, version: 2) },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .openUpToDate:
            return Trial(
                setup: { try input("v1", v1) },
                run: { try Database(configuration: configuration(v1)).close() },
                verify: {
                    let db = try Database(configuration: configuration(v1))
                    defer { db.close() }
                    return UInt64(try db.read { tx in try tx.objects("Person").count })
                },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .insert:
            return Trial(
                setup: { removeFiles(in: folder, keepingTemplates: true) },
                run: {
                    let db = try Database(configuration: configuration(v1))
                    try db.write { tx in
                        for id in 0 ..< n {
                            try tx.insert(
                                "Person",
                                [
                                    "id": .int(Int64(id)), "firstName": .string(Dataset.firstName(id)),
                                    "lastName": .string(Dataset.lastName(id)), "age": .int(Int64(Dataset.age(id))),
                                ])
                        }
                    }
                    db.close()
                },
                verify: { try sumOfAges(v1, version: 1) },
                cleanup: { removeFiles(in: folder, keepingTemplates: true) })
        case .scan, .lookups, .indexLookups:
            return readTrial(scenario)
        case .followLinks, .ownerLookups, .backlinks, .cascadeDelete, .directDelete, .addLink, .addInt:
            return nil  // makeTrial gives the relationships to their own trials
        }
    }

    /// Reads on an open database: only the reads are timed.
    private func readTrial(_ scenario: Scenario) -> Trial {
        let schema = StrataTrials.person(indexedLastName: scenario == .indexLookups)
        let box = ResultBox<Database>()
        let result = ResultBox<UInt64>()
        let keys = scenario == .lookups ? Dataset.lookupKeys(n) : []
        let names = scenario == .indexLookups ? Dataset.lookupNames(n) : []
        return Trial(
            setup: {
                try input(scenario == .indexLookups ? "indexed" : "v1", schema)
                box.value = try Database(configuration: configuration(schema))
            },
            run: {
                let db = box.value!
                result.value = try db.read { tx in
                    var sum: Int64 = 0
                    switch scenario {
                    case .scan:
                        try tx.objects("Person").forEach { sum &+= $0["age"].int! }
                    case .lookups:
                        for key in keys { sum &+= try tx.object("Person", key: .int(Int64(key)))!["age"].int! }
                    default:
                        let people = try tx.objects("Person")
                        for name in names {
                            try people.where("lastName", equals: .string(name)).forEach { sum &+= $0["age"].int! }
                        }
                    }
                    return UInt64(sum)
                }
            },
            verify: { result.value ?? 0 },
            cleanup: {
                box.value?.close()
                box.value = nil
                removeFiles(in: folder, keepingTemplates: true)
            })
    }
}

/// A value set by one closure of a trial and read by another.
final class ResultBox<T> {
    var value: T?
}

func removeFiles(in folder: URL, keepingTemplates: Bool) {
    let manager = FileManager.default
    for name in (try? manager.contentsOfDirectory(atPath: folder.path)) ?? []
    where !(keepingTemplates && name.hasPrefix("template-")) {
        try? manager.removeItem(at: folder.appendingPathComponent(name))
    }
}
