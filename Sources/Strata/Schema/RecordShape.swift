// @unchecked: immutable after init; its lookup's raw buffers are written in init, only read afterwards, and freed in deinit.
/// The compiled shape of one stored type at one schema version: its
/// fields in order, each with the stable id that records tag it with, its
/// name and its stored type, and the lookup from a name to a position.
///
/// Every place that turns names into positions reads a shape, so a name
/// means the same field everywhere:
///
/// - a table's shape (``init(_:)``) is the catalog's entry of the type,
///   in id order, the order records are written in; its positions are the
///   table's field positions, and embedded layouts are shapes of the same
///   kind;
/// - a model's shape at a declared version comes from a
///   ``FieldResolver``, in the model's declaration order, its ids resolved
///   across renames, so that two shapes of one type at different versions
///   pair their fields by id (``sourcePositions(in:)``).
///
/// Compiled once per table, layout, binding or migration walk, never per
/// object.
final class RecordShape: @unchecked Sendable {
    /// One field of the shape.
    struct Field: Sendable {
        /// The field's stable id, or ``unresolved`` for a name that no
        /// field of the version has.
        let id: PropertyID
        let property: Property
        var name: String { property.name }
    }

    /// The id of a field whose name the resolver did not know: it pairs
    /// with no other field, since the catalog's counters start at 1.
    static let unresolved = PropertyID(0)

    let typeName: String
    /// The fields, by position.
    let fields: [Field]
    /// Finds a position by name without hashing a `String`; its buffers
    /// are this shape's, freed in `deinit`. Readers on a hot path (a
    /// table's dynamic reads) keep a copy of the struct beside the shape.
    let lookup: FieldLookup

    /// The fields' ids, ascending, and beside each its position: an id is
    /// found by binary search (an embedded object's read looks up every
    /// field it stores).
    private let sortedIDs: [PropertyID]
    private let positionsByID: [Int]

    init(typeName: String, fields: [Field]) {
        self.typeName = typeName
        self.fields = fields
        self.lookup = FieldLookup(names: fields.map(\.name))
        let order = fields.indices.filter { fields[$0].id != RecordShape.unresolved }.sorted {
            fields[$0].id < fields[$1].id
        }
        self.sortedIDs = order.map { fields[$0].id }
        self.positionsByID = order
    }

    /// The shape of a catalog entry: its current properties sorted by id,
    /// the order records store them in.
    convenience init(_ type: CatalogType) {
        self.init(
            typeName: type.name,
            fields: type.properties.sorted { $0.id < $1.id }.map { Field(id: $0.id, property: $0.property) })
    }

    deinit { lookup.deallocate() }

    /// The position of the field named `name`.
    @inline(__always)
    func position(of name: String) -> Int? { lookup.position(of: name) }

    /// The position of the field with the id `id`; never for
    /// ``unresolved``.
    func position(ofField id: PropertyID) -> Int? {
        var low = 0
        var high = sortedIDs.count
        while low < high {
            let middle = (low + high) / 2
            if sortedIDs[middle] < id { low = middle + 1 } else { high = middle }
        }
        return low < sortedIDs.count && sortedIDs[low] == id ? positionsByID[low] : nil
    }

    /// Per field of `target`, the position in this shape of the same field
    /// (the same id) when it stores the same type there, else -1: how
    /// values move from a record or model of this shape to one of
    /// `target`'s, worked out once.
    func sourcePositions(in target: RecordShape) -> [Int] {
        target.fields.map { field in
            guard let position = position(ofField: field.id), fields[position].property.type == field.property.type
            else { return -1 }
            return position
        }
    }
}
