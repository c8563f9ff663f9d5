import Foundation
import Testing

@testable import Strata

@Suite(.temporaryFolder)
struct TypedMigrationTests {
    let folder = TemporaryFolder.current

    private func people<M: Model>(_ model: M.Type, _ db: Database) throws -> [M] {
        try db.read { tx in try tx.objects(M.self).array() }
    }

    private func versions(_ type: String, _ db: Database) throws -> [UInt64] {
        try db.read { tx in try tx.objects(type).map(\.schemaVersion) }
    }

    @Test(arguments: [UInt64(1), 2])
    func threeReleasesOpenFromEveryEarlierVersion(from version: UInt64) throws {
        let path = folder.path()
        try Releases.seed(path, version: version)
        let db = try Database(configuration: Releases.configuration(path, version: 3))
        defer { db.close() }
        #expect(try people(PersonV3.self, db) == Releases.peopleV3)
        #expect(try people(AddressV3.self, db) == Releases.addressesV3)
        #expect(try versions("Person", db) == [3, 3, 3])
        #expect(try versions("Address", db) == [3, 3, 3])
        let adults = try db.read { tx in try tx.objects(PersonV3.self).filter { $0.age >= 18 }.map(\.id) }
        #expect(adults == [1, 2])
    }

    @Test func aVersionTwoFileOpensAtVersionTwo() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        let db = try Database(configuration: Releases.configuration(path, version: 2))
        defer { db.close() }
        #expect(try people(PersonV2.self, db) == Releases.peopleV2)
        #expect(try versions("Person", db) == [2, 2, 2])
    }

    @Test func composedStepsMatchSeparateOpens() throws {
        let composed = folder.path("composed.strata")
        let separate = folder.path("separate.strata")
        try Releases.seed(composed, version: 1)
        try Releases.seed(separate, version: 1)
        for version: UInt64 in [2, 3, 4] {
            try Database(configuration: Releases.configuration(separate, version: version)).close()
        }
        let db = try Database(configuration: Releases.configuration(composed, version: 4))
        // One write per object: 3 people rewritten, 3 addresses created.
        #expect(Instrumentation.recordWritesOfLastOpen(composed) == 6)
        let expectedPeople = Releases.peopleV3.map {
            PersonV4(id: $0.id, firstName: $0.firstName, familyName: $0.lastName, age: $0.age)
        }
        #expect(try people(PersonV4.self, db) == expectedPeople)
        #expect(
            try people(AddressV4.self, db) == [1, 2, 3].map { AddressV4(id: $0, city: "CITY \($0)", country: "UK") })
        // Person's last step is 2 → 3; version 4 only renames and adds.
        #expect(try versions("Person", db) == [3, 3, 3])
        #expect(try versions("Address", db) == [4, 4, 4])
        db.close()
        let final = Releases.configuration(composed, version: 4)
        var separateFinal = final
        separateFinal.path = separate
        let one = try Migrations.everything(opening: final)
        let other = try Migrations.everything(opening: separateFinal)
        #expect(one == other)
        #expect(one["Person"]?.count == 3 && one["Address"]?.count == 3)
    }

    @Test func aVersionWithoutAMappingIsCarriedByNameBeforeALaterStep() throws {
        let composed = folder.path("composed.strata")
        let separate = folder.path("separate.strata")
        try Releases.seed(composed, version: 1)
        try Releases.seed(separate, version: 1)
        // Version 2 has no mapping: name → fullName by the declared rename,
        // age (string → int) at its default; version 3 maps as usual.
        // The later step maps PersonV2, whose age is already an int, so it
        // converts nothing: the age values must be discarded explicitly.
        let noMapping = MigrationStep.step(from: AppV1.self, to: AppV2.self) { _ in }
        let steps = [noMapping, Releases.v2ToV3]
        func configuration(_ path: String, version: UInt64, steps: [MigrationStep]) -> Database.Configuration {
            var config = Releases.configuration(path, version: version, steps: steps)
            config.discardValues(of: "age", onType: "Person")
            return config
        }
        #expect(throws: StrataError.self) {
            try Database(configuration: Releases.configuration(composed, version: 3, steps: steps))
        }
        try Database(configuration: configuration(separate, version: 2, steps: [noMapping])).close()
        try Database(configuration: configuration(separate, version: 3, steps: steps)).close()
        let db = try Database(configuration: configuration(composed, version: 3, steps: steps))
        #expect(
            try people(PersonV3.self, db)
                == Releases.peopleV3.map { PersonV3(id: $0.id, firstName: $0.firstName, lastName: $0.lastName, age: 0) }
        )
        #expect(try versions("Person", db) == [3, 3, 3])
        db.close()
        var other = Releases.configuration(composed, version: 3, steps: steps)
        let one = try Migrations.everything(opening: other)
        other.path = separate
        #expect(try Migrations.everything(opening: other) == one)
    }

    @Test func aThrowingStepLeavesTheFileAsItWas() throws {
        let path = folder.path()
        let count = 200_000
        do {
            let db = try Database(configuration: Releases.configuration(path, version: 1, steps: []))
            try db.write { tx in
                for id in 1 ... count {
                    try tx.insert(PersonV1(id: id, name: "First\(id) Last\(id)", age: "\(id % 90)"))
                }
            }
            db.close()
        }
        let v1 = Releases.configuration(path, version: 1, steps: [])
        let before = try Migrations.state(opening: v1)
        let failing = MigrationStep.step(from: AppV1.self, to: AppV2.self) {
            $0.map(PersonV1.self, to: PersonV2.self) { old in
                if old.id == 150_000 { throw Releases.StepFailure(id: old.id) }
                return PersonV2(id: old.id, fullName: old.name, age: Int(old.age) ?? 0)
            }
        }
        let error = expectStrataError(.migrationFailed) {
            _ = try Database(configuration: Releases.configuration(path, version: 2, steps: [failing]))
        }
        #expect(error?.cause as? Releases.StepFailure == Releases.StepFailure(id: 150_000))
        #expect(error?.message.contains("150000") == true)
        #expect(try Migrations.state(opening: v1) == before)
    }

    @Test func aThrowingComposedStepLeavesTheFileAsItWas() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        let v1 = Releases.configuration(path, version: 1, steps: [])
        let before = try Migrations.state(opening: v1)
        let failing = MigrationStep.step(from: AppV2.self, to: AppV3.self) {
            $0.map(PersonV2.self, to: PersonV3.self) { old, context in
                try context.insert(AddressV3(id: old.id, city: "Somewhere"))
                if old.id == 2 { throw Releases.StepFailure(id: old.id) }
                return PersonV3(id: old.id, firstName: old.fullName, lastName: "", age: old.age)
            }
        }
        let error = expectStrataError(.migrationFailed) {
            _ = try Database(
                configuration: Releases.configuration(path, version: 3, steps: [Releases.v1ToV2, failing]))
        }
        #expect(error?.cause as? Releases.StepFailure == Releases.StepFailure(id: 2))
        #expect(error?.message.contains("from schema version 1 to 3") == true)
        #expect(try Migrations.state(opening: v1) == before)
    }

    @Test func anInsertedObjectWhoseKeyIsTakenFailsTheMigration() throws {
        let path = folder.path()
        try Releases.seed(path, version: 2)
        let clashing = MigrationStep.step(from: AppV2.self, to: AppV3.self) {
            $0.map(PersonV2.self, to: PersonV3.self) { old, context in
                try context.insert(AddressV3(id: 7, city: "Everyone's"))
                return PersonV3(id: old.id, firstName: old.fullName, lastName: "", age: old.age)
            }
        }
        let error = expectStrataError(.duplicatePrimaryKey) {
            _ = try Database(configuration: Releases.configuration(path, version: 3, steps: [clashing]))
        }
        #expect(error?.message.contains("'Address' with primary key 7 already exists") == true)
        #expect(try Database.migrationPlan(for: Releases.configuration(path, version: 3)).fileSchemaVersion == 2)
    }

    @Test func nilFromAMappingDeletesTheObject() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        let step = MigrationStep.step(from: AppV1.self, to: AppV2.self) {
            $0.map(PersonV1.self, to: PersonV2.self) { old in
                Int(old.age).map { PersonV2(id: old.id, fullName: old.name, age: $0) }
            }
        }
        let db = try Database(configuration: Releases.configuration(path, version: 2, steps: [step]))
        defer { db.close() }
        #expect(try people(PersonV2.self, db) == Array(Releases.peopleV2.prefix(2)))
        #expect(try db.read { tx in try tx.object(PersonV2.self, primaryKey: 3) } == nil)
    }

    @Test func aComposedStepCanDeleteAnObjectBeforeLaterSteps() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        let dropPlato = MigrationStep.step(from: AppV1.self, to: AppV2.self) {
            $0.map(PersonV1.self, to: PersonV2.self) { old in
                old.name == "Plato" ? nil : PersonV2(id: old.id, fullName: old.name, age: Int(old.age) ?? 0)
            }
        }
        let db = try Database(
            configuration: Releases.configuration(
                path, version: 4, steps: [dropPlato, Releases.v2ToV3, Releases.v3ToV4]))
        defer { db.close() }
        #expect(try people(PersonV4.self, db).map(\.id) == [1, 2])
        #expect(try people(AddressV4.self, db).map(\.id) == [1, 2])
    }

    @Test func progressIsReported() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        let recorder = Recorder<MigrationProgress>()
        var config = Releases.configuration(path, version: 3)
        config.progress = { recorder.append($0) }
        try Database(configuration: config).close()
        let person = recorder.all.filter { $0.typeName == "Person" && $0.step == .migratingObjects }
        #expect(person.first?.completed == 0)
        #expect(person.last?.completed == 3 && person.last?.total == 3)
    }

    @Test func thePlanSaysWhichTypedStepsRun() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        let plan = try Database.migrationPlan(for: Releases.configuration(path, version: 3))
        #expect(plan.action == .migrate)
        #expect(plan.runsMigrationClosure)
        #expect(plan.typedSteps.count == 2)
        #expect(plan.typedSteps.first?.contains("AppV1 → AppV2") == true)
        #expect(plan.typedSteps.first?.contains("maps PersonV1 to PersonV2") == true)
        #expect(plan.description.contains("running 2 typed steps"))
        // Nothing was written.
        #expect(try Database.migrationPlan(for: Releases.configuration(path, version: 3)).fileSchemaVersion == 1)

        let second = folder.path("v2.strata")
        try Releases.seed(second, version: 2)
        let fromTwo = try Database.migrationPlan(for: Releases.configuration(second, version: 3))
        #expect(fromTwo.typedSteps.count == 1)
        #expect(fromTwo.typedSteps.first?.contains("AppV2 → AppV3") == true)
    }

    @Test(arguments: Fixtures.modes)
    func syncedModeRefusesTypedSteps(mode: Database.Mode) throws {
        let path = folder.path()
        try Releases.seed(path, version: 1, mode: mode)
        let config = Releases.configuration(path, version: 3, mode: mode)
        switch mode {
        case .local:
            let db = try Database(configuration: config)
            #expect(try people(PersonV3.self, db) == Releases.peopleV3)
            db.close()
        case .synced:
            let error = expectStrataError(.migrationForbidden) { _ = try Database(configuration: config) }
            #expect(error?.message.contains("AppV1 → AppV2") == true)
            #expect(error?.message.contains("typed migration steps") == true)
            let plan = try Database.migrationPlan(for: config)
            #expect(plan.action == .refuse)
        }
    }

    @Test func aDeclaredVersionThatDoesNotDescribeTheFileListsTheDifferences() throws {
        let path = folder.path()
        let other = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property("age", .int)
            Property("nickname", .string, optional: true)
        }
        try Database(configuration: Fixtures.configuration(path, version: 1, schema: Schema([other]))).close()
        let error = expectStrataError(.invalidSchema) {
            _ = try Database(configuration: Releases.configuration(path, version: 3))
        }
        let message = error?.message ?? ""
        #expect(message.contains("AppV1"))
        #expect(message.contains("- Property 'Person.age' has been changed from 'string' to 'int'."))
        #expect(message.contains("- Property 'Person.nickname' has been added."))
        #expect(try Database.migrationPlan(for: Releases.configuration(path, version: 3)).action == .refuse)
        #expect(try Database.migrationPlan(for: Releases.configuration(path, version: 3)).fileSchemaVersion == 1)
    }

    @Test func badStepsAreRefusedBeforeAnythingIsWritten() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        let before = try Migrations.state(opening: Releases.configuration(path, version: 1, steps: []))
        let skipping = MigrationStep.step(from: AppV1.self, to: AppV3.self) { _ in }
        let gap = expectStrataError(.invalidSchema) {
            _ = try Database(configuration: Releases.configuration(path, version: 3, steps: [skipping]))
        }
        #expect(gap?.message.contains("skips AppV2") == true)

        let reversed = expectStrataError(.invalidSchema) {
            _ = try Database(
                configuration: Releases.configuration(path, version: 3, steps: [Releases.v2ToV3, Releases.v1ToV2]))
        }
        #expect(reversed?.message.contains("oldest first") == true)

        var undeclared = Database.Configuration(
            path: path, schema: AppV3.self, versions: [AppV2.self], migrations: [Releases.v1ToV2, Releases.v2ToV3])
        undeclared.durability = .noSync
        let missing = expectStrataError(.invalidSchema) { _ = try Database(configuration: undeclared) }
        #expect(missing?.message.contains("AppV1 (schema version 1), which the configuration does not declare") == true)

        let twoNames = Database.Configuration(path: path, schema: AppTwoPeople.self, versions: [AppV1.self])
        let duplicate = expectStrataError(.invalidSchema) { _ = try Database(configuration: twoNames) }
        #expect(duplicate?.message.contains("2 models with the stored name 'Person'") == true)

        #expect(try Migrations.state(opening: Releases.configuration(path, version: 1, steps: [])) == before)
    }

    @Test func typedAndDynamicReadsAgree() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        let db = try Database(configuration: Releases.configuration(path, version: 4))
        defer { db.close() }
        let typed = try people(PersonV4.self, db)
        let dynamic = try db.read { tx in try tx.objects("Person").map(\.values) }
        #expect(dynamic.count == typed.count)
        for (person, values) in zip(typed, dynamic) {
            #expect(values["id"] == .int(Int64(person.id)))
            #expect(values["firstName"] == .string(person.firstName))
            #expect(values["familyName"] == .string(person.familyName))
            #expect(values["age"] == .int(Int64(person.age)))
            #expect(values["nickname"] == .string(person.nickname))
            #expect(values.count == 5)
        }
        let addresses = try people(AddressV4.self, db)
        let dynamicAddresses = try db.read { tx in try tx.objects("Address").map(\.values) }
        #expect(
            dynamicAddresses
                == addresses.map {
                    [
                        "id": .int(Int64($0.id)), "city": .string($0.city),
                        "country": $0.country.map(Value.string) ?? .null,
                    ]
                })
    }

    @Test func aStepCanFallBackToTheDynamicAPI() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        let recorder = Recorder<UInt64>()
        let step = MigrationStep.step(from: AppV1.self, to: AppV2.self) {
            $0.migrate { migration in recorder.append(migration.oldSchemaVersion) }
            $0.map(PersonV1.self, to: PersonV2.self) { old in
                PersonV2(id: old.id, fullName: old.name.uppercased(), age: Int(old.age) ?? -1)
            }
        }
        let db = try Database(configuration: Releases.configuration(path, version: 2, steps: [step]))
        defer { db.close() }
        #expect(recorder.all == [1])
        #expect(try people(PersonV2.self, db).map(\.fullName) == ["ADA LOVELACE", "CHARLES BABBAGE", "PLATO"])
        #expect(try people(PersonV2.self, db).map(\.age) == [36, 79, -1])
    }

    @Test func declaredRenamesApplyWithoutAStep() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        // Version 2 without a step: the rename carries the names, and age,
        // whose type changed, starts at its default, as declared.
        var config = Releases.configuration(path, version: 2, steps: [])
        config.discardValues(of: "age", onType: "Person")
        let db = try Database(configuration: config)
        defer { db.close() }
        #expect(try people(PersonV2.self, db).map(\.fullName) == ["Ada Lovelace", "Charles Babbage", "Plato"])
        #expect(try people(PersonV2.self, db).map(\.age) == [0, 0, 0])
    }
}

/// A version that lists two models of one stored type.
private enum AppTwoPeople: VersionedSchema {
    static let version: UInt64 = 2
    static let models: [any Model.Type] = [PersonV2.self, PersonV1.self]
}
