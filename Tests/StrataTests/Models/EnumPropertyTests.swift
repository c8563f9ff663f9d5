import Foundation
import Testing

@testable import Strata

/// Enum properties (`PersistableEnum`): stored as their raw values,
/// indexed, queried by case, optional, in lists and in embedded objects.
@Suite(.temporaryFolder) struct EnumPropertyTests {
    let folder = TemporaryFolder.current

    static func task(_ id: Int) -> NewTask {
        let statuses: [NewStatus] = [.open, .done, .archived]
        return NewTask(
            id: id, title: "Task \(id)", status: statuses[id % 3], previous: id.isMultiple(of: 2) ? .done : nil,
            history: Array(statuses.prefix(id % 4)), priority: Priority(rawValue: id % 3 + 1)!,
            steps: [NewStep(name: "first", status: statuses[(id + 1) % 3])])
    }

    func seeded(_ mode: Database.Mode, count: Int = 12) throws -> Database {
        let db = try Database(configuration: EnumModels.configuration(folder.path(), NewTask.self, mode: mode))
        try db.write { tx in
            for id in 1 ... count { try tx.insert(Self.task(id)) }
        }
        return db
    }

    @Test(arguments: Fixtures.modes) func enumsAreStoredAsTheirRawValues(mode: Database.Mode) throws {
        let db = try seeded(mode)
        let read = try db.read { tx in try tx.objects(NewTask.self).array() }
        #expect(read == (1 ... 12).map(Self.task))
        // The schema holds the raw values' types: no new stored kind.
        let properties = try #require(db.schema["Task"]).properties
        let types = Dictionary(uniqueKeysWithValues: properties.map { ($0.name, $0.type) })
        #expect(types["status"] == .string)
        #expect(types["priority"] == .int)
        #expect(properties.first { $0.name == "status" }?.isIndexed == true)
        // The dynamic API (and an app without the enum) reads raw values.
        let five = try db.read { tx in try #require(try tx.object("Task", key: 5)).values }
        #expect(five["status"] == .string("archived"))
        #expect(five["previous"] == .null)
        #expect(five["history"] == .list([.string("open")]))
        #expect(five["priority"] == .int(3))
        #expect(Value.object(five)["steps"] == .list([.object(["name": .string("first"), "status": .string("open")])]))
        #expect(try db.verify() == [])
    }

    @Test(arguments: Fixtures.modes) func queriesFindObjectsByCase(mode: Database.Mode) throws {
        let db = try seeded(mode)
        let expected = { (status: NewStatus) in (1 ... 12).filter { Self.task($0).status == status } }
        try db.read { tx in
            let tasks = try tx.objects(NewTask.self)
            for status in [NewStatus.open, .done, .archived] {
                #expect(try tasks.where(\.status, equals: status).map(\.id) == expected(status))
                #expect(try tasks.where(\.status, equals: status).count == expected(status).count)
            }
            #expect(try tasks.where(\.priority, equals: .high).map(\.id) == [2, 5, 8, 11])
            #expect(try tasks.where(\.previous, equals: .done).map(\.id) == [2, 4, 6, 8, 10, 12])
            #expect(try tasks.where(\.previous, equals: nil).count == 6)
            // Sorted by the raw value: "archived" < "done" < "open".
            let sorted = try tasks.sorted(by: \.status).map(\.status)
            #expect(sorted == sorted.sorted { $0.rawValue < $1.rawValue })
            #expect(sorted.first == .archived)
        }
        // The index is kept: after a change of case, both walks agree.
        try db.write { tx in
            var task = try #require(try tx.object(NewTask.self, primaryKey: 3))
            task.status = .done
            try tx.update(task)
        }
        let done = try db.read { tx in try tx.objects(NewTask.self).where(\.status, equals: .done).map(\.id) }
        #expect(done == (expected(.done) + [3]).sorted())
        #expect(try db.verify() == [])
    }

    @Test(arguments: Fixtures.modes) func modelsThatLinkHoldEnums(mode: Database.Mode) throws {
        var config = Database.Configuration(path: folder.path(), models: [EnumProject.self, EnumTicket.self])
        config.mode = mode
        config.durability = .noSync
        let db = try Database(configuration: config)
        try db.write { tx in
            try tx.insert(EnumProject(id: 1, status: .done))
            try tx.insert(EnumProject(id: 2))
            try tx.insert(EnumTicket(id: 1, project: Link(1), status: .archived, labels: [.high, .low]))
            try tx.insert(EnumTicket(id: 2, project: Link(1), status: .open))
            try tx.insert(EnumTicket(id: 3, project: Link(2), status: .archived))
        }
        let (archived, linking) = try db.read { tx in
            (
                try tx.objects(EnumTicket.self).where(\.status, equals: .archived).where(\.project, equals: Link(1))
                    .map(\.id),
                try tx.objects(EnumTicket.self, linkingTo: 1, through: \.project).map(\.status)
            )
        }
        #expect(archived == [1])
        #expect(linking == [.archived, .open])
        try db.write { tx in _ = try tx.delete(EnumProject.self, primaryKey: 1) }
        let left = try db.read { tx in try tx.objects(EnumTicket.self).where(\.status, equals: .archived).array() }
        #expect(left == [EnumTicket(id: 3, project: Link(2), status: .archived)])
        #expect(try db.verify() == [])
    }

    @Test func aNewEnumPropertyReadsItsDeclaredCase() throws {
        let path = folder.path()
        do {
            let db = try Database(configuration: Fixtures.configuration(path, schema: Schema([Self.bareTask])))
            try db.write { tx in _ = try tx.insert("Task", ["id": 1, "title": "before"]) }
        }
        // `status: NewStatus = .open` gives the schema default "open", so
        // the stored object reads `.open`, not an unknown "".
        let db = try Database(configuration: EnumModels.configuration(path, NewTask.self, version: 2))
        let task = try db.read { tx in try tx.object(NewTask.self, primaryKey: 1) }
        #expect(task?.status == .open)
        #expect(task?.priority == .normal)
        #expect(db.schema["Task"]?.properties.first { $0.name == "status" }?.defaultValue == "open")
    }

    static let bareTask = ObjectSchema("Task", primaryKey: "id") {
        Property("id", .int)
        Property("title", .string)
    }

    @Test(arguments: Fixtures.modes) func anUnknownRawValueWithoutFallbackIsAnErrorNamingIt(mode: Database.Mode) throws
    {
        let path = folder.path()
        do {
            let db = try Database(configuration: EnumModels.configuration(path, NewTask.self, mode: mode))
            try db.write { tx in
                try tx.insert(NewTask(id: 1, title: "kept", status: .archived))
                try tx.insert(NewTask(id: 2, title: "fine", status: .done))
                try tx.insert(NewTask(id: 3, title: "listed", history: [.open, .archived]))
                try tx.insert(NewTask(id: 4, title: "embedded", steps: [NewStep(name: "s", status: .archived)]))
            }
        }
        let db = try Database(configuration: EnumModels.configuration(path, StrictTask.self, mode: mode))
        let error = expectStrataError(.unknownEnumValue) {
            _ = try db.read { tx in try tx.object(StrictTask.self, primaryKey: 1) }
        }
        #expect(error?.typeName == "Task")
        #expect(error?.property == "status")
        #expect(error?.key == "1")
        #expect(error?.message.contains("\"archived\"") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("StrictStatus") == true)
        #expect(error?.remedy?.contains("unknownCase") == true)
        // Known values read as usual; a query that reaches the object throws.
        #expect(try db.read { tx in try tx.object(StrictTask.self, primaryKey: 2)?.status } == .done)
        let listed = expectStrataError(.unknownEnumValue) {
            _ = try db.read { tx in try tx.object(StrictTask.self, primaryKey: 3) }
        }
        #expect(listed?.property == "history")
        #expect(listed?.message.contains("\"archived\"") == true)
        let embedded = expectStrataError(.unknownEnumValue) {
            _ = try db.read { tx in try tx.object(StrictTask.self, primaryKey: 4) }
        }
        #expect(embedded?.property == "steps")
        #expect(embedded?.message.contains("\"archived\" for 'steps'") == true, "\(embedded?.message ?? "")")
        _ = expectStrataError(.unknownEnumValue) { _ = try db.read { tx in try tx.objects(StrictTask.self).array() } }
    }

    @Test func anEnumThatIsNotOneOfTheRawValueTypesDoesNotCompile() throws {
        let result = try SwiftCompiler.typecheck(
            """
            import Strata

            enum Level: Double, PersistableEnum { case low = 0.5, high = 1.5 }
            """, in: folder)
        #expect(result.status != 0)
        #expect(result.errors.contains { $0.contains("PersistableEnumRawValue") }, "\(result.errors)")
    }

    @Test func onlyAnEnumOfTheUserTypesCanBeIndexed() throws {
        let result = try SwiftCompiler.typecheck(
            """
            import Strata

            enum Status: String, PersistableEnum { case open, done }
            enum Level: Int, PersistableEnum { case low, high }
            @Embedded struct Address {
                var city: String
                static let nowhere = Address(city: "")
            }

            @Model struct Task {
                @PrimaryKey var id: Int
                @Indexed var status: Status = .open
                @Indexed var level: Level? = .high
                var levels: [Level] = []
                var work: Address = .nowhere
                @Indexed var home: Address
            }
            """, in: folder)
        #expect(result.status != 0)
        #expect(result.errors.count == 1, "\(result.errors)")
        #expect(
            result.errors.first?.hasPrefix(
                "'indexedType(home:)' is unavailable: Property 'home' of 'Task' has type 'Address', which cannot be @Indexed"
            ) == true, "\(result.errors)")
    }
}
