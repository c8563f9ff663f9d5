import Foundation
import Testing

@testable import Strata

extension Card {
    /// Not stored: a query that names it must fail.
    var doubledScore: Int { score * 2 }
}

/// The one query type behind both APIs: a member declared once serves
/// models and dynamic objects alike, mistakes surface at the same moment
/// for both, and both can be observed.
@Suite(.temporaryFolder) struct ObjectQueryTests {
    let folder = TemporaryFolder.current

    func open(_ mode: Database.Mode) throws -> Database {
        var config = Observing.configuration(folder.path())
        config.mode = mode
        let db = try Database(configuration: config)
        try db.write { tx in
            for id in 1 ... 9 { try tx.insert(Card(id: id, score: id % 3, rank: 10 - id, title: "card \(id)")) }
        }
        return db
    }

    @Test(arguments: Fixtures.modes)
    func sharedMembersAnswerAlikeForModelsAndDynamicObjects(mode: Database.Mode) throws {
        let db = try open(mode)
        try db.read { tx in
            let typed = try tx.objects(Card.self).where(\.score, equals: 1).sorted(by: \.rank).offset(1)
            let dynamic = try tx.objects("Card").where("score", equals: 1).sorted(by: "rank").offset(1)
            // Cards with score 1 are 1, 4, 7; by rank: 7, 4, 1; after the offset: 4, 1.
            #expect(try typed.map(\.id) == [4, 1])
            #expect(try dynamic.map { $0["id"].int! } == [4, 1])
            #expect(try typed.count == 2 && dynamic.count == 2)
            #expect(try typed.first(where: { $0.id < 4 })?.id == 1)
            #expect(try dynamic.first(where: { $0["id"].int! < 4 })?["id"] == 1)
            #expect(try typed.contains { $0.title == "card 4" })
            #expect(try !dynamic.contains { $0["title"] == "card 7" })
            #expect(try typed.filter { $0.id > 1 }.limit(1).array().map(\.id) == [4])
            #expect(try dynamic.filter { $0["id"].int! > 1 }.limit(1).array().map { $0["id"] } == [4])
            #expect(typed.typeName == "Card" && dynamic.typeName == "Card")
        }
    }

    @Test(arguments: Fixtures.modes)
    func mistakesThrowWhenTheQueryRunsForBothKinds(mode: Database.Mode) throws {
        let db = try open(mode)
        try db.read { tx in
            // Building either query throws nothing.
            let typed = try tx.objects(Card.self).where(\.doubledScore, equals: 2).limit(3)
            let dynamic = try tx.objects("Card").where("doubledScore", equals: 2).limit(3)
            let wrongType = try tx.objects("Card").where("score", equals: "high")
            let typedError = try #require(throws: StrataError.self) { try typed.array() }
            #expect(typedError.code == .unknownProperty && typedError.typeName == "Card")
            #expect(typedError.message.contains("not a stored property of the model Card"))
            for run in [
                { try dynamic.array().count }, { try dynamic.count }, { try dynamic.first().map { _ in 1 } ?? 0 },
            ] {
                let error = try #require(throws: StrataError.self) { try run() }
                #expect(error.code == .unknownProperty)
                #expect(error.typeName == "Card" && error.property == "doubledScore")
            }
            let typeError = try #require(throws: StrataError.self) { try wrongType.isEmpty }
            #expect(typeError.code == .invalidValue && typeError.property == "score")
        }
    }

    @Test func aDynamicQueryIsObservedLikeATypedOne() async throws {
        let db = try open(.local)
        try await withTimeout {
            let observation = db.observe("Card") { $0.where("score", equals: 1).sorted(by: "rank") }
            var dynamic = Follower(observation)
            var typed = Follower(db.observe(Card.self) { $0.where(\.score, equals: 1).sorted(by: \.rank) })
            let first = try #require(try await dynamic.next())
            let typedFirst = try #require(try await typed.next())
            #expect(first.isInitial)
            #expect(first.results.map { $0["id"] } == [7, 4, 1])
            #expect(first.results.map { $0["id"]?.int } == typedFirst.results.map { Int64($0.id) })

            try await db.write { tx in
                try tx.insert(Card(id: 10, score: 1, rank: 5))
                try tx.update(Card(id: 4, score: 1, rank: 6, title: "renamed"))
                _ = try tx.delete(Card.self, primaryKey: 7)
            }
            let second = try #require(try await dynamic.next())
            let typedSecond = try #require(try await typed.next())
            // By rank: 10 (5), 4 (6), 1 (9).
            #expect(second.results.map { $0["id"] } == [10, 4, 1])
            #expect(second.results[1]["title"] == "renamed")
            #expect(second.insertedKeys == [10] && second.deletedKeys == [7] && second.modifiedKeys == [4])
            #expect(second.insertions == typedSecond.insertions && second.deletions == typedSecond.deletions)
            #expect(second.modifications == typedSecond.modifications)
        }
    }

    @Test func aMistakeInAnObservedQueryEndsBothKindsWhenItFirstRuns() async throws {
        let db = try open(.local)
        var dynamic = db.observe("Card") { $0.sorted(by: "doubledScore") }.makeAsyncIterator()
        let dynamicError = try await #require(throws: StrataError.self) { try await dynamic.next() }
        #expect(dynamicError.code == .unknownProperty && dynamicError.property == "doubledScore")
        var typed = db.observe(Card.self) { $0.sorted(by: \.doubledScore) }.makeAsyncIterator()
        let typedError = try await #require(throws: StrataError.self) { try await typed.next() }
        #expect(typedError.code == .unknownProperty && typedError.typeName == "Card")
        var unknownType = db.observe("Deck").makeAsyncIterator()
        let typeError = try await #require(throws: StrataError.self) { try await unknownType.next() }
        #expect(typeError.code == .unknownObjectType)
    }
}
