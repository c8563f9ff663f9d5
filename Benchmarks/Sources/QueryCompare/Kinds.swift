import Foundation
import GRDB
import Strata

/// What a trial found: how many values, and the sum of their ids, so that
/// two engines returning different objects (or a different page) disagree.
struct Answer: Equatable {
    var count = 0
    var idSum = 0

    init(count: Int = 0) { self.count = count }

    init(ids: some Sequence<Int>) {
        for id in ids {
            count += 1
            idSum &+= id
        }
    }

    static func + (a: Answer, b: Answer) -> Answer {
        var sum = a
        sum.count += b.count
        sum.idSum &+= b.idSum
        return sum
    }
}

/// One query kind: the same question asked `queries` times per trial (the
/// `i`-th with its own parameters), through Strata's typed API and through
/// GRDB's query interface.
struct Kind {
    let label: String
    let queries: Int
    let strata: (ReadTransaction, Int) throws -> Answer
    let grdb: (GRDB.Database, Int) throws -> Answer
}

/// The smallest string above every string that starts with `prefix`
/// (ASCII): GRDB's indexed form of a prefix test is the range
/// `prefix ..< upperBound`, since SQLite's `LIKE` is case-insensitive and
/// so cannot walk an index with the default collation.
private func upperBound(ofPrefix prefix: String) -> String {
    let last = prefix.unicodeScalars.last!
    return String(prefix.dropLast()) + String(UnicodeScalar(last.value + 1)!)
}

extension Dataset {
    func age(_ i: Int) -> Int { i * 37 % Self.ages }
    func owner(_ i: Int) -> Int { i &* 7919 % owners }
    /// A four-digit name prefix: `n1234` matches `n1234` and `n12340` to
    /// `n12349` when there are at least 12,350 names (1M people).
    func prefix(_ i: Int) -> String { "n\(1000 + i * 13 % 4000)" }
    func nameSet(_ i: Int) -> [String] { (0 ..< 10).map { "n\((i * 10 + $0 * 97) % names)" } }
    func offset(_ i: Int) -> Int { i * 2_503 % max(1, n / 20) }

    /// The questions that two kinds ask of one engine in the same words.
    func strataPrefix(_ tx: ReadTransaction, _ i: Int) throws -> Answer {
        try Answer(ids: tx.objects(Person.self).where(\.name, hasPrefix: prefix(i)).array().lazy.map(\.id))
    }

    func grdbAgeEquals(_ db: GRDB.Database, _ i: Int) throws -> Answer {
        try Answer(ids: PersonRecord.filter(Column("age") == age(i)).fetchAll(db).lazy.map(\.id))
    }

    func grdbAgeAndScore(_ db: GRDB.Database, _ i: Int) throws -> Answer {
        try Answer(
            ids: PersonRecord.filter(Column("age") == age(i) && Column("score") < 500).fetchAll(db).lazy.map(\.id))
    }

    var kinds: [Kind] {
        [
            Kind(
                label: "index equality → records (`age == a`)", queries: 20,
                strata: { tx, i in
                    try Answer(ids: tx.objects(Person.self).where(\.age, equals: age(i)).array().lazy.map(\.id))
                },
                grdb: grdbAgeEquals),
            Kind(
                label: "index equality → records, `#Predicate`", queries: 20,
                strata: { tx, i in
                    let a = age(i)
                    return try Answer(
                        ids: tx.objects(Person.self).filter(#Predicate { $0.age == a }).array().lazy.map(\.id))
                },
                grdb: grdbAgeEquals),
            Kind(
                label: "index equality → count", queries: 8_000,
                strata: { tx, i in Answer(count: try tx.objects(Person.self).where(\.age, equals: age(i)).count) },
                grdb: { db, i in Answer(count: try PersonRecord.filter(Column("age") == age(i)).fetchCount(db)) }),
            Kind(
                label: "index range → records (`age in a..<a+2`)", queries: 10,
                strata: { tx, i in
                    try Answer(
                        ids: tx.objects(Person.self).where(\.age, in: age(i) ..< age(i) + 2).array().lazy.map(\.id))
                },
                grdb: { db, i in
                    let range = age(i) ..< age(i) + 2
                    return try Answer(
                        ids: PersonRecord.filter(range.contains(Column("age"))).fetchAll(db).lazy.map(\.id))
                }),
            Kind(
                label: "string prefix on an index → records", queries: 200,
                strata: strataPrefix,
                grdb: { db, i in
                    let p = prefix(i)
                    let request = PersonRecord.filter(Column("name") >= p && Column("name") < upperBound(ofPrefix: p))
                    return try Answer(ids: request.fetchAll(db).lazy.map(\.id))
                }),
            Kind(
                label: "string prefix, GRDB by `like` (no index)", queries: 20,
                strata: strataPrefix,
                grdb: { db, i in
                    try Answer(
                        ids: PersonRecord.filter(Column("name").like("\(prefix(i))%")).fetchAll(db).lazy.map(\.id))
                }),
            Kind(
                label: "`in:` ten names on an index → records", queries: 200,
                strata: { tx, i in
                    try Answer(ids: tx.objects(Person.self).where(\.name, in: nameSet(i)).array().lazy.map(\.id))
                },
                grdb: { db, i in
                    try Answer(
                        ids: PersonRecord.filter(nameSet(i).contains(Column("name"))).fetchAll(db).lazy.map(\.id))
                }),
            Kind(
                label: "not-equals on an index → count (`age != a`)", queries: 5,
                strata: { tx, i in Answer(count: try tx.objects(Person.self).where(\.age, notEquals: age(i)).count) },
                grdb: { db, i in Answer(count: try PersonRecord.filter(Column("age") != age(i)).fetchCount(db)) }),
            Kind(
                label: "OR of two index equalities → records, `#Predicate`", queries: 10,
                strata: { tx, i in
                    let (a, b) = (age(i), (age(i) + 50) % Self.ages)
                    return try Answer(
                        ids: tx.objects(Person.self).filter(#Predicate { $0.age == a || $0.age == b }).array().lazy
                            .map(\.id))
                },
                grdb: { db, i in
                    let (a, b) = (age(i), (age(i) + 50) % Self.ages)
                    return try Answer(
                        ids: PersonRecord.filter(Column("age") == a || Column("age") == b).fetchAll(db).lazy.map(\.id))
                }),
            Kind(
                label: "index equality && plain range → records, `#Predicate`", queries: 20,
                strata: { tx, i in
                    let a = age(i)
                    return try Answer(
                        ids: tx.objects(Person.self).filter(#Predicate { $0.age == a && $0.score < 500 }).array().lazy
                            .map(\.id))
                },
                grdb: grdbAgeAndScore),
            Kind(
                label: "index equality && plain range → records, key paths", queries: 20,
                strata: { tx, i in
                    let query = try tx.objects(Person.self).where(\.age, equals: age(i)).where(\.score, in: ..<500)
                    return try Answer(ids: query.array().lazy.map(\.id))
                },
                grdb: grdbAgeAndScore),
            Kind(
                label: "plain property, full scan → records (`score == s`)", queries: 5,
                strata: { tx, i in
                    try Answer(
                        ids: tx.objects(Person.self).where(\.score, equals: i * 211 % 1000).array().lazy.map(\.id))
                },
                grdb: { db, i in
                    try Answer(
                        ids: PersonRecord.filter(Column("score") == i * 211 % 1000).fetchAll(db).lazy.map(\.id))
                }),
            Kind(
                label: "sort by `age`, `score` desc, offset + limit 20", queries: 20,
                strata: { tx, i in
                    let page = try tx.objects(Person.self)
                        .sorted(using: [SortDescriptor(\.age), SortDescriptor(\.score, order: .reverse)])
                        .offset(offset(i)).limit(20)
                    return try Answer(ids: page.array().lazy.map(\.id))
                },
                grdb: { db, i in
                    // Strata orders ties by primary key; so must GRDB, for the same page.
                    let page = PersonRecord.order(Column("age"), Column("score").desc, Column("id"))
                        .limit(20, offset: offset(i))
                    return try Answer(ids: page.fetchAll(db).lazy.map(\.id))
                }),
            Kind(
                label: "backlink count (pets of a person)", queries: 5_000,
                strata: { tx, i in
                    Answer(count: try tx.objects(Pet.self, linkingTo: owner(i), through: \.owner).count)
                },
                grdb: { db, i in Answer(count: try PetRecord.filter(Column("ownerId") == owner(i)).fetchCount(db)) }),
            Kind(
                label: "backlink query with a condition → records", queries: 5_000,
                strata: { tx, i in
                    let pets = try tx.objects(Pet.self, linkingTo: owner(i), through: \.owner).where(
                        \.weight, in: ..<15)
                    return try Answer(ids: pets.array().lazy.map(\.id))
                },
                grdb: { db, i in
                    let request = PetRecord.filter(Column("ownerId") == owner(i) && Column("weight") < 15)
                    return try Answer(ids: request.fetchAll(db).lazy.map(\.id))
                }),
        ]
    }
}
