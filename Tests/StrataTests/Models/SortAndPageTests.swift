import Foundation
import Testing

@testable import Strata

/// Few distinct values per property, so that sort keys tie often; `group`
/// and `label` indexed (`label` with values too long for an index key),
/// `size` and `name` not.
@Model(name: "Sortable") struct Sortable: Equatable, Sendable {
    @PrimaryKey var id: Int
    @Indexed var group = 0
    var size = 0
    var name = ""
    @Indexed var label = ""
}

/// Several sort keys, offsets and limits, asked of both APIs on random
/// data and compared with the same question asked of a Swift array.
@Suite(.temporaryFolder) struct SortAndPageTests {
    let folder = TemporaryFolder.current

    /// One sort key: a property (by table name) and its direction.
    struct Key: CustomStringConvertible {
        var property: String
        var ascending: Bool
        var description: String { "\(property)\(ascending ? "↑" : "↓")" }
    }

    static let properties = ["id", "group", "size", "name", "label"]

    /// The documented order: strings by their UTF-8 bytes, numbers
    /// numerically; `nil` never occurs here.
    static func compare(_ a: Sortable, _ b: Sortable, _ property: String) -> Int {
        func of<V: Comparable>(_ x: V, _ y: V) -> Int { x < y ? -1 : (x == y ? 0 : 1) }
        func bytes(_ x: String, _ y: String) -> Int {
            x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : (Array(x.utf8) == Array(y.utf8) ? 0 : 1)
        }
        switch property {
        case "id": return of(a.id, b.id)
        case "group": return of(a.group, b.group)
        case "size": return of(a.size, b.size)
        case "name": return bytes(a.name, b.name)
        default: return bytes(a.label, b.label)
        }
    }

    /// `items` in the order of `keys`: key by key, then the primary key in
    /// the first key's direction.
    static func expected(_ items: [Sortable], _ keys: [Key]) -> [Sortable] {
        items.sorted { a, b in
            for key in keys {
                let order = compare(a, b, key.property)
                if order != 0 { return key.ascending ? order < 0 : order > 0 }
            }
            let ascending = keys.first?.ascending ?? true
            return ascending ? a.id < b.id : a.id > b.id
        }
    }

    static func randomItem(_ id: Int, _ random: inout SplitMix64) -> Sortable {
        let long = String(repeating: "L", count: 600)
        return Sortable(
            id: id, group: Int.random(in: -2 ... 2, using: &random), size: Int.random(in: 0 ... 3, using: &random),
            name: ["", "a", "ab", "b", "é", "Z"].randomElement(using: &random)!,
            label: [long + "x", long + "y", "short", ""].randomElement(using: &random)!)
    }

    static func descriptor(_ key: Key) -> SortDescriptor<Sortable> {
        let order: SortOrder = key.ascending ? .forward : .reverse
        switch key.property {
        case "id": return SortDescriptor(\.id, order: order)
        case "group": return SortDescriptor(\.group, order: order)
        case "size": return SortDescriptor(\.size, order: order)
        case "name": return SortDescriptor(\.name, order: order)
        default: return SortDescriptor(\.label, order: order)
        }
    }

    func open(_ mode: Database.Mode) throws -> Database {
        var config = Database.Configuration(path: folder.path(), models: [Sortable.self])
        config.durability = .noSync
        config.mode = mode
        return try Database(configuration: config)
    }

    @Test(arguments: Fixtures.modes)
    func severalKeysOffsetsAndLimitsAgreeWithAnArray(mode: Database.Mode) throws {
        var random = SplitMix64(seed: mode == .local ? 25 : 2_025)
        let db = try open(mode)
        var items: [Int: Sortable] = [:]
        try db.write { tx in
            for id in 0 ..< 160 {
                let item = Self.randomItem(id, &random)
                items[id] = item
                try tx.insert(item)
            }
        }
        var failures: [String] = []
        for round in 0 ..< 120 {
            let keys = (0 ..< Int.random(in: 1 ... 3, using: &random)).map { _ in
                Key(property: Self.properties.randomElement(using: &random)!, ascending: Bool.random(using: &random))
            }
            let offset = [0, 0, 1, 7, 150, 170].randomElement(using: &random)!
            let limit = [nil, 0, 1, 5, 40].randomElement(using: &random)!
            let bounded = Bool.random(using: &random)
            var matching = Array(items.values)
            if bounded { matching = matching.filter { (-1 ... 1).contains($0.group) } }
            var expected = Self.expected(matching, keys).dropFirst(offset).map(\.id)
            if let limit { expected = Array(expected.prefix(limit)) }
            let inWrite = round % 10 == 0
            func ask(_ tx: ReadTransaction) throws {
                var typed = try tx.objects(Sortable.self).sorted(using: keys.map(Self.descriptor)).offset(offset)
                var dynamic = try tx.objects("Sortable").sorted(
                    by: keys.map { SortKey($0.property, ascending: $0.ascending) }
                )
                .offset(offset)
                if bounded {
                    typed = typed.where(\.group, in: -1 ... 1)
                    dynamic = dynamic.where("group", in: -1 ... 1)
                }
                if let limit {
                    typed = typed.limit(limit)
                    dynamic = dynamic.limit(limit)
                }
                let context =
                    "\(mode) keys \(keys) offset \(offset) limit \(limit.map(String.init) ?? "-") where \(bounded)"
                let typedIDs = try typed.map(\.id)
                if typedIDs != expected { failures.append("typed \(context): \(typedIDs) vs \(expected)") }
                let dynamicIDs = try dynamic.map { Int($0["id"].int!) }
                if dynamicIDs != expected { failures.append("dynamic \(context): \(dynamicIDs) vs \(expected)") }
                if try typed.count != expected.count { failures.append("typed count \(context)") }
                if try dynamic.count != expected.count { failures.append("dynamic count \(context)") }
                // A filter counts toward neither the offset nor the limit.
                let even = try typed.filter { $0.id % 2 == 0 }.map(\.id)
                var evenExpected = Self.expected(matching.filter { $0.id % 2 == 0 }, keys).dropFirst(offset).map(\.id)
                if let limit { evenExpected = Array(evenExpected.prefix(limit)) }
                if even != evenExpected { failures.append("filtered \(context): \(even) vs \(evenExpected)") }
            }
            if inWrite { try db.write { tx in try ask(tx) } } else { try db.read { tx in try ask(tx) } }
            // Change a few objects between questions.
            try db.write { tx in
                for _ in 0 ..< 3 {
                    let id = Int.random(in: 0 ..< 170, using: &random)
                    let item = Self.randomItem(id, &random)
                    items[id] = item
                    try tx.upsert(item)
                }
            }
            if failures.count > 5 { break }
        }
        #expect(failures.isEmpty, "\(failures.prefix(5).joined(separator: "\n"))")
    }

    @Test func aLaterSortedReplacesTheOrderAndAnOffsetPagesBeforeTheLimit() throws {
        let db = try open(.local)
        try db.write { tx in
            for id in 0 ..< 10 { try tx.insert(Sortable(id: id, group: id % 3, size: id)) }
        }
        try db.read { tx in
            let people = try tx.objects(Sortable.self)
            let bySize = try people.sorted(by: \.group).sorted(by: \.size, ascending: false).map(\.id)
            #expect(bySize == Array((0 ..< 10).reversed()))
            let page = try people.sorted(using: SortDescriptor(\.group), SortDescriptor(\.size, order: .reverse))
                .limit(3).offset(2).map(\.id)
            // group 0: 9, 6, 3, 0; group 1: 7, 4, 1; ...
            #expect(page == [3, 0, 7])
            #expect(try people.offset(8).count == 2)
            #expect(try people.offset(11).count == 0)
            #expect(try people.offset(8).limit(5).array().map(\.id) == [8, 9])
        }
    }

    @Test func anObservedQuerySortedBySeveralKeysWithAnOffsetFollowsCommits() async throws {
        let db = try open(.local)
        try await withTimeout {
            var changes = db.observe(Sortable.self) {
                $0.sorted(using: SortDescriptor(\.group, order: .reverse), SortDescriptor(\.name)).offset(1)
            }.makeAsyncIterator()
            #expect(try await changes.next()?.results.isEmpty == true)
            try await db.write { tx in
                try tx.insert(Sortable(id: 1, group: 1, name: "b"))
                try tx.insert(Sortable(id: 2, group: 1, name: "a"))
                try tx.insert(Sortable(id: 3, group: 2, name: "z"))
            }
            // 3 (group 2), then 2 and 1 (group 1, by name); the offset drops 3.
            #expect(try await changes.next()?.results.map(\.id) == [2, 1])
            try await db.write { tx in try tx.update(Sortable(id: 3, group: 0, name: "z")) }
            #expect(try await changes.next()?.results.map(\.id) == [1, 3])
        }
    }

    @Test func anObservedQuerySortedBySeveralKeysKeepsItsOrderAcrossInPlaceUpdates() async throws {
        let db = try open(.local)
        try await withTimeout {
            var changes = db.observe(Sortable.self) {
                $0.sorted(using: SortDescriptor(\.size), SortDescriptor(\.name, order: .reverse))
            }.makeAsyncIterator()
            #expect(try await changes.next()?.results.isEmpty == true)
            try await db.write { tx in
                for (id, name) in ["a", "c", "b"].enumerated() { try tx.insert(Sortable(id: id, size: 1, name: name)) }
            }
            #expect(try await changes.next()?.results.map(\.name) == ["c", "b", "a"])
            try await db.write { tx in try tx.update(Sortable(id: 0, size: 1, name: "d")) }
            #expect(try await changes.next()?.results.map(\.name) == ["d", "c", "b"])
            try await db.write { tx in try tx.update(Sortable(id: 1, size: 0, name: "c")) }
            #expect(try await changes.next()?.results.map(\.name) == ["c", "d", "b"])
        }
    }
}
