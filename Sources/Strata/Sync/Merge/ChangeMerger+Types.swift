/// Types a changeset names that this app does not declare: kept types the
/// file already has, or types learned now, stored as kept types with their
/// own records and clocks, sent on to other peers, and read by the app
/// version that declares them (synced mode's rule for a type named again).
extension ChangeMerger {
    /// The table of the type `wire` names, which this app does not declare:
    /// the file's kept type of that name, or a new kept type keyed as the
    /// changeset says. The caller holds the environment's setup lock.
    func keptTable(_ wire: WireType) throws -> ObjectTable {
        let type: CatalogType
        if let existing = catalog[type: wire.name] {
            type = existing
        } else {
            guard let key = FieldDescriptor.property(named: wire.keyName, descriptor: wire.keyDescriptor) else {
                throw StrataError.changesetRefused(
                    path: store.path,
                    "type '\(wire.name)' has a key of type \(wire.keyDescriptor), which this version of Strata cannot store",
                    remedy: "Update Strata on this device, or key '\(wire.name)' by an int, a string or a UUID.")
            }
            type = catalog.learnType(name: wire.name, key: key)
            addLearnedType(wire.name)
        }
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
