import Foundation
import Testing

@testable import Strata

@Embedded(name: "PriceTag") struct DecimalPriceTag: Equatable {
    var amount: Decimal
    var discount: Decimal?
}

/// A model with a decimal of every shape: indexed, optional, in a list, in
/// an embedded object and in a list of them, and with a default.
@Model(name: "Product") struct DecimalProduct: Equatable {
    @PrimaryKey var id: Int
    @Indexed var price: Decimal
    var cost: Decimal?
    var history: [Decimal] = []
    var tag: DecimalPriceTag = DecimalPriceTag(amount: 0)
    var tags: [DecimalPriceTag] = []
    var fee: Decimal = 2
}

/// `Decimal` as a stored kind, from models and the dynamic API to the
/// schema, migrations, `verify` and the command-line tool.
@Suite(.temporaryFolder) struct DecimalPropertyTests {
    let folder = TemporaryFolder.current

    static func d(_ text: String) -> Decimal { Decimal(string: text)! }

    func open(_ mode: Database.Mode = .local) throws -> Database {
        var config = Database.Configuration(path: folder.path(), models: [DecimalProduct.self])
        config.durability = .noSync
        config.mode = mode
        return try Database(configuration: config)
    }

    /// Prices 10, 1.5, 2, -3, -2.5, 2.50 (= 2.5), 1e20, 0.0001, by id 1 to 8.
    static let prices = ["10", "1.5", "2", "-3", "-2.5", "2.50", "1e20", "0.0001"].map(d)

    static func product(_ id: Int) -> DecimalProduct {
        let price = prices[id - 1]
        return DecimalProduct(
            id: id, price: price, cost: id.isMultiple(of: 2) ? price / 4 : nil, history: [price, price * 2, -price],
            tag: DecimalPriceTag(amount: price, discount: id == 3 ? d("0.15") : nil),
            tags: id == 1 ? [DecimalPriceTag(amount: d("1.01")), DecimalPriceTag(amount: d("-7"), discount: 1)] : [])
    }

    func seeded(_ mode: Database.Mode = .local) throws -> Database {
        let db = try open(mode)
        try db.write { tx in
            for id in 1 ... Self.prices.count { try tx.insert(Self.product(id)) }
        }
        return db
    }

    @Test(arguments: Fixtures.modes) func modelsWithDecimalsEverywhereRoundTrip(mode: Database.Mode) throws {
        do {
            let db = try seeded(mode)
            let read = try db.read { tx in try tx.objects(DecimalProduct.self).array() }
            #expect(read == (1 ... 8).map(Self.product))
        }
        let reopened = try open(mode)
        let read = try reopened.read { tx in try tx.objects(DecimalProduct.self).array() }
        #expect(read == (1 ... 8).map(Self.product))
        #expect(read[2].tag.discount == Self.d("0.15"))
        #expect(try reopened.verify() == [])
        // The dynamic API reads the same values.
        let dynamic = Value.object(try reopened.read { tx in try #require(try tx.object("Product", key: 3)).values })
        #expect(dynamic["price"].decimal == 2)
        #expect(dynamic["fee"] == .decimal(2))
        #expect(dynamic["tag"]["discount"] == .decimal(Self.d("0.15")))
        #expect(dynamic["history"] == .list([.decimal(2), .decimal(4), .decimal(-2)]))
    }

    @Test(arguments: Fixtures.modes) func indexedQueriesAndSortsFollowNumericOrder(mode: Database.Mode) throws {
        let db = try seeded(mode)
        try db.read { tx in
            let products = try tx.objects(DecimalProduct.self)
            func ids(_ query: ModelQuery<DecimalProduct>) throws -> [Int] { try query.map(\.id) }
            // 2.50 and 2.5 are one number, and one index key.
            #expect(try ids(products.where(\.price, equals: Self.d("2.5"))) == [6])
            #expect(try ids(products.where(\.price, equals: Self.d("2.500"))) == [6])
            #expect(try ids(products.where(\.price, equals: 2)) == [3])
            #expect(try ids(products.where(\.price, equals: Self.d("2.0"))) == [3])
            #expect(try ids(products.where(\.price, equals: 7)) == [])
            #expect(try ids(products.where(\.price, equals: .nan)) == [])
            // Ranges: 1.5 < 2 < 10, -3 < -2.5.
            #expect(try ids(products.where(\.price, in: Self.d("1.5") ... 10)) == [2, 3, 6, 1])
            #expect(try ids(products.where(\.price, in: Self.d("-3") ..< Self.d("-2.5"))) == [4])
            #expect(try ids(products.where(\.price, in: ..<0)) == [4, 5])
            #expect(try ids(products.where(\.price, in: Self.d("10")...)) == [1, 7])
            #expect(try ids(products.where(\.cost, equals: Self.d("0.5"))) == [])
            #expect(try ids(products.where(\.cost, equals: nil)) == [1, 3, 5, 7])
            // Sorted by value, ties by primary key.
            let ascending = try ids(products.sorted(by: \.price))
            #expect(ascending == [4, 5, 8, 2, 3, 6, 1, 7])
            #expect(try ids(products.sorted(by: \.price, ascending: false)) == ascending.reversed())
            // Nulls first; costs -0.75, 0.000025, 0.375, 0.625.
            #expect(try ids(products.sorted(by: \.cost)) == [1, 3, 5, 7, 4, 8, 2, 6])
            // The dynamic API: through the index, an integer literal given for a decimal.
            let dynamic = try tx.objects("Product")
            #expect(try dynamic.where("price", equals: .decimal(Self.d("2.50"))).map(\.primaryKey) == [6])
            #expect(try dynamic.where("price", equals: 2).map(\.primaryKey) == [3])
            #expect(try dynamic.where("fee", equals: 2).count == 8)
            #expect(try dynamic.where("cost", equals: .decimal(Self.d("0.625"))).map(\.primaryKey) == [6])
        }
    }

    @Test func aNaNIsRefusedNamingTheProperty() throws {
        let db = try open()
        let error = #expect(throws: StrataError.self) {
            try db.write { tx in try tx.insert(DecimalProduct(id: 1, price: .nan)) }
        }
        #expect(error?.code == .invalidValue)
        #expect(error?.message.contains("'Product.price' is decimal") == true)
        #expect(error?.message.contains("NaN") == true)
        let inList = #expect(throws: StrataError.self) {
            try db.write { tx in try tx.insert(DecimalProduct(id: 1, price: 1, history: [1, .nan])) }
        }
        #expect(inList?.code == .invalidValue)
        #expect(inList?.message.contains("element 1 of the list 'Product.history'") == true)
        let embedded = #expect(throws: StrataError.self) {
            try db.write { tx in try tx.insert(DecimalProduct(id: 1, price: 1, tag: DecimalPriceTag(amount: .nan))) }
        }
        #expect(embedded?.code == .invalidValue)
        let dynamic = #expect(throws: StrataError.self) {
            try db.write { tx in try tx.insert("Product", ["id": 1, "price": .decimal(.nan)]) }
        }
        #expect(dynamic?.code == .invalidValue)
        let query = #expect(throws: StrataError.self) {
            try db.read { tx in try tx.objects("Product").where("price", equals: .decimal(.nan)).count }
        }
        #expect(query?.code == .invalidValue)
        #expect(try db.read { tx in try tx.objects("Product").count } == 0)
    }

    @Test func theSchemaRecordsDecimalsAndTheirDefaults() throws {
        let schema = Schema([
            ObjectSchema("Account", primaryKey: "id") {
                Property("id", .int)
                Property("balance", .decimal, default: .decimal(Self.d("12.50")), indexed: true)
                Property("limit", .decimal, default: 100)
                Property("rate", .decimal, default: 0.25)
            }
        ])
        let encoded = try JSONEncoder().encode(schema)
        #expect(try JSONDecoder().decode(Schema.self, from: encoded) == schema)
        #expect(String(decoding: encoded, as: UTF8.self).contains("\"decimal\""))
        var config = Fixtures.configuration(folder.path(), schema: schema)
        config.durability = .noSync
        let db = try Database(configuration: config)
        try db.write { tx in try tx.insert("Account", ["id": 1]) }
        let values = try db.read { tx in try #require(try tx.object("Account", key: 1)).values }
        #expect(
            values == [
                "id": 1, "balance": .decimal(Self.d("12.5")), "limit": .decimal(100), "rate": .decimal(Self.d("0.25")),
            ])
        // The types that cannot be keys or indexes say so.
        #expect(!PropertyType.decimal.canBePrimaryKey)
        #expect(PropertyType.decimal.canBeIndexed)
        let keyed = Schema([ObjectSchema("Bad", primaryKey: "id") { Property("id", .decimal) }])
        let error = #expect(throws: StrataError.self) { try keyed.validate() }
        #expect(error?.message.contains("a primary key must be int, string or uuid") == true)
    }

    @Test func anAddedDecimalPropertyTakesItsDefault() throws {
        let path = folder.path()
        let v1 = ObjectSchema("Account", primaryKey: "id") { Property("id", .int) }
        let v2 = ObjectSchema("Account", primaryKey: "id") {
            Property("id", .int)
            Property("balance", .decimal, default: .decimal(Self.d("1.25")), indexed: true)
        }
        do {
            let db = try Database(configuration: Migrations.configuration(path, version: 1, [v1]))
            try db.write { tx in
                for id in 1 ... 3 { try tx.insert("Account", ["id": .int(Int64(id))]) }
            }
        }
        let db = try Database(configuration: Migrations.configuration(path, version: 2, [v2]))
        try db.read { tx in
            let balances = try tx.objects("Account").map { $0["balance"] }
            #expect(balances == Array(repeating: .decimal(Self.d("1.25")), count: 3))
            let found = try tx.objects("Account").where("balance", equals: .decimal(Self.d("1.250"))).count
            #expect(found == 3)
        }
        #expect(try db.verify() == [])
    }

    @Test func aTypeChangeToDecimalNeedsCodeLikeAnyOther() throws {
        let path = folder.path()
        let v1 = ObjectSchema("Account", primaryKey: "id") {
            Property("id", .int)
            Property("balance", .double)
        }
        let v2 = ObjectSchema("Account", primaryKey: "id") {
            Property("id", .int)
            Property("balance", .decimal)
        }
        do {
            let db = try Database(configuration: Migrations.configuration(path, version: 1, [v1]))
            try db.write { tx in try tx.insert("Account", ["id": 1, "balance": 2.5]) }
        }
        let error = #expect(throws: StrataError.self) {
            try Database(configuration: Migrations.configuration(path, version: 2, [v2]))
        }
        #expect(error?.code == .migrationRequired)
        #expect(error?.message.contains("'Account.balance' has been changed from 'double' to 'decimal'") == true)
        // A closure converts, as for any other type.
        let db = try Database(
            configuration: Migrations.configuration(path, version: 2, [v2]) { migration, _ in
                try migration.enumerateObjects(ofType: "Account") { old, new in
                    new?["balance"] = .decimal(Decimal(string: "\(old!["balance"].double!)")!)
                }
            })
        #expect(try db.read { tx in try tx.object("Account", key: 1)?["balance"] } == .decimal(Self.d("2.5")))
    }

    @Test func dumpWritesDecimalsAsExactText() throws {
        do { _ = try seeded() }
        let result = try StrataBinary.run(["dump", folder.path(), "--type", "Product", "--json"])
        #expect(result.status == 0)
        let output = result.output
        #expect(output.contains("\"price\":\"100000000000000000000\""))
        #expect(output.contains("\"price\":\"-2.5\""))
        #expect(output.contains("\"history\":[\"-3\",\"-6\",\"3\"]"))
        #expect(output.contains("\"discount\":\"0.15\""))
        let table = try StrataBinary.run(["dump", folder.path(), "--type", "Product"])
        #expect(table.output.contains("\"0.0001\""))
    }
}
