import Foundation
import Testing

@testable import Strata

/// A small file with every kind of relationship: to-one links under each
/// delete rule, a list of links, a list of strings, embedded objects
/// (optional, nested, in a list) and a type with automatic ids. The
/// command tests inspect it, and `Fixtures/format1-relationships.strata`
/// was written from it.
enum RelationshipFixtures {
    static let schema = Schema([
        ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property("name", .string)
            Property.list("friends", linksTo: "Person")
            Property.embedded("address", "Address")
            Property.list("nicknames", of: .string)
            Property.list("past", embedded: "Address")
        },
        ObjectSchema("Dog", primaryKey: "name") {
            Property("name", .string)
            Property.link("owner", to: "Person", onDelete: .cascade)
            Property.link("vet", to: "Vet", onDelete: .deny)
            Property.list("tags", of: .string)
        },
        ObjectSchema("Vet") {
            Property("name", .string)
        },
        ObjectSchema("Address", embedded: true) {
            Property("street", .string)
            Property("city", .string, default: "Leeds")
            Property.embedded("geo", "Geo")
        },
        ObjectSchema("Geo", embedded: true) {
            Property("lat", .double)
            Property("lon", .double)
        },
    ])

    /// Creates the file at `path`: Vet 1; Ada (1) with an address, a past
    /// address and Charles as a friend; Charles (2), Ada's friend, with a
    /// nickname; Annabella (3) alone; Ada's dogs Rex (with the vet) and
    /// Fido; Stray, nobody's. Closes it.
    static func seed(_ path: String, mode: Database.Mode = .local) throws {
        let db = try Database(configuration: Fixtures.configuration(path, schema: schema, mode: mode))
        defer { db.close() }
        try db.write { tx throws in
            _ = try tx.insert("Vet", ["name": "Dr. Who"])
            try tx.insert(
                "Person",
                [
                    "id": 1, "name": "Ada", "address": ["street": "1 Main St", "geo": ["lat": 1.5, "lon": -0.5]],
                    "past": [.object(["street": "2 Old Rd", "city": "London"])],
                ])
            try tx.insert("Person", ["id": 2, "name": "Charles", "friends": [.link(1)], "nicknames": ["Chuck"]])
            try tx.update("Person", key: 1, ["friends": [.link(2)]])
            try tx.insert("Person", ["id": 3, "name": "Annabella"])
            try tx.insert("Dog", ["name": "Rex", "owner": .link(1), "vet": .link(1), "tags": ["good", "loud"]])
            try tx.insert("Dog", ["name": "Fido", "owner": .link(1)])
            try tx.insert("Dog", ["name": "Stray"])
        }
    }

    /// Every object of the seeded file, by type, in key order: what
    /// reading it back must give.
    static let seeded: [String: [[String: Value]]] = [
        "Person": [
            [
                "id": 1, "name": "Ada", "friends": [.link(2)],
                "address": .object(["street": "1 Main St", "city": "Leeds", "geo": .object(["lat": 1.5, "lon": -0.5])]),
                "nicknames": [], "past": [.object(["street": "2 Old Rd", "city": "London", "geo": .null])],
            ],
            ["id": 2, "name": "Charles", "friends": [.link(1)], "address": .null, "nicknames": ["Chuck"], "past": []],
            ["id": 3, "name": "Annabella", "friends": [], "address": .null, "nicknames": [], "past": []],
        ],
        "Dog": [
            ["name": "Fido", "owner": .link(1), "vet": .null, "tags": []],
            ["name": "Rex", "owner": .link(1), "vet": .link(1), "tags": ["good", "loud"]],
            ["name": "Stray", "owner": .null, "vet": .null, "tags": []],
        ],
        "Vet": [["name": "Dr. Who"]],
    ]

    /// Every object of every type of `db`, by type, in key order.
    static func contents(_ db: Database) throws -> [String: [[String: Value]]] {
        try db.read { tx throws in
            try Dictionary(uniqueKeysWithValues: tx.typeNames.map { ($0, try tx.objects($0).map(\.values)) })
        }
    }
}
