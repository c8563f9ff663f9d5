import Foundation
import Testing

@testable import Strata

/// A model with a property of each kind a query treats differently: the
/// primary key, indexed and plain integers, indexed and plain strings, an
/// indexed optional, and a computed property.
struct QueryItem: Model, Equatable {
    typealias Key = Int
    var id: Int
    var score: Int
    var rank: Int
    var name: String
    var label: String
    var nickname: String?
    /// Not in the schema: a transient property.
    var cache = 0
    var doubledScore: Int { score * 2 }

    static let schema = ModelSchema<QueryItem>(
        name: "Item",
        properties: [
            .init(\.id, "id", primaryKey: true),
            .init(\.score, "score", indexed: true),
            .init(\.rank, "rank"),
            .init(\.name, "name", indexed: true),
            .init(\.label, "label"),
            .init(\.nickname, "nickname", indexed: true),
        ])

    func encode(to encoder: inout ModelEncoder) {
        encoder.encode(id)
        encoder.encode(score)
        encoder.encode(rank)
        encoder.encode(name)
        encoder.encode(label)
        encoder.encode(nickname)
    }

    init(from decoder: inout ModelDecoder) throws {
        id = try decoder.decode(Int.self)
        score = try decoder.decode(Int.self)
        rank = try decoder.decode(Int.self)
        name = try decoder.decode(String.self)
        label = try decoder.decode(String.self)
        nickname = try decoder.decode(String?.self)
    }

    init(id: Int, score: Int, rank: Int = 0, name: String = "", label: String = "", nickname: String? = nil) {
        self.id = id
        self.score = score
        self.rank = rank
        self.name = name
        self.label = label
        self.nickname = nickname
    }
}

@Suite(.temporaryFolder) struct ModelQueryTests {
    let folder = TemporaryFolder.current

    func open(_ mode: Database.Mode) throws -> Database {
        var config = Database.Configuration(path: folder.path(), models: [QueryItem.self, HandNote.self])
        config.durability = .noSync
        config.mode = mode
        return try Database(configuration: config)
    }

    /// Ten items whose score, rank, name and label are all `id % 4 - 1`
    /// (as text for the strings), ids -3 through 6: duplicates and
    /// negative values everywhere.
    func seeded(_ mode: Database.Mode) throws -> Database {
        let db = try open(mode)
        try db.write { tx in
            for id in -3 ... 6 {
                let value = (id + 4) % 4 - 1
                try tx.insert(QueryItem(id: id, score: value, rank: value, name: "\(value + 5)", label: "\(value + 5)"))
            }
        }
        return db
    }

    @Test(arguments: Fixtures.modes)
    func equalityOnIndexedPrimaryKeyAndPlainProperties(mode: Database.Mode) throws {
        let db = try seeded(mode)
        try db.read { tx throws in
            let items = try tx.objects(QueryItem.self)
            #expect(try items.where(\.score, equals: 1).map(\.id) == [-2, 2, 6])
            #expect(try items.where(\.rank, equals: 1).map(\.id) == [-2, 2, 6])
            #expect(try items.where(\.name, equals: "6").map(\.id) == [-2, 2, 6])
            #expect(try items.where(\.label, equals: "6").map(\.id) == [-2, 2, 6])
            #expect(try items.where(\.id, equals: 2).map(\.score) == [1])
            #expect(try items.where(\.id, equals: 99).count == 0)
            #expect(try items.where(\.score, equals: 7).isEmpty)
            #expect(try items.where(\.score, equals: -1).count == 2)
            #expect(try items.where(\.nickname, equals: nil).count == 10)
            #expect(try items.where(\.score, equals: 1).where(\.id, in: 0...).map(\.id) == [2, 6])
            #expect(try items.where(\.score, equals: 1).filter { $0.id > 0 }.count == 2)
            #expect(try items.where(\.id, equals: 2).sorted(by: \.score).map(\.id) == [2])
            #expect(try items.where(\.score, equals: 1).sorted(by: \.id, ascending: false).map(\.id) == [6, 2, -2])
        }
    }

    @Test(arguments: Fixtures.modes)
    func everyRangeKindOnIndexedPrimaryKeyAndPlainProperties(mode: Database.Mode) throws {
        let db = try seeded(mode)
        try db.read { tx throws in
            let items = try tx.objects(QueryItem.self)
            let all = try items.array()
            func ids(_ include: (QueryItem) -> Bool) -> [Int] { all.filter(include).map(\.id) }
            for keyPath in [\QueryItem.score, \.rank] {
                #expect(
                    try items.where(keyPath, in: 0 ..< 2).map(\.id).sorted() == ids { (0 ..< 2).contains($0.score) })
                #expect(
                    try items.where(keyPath, in: -1 ... 0).map(\.id).sorted() == ids { (-1 ... 0).contains($0.score) })
                #expect(try items.where(keyPath, in: 1...).map(\.id).sorted() == ids { $0.score >= 1 })
                #expect(try items.where(keyPath, in: ...0).map(\.id).sorted() == ids { $0.score <= 0 })
                #expect(try items.where(keyPath, in: ..<0).map(\.id).sorted() == ids { $0.score < 0 })
                #expect(try items.where(keyPath, in: 5 ..< 5).count == 0)
                #expect(try items.where(keyPath, in: ..<0).count == 2)
            }
            for keyPath in [\QueryItem.name, \.label] {
                #expect(
                    try items.where(keyPath, in: "5" ..< "7").map(\.id).sorted()
                        == ids { ("5" ..< "7").contains($0.name) })
                #expect(
                    try items.where(keyPath, in: "4" ... "5").map(\.id).sorted()
                        == ids { ("4" ... "5").contains($0.name) })
                #expect(try items.where(keyPath, in: "6"...).map(\.id).sorted() == ids { $0.name >= "6" })
                #expect(try items.where(keyPath, in: ..."5").map(\.id).sorted() == ids { $0.name <= "5" })
                #expect(try items.where(keyPath, in: ..<"5").map(\.id).sorted() == ids { $0.name < "5" })
            }
            #expect(try items.where(\.id, in: -1 ..< 2).map(\.id) == [-1, 0, 1])
            #expect(try items.where(\.id, in: -1 ... 2).map(\.id) == [-1, 0, 1, 2])
            #expect(try items.where(\.id, in: 4...).map(\.id) == [4, 5, 6])
            #expect(try items.where(\.id, in: ...(-2)).map(\.id) == [-3, -2])
            #expect(try items.where(\.id, in: ..<(-2)).map(\.id) == [-3])
            #expect(try items.where(\.id, in: ..<(-2)).count == 1)
            #expect(try items.where(\.id, in: 100...).first() == nil)
        }
    }

    @Test(arguments: Fixtures.modes)
    func sortedAscendingAndDescendingBreakTiesByPrimaryKey(mode: Database.Mode) throws {
        let db = try seeded(mode)
        try db.read { tx throws in
            let items = try tx.objects(QueryItem.self)
            let ascending = [0, 4, -3, 1, 5, -2, 2, 6, -1, 3]
            for keyPath in [\QueryItem.score, \.rank] {
                #expect(try items.sorted(by: keyPath).map(\.id) == ascending)
                #expect(try items.sorted(by: keyPath, ascending: false).map(\.id) == ascending.reversed())
                #expect(try items.sorted(by: keyPath).limit(4).map(\.id) == [0, 4, -3, 1])
                #expect(try items.sorted(by: keyPath, ascending: false).first()?.id == 3)
                let zeroOrOne = items.where(keyPath, in: 0 ... 1)
                #expect(try zeroOrOne.sorted(by: keyPath).map(\.id) == [-3, 1, 5, -2, 2, 6])
                #expect(try zeroOrOne.sorted(by: keyPath, ascending: false).limit(4).map(\.id) == [6, 2, -2, 5])
                #expect(try zeroOrOne.sorted(by: \.id, ascending: false).map(\.id) == [6, 5, 2, 1, -2, -3])
                let descending = items.where(\.id, in: 0...).sorted(by: keyPath, ascending: false)
                #expect(try descending.limit(3).map(\.id) == [3, 6, 2])
                #expect(try items.where(keyPath, equals: 7).sorted(by: keyPath).count == 0)
                #expect(try items.where(keyPath, equals: 2).sorted(by: keyPath).count == 2)
            }
            for keyPath in [\QueryItem.name, \.label] {
                #expect(try items.sorted(by: keyPath).map(\.id) == ascending)
                #expect(try items.sorted(by: keyPath, ascending: false).map(\.id) == ascending.reversed())
            }
            #expect(try items.sorted(by: \.id, ascending: false).map(\.id) == Array((-3 ... 6).reversed()))
            #expect(try items.sorted(by: \.id).limit(0).array() == [])
            #expect(try items.limit(3).count == 3)
            #expect(try items.limit(3).map(\.id) == [-3, -2, -1])
        }
        try db.write { tx in
            for priority in [2, 1, 2, 1, 2] { try tx.insert(HandNote(text: "p\(priority)", priority: priority)) }
        }
        try db.read { tx throws in
            let notes = try tx.objects(HandNote.self)
            #expect(try notes.sorted(by: \.priority).map(\.text) == ["p1", "p1", "p2", "p2", "p2"])
            #expect(try notes.sorted(by: \.priority, ascending: false).limit(2).map(\.priority) == [2, 2])
            #expect(try notes.where(\.priority, in: 2...).count == 3)
        }
    }

    @Test(arguments: Fixtures.modes)
    func optionalValuesSortNilFirst(mode: Database.Mode) throws {
        let db = try open(mode)
        try db.write { tx in
            try tx.insert(QueryItem(id: 1, score: 0, nickname: "b"))
            try tx.insert(QueryItem(id: 2, score: 0))
            try tx.insert(QueryItem(id: 3, score: 0, nickname: "a"))
            try tx.insert(QueryItem(id: 4, score: 0))
        }
        try db.read { tx throws in
            let items = try tx.objects(QueryItem.self)
            #expect(try items.sorted(by: \.nickname).map(\.id) == [2, 4, 3, 1])
            #expect(try items.sorted(by: \.nickname, ascending: false).map(\.id) == [1, 3, 4, 2])
            #expect(try items.where(\.nickname, equals: nil).map(\.id) == [2, 4])
            #expect(try items.where(\.nickname, equals: "a").map(\.id) == [3])
        }
    }

    /// Random queries on a few thousand objects, each compared with a
    /// filter and a sort of every value in memory.
    @Test(arguments: Fixtures.modes)
    func randomQueriesAgreeWithAnInMemoryFilterAndSort(mode: Database.Mode) throws {
        var random = SplitMix64(seed: 0x5174_a7a9 &+ (mode == .local ? 0 : 1))
        let long = String(repeating: "n", count: 520)
        let names = ["", "a", "b", "ab", "-1", long, long + "a", long + "b", String(repeating: "n", count: 509)]
        let db = try open(mode)
        var all: [QueryItem] = []
        try db.write { tx in
            for _ in 0 ..< 3000 {
                let item = QueryItem(
                    id: Int.random(in: -100_000 ... 100_000, using: &random),
                    score: Int.random(in: -20 ... 20, using: &random),
                    rank: Int.random(in: -30 ... 30, using: &random), name: names.randomElement(using: &random)!,
                    label: names.randomElement(using: &random)!,
                    nickname: Bool.random(using: &random) ? nil : names.randomElement(using: &random)!)
                try tx.upsert(item)
            }
            all = try tx.objects(QueryItem.self).array()
        }
        #expect(all.count > 2900)

        enum Property: CaseIterable { case id, score, rank, name, label, nickname }
        func int(_ item: QueryItem, _ property: Property) -> Int {
            switch property {
            case .id: item.id
            case .score: item.score
            default: item.rank
            }
        }
        /// A random where on `query`, and the same test on a value.
        func randomCondition(_ query: ModelQuery<QueryItem>) -> (ModelQuery<QueryItem>, (QueryItem) -> Bool) {
            let property = [Property.id, .score, .rank, .name, .label].randomElement(using: &random)!
            let kind = Int.random(in: 0 ..< 6, using: &random)
            if property == .name || property == .label {
                let keyPath = property == .name ? \QueryItem.name : \.label
                var a = names.randomElement(using: &random)!
                var b = names.randomElement(using: &random)!
                if b < a { swap(&a, &b) }
                return switch kind {
                case 0: (query.where(keyPath, equals: a), { $0[keyPath: keyPath] == a })
                case 1: (query.where(keyPath, in: a ..< b), { (a ..< b).contains($0[keyPath: keyPath]) })
                case 2: (query.where(keyPath, in: a ... b), { (a ... b).contains($0[keyPath: keyPath]) })
                case 3: (query.where(keyPath, in: a...), { $0[keyPath: keyPath] >= a })
                case 4: (query.where(keyPath, in: ...b), { $0[keyPath: keyPath] <= b })
                default: (query.where(keyPath, in: ..<b), { $0[keyPath: keyPath] < b })
                }
            }
            let keyPath = property == .id ? \QueryItem.id : property == .score ? \.score : \.rank
            let span = property == .id ? 100_000 : 25
            var a = Int.random(in: -span ... span, using: &random)
            var b = Int.random(in: -span ... span, using: &random)
            if b < a { swap(&a, &b) }
            if property == .id, kind == 0 { a = all.randomElement(using: &random)!.id }
            return switch kind {
            case 0: (query.where(keyPath, equals: a), { $0[keyPath: keyPath] == a })
            case 1: (query.where(keyPath, in: a ..< b), { (a ..< b).contains($0[keyPath: keyPath]) })
            case 2: (query.where(keyPath, in: a ... b), { (a ... b).contains($0[keyPath: keyPath]) })
            case 3: (query.where(keyPath, in: a...), { $0[keyPath: keyPath] >= a })
            case 4: (query.where(keyPath, in: ...b), { $0[keyPath: keyPath] <= b })
            default: (query.where(keyPath, in: ..<b), { $0[keyPath: keyPath] < b })
            }
        }
        /// Orders two items by a property, nil first, then by id.
        func precedes(_ a: QueryItem, _ b: QueryItem, by property: Property) -> Bool {
            switch property {
            case .id, .score, .rank:
                let (x, y) = (int(a, property), int(b, property))
                return x != y ? x < y : a.id < b.id
            case .name, .label:
                let keyPath = property == .name ? \QueryItem.name : \.label
                return a[keyPath: keyPath] != b[keyPath: keyPath]
                    ? a[keyPath: keyPath] < b[keyPath: keyPath] : a.id < b.id
            case .nickname:
                switch (a.nickname, b.nickname) {
                case (nil, nil): return a.id < b.id
                case (nil, _): return true
                case (_, nil): return false
                case (let x?, let y?): return x != y ? x < y : a.id < b.id
                }
            }
        }

        try db.read { tx throws in
            for trial in 0 ..< 150 {
                var query = try tx.objects(QueryItem.self)
                var tests: [(QueryItem) -> Bool] = []
                for _ in 0 ..< Int.random(in: 0 ... 2, using: &random) {
                    let (narrowed, test) = randomCondition(query)
                    query = narrowed
                    tests.append(test)
                }
                var expected = all.filter { item in tests.allSatisfy { $0(item) } }
                #expect(try query.count == expected.count, "trial \(trial)")
                guard Bool.random(using: &random) else {
                    #expect(try query.map(\.id).sorted() == expected.map(\.id).sorted(), "trial \(trial)")
                    continue
                }
                let property = Property.allCases.randomElement(using: &random)!
                let ascending = Bool.random(using: &random)
                query =
                    switch property {
                    case .id: query.sorted(by: \.id, ascending: ascending)
                    case .score: query.sorted(by: \.score, ascending: ascending)
                    case .rank: query.sorted(by: \.rank, ascending: ascending)
                    case .name: query.sorted(by: \.name, ascending: ascending)
                    case .label: query.sorted(by: \.label, ascending: ascending)
                    case .nickname: query.sorted(by: \.nickname, ascending: ascending)
                    }
                expected.sort { precedes($0, $1, by: property) }
                if !ascending { expected.reverse() }
                if Bool.random(using: &random) {
                    let limit = Int.random(in: 0 ... 20, using: &random)
                    query = query.limit(limit)
                    expected = Array(expected.prefix(limit))
                    #expect(try query.count == expected.count, "trial \(trial)")
                }
                #expect(try query.map(\.id) == expected.map(\.id), "trial \(trial): \(property) ascending \(ascending)")
                #expect(try query.first()?.id == expected.first?.id, "trial \(trial)")
            }
        }
    }

    @Test(arguments: Fixtures.modes)
    func queriesInAWriteTransactionSeeItsOwnWrites(mode: Database.Mode) throws {
        let db = try seeded(mode)
        try db.write { tx throws in
            try tx.insert(QueryItem(id: 10, score: 1, rank: 1, name: "6"))
            #expect(try tx.delete(QueryItem.self, primaryKey: 2))
            var moved = try #require(try tx.object(QueryItem.self, primaryKey: 6))
            moved.score = -5
            try tx.update(moved)
            let items = try tx.objects(QueryItem.self)
            #expect(try items.where(\.score, equals: 1).map(\.id) == [-2, 10])
            #expect(try items.where(\.score, in: ..<0).sorted(by: \.score).map(\.id) == [6, 0, 4])
            #expect(try items.where(\.rank, equals: 1).map(\.id) == [-2, 6, 10])
            #expect(try items.where(\.id, in: 5...).map(\.id) == [5, 6, 10])
            #expect(try items.sorted(by: \.score, ascending: false).first()?.id == 3)

            // A walk does not reach what its own body inserts past its end.
            var visited = 0
            try items.where(\.score, in: 0...).sorted(by: \.score).forEach { item in
                visited += 1
                try tx.insert(QueryItem(id: 1000 + visited, score: 50 + item.score))
            }
            #expect(visited == 7)
            try items.sorted(by: \.id, ascending: false).forEach { item in
                if item.id > -3 { try tx.insert(QueryItem(id: -1000 - item.id, score: 0)) }
            }
            #expect(try items.where(\.id, in: ..<(-100)).count == 16)

            // Moving each visited object's index entry past the walk's end,
            // or behind it, visits every object once.
            var raised: [Int] = []
            try items.where(\.score, in: 0 ... 2).sorted(by: \.score).forEach { item in
                raised.append(item.id)
                var moved = item
                moved.score += 100
                try tx.update(moved)
            }
            #expect(
                raised == [
                    -2007, -2006, -2005, -2004, -2003, -2002, -2001, -1010, -1006, -1005, -1004, -1003, -1001, -1000,
                    -999, -998, -3, 1, 5, -2, 10, -1, 3,
                ])
            var lowered: [Int] = []
            try items.where(\.score, in: 100...).sorted(by: \.score, ascending: false).forEach { item in
                lowered.append(item.id)
                var moved = item
                moved.score += 1000
                try tx.update(moved)
            }
            #expect(lowered == raised.reversed())
            #expect(try items.where(\.score, in: 1000...).count == raised.count)
        }
    }

    @Test func keyPathThatIsNotStoredIsAnErrorNamingTheModel() throws {
        let db = try seeded(.local)
        try db.read { tx in
            let items = try tx.objects(QueryItem.self)
            let error = expectStrataError(.unknownProperty) { _ = try items.where(\.doubledScore, equals: 2).array() }
            #expect(error?.message.contains("where(_:equals:) was given a key path to a computed Int") == true)
            #expect(error?.message.contains("the model QueryItem") == true)
            #expect(error?.message.contains("id, score, rank, name, label, nickname") == true)
            expectStrataError(.unknownProperty) { _ = try items.where(\.doubledScore, in: 0...).count }
            let transient = expectStrataError(.unknownProperty) { _ = try items.where(\.cache, equals: 0).first() }
            #expect(transient?.message.contains("\\QueryItem.cache") == true)
            expectStrataError(.unknownProperty) { _ = try items.sorted(by: \.doubledScore).first() }
            expectStrataError(.unknownProperty) {
                _ = try items.where(\.id, equals: 1).sorted(by: \.doubledScore).isEmpty
            }
        }
    }

    @Test(arguments: Fixtures.modes)
    func stringsLongerThanTheIndexKeyLimitCompareWhole(mode: Database.Mode) throws {
        let prefix = String(repeating: "é", count: 300)  // 600 bytes: past the 510 an index key keeps
        let names = [
            prefix + "b", prefix, prefix + "a", prefix + "c", String(prefix.utf8.prefix(510))!, "z", prefix + "b",
        ]
        let db = try open(mode)
        try db.write { tx in
            for (id, name) in names.enumerated() { try tx.insert(QueryItem(id: id, score: 0, name: name, label: name)) }
        }
        try db.read { tx throws in
            let items = try tx.objects(QueryItem.self)
            for keyPath in [\QueryItem.name, \.label] {
                #expect(try items.where(keyPath, equals: prefix + "b").map(\.id) == [0, 6])
                #expect(try items.where(keyPath, equals: prefix).map(\.id) == [1])
                #expect(try items.where(keyPath, equals: prefix + "d").count == 0)
                #expect(try items.where(keyPath, equals: prefix + "a").count == 1)
                #expect(
                    try items.where(keyPath, in: (prefix + "a") ..< (prefix + "c")).map(\.id).sorted() == [0, 2, 6])
                #expect(try items.where(keyPath, in: (prefix + "a") ... (prefix + "c")).count == 4)
                #expect(try items.where(keyPath, in: (prefix + "b")...).map(\.id).sorted() == [0, 3, 6])
                #expect(try items.where(keyPath, in: ...(prefix + "a")).map(\.id).sorted() == [1, 2, 4, 5])
                #expect(try items.where(keyPath, in: ..<prefix).map(\.id).sorted() == [4, 5])
                let sorted = [5, 4, 1, 2, 0, 6, 3]  // "z" sorts before "é"
                #expect(try items.sorted(by: keyPath).map(\.id) == sorted)
                #expect(try items.sorted(by: keyPath, ascending: false).map(\.id) == sorted.reversed())
                #expect(
                    try items.where(keyPath, in: prefix ... (prefix + "b")).sorted(by: keyPath, ascending: false).map(
                        \.id)
                        == [6, 0, 2, 1])
            }
        }
    }
}
