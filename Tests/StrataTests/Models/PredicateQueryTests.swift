import Foundation
import Testing

@testable import Strata

/// What a `#Predicate` plans and what it leaves to `evaluate(_:)`, and the
/// key-path operators beyond equality and ranges, on ``QueryItem``:
/// `score`, `name` and `nickname` indexed, `rank` and `label` not.
@Suite(.temporaryFolder) struct PredicateQueryTests {
    let folder = TemporaryFolder.current

    /// Twenty items: score and rank `id % 5`, name "n\(id % 7)", label
    /// "l\(id % 3)", nickname nil for even ids, else "a\(id)" or "b\(id)".
    func seeded(_ mode: Database.Mode) throws -> (Database, [QueryItem]) {
        var config = Database.Configuration(path: folder.path(), models: [QueryItem.self, HandNote.self])
        config.durability = .noSync
        config.mode = mode
        let db = try Database(configuration: config)
        let items = (0 ..< 20).map { id in
            QueryItem(
                id: id, score: id % 5, rank: id % 5, name: "n\(id % 7)", label: "l\(id % 3)",
                nickname: id % 2 == 0 ? nil : (id % 3 == 0 ? "a\(id)" : "b\(id)"))
        }
        try db.write { tx in
            for item in items { try tx.insert(item) }
        }
        return (db, items)
    }

    /// The conditions of a typed query's plan, and whether it evaluates
    /// something on decoded objects.
    func planned(_ query: ModelQuery<QueryItem>) -> (conditions: [QueryCondition], fallsBack: Bool) {
        (query.plan.conditions, !query.predicates.isEmpty)
    }

    @Test func aComparisonPlansAsTheMatchingWhere() throws {
        let (db, _) = try seeded(.local)
        try db.read { tx in
            let items = try tx.objects(QueryItem.self)
            let minimum = 2
            let pairs: [(ModelQuery<QueryItem>, ModelQuery<QueryItem>)] = [
                (items.filter(#Predicate { $0.score == 3 }), items.where(\.score, equals: 3)),
                (items.filter(#Predicate { $0.rank >= minimum }), items.where(\.rank, in: minimum...)),
                (items.filter(#Predicate { 3 > $0.score }), items.where(\.score, in: ..<3)),
                (items.filter(#Predicate { $0.nickname == nil }), items.where(\.nickname, equals: nil)),
                (items.filter(#Predicate { $0.name != "n1" }), items.where(\.name, notEquals: "n1")),
                (items.filter(#Predicate { $0.name.starts(with: "n") }), items.where(\.name, hasPrefix: "n")),
                (items.filter(#Predicate { [1, 4].contains($0.score) }), items.where(\.score, in: [1, 4])),
            ]
            for (predicate, keyPath) in pairs {
                #expect(planned(predicate).conditions == keyPath.plan.conditions)
                #expect(!planned(predicate).fallsBack)
                #expect(try predicate.map(\.id) == keyPath.map(\.id))
            }
        }
    }

    @Test func orNotAndOptionalChainsArePlannedWithoutEvaluating() throws {
        let (db, all) = try seeded(.local)
        try db.read { tx in
            let items = try tx.objects(QueryItem.self)
            let names: Set<String> = ["n1", "n2"]
            let queries: [(ModelQuery<QueryItem>, (QueryItem) -> Bool)] = [
                (items.filter(#Predicate { $0.score == 1 || $0.label == "l2" }), { $0.score == 1 || $0.label == "l2" }),
                (items.filter(#Predicate { !($0.rank < 3) }), { !($0.rank < 3) }),
                (
                    items.filter(#Predicate { names.contains($0.name) && $0.rank != 1 }),
                    {
                        names.contains($0.name) && $0.rank != 1
                    }
                ),
                (
                    items.filter(#Predicate { $0.nickname?.starts(with: "a") ?? false }),
                    {
                        $0.nickname?.hasPrefix("a") ?? false
                    }
                ),
                (
                    items.filter(#Predicate { $0.nickname?.contains("1") ?? true }),
                    { $0.nickname?.contains("1") ?? true }
                ),
            ]
            for (query, test) in queries {
                #expect(!planned(query).fallsBack)
                #expect(try query.map(\.id).sorted() == all.filter(test).map(\.id))
            }
        }
    }

    @Test func aPartItCannotPlanIsEvaluatedAfterThePlannedPart() throws {
        let (db, all) = try seeded(.local)
        try db.read { tx in
            let items = try tx.objects(QueryItem.self)
            let both = items.filter(#Predicate { $0.score == 2 && $0.id % 2 == 0 })
            // The planned equality chooses the walk; the remainder is evaluated.
            #expect(planned(both).conditions == items.where(\.score, equals: 2).plan.conditions)
            #expect(planned(both).fallsBack)
            #expect(try both.map(\.id) == all.filter { $0.score == 2 && $0.id % 2 == 0 }.map(\.id))
            #expect(try both.count == 2)
            // Under ||, a part it cannot plan leaves the whole OR evaluated.
            let either = items.filter(#Predicate { $0.score == 2 || $0.id % 7 == 0 })
            #expect(planned(either).conditions.isEmpty)
            #expect(planned(either).fallsBack)
            #expect(try either.map(\.id) == all.filter { $0.score == 2 || $0.id % 7 == 0 }.map(\.id))
        }
    }

    @Test func aCompoundPredicateWalksTheIndexOfItsIndexedPart() throws {
        let (db, all) = try seeded(.local)
        try db.read { tx in
            let items = try tx.objects(QueryItem.self)
            let query = items.filter(#Predicate { $0.rank > 1 && $0.name == "n3" && $0.label != "l0" })
            let walk = try query.plan.walk(sorting: false)
            guard case .index(let index, _, _) = walk.access else {
                Issue.record("expected an index walk, got \(walk.access)")
                return
            }
            #expect(index == query.binding.table.fields.first { $0.name == "name" }?.index)
            #expect(planned(query).conditions.count == 3)
            #expect(!planned(query).fallsBack)
            let captured = 3
            let bounded = items.filter(#Predicate { $0.score == captured && $0.rank < 500 })
            #expect(!planned(bounded).fallsBack)
            #expect(planned(bounded).conditions.count == 2)
            #expect(
                try query.map(\.id) == all.filter { $0.rank > 1 && $0.name == "n3" && $0.label != "l0" }.map(\.id))
        }
    }

    @Test func anInSetSeeksEachValueOfAnIndex() throws {
        let (db, all) = try seeded(.local)
        try db.read { tx in
            let items = try tx.objects(QueryItem.self)
            let query = items.where(\.score, in: [4, 1, 4] as Set)
            guard case .index(_, let intervals, _) = try query.plan.walk(sorting: false).access else {
                Issue.record("expected an index walk")
                return
            }
            #expect(intervals.count == 2)
            // Index order: by value, then primary key.
            let expected = all.filter { [1, 4].contains($0.score) }.sorted { ($0.score, $0.id) < ($1.score, $1.id) }
            #expect(try query.map(\.id) == expected.map(\.id))
            #expect(try query.count == expected.count)
            #expect(try items.where(\.score, in: [Int]()).count == 0)
            let dynamic = try tx.objects("Item").where("score", in: [4, 1])
            #expect(try dynamic.map { Int($0["id"].int!) } == expected.map(\.id))
        }
    }

    @Test(arguments: Fixtures.modes)
    func aPrefixWalksTheIndexRangeOfThePrefix(mode: Database.Mode) throws {
        let (db, all) = try seeded(mode)
        try db.read { tx in
            let items = try tx.objects(QueryItem.self)
            let query = items.where(\.nickname, hasPrefix: "b1")
            guard case .index = try query.plan.walk(sorting: false).access else {
                Issue.record("expected an index walk")
                return
            }
            let expected = all.filter { $0.nickname?.hasPrefix("b1") == true }
            #expect(!expected.isEmpty)
            #expect(try query.map(\.id) == expected.sorted { $0.nickname! < $1.nickname! }.map(\.id))
            #expect(try query.count == expected.count)
            #expect(try items.where(\.label, hasPrefix: "l1").count == all.filter { $0.label == "l1" }.count)
            let dynamic = try tx.objects("Item").where("nickname", hasPrefix: "b1")
            #expect(try dynamic.count == expected.count)
            #expect(throws: StrataError.self) { try tx.objects("Item").where("score", hasPrefix: "1").count }
        }
    }

    @Test func aKeyPathThatIsNotStoredThrowsNamingTheModelAndTheKeyPath() throws {
        let (db, _) = try seeded(.local)
        try db.read { tx in
            let items = try tx.objects(QueryItem.self)
            let transient = items.filter(#Predicate { $0.score == 1 && $0.cache == 0 })
            let error = try #require(throws: StrataError.self) { try transient.array() }
            #expect(error.code == .unknownProperty)
            #expect(error.message.contains("\\QueryItem.cache"))
            #expect(error.message.contains("QueryItem"))
            #expect(error.message.contains("filter(_:) with a #Predicate"))
            let computed = items.filter(#Predicate { $0.doubledScore > 2 })
            #expect(throws: StrataError.self) { try computed.count }
        }
    }

    @Test(arguments: Fixtures.modes)
    func observingAPredicateQueryFollowsItsPlan(mode: Database.Mode) async throws {
        let (db, all) = try seeded(mode)
        try await withTimeout {
            let observed = db.observe(QueryItem.self) { $0.filter(#Predicate { $0.score == 3 || $0.rank == 4 }) }
            var iterator = observed.makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(first.results.map(\.id) == all.filter { $0.score == 3 || $0.rank == 4 }.map(\.id))
            try await db.write { tx in
                try tx.update(QueryItem(id: 0, score: 3, rank: 3))
                try tx.update(QueryItem(id: 3, score: 0, rank: 0))
            }
            let next = try #require(try await iterator.next())
            #expect(
                next.results.map(\.id) == [0] + all.filter { ($0.score == 3 || $0.rank == 4) && $0.id != 3 }.map(\.id))
        }
    }
}

/// A stored enum; `Codable`, as Foundation asks of a predicate's constants.
enum Stage: String, PersistableEnum, Codable {
    case draft, live, gone
}

@Model(name: "StagedDoc") struct StagedDoc: Equatable {
    @PrimaryKey var id: Int
    @Indexed var stage: Stage = .draft
    var previous: Stage?
}

/// Enum cases in a `#Predicate` plan by their raw values, as `where` does.
@Suite(.temporaryFolder) struct EnumPredicateTests {
    let folder = TemporaryFolder.current

    @Test(arguments: Fixtures.modes)
    func anEnumCaseWalksTheIndexLikeWhere(mode: Database.Mode) throws {
        var config = Database.Configuration(path: folder.path(), models: [StagedDoc.self])
        config.durability = .noSync
        config.mode = mode
        let db = try Database(configuration: config)
        let stages: [Stage] = [.draft, .live, .gone]
        let docs = (0 ..< 30).map {
            StagedDoc(id: $0, stage: stages[$0 % 3], previous: $0 % 4 == 0 ? nil : stages[$0 % 2])
        }
        try db.write { tx in
            for doc in docs { try tx.insert(doc) }
        }
        try db.read { tx in
            let all = try tx.objects(StagedDoc.self)
            // #Predicate cannot name an enum case (it reads `Stage.live` as
            // a key path): the case is captured.
            let liveStage = Stage.live
            let live = all.filter(#Predicate { $0.stage == liveStage })
            #expect(live.plan.conditions == all.where(\.stage, equals: .live).plan.conditions)
            #expect(live.predicates.isEmpty)
            guard case .index = try live.plan.walk(sorting: false).access else {
                Issue.record("expected an index walk")
                return
            }
            #expect(try live.map(\.id) == docs.filter { $0.stage == .live }.map(\.id))
            let kept: Set<Stage> = [.draft, .gone]
            let either = all.filter(#Predicate { kept.contains($0.stage) && $0.previous != nil })
            #expect(either.predicates.isEmpty)
            #expect(
                try either.map(\.id).sorted()
                    == docs.filter { kept.contains($0.stage) && $0.previous != nil }.map(\.id))
        }
    }
}
