import Foundation

@_spi(Hub) @testable import Strata

/// The three app versions of the convergence fuzz's dataset, written as
/// schemas so that each file's app is what its version declares and no
/// more: version 1 has `Item` and `Person` (with an embedded `Address`);
/// version 2 adds `Item.note` and the type `Label`, which a version 1 file
/// learns and keeps; version 3 adds `Item.score`, the list `Item.ranks`
/// and `Address.zip`, a field inside an embedded object that older files
/// learn and keep.
///
/// Every default is its type's empty value, the value an app that keeps a
/// field without declaring it stores for it: so "never written" reads the
/// same in every file, whichever app made the object.
enum SyncFuzzSchema {
    /// The types and the properties each version's app writes, key included.
    static func properties(_ type: String, version: Int) -> [String] {
        switch type {
        case "Item":
            return ["id", "title", "count", "owner", "tags"] + (version >= 2 ? ["note"] : [])
                + (version >= 3 ? ["score", "ranks"] : [])
        case "Person": return ["id", "name", "home"]
        default: return ["id", "text"]
        }
    }

    /// The fields of the embedded `Address` each version's app writes.
    static func addressFields(version: Int) -> [String] {
        ["street", "city"] + (version >= 3 ? ["zip"] : [])
    }

    /// The schema of app version `version` (1, 2 or 3).
    static func schema(version: Int) -> Schema {
        var item: [Property] = [
            Property("id", .int),
            Property("title", .string, default: .string("")),
            Property("count", .int, default: .int(0)),
            Property.link("owner", to: "Person"),
            Property.list("tags", of: .string),
        ]
        if version >= 2 { item.append(Property("note", .string, optional: true)) }
        if version >= 3 {
            item.append(Property("score", .double, default: .double(0)))
            item.append(Property.list("ranks", of: .int))
        }
        var types = [
            ObjectSchema(
                "Address", embedded: true,
                properties: addressFields(version: version).map { Property($0, .string, default: .string("")) }),
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("name", .string, default: .string(""))
                Property.embedded("home", "Address")
            },
            ObjectSchema("Item", primaryKey: "id", properties: item),
        ]
        if version >= 2 {
            types.append(
                ObjectSchema("Label", primaryKey: "id") {
                    Property("id", .int)
                    Property("text", .string, default: .string(""))
                })
        }
        return Schema(types)
    }
}
