import Foundation
import Strata

/// The observed object: a typed model in the shape `@Model` writes. `rank`
/// is indexed, `score` is not.
struct Item: Model, Sendable, Equatable {
    typealias Key = Int
    var id: Int
    var name: String
    var rank: Int
    var score: Int

    static let schema = ModelSchema<Item>(
        name: "Item",
        properties: [
            .init(\.id, "id", primaryKey: true),
            .init(\.name, "name"),
            .init(\.rank, "rank", indexed: true),
            .init(\.score, "score"),
        ])

    init(id: Int, name: String, rank: Int, score: Int) {
        self.id = id
        self.name = name
        self.rank = rank
        self.score = score
    }

    /// The table's object `id` of `n`: ranks are a permutation of 0..<n.
    init(_ id: Int, of n: Int) {
        self.init(id: id, name: Item.names[id % 1000], rank: Item.rank(id, of: n), score: id)
    }

    static let names = (0 ..< 1000).map { "Item\($0)" }

    /// A permutation of 0..<n when n is not a multiple of 7919 (a prime).
    static func rank(_ id: Int, of n: Int) -> Int { (id &* 7919) % n }

    func encode(to encoder: inout ModelEncoder) {
        encoder.encode(id)
        encoder.encode(name)
        encoder.encode(rank)
        encoder.encode(score)
    }

    init(from decoder: inout ModelDecoder) throws {
        id = try decoder.decode(Int.self)
        name = try decoder.decode(String.self)
        rank = try decoder.decode(Int.self)
        score = try decoder.decode(Int.self)
    }
}

/// A database of `n` items in `folder`, made afresh unless `reuse` and it
/// already holds `n` items.
func openItems(_ n: Int, in folder: String, reuse: Bool = false) throws -> Database {
    let path = folder + "/items-\(n).strata"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    if !reuse { for file in [path, path + "-lock"] { try? FileManager.default.removeItem(atPath: file) } }
    var configuration = Database.Configuration(path: path, models: [Item.self])
    configuration.durability = .noSync
    configuration.initialMapSize = 1 << 32
    // Item 4e asks for other processes' commits explicitly.
    configuration.externalChangeCheckInterval = nil
    let db = try Database(configuration: configuration)
    let count = try db.read { try $0.objects(Item.self).count }
    if count != n {
        try db.write { tx in
            try tx.deleteAll(Item.self)
            for id in 0 ..< n { _ = try tx.insert(Item(id, of: n)) }
        }
    }
    return db
}
