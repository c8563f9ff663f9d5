import Foundation
import Testing

@testable import Strata

/// A step's state: a `String` enum that is not `Comparable`.
enum StepState: String, PersistableEnum, Codable {
    case open, blocked, done
}

/// A level that is `Comparable` by its own order, which differs from its
/// raw values' ("high" < "low" by raw value).
enum StepLevel: String, PersistableEnum, Codable, Comparable {
    case low, high

    static func < (a: Self, b: Self) -> Bool { a == .low && b == .high }
}

@Embedded struct PlanOwner: Equatable {
    var name: String
    var level: StepLevel = .low
}

@Embedded struct PlanStep: Equatable {
    var label: String
    var state: StepState = .open
    var owner: PlanOwner = PlanOwner(name: "")
    @Transient var draft = ""
    var shouted: String { label.uppercased() }
}

@Model(name: "PlannedTask") struct PlannedTask: Equatable {
    @PrimaryKey var id: Int
    var step: PlanStep
    var next: PlanStep?
    var done = false
    var urgent: Bool?
    var state: StepState = .open
    var level: StepLevel?
}

/// Predicates on embedded properties are planned and compared inside the
/// record; sorts by an embedded property, a `Bool` or a non-`Comparable`
/// enum are accepted, by key path and by `SortDescriptor`.
@Suite(.temporaryFolder) struct EmbeddedQueryTests {
    let folder = TemporaryFolder.current

    static let states: [StepState] = [.open, .blocked, .done]

    /// Thirty tasks: `step.label` "s\(id % 7)", `step.state` by `id % 3`,
    /// `step.owner` "o\(id % 4)" with level by `id % 2`, `next` nil for
    /// ids divisible by 5, `done` for even ids, `urgent` nil, false or true.
    func seeded(_ mode: Database.Mode) throws -> (Database, [PlannedTask]) {
        var config = Database.Configuration(path: folder.path(), models: [PlannedTask.self])
        config.durability = .noSync
        config.mode = mode
        let db = try Database(configuration: config)
        let urgency: [Bool?] = [nil, false, true]
        let levels: [StepLevel?] = [nil, .low, .high, .high]
        let tasks = (0 ..< 30).map { (id: Int) -> PlannedTask in
            let owner = PlanOwner(name: "o\(id % 4)", level: id % 2 == 0 ? .low : .high)
            let step = PlanStep(label: "s\(id % 7)", state: Self.states[id % 3], owner: owner)
            let next: PlanStep? = id % 5 == 0 ? nil : PlanStep(label: "n\(id % 3)", state: Self.states[(id + 1) % 3])
            return PlannedTask(
                id: id, step: step, next: next, done: id % 2 == 0, urgent: urgency[id % 3],
                state: Self.states[(id / 3) % 3], level: levels[id % 4])
        }
        try db.write { tx in
            for task in tasks { try tx.insert(task) }
        }
        return (db, tasks)
    }

    @Test(arguments: Fixtures.modes)
    func aPredicateOnAnEmbeddedPropertyIsPlanned(mode: Database.Mode) throws {
        let (db, all) = try seeded(mode)
        try db.read { tx in
            let tasks = try tx.objects(PlannedTask.self)
            let blocked = StepState.blocked
            let high = StepLevel.high
            let cases: [(String, Predicate<PlannedTask>, (PlannedTask) -> Bool)] = [
                ("step.state == .blocked", #Predicate { $0.step.state == blocked }, { $0.step.state == .blocked }),
                ("step.label == s3", #Predicate { $0.step.label == "s3" }, { $0.step.label == "s3" }),
                ("step.label != s3", #Predicate { $0.step.label != "s3" }, { $0.step.label != "s3" }),
                ("step.label >= s5", #Predicate { $0.step.label >= "s5" }, { $0.step.label >= "s5" }),
                (
                    "step.label prefix || state",
                    #Predicate { $0.step.label.starts(with: "s1") || $0.step.state == blocked },
                    { $0.step.label.hasPrefix("s1") || $0.step.state == .blocked }
                ),
                (
                    "nested: step.owner.level",
                    #Predicate { $0.step.owner.level == high && $0.step.owner.name != "o1" },
                    { $0.step.owner.level == .high && $0.step.owner.name != "o1" }
                ),
                ("optional: next?.label", #Predicate { $0.next?.label == "n1" }, { $0.next?.label == "n1" }),
                ("optional: next?.label != n1", #Predicate { $0.next?.label != "n1" }, { $0.next?.label != "n1" }),
                (
                    "optional chain: next?.label.starts", #Predicate { $0.next?.label.starts(with: "n2") ?? true },
                    { $0.next.map { $0.label.hasPrefix("n2") } ?? true }
                ),
                (
                    "with a top-level property", #Predicate { $0.done && !($0.step.state == blocked) },
                    { $0.done && $0.step.state != .blocked }
                ),
            ]
            // A `where` on an embedded property plans the same condition.
            let byWhere = tasks.where(\.step.label, in: ["s1", "s3"])
            #expect(
                byWhere.plan.conditions
                    == tasks.filter(#Predicate { ["s1", "s3"].contains($0.step.label) }).plan.conditions)
            #expect(try byWhere.map(\.id) == all.filter { ["s1", "s3"].contains($0.step.label) }.map(\.id))
            #expect(try tasks.where(\.step.owner.level, equals: .high).count == all.filter { $0.id % 2 == 1 }.count)
            for (described, predicate, test) in cases {
                let query = tasks.filter(predicate)
                // Planned: nothing is left to Foundation.
                #expect(query.predicates.isEmpty, "\(described)")
                #expect(!query.plan.conditions.isEmpty, "\(described)")
                let expected = all.filter(test).map(\.id)
                #expect(!expected.isEmpty && expected.count < all.count, "\(described)")
                #expect(try query.map(\.id) == expected, "\(described)")
                #expect(try query.count == expected.count, "\(described)")
                #expect(try query.first()?.id == expected.first, "\(described)")
            }
        }
    }

    @Test func anUnstoredPropertyOfAnEmbeddedObjectThrows() throws {
        let (db, _) = try seeded(.local)
        try db.read { tx in
            let tasks = try tx.objects(PlannedTask.self)
            let predicates: [Predicate<PlannedTask>] = [
                #Predicate { $0.step.draft == "" },
                #Predicate { $0.done || $0.step.shouted == "S1" },
                #Predicate { !($0.next?.draft == "x") },
            ]
            for predicate in predicates {
                let error = expectStrataError(.unknownProperty) { _ = try tasks.filter(predicate).array() }
                #expect(error?.message.contains("PlanStep") == true)
            }
        }
    }

    @Test(arguments: Fixtures.modes)
    func sortingByAnEmbeddedPropertyComparesInsideTheRecord(mode: Database.Mode) throws {
        let (db, all) = try seeded(mode)
        try db.read { tx in
            let tasks = try tx.objects(PlannedTask.self)
            func byLabel(_ a: PlannedTask, _ b: PlannedTask) -> Bool {
                a.step.label != b.step.label ? a.step.label < b.step.label : a.id < b.id
            }
            let expected = all.sorted(by: byLabel).map(\.id)
            #expect(try tasks.sorted(by: \.step.label).map(\.id) == expected)
            #expect(try tasks.sorted(by: \.step.label, ascending: false).map(\.id) == expected.reversed())
            let firstFive = try tasks.sorted(using: SortDescriptor(\.step.label)).limit(5).map(\.id)
            #expect(firstFive == Array(expected.prefix(5)))
            // By raw value, nested: "high" before "low".
            let byLevel = all.sorted { (a: PlannedTask, b: PlannedTask) -> Bool in
                (a.step.owner.level.rawValue, a.id) < (b.step.owner.level.rawValue, b.id)
            }
            #expect(try tasks.sorted(by: \.step.owner.level).map(\.id) == byLevel.map(\.id))
            // A Comparable enum's descriptor sorts by raw value in a query too.
            #expect(try tasks.sorted(using: SortDescriptor(\.step.owner.level)).map(\.id) == byLevel.map(\.id))
            // A filter on one embedded property, sorted by another.
            let blocked = StepState.blocked
            let filtered = tasks.filter(#Predicate { $0.step.state == blocked }).sorted(
                using: SortDescriptor(\.step.label, order: .reverse))
            #expect(
                try filtered.map(\.id)
                    == all.filter { $0.step.state == .blocked }.sorted(by: byLabel).reversed().map(\.id))
            // A transient of an embedded type is not a sort key.
            _ = expectStrataError(.unknownProperty) { _ = try tasks.sorted(by: \.step.draft).array() }
        }
    }

    @Test(arguments: Fixtures.modes)
    func sortDescriptorsAcceptBoolsAndEnumsByRawValue(mode: Database.Mode) throws {
        let (db, all) = try seeded(mode)
        try db.read { tx in
            let tasks = try tx.objects(PlannedTask.self)
            func rank(_ flag: Bool?) -> Int { flag.map { $0 ? 2 : 1 } ?? 0 }
            func rank(_ level: StepLevel?) -> String { level.map { "1" + $0.rawValue } ?? "0" }
            let byDone = all.sorted { ($0.done ? 1 : 0, $0.id) < ($1.done ? 1 : 0, $1.id) }
            #expect(try tasks.sorted(using: SortDescriptor(\.done)).map(\.id) == byDone.map(\.id))
            let byUrgent = all.sorted { (rank($0.urgent), $0.id) < (rank($1.urgent), $1.id) }
            #expect(
                try tasks.sorted(using: SortDescriptor(\.urgent, order: .reverse)).map(\.id)
                    == byUrgent.reversed().map(\.id))
            // A String enum that is not Comparable sorts by raw value.
            let byState = all.sorted { ($0.state.rawValue, $0.id) < ($1.state.rawValue, $1.id) }
            #expect(try tasks.sorted(using: SortDescriptor(\.state)).map(\.id) == byState.map(\.id))
            // One that is Comparable sorts by raw value in a query too, nil first.
            let byLevel = all.sorted { (rank($0.level), $0.id) < (rank($1.level), $1.id) }
            #expect(try tasks.sorted(using: SortDescriptor(\.level)).map(\.id) == byLevel.map(\.id))
            // Several keys: done first, then state descending.
            let both = all.sorted {
                ($0.done ? 1 : 0, $1.state.rawValue, $0.id) < ($1.done ? 1 : 0, $0.state.rawValue, $1.id)
            }
            #expect(
                try tasks.sorted(using: SortDescriptor(\.done), SortDescriptor(\.state, order: .reverse)).map(\.id)
                    == both.map(\.id))
            // Foundation sorts an array with the same descriptors.
            #expect(all.sorted(using: SortDescriptor(\.done)).map(\.id) == byDone.map(\.id))
            #expect(all.sorted(using: SortDescriptor(\.state)).map(\.id) == byState.map(\.id))
            #expect(all.sorted(using: SortDescriptor(\.step.state)).count == all.count)
        }
    }
}
