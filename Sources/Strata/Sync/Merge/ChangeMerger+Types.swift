/// Types a changeset names that this app does not declare: kept types the
/// file already has, or types learned now, stored as kept types with their
/// own records and clocks, sent on to other peers, and read by the app
/// version that declares them (synced mode's rule for a type named again).
extension ChangeMerger {
    /// The table of the type `wire` names, which this app does not declare:
    /// the file's kept type of that name, or a new kept type keyed as the
    /// changeset says. The caller holds the environment's setup lock.
    func keptTable(_ wire: WireType) throws -> ObjectTable {
        let index: Int
        if let existing = catalog.types.firstIndex(where: { $0.name == wire.name }) {
            index = existing
        } else {
            guard let key = FieldDescriptor.property(named: wire.keyName, descriptor: wire.keyDescriptor) else {
                throw StrataError.changesetRefused(
                    path: store.path,
                    "type '\(wire.name)' has a key of type \(wire.keyDescriptor), which this version of Strata cannot store",
                    remedy: "Update Strata on this device, or key '\(wire.name)' by an int, a string or a UUID.")
            }
            let typeID = catalog.nextTypeID
            let keyID = catalog.nextPropertyID
            catalog.nextTypeID = TypeID(typeID.rawValue + 1)
            catalog.nextPropertyID = PropertyID(keyID.rawValue + 1)
            catalog.types.append(
                CatalogType(
                    id: typeID, name: wire.name, primaryKey: wire.keyName,
                    properties: [CatalogProperty(id: keyID, property: key.normalized(isPrimaryKey: true))],
                    isKept: true))
            index = catalog.types.count - 1
            markCatalogChanged()
            addLearnedType(wire.name)
        }
        let type = catalog.types[index]
        guard !type.isEmbedded, type.primaryKey == wire.keyName else {
            throw StrataError.changesetRefused(
                path: store.path,
                "it names type '\(wire.name)' keyed by '\(wire.keyName)', and this file's '\(wire.name)' is \(type.isEmbedded ? "embedded" : "keyed by '\(type.primaryKey ?? "automatic ids")'")",
                remedy: "The two apps declare '\(wire.name)' differently; one identity per type is required to sync.")
        }
        guard let table = try recorder.log.keptTable(type, in: catalog, create: true) else {
            preconditionFailure("A kept table made in a write transaction is missing")
        }
        return table
    }
}
