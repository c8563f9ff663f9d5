import Foundation
import Testing

@testable import Strata

@Model(name: "OracleOwner") struct OracleOwner {
    @PrimaryKey var handle: String
}

/// A property of every stored kind, plain and indexed (for the kinds an
/// index can hold), optional and not, and links to targets with integer
/// and string keys.
@Model(name: "OracleItem") struct OracleItem {
    @PrimaryKey var id: Int
    var flag = false
    @Indexed var indexedFlag = false
    var optionalFlag: Bool?
    @Indexed var indexedOptionalFlag: Bool?
    var number = 0
    @Indexed var indexedNumber = 0
    var optionalNumber: Int?
    @Indexed var indexedOptionalNumber: Int?
    var real = 0.0
    var optionalReal: Double?
    var text = ""
    @Indexed var indexedText = ""
    var optionalText: String?
    @Indexed var indexedOptionalText: String?
    var bytes: Data = Data()
    var optionalBytes: Data?
    var when: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Indexed var indexedWhen: Date = Date(timeIntervalSinceReferenceDate: 0)
    var optionalWhen: Date?
    @Indexed var indexedOptionalWhen: Date?
    var tag: UUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Indexed var indexedTag: UUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    var optionalTag: UUID?
    @Indexed var indexedOptionalTag: UUID?
    var amount: Decimal = 0
    @Indexed var indexedAmount: Decimal = 0
    var optionalAmount: Decimal?
    @Indexed var indexedOptionalAmount: Decimal?
    var project: Link<OracleProject>?
    var owner: Link<OracleOwner>?

    /// Every stored value, exactly: doubles and dates by their shortest
    /// exact spelling, so that -0.0 and NaN compare too.
    var fingerprint: String {
        Mirror(reflecting: self).children.map { child in
            if let date = child.value as? Date { return "\(date.timeIntervalSinceReferenceDate)" }
            return "\(child.value)"
        }.joined(separator: "|").replacing(QueryOracle.long, with: "n×515")
    }
}

/// The order the documentation promises (ModelQuery, "Order and
/// comparison"), written without the library's comparison: numbers,
/// decimals (by `Decimal`'s own `<`) and dates numerically with -0.0 equal to 0.0 and NaN after infinity,
/// strings by their UTF-8 bytes, `false` before `true`, `nil` first,
/// links by their target's key. Each returns a negative number, zero or a
/// positive number.
enum DocumentedOrder {
    static func of<V: Comparable>(_ a: V, _ b: V) -> Int { a < b ? -1 : (a == b ? 0 : 1) }
    static func bool(_ a: Bool, _ b: Bool) -> Int { (a ? 1 : 0) - (b ? 1 : 0) }
    static func double(_ a: Double, _ b: Double) -> Int {
        switch (a.isNaN, b.isNaN) {
        case (true, true): 0
        case (true, false): 1
        case (false, true): -1
        case (false, false): of(a, b)
        }
    }
    static func bytes<C: Collection<UInt8>>(_ a: C, _ b: C) -> Int {
        a.elementsEqual(b) ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
    }
    static func string(_ a: String, _ b: String) -> Int { bytes(a.utf8, b.utf8) }
    static func data(_ a: Data, _ b: Data) -> Int { bytes(a, b) }
    static func date(_ a: Date, _ b: Date) -> Int {
        double(a.timeIntervalSinceReferenceDate, b.timeIntervalSinceReferenceDate)
    }
    static func uuid(_ a: UUID, _ b: UUID) -> Int {
        withUnsafeBytes(of: a.uuid) { a in withUnsafeBytes(of: b.uuid) { b in bytes(a, b) } }
    }
    static func link<T>(_ key: @escaping (T.Key, T.Key) -> Int) -> (Link<T>, Link<T>) -> Int {
        { key($0.key, $1.key) }
    }
    static func optional<V>(_ order: @escaping (V, V) -> Int) -> (V?, V?) -> Int {
        { a, b in
            switch (a, b) {
            case (nil, nil): 0
            case (nil, _): -1
            case (_, nil): 1
            case (let x?, let y?): order(x, y)
            }
        }
    }
}

/// A `where` asked of a query, and the same test on an item.
struct OracleCondition {
    let description: String
    let column: Int
    let isEquality: Bool
    /// Whether it can choose the walk (on an indexed column): an
    /// equality, a range, a set of values or a prefix.
    var drives = true
    let test: (OracleItem) -> Bool
}

/// One random `where`: the test on an item, and the same question put to
/// a typed query (by key path) and to a dynamic collection (by name).
struct OracleQuestion {
    let condition: OracleCondition
    let typed: (ModelQuery<OracleItem>) -> ModelQuery<OracleItem>
    let dynamic: (ObjectCollection) throws -> ObjectCollection
}

/// One stored property of ``OracleItem``: the values it stores and is
/// asked about, its documented order, and how to ask a typed query or a
/// dynamic collection about it.
struct OracleColumn {
    let name: String
    /// Indexed, or the primary key: a `where` on it may choose the walk.
    let isIndexed: Bool
    let isPrimaryKey: Bool
    /// Sets the property of an item to a random value it may store.
    let assign: (inout OracleItem, inout SplitMix64) -> Void
    /// Orders two items by the property.
    let compare: (OracleItem, OracleItem) -> Int
    /// A random `where` on the property, as column `index`.
    var question: (_ index: Int, inout SplitMix64) -> OracleQuestion
    let sorted: (ModelQuery<OracleItem>, _ ascending: Bool) -> ModelQuery<OracleItem>
    /// A random `#Predicate` test of the property alone, as column `index`.
    var leaf: (_ index: Int, inout SplitMix64) -> OraclePart

    /// The dynamic collection sorted by the property.
    func sorted(_ collection: ObjectCollection, ascending: Bool) throws -> ObjectCollection {
        collection.sorted(by: name, ascending: ascending)
    }

    /// A property asked only for equality (a type that is not
    /// `Comparable`, or an optional): `stored` are the values items hold,
    /// `absent` more values to ask about.
    static func equatable<V: PropertyValue & Equatable & Codable & Sendable>(
        _ name: String, _ keyPath: WritableKeyPath<OracleItem, V> & Sendable, indexed: Bool = false,
        primaryKey: Bool = false, stored: [V], absent: [V] = [], order: @escaping (V, V) -> Int
    ) -> OracleColumn {
        let asked = stored + absent
        return OracleColumn(
            name: name, isIndexed: indexed || primaryKey, isPrimaryKey: primaryKey,
            assign: { item, random in
                if !primaryKey { item[keyPath: keyPath] = stored.randomElement(using: &random)! }
            },
            compare: { order($0[keyPath: keyPath], $1[keyPath: keyPath]) },
            question: { (index: Int, random: inout SplitMix64) in
                let value = asked.randomElement(using: &random)!
                switch Int.random(in: 0 ..< 6, using: &random) {
                case 4:
                    let condition = OracleCondition(
                        description: "\(name) != \(value)", column: index, isEquality: false, drives: false
                    ) { order($0[keyPath: keyPath], value) != 0 }
                    return OracleQuestion(
                        condition: condition, typed: { $0.where(keyPath, notEquals: value) },
                        dynamic: { $0.where(name, notEquals: value.propertyValue) })
                case 5:
                    let values = (0 ..< Int.random(in: 0 ... 3, using: &random)).map { _ in
                        asked.randomElement(using: &random)!
                    }
                    let condition = OracleCondition(
                        description: "\(name) in \(values)", column: index, isEquality: values.count == 1
                    ) { item in values.contains { order(item[keyPath: keyPath], $0) == 0 } }
                    return OracleQuestion(
                        condition: condition, typed: { $0.where(keyPath, in: values) },
                        dynamic: { $0.where(name, in: values.map(\.propertyValue)) })
                default:
                    let condition = OracleCondition(description: "\(name) == \(value)", column: index, isEquality: true)
                    {
                        order($0[keyPath: keyPath], value) == 0
                    }
                    return OracleQuestion(
                        condition: condition, typed: { $0.where(keyPath, equals: value) },
                        dynamic: { $0.where(name, equals: value.propertyValue) })
                }
            },
            sorted: { $0.sorted(by: keyPath, ascending: $1) },
            leaf: OraclePart.leaves(name, keyPath, asked: asked, order: order))
    }

    /// A property asked for equality and every kind of range.
    static func comparable<V: PropertyValue & Comparable & Codable & Sendable>(
        _ name: String, _ keyPath: WritableKeyPath<OracleItem, V> & Sendable, indexed: Bool = false,
        primaryKey: Bool = false, stored: [V], absent: [V] = [], order: @escaping (V, V) -> Int
    ) -> OracleColumn {
        var column = equatable(
            name, keyPath, indexed: indexed, primaryKey: primaryKey, stored: stored, absent: absent, order: order)
        let equality = column.question
        // A Swift range cannot have a NaN bound.
        let bounds = (stored + absent).filter { $0 == $0 }
        column.leaf = OraclePart.comparisons(
            name, keyPath, asked: stored + absent, bounds: bounds, order: order, others: column.leaf)
        column.question = { (index: Int, random: inout SplitMix64) in
            let kind = Int.random(in: 0 ..< 6, using: &random)
            guard kind > 0 else { return equality(index, &random) }
            var a = bounds.randomElement(using: &random)!
            var b = bounds.randomElement(using: &random)!
            if b < a { swap(&a, &b) }
            func question(
                _ text: String, _ test: @escaping (V) -> Bool,
                _ typed: @escaping (ModelQuery<OracleItem>) -> ModelQuery<OracleItem>,
                _ dynamic: @escaping (ObjectCollection) throws -> ObjectCollection
            ) -> OracleQuestion {
                let condition = OracleCondition(description: "\(name) in \(text)", column: index, isEquality: false) {
                    test($0[keyPath: keyPath])
                }
                return OracleQuestion(condition: condition, typed: typed, dynamic: dynamic)
            }
            return switch kind {
            case 1:
                question(
                    "\(a) ..< \(b)", { order($0, a) >= 0 && order($0, b) < 0 }, { $0.where(keyPath, in: a ..< b) },
                    { $0.where(name, in: a ..< b) })
            case 2:
                question(
                    "\(a) ... \(b)", { order($0, a) >= 0 && order($0, b) <= 0 }, { $0.where(keyPath, in: a ... b) },
                    { $0.where(name, in: a ... b) })
            case 3:
                question(
                    "\(a)...", { order($0, a) >= 0 }, { $0.where(keyPath, in: a...) }, { $0.where(name, in: a...) })
            case 4:
                question(
                    "...\(b)", { order($0, b) <= 0 }, { $0.where(keyPath, in: ...b) }, { $0.where(name, in: ...b) })
            default:
                question(
                    "..<\(b)", { order($0, b) < 0 }, { $0.where(keyPath, in: ..<b) }, { $0.where(name, in: ..<b) })
            }
        }
        return column
    }
}

/// Random questions asked of a query and of a plain Swift array of the
/// same items.
struct QueryOracle {
    static let ids = Array(-150 ..< 150)
    static let projects = Array(1 ... 6)
    /// Owner keys, among them string keys at the documented limits
    /// (docs/FileFormat.md): 498 bytes, the longest a sync-enabled file
    /// takes, and 510, the longest any file takes.
    static let owners = ["a", "ann", "bob", "é", KeyLimits.string(498), KeyLimits.string(510)]
    /// A string past the 510 bytes an index key keeps.
    static let long = String(repeating: "n", count: 515)

    let columns: [OracleColumn] = {
        let long = Self.long
        let ints = [Int.min, -7, -1, 0, 1, 2, 7, Int.max]
        let doubles: [Double] = [-.infinity, -1.5, -0.0, 0.0, 0.25, 1.5, .infinity, .nan, -.nan]
        // Around the 510 bytes an index key keeps: cut keys that share
        // their first 510 bytes, one that ends inside a two-byte character.
        let strings =
            ["", "a", "ab", "b", "Z", "é", "e\u{301}", "日本", long, long + "a", long + "b"]
            + [509, 510, 511].map { String(long.prefix($0)) } + [String(repeating: "é", count: 256)]
        let absentStrings = ["aa", "c", long + "c", String(repeating: "é", count: 255) + "e"]
        // Around the 510 bytes an index key keeps, and within characters.
        let prefixes = [
            "", "a", "ab", "e", "é", "\u{301}", "日", "Z", String(long.prefix(509)), String(long.prefix(510)), long,
            long + "a",
        ]
        let datas = [Data(), Data([0]), Data([0, 0]), Data([1]), Data([0xff]), Data(repeating: 7, count: 600)]
        let dates = [-1e9, -1.5, -0.0, 0, 0.5, 1e9].map(Date.init(timeIntervalSinceReferenceDate:))
        let uuids = [
            "00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000001",
            "7FFFFFFF-0000-0000-0000-000000000000", "80000000-0000-0000-0000-000000000000",
            "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
        ].map { UUID(uuidString: $0)! }
        let absentUUID = UUID(uuidString: "12345678-9ABC-DEF0-1234-56789ABCDEF0")!
        let decimals = ["-1e30", "-10", "-2.5", "-2", "-0.001", "0", "1e-20", "1", "1.5", "1.52", "10", "1e20"].map {
            Decimal(string: $0)!
        }
        // 1.50 is stored 1.5: asked as written, it must find 1.5.
        let absentDecimals = ["3", "-1.5", "0.5", "1.50", "99999999999999999999999999999999999999"].map {
            Decimal(string: $0)!
        }
        let projects: [Link<OracleProject>?] = [nil] + QueryOracle.projects.map { Link($0) }
        let owners: [Link<OracleOwner>?] = [nil] + QueryOracle.owners.map { Link($0) }
        typealias O = DocumentedOrder
        func optional<V>(_ values: [V]) -> [V?] { [nil] + values.map { $0 } }
        return [
            .comparable("id", \.id, primaryKey: true, stored: QueryOracle.ids, absent: [-1000, 1000], order: O.of),
            .equatable("flag", \.flag, stored: [false, true], order: O.bool),
            .equatable("indexedFlag", \.indexedFlag, indexed: true, stored: [false, true], order: O.bool),
            .equatable("optionalFlag", \.optionalFlag, stored: optional([false, true]), order: O.optional(O.bool)),
            .equatable(
                "indexedOptionalFlag", \.indexedOptionalFlag, indexed: true, stored: optional([false, true]),
                order: O.optional(O.bool)),
            .comparable("number", \.number, stored: ints, absent: [3, -3], order: O.of),
            .comparable("indexedNumber", \.indexedNumber, indexed: true, stored: ints, absent: [3, -3], order: O.of),
            .equatable(
                "optionalNumber", \.optionalNumber, stored: optional(ints), absent: [3], order: O.optional(O.of)),
            .equatable(
                "indexedOptionalNumber", \.indexedOptionalNumber, indexed: true, stored: optional(ints), absent: [3],
                order: O.optional(O.of)),
            .comparable("real", \.real, stored: doubles, absent: [0.1, -2], order: O.double),
            .equatable(
                "optionalReal", \.optionalReal, stored: optional(doubles), absent: [0.1], order: O.optional(O.double)),
            .comparable("text", \.text, stored: strings, absent: absentStrings, order: O.string)
                .withPrefixes(\.text, prefixes),
            .comparable(
                "indexedText", \.indexedText, indexed: true, stored: strings, absent: absentStrings,
                order: O.string
            ).withPrefixes(\.indexedText, prefixes),
            .equatable(
                "optionalText", \.optionalText, stored: optional(strings), absent: absentStrings,
                order: O.optional(O.string)
            ).withPrefixes(\.optionalText, prefixes),
            .equatable(
                "indexedOptionalText", \.indexedOptionalText, indexed: true, stored: optional(strings),
                absent: absentStrings, order: O.optional(O.string)
            ).withPrefixes(\.indexedOptionalText, prefixes),
            .equatable("bytes", \.bytes, stored: datas, absent: [Data([2])], order: O.data),
            .equatable(
                "optionalBytes", \.optionalBytes, stored: optional(datas), absent: [Data([2])],
                order: O.optional(O.data)),
            .comparable(
                "when", \.when, stored: dates, absent: [Date(timeIntervalSinceReferenceDate: 2)], order: O.date),
            .comparable(
                "indexedWhen", \.indexedWhen, indexed: true, stored: dates,
                absent: [Date(timeIntervalSinceReferenceDate: 2)], order: O.date),
            .equatable("optionalWhen", \.optionalWhen, stored: optional(dates), order: O.optional(O.date)),
            .equatable(
                "indexedOptionalWhen", \.indexedOptionalWhen, indexed: true, stored: optional(dates),
                order: O.optional(O.date)),
            .comparable("tag", \.tag, stored: uuids, absent: [absentUUID], order: O.uuid),
            .comparable("indexedTag", \.indexedTag, indexed: true, stored: uuids, absent: [absentUUID], order: O.uuid),
            .equatable(
                "optionalTag", \.optionalTag, stored: optional(uuids), absent: [absentUUID], order: O.optional(O.uuid)),
            .equatable(
                "indexedOptionalTag", \.indexedOptionalTag, indexed: true, stored: optional(uuids),
                absent: [absentUUID], order: O.optional(O.uuid)),
            .comparable("amount", \.amount, stored: decimals, absent: absentDecimals, order: O.of),
            .comparable(
                "indexedAmount", \.indexedAmount, indexed: true, stored: decimals, absent: absentDecimals,
                order: O.of),
            .equatable(
                "optionalAmount", \.optionalAmount, stored: optional(decimals), absent: absentDecimals,
                order: O.optional(O.of)),
            .equatable(
                "indexedOptionalAmount", \.indexedOptionalAmount, indexed: true, stored: optional(decimals),
                absent: absentDecimals, order: O.optional(O.of)),
            .equatable(
                "project", \.project, stored: projects, absent: [Link(999)],
                order: O.optional(O.link(O.of))),
            // Links to keys past the limits: no object can have them.
            .equatable(
                "owner", \.owner, stored: owners,
                absent: [Link("nobody"), Link(KeyLimits.string(499)), Link(KeyLimits.string(511))],
                order: O.optional(O.link(O.string))),
        ]
    }()

    func randomItem(id: Int, _ random: inout SplitMix64) -> OracleItem {
        var item = OracleItem(id: id)
        for column in columns { column.assign(&item, &random) }
        return item
    }

    /// Orders two items by a column, ties by primary key: the documented
    /// order of `sorted(by:)`, whose descending order is the exact reverse.
    func precedes(_ a: OracleItem, _ b: OracleItem, by column: Int) -> Bool {
        let order = columns[column].compare(a, b)
        return order != 0 ? order < 0 : a.id < b.id
    }

    /// The order of a query without `sorted(by:)`, as documented: index
    /// order (by value, then primary key) when an indexed `where` chooses
    /// the walk, else primary-key order. The walk is chosen by an equality
    /// on the primary key, else on an index, else a range on the primary
    /// key, else on an index (the property declared first in the model):
    /// only that last case orders by value.
    func unsortedOrder(_ conditions: [OracleCondition]) -> Int? {
        let chosen = conditions.filter { $0.drives && columns[$0.column].isIndexed }
        if chosen.contains(where: \.isEquality) || chosen.contains(where: { columns[$0.column].isPrimaryKey }) {
            return nil
        }
        return chosen.map(\.column).min()
    }

    /// Asks `trials` random questions of `tx`, each of a typed query and
    /// of a dynamic collection, and compares each answer with the same
    /// question asked of `items`. `between` runs before each question
    /// (writes, in a write transaction). Returns false after the first
    /// question answered wrong.
    func ask(
        _ tx: ReadTransaction, trials: Int, _ random: inout SplitMix64, seed: UInt64, _ phase: String,
        items: () -> [OracleItem], between: (inout SplitMix64) throws -> Void = { _ in }
    ) throws -> Bool {
        for trial in 0 ..< trials {
            try between(&random)
            let context = "STRATA_QUERY_SEED=\(seed), \(phase) trial \(trial)"
            // One question in three is a #Predicate.
            let asked =
                Int.random(in: 0 ..< 3, using: &random) == 0
                ? try askPredicate(tx, items(), &random, context) : try askBoth(tx, items(), &random, context)
            guard asked else { return false }
        }
        return true
    }

    /// Records an issue when `answer` is not `expected`.
    func check<T: Equatable>(
        _ answer: T, _ expected: T, _ what: String, _ question: String, _ correct: inout Bool
    ) {
        guard answer != expected else { return }
        correct = false
        Issue.record("\(question): \(what) is \(answer), expected \(expected)")
    }

    /// One random question — up to two `where`s, maybe a filter, a sort
    /// and a limit — asked of the typed API and of the dynamic one.
    func askBoth(_ tx: ReadTransaction, _ all: [OracleItem], _ random: inout SplitMix64, _ context: String)
        throws -> Bool
    {
        var query = try tx.objects(OracleItem.self)
        var collection = try tx.objects("OracleItem")
        var conditions: [OracleCondition] = []
        for _ in 0 ..< Int.random(in: 0 ... 2, using: &random) {
            let column = Int.random(in: columns.indices, using: &random)
            let question = columns[column].question(column, &random)
            query = question.typed(query)
            collection = try question.dynamic(collection)
            conditions.append(question.condition)
        }
        var expected = all.filter { item in conditions.allSatisfy { $0.test(item) } }
        var described = conditions.map(\.description)
        if Int.random(in: 0 ..< 5, using: &random) == 0 {
            query = query.filter { $0.id % 3 != 0 }
            collection = collection.filter { $0["id"].int! % 3 != 0 }
            expected = expected.filter { $0.id % 3 != 0 }
            described.append("filter id % 3 != 0")
        }
        return try orderCutAndCheck(query, collection, expected, conditions, described, &random, context)
    }

    /// Maybe sorts and limits a question (typed, and dynamic when there is
    /// a collection) whose `where`s are `conditions` and whose matching
    /// items are `expected`, then checks the answers.
    func orderCutAndCheck(
        _ query: ModelQuery<OracleItem>, _ collection: ObjectCollection?, _ expected: [OracleItem],
        _ conditions: [OracleCondition], _ described: [String], _ random: inout SplitMix64, _ context: String
    ) throws -> Bool {
        var (query, collection, expected, described) = (query, collection, expected, described)
        if Bool.random(using: &random) {
            let column = Int.random(in: columns.indices, using: &random)
            let ascending = Bool.random(using: &random)
            query = columns[column].sorted(query, ascending)
            collection = try collection.map { try columns[column].sorted($0, ascending: ascending) }
            expected.sort { precedes($0, $1, by: column) }
            if !ascending { expected.reverse() }
            described.append("sorted by \(columns[column].name)\(ascending ? "" : " descending")")
        } else if let column = unsortedOrder(conditions) {
            expected.sort { precedes($0, $1, by: column) }
        }
        if Int.random(in: 0 ..< 3, using: &random) == 0 {
            let limit = Int.random(in: 0 ... 12, using: &random)
            query = query.limit(limit)
            collection = collection?.limit(limit)
            expected = Array(expected.prefix(limit))
            described.append("limit \(limit)")
        }
        let question = "\(context): \(described.joined(separator: ", "))".replacing(Self.long, with: "n×515")
        return try checkAnswers(query, collection, expected, question)
    }

    /// Compares the answers of a typed query and, when there is one, a
    /// dynamic collection with `expected`; false after a wrong one.
    func checkAnswers(
        _ query: ModelQuery<OracleItem>, _ collection: ObjectCollection?, _ expected: [OracleItem], _ question: String
    ) throws -> Bool {
        var correct = true
        let values = try query.array()
        check(values.map(\.id), expected.map(\.id), "the ids of array()", question, &correct)
        if correct {
            check(values.map(\.fingerprint), expected.map(\.fingerprint), "array()", question, &correct)
        }
        check(try query.count, expected.count, "count", question, &correct)
        check(try query.first()?.id, expected.first?.id, "the id of first()", question, &correct)
        check(try query.isEmpty, expected.isEmpty, "isEmpty", question, &correct)
        guard let collection else { return correct }

        let dynamic = "\(question) (dynamic)"
        let ids = expected.map { Value.int(Int64($0.id)) }
        check(try collection.map(\.primaryKey), ids, "the keys of map", dynamic, &correct)
        check(try collection.array().map(\.primaryKey), ids, "the keys of array()", dynamic, &correct)
        check(try collection.count, ids.count, "count", dynamic, &correct)
        check(try collection.first()?.primaryKey, ids.first, "the key of first()", dynamic, &correct)
        check(try collection.isEmpty, ids.isEmpty, "isEmpty", dynamic, &correct)
        return correct
    }
}

/// Every query operator on every stored kind, typed and dynamic, asked of
/// the database and of a plain Swift array, in both modes, in a write
/// transaction between random writes and in a read transaction after it.
@Suite(.temporaryFolder) struct QueryOracleTests {
    let folder = TemporaryFolder.current

    func open(_ mode: Database.Mode) throws -> Database {
        var config = Database.Configuration(
            path: folder.path(), models: [OracleItem.self, OracleProject.self, OracleOwner.self, OracleKeyed.self])
        config.durability = .noSync
        config.mode = mode
        return try Database(configuration: config)
    }

    /// The seed of a run: `STRATA_QUERY_SEED` when set, to replay a
    /// failure, else one per mode.
    static func seed(_ mode: Database.Mode) -> UInt64 {
        if let text = ProcessInfo.processInfo.environment["STRATA_QUERY_SEED"], let seed = UInt64(text) {
            return seed
        }
        return mode == .local ? 0x51_7A7A : 0x51_7A7B
    }

    @Test(arguments: Fixtures.modes)
    func everyOperatorOnEveryKindAgreesWithAnArray(mode: Database.Mode) throws {
        let seed = Self.seed(mode)
        var random = SplitMix64(seed: seed)
        let oracle = QueryOracle()
        let db = try open(mode)
        var items: [Int: OracleItem] = [:]
        func sorted() -> [OracleItem] { items.values.sorted { $0.id < $1.id } }
        var correct = true
        try db.write { tx in
            for id in QueryOracle.projects { try tx.insert(OracleProject(id: id)) }
            for handle in QueryOracle.owners { try tx.insert(OracleOwner(handle: handle)) }
            for id in QueryOracle.ids.shuffled(using: &random).prefix(150) {
                items[id] = oracle.randomItem(id: id, &random)
                try tx.insert(items[id]!)
            }
            // Queries in the write transaction see its own writes.
            correct = try oracle.ask(tx, trials: 240, &random, seed: seed, "write", items: sorted) { random in
                for _ in 0 ..< Int.random(in: 1 ... 3, using: &random) {
                    let id = QueryOracle.ids.randomElement(using: &random)!
                    switch (Int.random(in: 0 ..< 4, using: &random), items[id]) {
                    case (0, nil):
                        items[id] = oracle.randomItem(id: id, &random)
                        try tx.insert(items[id]!)
                    case (1, var item?):
                        for _ in 0 ..< Int.random(in: 1 ... 4, using: &random) {
                            oracle.columns.randomElement(using: &random)!.assign(&item, &random)
                        }
                        items[id] = item
                        try tx.update(item)
                    case (2, _?):
                        items[id] = nil
                        #expect(try tx.delete(OracleItem.self, primaryKey: id))
                    default:
                        items[id] = oracle.randomItem(id: id, &random)
                        try tx.upsert(items[id]!)
                    }
                }
            }
        }
        // The first wrong answer is enough: the later ones would repeat it.
        guard correct else { return }
        try db.read { tx in
            _ = try oracle.ask(tx, trials: 240, &random, seed: seed, "read", items: sorted)
        }
    }

    /// String keys and indexed values at and past every documented length
    /// limit, written, looked up, deleted and asked of typed queries and
    /// dynamic collections between random writes, and compared with a
    /// dictionary: a key too long to store names no object, a value past
    /// an index key's 510 bytes is still told apart.
    @Test(arguments: Fixtures.modes)
    func keysAndValuesAtAndPastTheLengthLimitsAgreeWithADictionary(mode: Database.Mode) throws {
        let seed = Self.seed(mode) ^ 0x4B_4559
        var random = SplitMix64(seed: seed)
        let db = try open(mode)
        var stored: [String: OracleKeyed] = [:]
        let asked = KeyLimits.storable + KeyLimits.tooLong
        var correct = true
        try db.write { tx in
            for trial in 0 ..< 400 where correct {
                let context = "STRATA_QUERY_SEED=\(seed), keys write trial \(trial)"
                let key = asked.randomElement(using: &random)!
                let fits = key.utf8.count <= KeyLimits.longestKey
                switch Int.random(in: 0 ..< 5, using: &random) {
                case 0, 1:
                    let item = OracleKeyed(
                        key: key, tag: asked.randomElement(using: &random)!, text: asked.randomElement(using: &random)!)
                    if fits {
                        try tx.upsert(item)
                        stored[key] = item
                    } else {
                        _ = expectStrataError(.keyTooLarge) { try tx.upsert(item) }
                    }
                case 2:
                    let deleted =
                        try Bool.random(using: &random)
                        ? tx.delete(OracleKeyed.self, primaryKey: key) : tx.delete("OracleKeyed", key: .string(key))
                    let existed = stored.removeValue(forKey: key) != nil
                    if deleted != existed {
                        Issue.record("\(context): delete of a key of \(key.utf8.count) bytes answered \(deleted)")
                        correct = false
                    }
                default:
                    break
                }
                correct = try correct && KeyLimits.ask(tx, stored, asked, &random, context)
            }
        }
        guard correct else { return }
        try db.read { tx in
            for trial in 0 ..< 200 {
                guard
                    try KeyLimits.ask(tx, stored, asked, &random, "STRATA_QUERY_SEED=\(seed), keys read trial \(trial)")
                else { return }
            }
        }
    }
}

@Model(name: "OracleKeyed") struct OracleKeyed {
    @PrimaryKey var key: String
    @Indexed var tag = ""
    var text = ""
}

/// Strings at and around the documented length limits (docs/FileFormat.md):
/// a primary key is at most 511 bytes, so a string key at most 510 UTF-8
/// bytes (498 in a sync-enabled file, whose change log adds 12); an index
/// key keeps the first 510 bytes of a string.
enum KeyLimits {
    static let longestKey = 510

    /// A string of `bytes` ASCII bytes.
    static func string(_ bytes: Int) -> String { String(repeating: "k", count: bytes) }

    /// Keys every file takes: short ones, and lengths around each limit,
    /// one of 510 bytes of two-byte characters.
    static let storable =
        ["", "a", "k", "l", "é"] + [497, 498, 499, 500, 509, 510].map(string) + [String(repeating: "é", count: 255)]

    /// Keys no file takes: past 510 bytes, one by a two-byte character
    /// that would end past the limit.
    static let tooLong = [511, 512, 600].map(string) + [String(repeating: "é", count: 256), string(509) + "é"]

    /// One random question on the key or the indexed tag — a lookup, an
    /// equality, a set, a range of each kind or a prefix — asked of a
    /// typed query and of a dynamic collection, and of `stored`. False
    /// after a wrong answer.
    static func ask(
        _ tx: ReadTransaction, _ stored: [String: OracleKeyed], _ asked: [String], _ random: inout SplitMix64,
        _ context: String
    ) throws -> Bool {
        let onKey = Bool.random(using: &random)
        let (name, keyPath) = onKey ? ("key", \OracleKeyed.key) : ("tag", \OracleKeyed.tag)
        let typed = try tx.objects(OracleKeyed.self)
        let dynamic = try tx.objects("OracleKeyed")
        var a = asked.randomElement(using: &random)!
        var b = asked.randomElement(using: &random)!
        if DocumentedOrder.string(b, a) < 0 { swap(&a, &b) }
        let order = DocumentedOrder.string
        let described: String
        let test: (String) -> Bool
        var query: ModelQuery<OracleKeyed>
        var collection: ObjectCollection
        switch Int.random(in: 0 ..< 9, using: &random) {
        case 0:
            described = "lookup"
            let found = try tx.object(OracleKeyed.self, primaryKey: a)?.tag
            let foundDynamic = try tx.object("OracleKeyed", key: .string(a))?["tag"]
            guard found == stored[a]?.tag, foundDynamic == stored[a].map({ .string($0.tag) }) else {
                Issue.record(
                    "\(context): a lookup of a key of \(a.utf8.count) bytes found \(String(describing: found))")
                return false
            }
            return true
        case 1:
            (described, test) = ("== a", { order($0, a) == 0 })
            (query, collection) = (typed.where(keyPath, equals: a), dynamic.where(name, equals: .string(a)))
        case 2:
            (described, test) = ("in [a, b]", { order($0, a) == 0 || order($0, b) == 0 })
            (query, collection) = (
                typed.where(keyPath, in: [a, b]), dynamic.where(name, in: [.string(a), .string(b)])
            )
        case 3:
            (described, test) = ("a ..< b", { order($0, a) >= 0 && order($0, b) < 0 })
            (query, collection) = (typed.where(keyPath, in: a ..< b), dynamic.where(name, in: a ..< b))
        case 4:
            (described, test) = ("a ... b", { order($0, a) >= 0 && order($0, b) <= 0 })
            (query, collection) = (typed.where(keyPath, in: a ... b), dynamic.where(name, in: a ... b))
        case 5:
            (described, test) = ("a...", { order($0, a) >= 0 })
            (query, collection) = (typed.where(keyPath, in: a...), dynamic.where(name, in: a...))
        case 6:
            (described, test) = ("...b", { order($0, b) <= 0 })
            (query, collection) = (typed.where(keyPath, in: ...b), dynamic.where(name, in: ...b))
        case 7:
            (described, test) = ("..<b", { order($0, b) < 0 })
            (query, collection) = (typed.where(keyPath, in: ..<b), dynamic.where(name, in: ..<b))
        default:
            (described, test) = ("has prefix a", { $0.utf8.starts(with: a.utf8) })
            (query, collection) = (typed.where(keyPath, hasPrefix: a), dynamic.where(name, hasPrefix: a))
        }
        // Key order, or index order (by tag, then key) for a `where` on
        // the indexed tag; or sorted by key, backward, for one on the key,
        // which walks the records from the range's upper bound.
        let descending = onKey && Bool.random(using: &random)
        var expected = stored.values.filter { test($0[keyPath: keyPath]) }.sorted { x, y in
            let byTag = onKey ? 0 : order(x.tag, y.tag)
            return byTag != 0 ? byTag < 0 : order(x.key, y.key) < 0
        }.map(\.key)
        if descending {
            expected.reverse()
            query = query.sorted(by: \.key, ascending: false)
            collection = collection.sorted(by: "key", ascending: false)
        }
        let lengths = "a: \(a.utf8.count) bytes, b: \(b.utf8.count) bytes"
        let question = "\(context): \(name) \(described) (\(lengths))\(descending ? ", sorted by key descending" : "")"
        let keys = try query.map(\.key)
        let dynamicKeys = try collection.map { $0["key"].string ?? "?" }
        guard keys == expected, dynamicKeys == expected, try query.count == expected.count,
            try collection.count == expected.count
        else {
            Issue.record(
                "\(question): found \(keys.map(\.utf8.count)), expected \(expected.map(\.utf8.count)) (key lengths)")
            return false
        }
        return true
    }
}
