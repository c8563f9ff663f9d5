/// What deleting an object does to one object that links to it. Read from
/// a link's delete rule by ``ObjectTable/Field/actionOnDeletedTarget``,
/// the one place that interprets the rules; every delete (the engine's,
/// `deleteAll`, and a migration's deleted objects and types) acts on it.
enum LinkAction: Equatable {
    /// The link becomes null; a list drops the deleted object
    /// (``DeleteRule/nullify``).
    case unlink
    /// The linking object is deleted too (``DeleteRule/cascade``).
    case delete
    /// The delete is refused while the linking object stays
    /// (``DeleteRule/deny``).
    case refuse
}

extension ObjectTable.Field {
    /// What deleting the object this link field points to does to the
    /// object holding the link. A list of links never cascades (a schema
    /// that asks for it is refused): a list drops the element instead.
    var actionOnDeletedTarget: LinkAction {
        switch deleteRule {
        case .nullify: .unlink
        case .cascade: type == .list ? .unlink : .delete
        case .deny: .refuse
        }
    }
}

/// The consequences of deleting objects, worked out before anything is
/// written: every object that goes (those deleted and those their deletes
/// cascade to, transitively), the links to unlink in objects that stay,
/// and the links that refuse. A refusal by an object that goes anyway is
/// no refusal, and an object that goes is not unlinked.
struct DeletePlan {
    /// An object, by its table and record key.
    typealias Object = (table: ObjectTable, key: [UInt8])
    /// A link of `field` in the object `source` of `table` to the object
    /// with record key `target` of `targetTable`.
    typealias Reference = (
        table: ObjectTable, field: ObjectTable.Field, source: [UInt8], targetTable: ObjectTable, target: [UInt8]
    )

    /// The objects deleted, the given ones first.
    private(set) var doomed: [Object] = []
    /// The links to unlink, in objects that stay.
    private(set) var unlinks: [Reference] = []
    /// The links that refuse the delete, from objects that stay.
    private(set) var refusals: [Reference] = []

    private struct Identity: Hashable {
        let type: TypeID
        let key: [UInt8]
    }

    /// - Parameters:
    ///   - objects: The objects deleted.
    ///   - incoming: The link fields, with their tables, that point to a
    ///     type (by name).
    ///   - linking: The record keys of the objects whose `field` links to
    ///     the object with record key `target`.
    init(
        deleting objects: [Object], incoming: (String) -> [(table: ObjectTable, field: ObjectTable.Field)],
        linking: (_ field: ObjectTable.Field, _ target: [UInt8]) throws -> [[UInt8]]
    ) throws {
        var seen: Set<Identity> = []
        for object in objects where seen.insert(Identity(type: object.table.type.id, key: object.key)).inserted {
            doomed.append(object)
        }
        var unlinks: [Reference] = []
        var refusals: [Reference] = []
        var next = 0
        while next < doomed.count {
            let (target, targetKey) = doomed[next]
            next += 1
            for (source, field) in incoming(target.name) {
                let action = field.actionOnDeletedTarget
                for sourceKey in try linking(field, targetKey) {
                    switch action {
                    case .delete:
                        if seen.insert(Identity(type: source.type.id, key: sourceKey)).inserted {
                            doomed.append((source, sourceKey))
                        }
                    case .unlink:
                        unlinks.append((source, field, sourceKey, target, targetKey))
                    case .refuse:
                        refusals.append((source, field, sourceKey, target, targetKey))
                    }
                }
            }
        }
        // Only now is every object that goes known: a cascade may reach an
        // object that refused or was to be unlinked before.
        func stays(_ link: Reference) -> Bool { !seen.contains(Identity(type: link.table.type.id, key: link.source)) }
        self.unlinks = unlinks.filter(stays)
        self.refusals = refusals.filter(stays)
    }

    /// One item per refusing link, at most 20 and a count of the rest,
    /// for the error's ``StrataError/items``.
    var refusalItems: [String] {
        StrataError.listed(
            refusals.map { link in
                link.source.withUnsafeBytes {
                    "'\(link.table.name)' \(link.table.describeKey($0)) (through '\(link.table.name).\(link.field.name)', delete rule deny)"
                }
            })
    }
}
