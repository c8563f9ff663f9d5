import Foundation
import Strata

// The classic three releases (and a fourth), as @Model structs:
// v1 Person(id, name, age: String); v2 renames name → fullName and makes
// age an Int; v3 splits fullName into firstName/lastName and adds Address,
// filled in the step; v4 renames lastName → familyName with no step, adds
// nickname, and maps Address to a version with a country.

@Model(name: "Person")
struct PersonV1: Equatable {
    @PrimaryKey var id: Int
    var name: String
    var age: String
}

@Model(name: "Person")
struct PersonV2: Equatable {
    @PrimaryKey var id: Int
    @Renamed(from: "name") var fullName: String
    var age: Int = 0
}

@Model(name: "Person")
struct PersonV3: Equatable {
    @PrimaryKey var id: Int
    var firstName: String
    var lastName: String
    @Indexed var age: Int = 0
}

@Model(name: "Person")
struct PersonV4: Equatable {
    @PrimaryKey var id: Int
    var firstName: String
    @Renamed(from: "lastName") var familyName: String
    @Indexed var age: Int = 0
    var nickname: String = ""
}

@Model(name: "Address")
struct AddressV3: Equatable {
    @PrimaryKey var id: Int
    var city: String
}

@Model(name: "Address")
struct AddressV4: Equatable {
    @PrimaryKey var id: Int
    var city: String
    var country: String?
}

enum AppV1: VersionedSchema {
    static let version: UInt64 = 1
    static let models: [any Model.Type] = [PersonV1.self]
}

enum AppV2: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [PersonV2.self]
}

enum AppV3: VersionedSchema {
    static let version: UInt64 = 3
    static let models: [any Model.Type] = [PersonV3.self, AddressV3.self]
}

enum AppV4: VersionedSchema {
    static let version: UInt64 = 4
    static let models: [any Model.Type] = [PersonV4.self, AddressV4.self]
}

/// The story's steps and configurations.
enum Releases {
    struct StepFailure: Error, Equatable { let id: Int }

    static let v1ToV2 = MigrationStep.step(from: AppV1.self, to: AppV2.self) {
        $0.map(PersonV1.self, to: PersonV2.self) { old in
            PersonV2(id: old.id, fullName: old.name, age: Int(old.age) ?? 0)
        }
    }

    static let v2ToV3 = MigrationStep.step(from: AppV2.self, to: AppV3.self) {
        $0.map(PersonV2.self, to: PersonV3.self) { old, context in
            try context.insert(AddressV3(id: old.id, city: "City \(old.id)"))
            let parts = old.fullName.split(separator: " ", maxSplits: 1).map(String.init)
            return PersonV3(
                id: old.id, firstName: parts.first ?? "", lastName: parts.count > 1 ? parts[1] : "", age: old.age)
        }
    }

    static let v3ToV4 = MigrationStep.step(from: AppV3.self, to: AppV4.self) {
        $0.map(AddressV3.self, to: AddressV4.self) { old in
            AddressV4(id: old.id, city: old.city.uppercased(), country: "UK")
        }
    }

    /// The app at `version` (1 to 4), able to open a file of any earlier one.
    static func configuration(
        _ path: String, version: UInt64, mode: Database.Mode = .local, steps: [MigrationStep]? = nil
    ) -> Database.Configuration {
        let all: [any VersionedSchema.Type] = [AppV1.self, AppV2.self, AppV3.self, AppV4.self]
        let allSteps = [v1ToV2, v2ToV3, v3ToV4]
        var config = Database.Configuration(
            path: path, schema: all[Int(version) - 1], versions: Array(all[0 ..< Int(version) - 1]),
            migrations: steps ?? Array(allSteps[0 ..< Int(version) - 1]))
        config.durability = .noSync
        config.mode = mode
        return config
    }

    static let peopleV1 = [
        PersonV1(id: 1, name: "Ada Lovelace", age: "36"),
        PersonV1(id: 2, name: "Charles Babbage", age: "79"),
        PersonV1(id: 3, name: "Plato", age: "unknown"),
    ]

    static let peopleV2 = [
        PersonV2(id: 1, fullName: "Ada Lovelace", age: 36),
        PersonV2(id: 2, fullName: "Charles Babbage", age: 79),
        PersonV2(id: 3, fullName: "Plato", age: 0),
    ]

    static let peopleV3 = [
        PersonV3(id: 1, firstName: "Ada", lastName: "Lovelace", age: 36),
        PersonV3(id: 2, firstName: "Charles", lastName: "Babbage", age: 79),
        PersonV3(id: 3, firstName: "Plato", lastName: "", age: 0),
    ]

    static let addressesV3 = [1, 2, 3].map { AddressV3(id: $0, city: "City \($0)") }

    /// Writes a file at `version` (1 or 2) holding the story's people.
    static func seed(_ path: String, version: UInt64, mode: Database.Mode = .local) throws {
        let db = try Database(configuration: configuration(path, version: version, mode: mode, steps: []))
        defer { db.close() }
        try db.write { tx in
            if version == 1 {
                for person in peopleV1 { try tx.insert(person) }
            } else {
                for person in peopleV2 { try tx.insert(person) }
            }
        }
    }
}
