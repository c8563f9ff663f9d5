import Foundation
import Testing

@testable import Strata

// Two releases of one app whose enum sits inside embedded objects: the
// newer adds `blocked`; the older reads it as `open`.

/// The older app's state: no `blocked`; unknown raw values read as `open`.
enum OldState: String, PersistableEnum {
    case open, done
    static var unknownCase: OldState? { .open }
}

/// The newer app's state.
enum NewState: String, PersistableEnum {
    case open, done, blocked
}

@Embedded(name: "Check") struct OldCheck: Equatable {
    var note: String
    var state: OldState = .open
}

@Embedded(name: "Check") struct NewCheck: Equatable {
    var note: String
    var state: NewState = .open
}

@Embedded(name: "Stage") struct OldStage: Equatable {
    var label: String
    var state: OldState = .open
    var check: OldCheck?
    var checks: [OldCheck] = []
}

@Embedded(name: "Stage") struct NewStage: Equatable {
    var label: String
    var state: NewState = .open
    var check: NewCheck?
    var checks: [NewCheck] = []
}

@Model(name: "Plan") struct OldPlan: Equatable {
    @PrimaryKey var id: Int
    var title: String
    var stage: OldStage = OldStage(label: "")
    var spare: OldStage?
    var states: [OldState] = []
    var stages: [OldStage] = []
}

@Model(name: "Plan") struct NewPlan: Equatable {
    @PrimaryKey var id: Int
    var title: String
    var stage: NewStage = NewStage(label: "")
    var spare: NewStage?
    var states: [NewState] = []
    var stages: [NewStage] = []
}

/// An older app's typed write keeps, field by field and at every depth,
/// each raw value of a newer app's enum case that it did not change:
/// inside embedded objects, optional ones, embedded inside embedded, and
/// in lists of enums and of embedded objects.
@Suite(.temporaryFolder) struct EnumFieldKeepingTests {
    let folder = TemporaryFolder.current

    enum Write: CaseIterable { case update, upsert }

    static let cases: [(Database.Mode, Write)] = Fixtures.modes.flatMap { mode in Write.allCases.map { (mode, $0) } }

    /// What the newer app stores: `blocked` everywhere an enum is.
    static func newerPlan(id: Int) -> NewPlan {
        let blockedCheck = NewCheck(note: "c", state: .blocked)
        let stage = NewStage(label: "s1", state: .blocked, check: blockedCheck, checks: [blockedCheck])
        return NewPlan(
            id: id, title: "p\(id)", stage: stage, spare: stage, states: [.blocked, .done, .blocked],
            stages: [
                NewStage(label: "a", state: .blocked), NewStage(label: "b", state: .blocked),
                NewStage(label: "c", state: .done),
            ])
    }

    /// One object per edit: what the older app changes, and the object
    /// the newer app then reads (its own, with that change made by it).
    struct Edit: Sendable {
        let name: String
        let older: @Sendable (inout OldPlan) -> Void
        let newer: @Sendable (inout NewPlan) -> Void
    }

    static let edits: [Edit] = [
        Edit(name: "stage.label", older: { $0.stage.label = "s1 edited" }, newer: { $0.stage.label = "s1 edited" }),
        Edit(name: "spare.label", older: { $0.spare?.label = "x" }, newer: { $0.spare?.label = "x" }),
        Edit(name: "stage.check.note", older: { $0.stage.check?.note = "x" }, newer: { $0.stage.check?.note = "x" }),
        Edit(
            name: "stage.checks[0].note", older: { $0.stage.checks[0].note = "x" },
            newer: { $0.stage.checks[0].note = "x" }),
        Edit(name: "states.append", older: { $0.states.append(.done) }, newer: { $0.states.append(.done) }),
        Edit(name: "states.remove(0)", older: { $0.states.remove(at: 0) }, newer: { $0.states.remove(at: 0) }),
        Edit(name: "states[1] = .open", older: { $0.states[1] = .open }, newer: { $0.states[1] = .open }),
        Edit(name: "stages[1].label", older: { $0.stages[1].label = "x" }, newer: { $0.stages[1].label = "x" }),
        Edit(name: "stages.remove(0)", older: { $0.stages.remove(at: 0) }, newer: { $0.stages.remove(at: 0) }),
        Edit(
            name: "stages.insert(0)", older: { $0.stages.insert(OldStage(label: "new"), at: 0) },
            newer: { $0.stages.insert(NewStage(label: "new"), at: 0) }),
        Edit(name: "stage.state = .done", older: { $0.stage.state = .done }, newer: { $0.stage.state = .done }),
        Edit(name: "spare = nil", older: { $0.spare = nil }, newer: { $0.spare = nil }),
        Edit(name: "title", older: { $0.title = "renamed" }, newer: { $0.title = "renamed" }),
    ]

    @Test(arguments: cases) func anOlderAppsEditKeepsEveryCaseItDidNotChange(mode: Database.Mode, write: Write) throws {
        let path = folder.path()
        let newerVersion: UInt64 = mode == .synced ? 2 : 1
        do {
            let newer = try Database(
                configuration: EnumModels.configuration(path, NewPlan.self, version: newerVersion, mode: mode))
            try newer.write { tx in
                for id in Self.edits.indices { try tx.insert(Self.newerPlan(id: id)) }
            }
        }
        do {
            let older = try Database(configuration: EnumModels.configuration(path, OldPlan.self, mode: mode))
            try older.write { tx in
                for (id, edit) in Self.edits.enumerated() {
                    var plan = try #require(try tx.object(OldPlan.self, primaryKey: id))
                    #expect(plan.stage.state == .open)
                    edit.older(&plan)
                    switch write {
                    case .update: try tx.update(plan)
                    case .upsert: try tx.upsert(plan)
                    }
                }
            }
            #expect(try older.verify() == [])
        }
        let newer = try Database(
            configuration: EnumModels.configuration(path, NewPlan.self, version: newerVersion, mode: mode))
        let plans = try newer.read { tx in try tx.objects(NewPlan.self).sorted(by: \.id).array() }
        try #require(plans.count == Self.edits.count)
        for (id, plan) in plans.enumerated() {
            var wanted = Self.newerPlan(id: id)
            Self.edits[id].newer(&wanted)
            #expect(plan == wanted, "\(Self.edits[id].name)")
        }
    }

    /// A field the older app set to another case is written as set, at
    /// any depth, while its siblings keep theirs.
    @Test(arguments: Fixtures.modes) func aCaseSetInsideAnEmbeddedObjectIsWritten(mode: Database.Mode) throws {
        let path = folder.path()
        let newerVersion: UInt64 = mode == .synced ? 2 : 1
        do {
            let newer = try Database(
                configuration: EnumModels.configuration(path, NewPlan.self, version: newerVersion, mode: mode))
            try newer.write { tx in try tx.insert(Self.newerPlan(id: 1)) }
        }
        do {
            let older = try Database(configuration: EnumModels.configuration(path, OldPlan.self, mode: mode))
            try older.write { tx in
                var plan = try #require(try tx.object(OldPlan.self, primaryKey: 1))
                plan.stage.check?.state = .done
                plan.stages[0].state = .done
                try tx.update(plan)
            }
        }
        let newer = try Database(
            configuration: EnumModels.configuration(path, NewPlan.self, version: newerVersion, mode: mode))
        let plan = try #require(try newer.read { tx in try tx.object(NewPlan.self, primaryKey: 1) })
        #expect(plan.stage.check?.state == .done)
        #expect(plan.stage.state == .blocked)
        #expect(plan.stage.checks == [NewCheck(note: "c", state: .blocked)])
        #expect(plan.stages.map(\.state) == [.done, .blocked, .done])
        #expect(plan.spare?.state == .blocked)
    }
}
