/// Which indexes a migration made stale, and bringing every index up to
/// date before the commit: built when new, rebuilt when the values it holds
/// may have changed, emptied (and listed for deletion) when gone.
struct MigrationIndexes {
    /// Per type, the properties whose values the closure set on some
    /// object: only their indexes need rebuilding when nothing else made
    /// every index of the type stale.
    private var changedProperties: [TypeID: Set<PropertyID>] = [:]
    /// Types whose every index must be rebuilt: objects created, deleted,
    /// given new keys, or rewritten whole.
    private var staleTypes: Set<TypeID> = []
    /// Index databases dropped with their type by `deleteData(forType:)`.
    private var dropped: Set<NamedDatabase> = []
    /// Types whose every record this migration validated or wrote, so that
    /// building their indexes needs not validate them again.
    private var trustedTypes: Set<TypeID> = []

    mutating func markStale(_ type: TypeID) { staleTypes.insert(type) }

    mutating func markChanged(_ property: PropertyID, of type: TypeID) {
        changedProperties[type, default: []].insert(property)
    }

    mutating func markTrusted(_ type: TypeID) { trustedTypes.insert(type) }

    mutating func markDropped(_ database: NamedDatabase) { dropped.insert(database) }

    /// Brings every index of `catalog` up to date in the scope's
    /// transaction. `tables` holds the tables written so far by type id;
    /// the others are opened here.
    func finish(_ catalog: MigrationCatalog, tables: [TypeID: ObjectTable], scope: MigrationScope) throws {
        var oldIndexes: [NamedDatabase: CatalogProperty] = [:]
        for type in scope.old.types {
            for property in type.properties where property.hasIndex(in: type) {
                oldIndexes[type.indexDatabase(property)] = property
            }
        }
        var current: Set<NamedDatabase> = []
        for type in catalog.working.types {
            let indexed = type.properties.filter { $0.hasIndex(in: type) }
            current.formUnion(indexed.map { type.indexDatabase($0) })
            guard !type.isKept && !type.isEmbedded else { continue }
            let table =
                try tables[type.id]
                ?? ObjectTable.open(
                    type, scope.txn, create: !scope.hadTable(type.id), withIndexes: false,
                    related: catalog.working.types, path: scope.path)
            for property in indexed {
                let database = type.indexDatabase(property)
                let before = oldIndexes[database]?.property
                let sameDefault =
                    before.map { $0.valueWhenAbsent.isStored(identicallyTo: property.property.valueWhenAbsent) }
                    ?? false
                let stale = staleTypes.contains(type.id) || changedProperties[type.id]?.contains(property.id) == true
                if before == nil || !sameDefault || stale {
                    try build(database, property: property, table: table, catalog: catalog, scope: scope)
                }
            }
        }
        for database in oldIndexes.keys.sorted(by: { $0.name < $1.name })
        where !current.contains(database) && !dropped.contains(database) {
            try retire(database, catalog: catalog, scope: scope)
        }
    }

    private func build(
        _ database: NamedDatabase, property: CatalogProperty, table: ObjectTable,
        catalog: MigrationCatalog, scope: MigrationScope
    ) throws {
        catalog.adopt(database)
        scope.engine.tally.indexBuilt("\(table.name).\(property.property.name)")
        let clock = Stopwatch()
        defer {
            scope.settings.logger?.debug(
                "Built the index on '\(table.name).\(property.property.name)' of \(scope.path): \(clock.milliseconds) ms"
            )
        }
        guard let index = try scope.txn.openDatabase(database, create: true),
            let field = table.fields.first(where: { $0.id == property.id })
        else { return }
        var progress = ProgressCounter(
            typeName: table.name, step: .buildingIndex, total: try scope.txn.entryCount(table.records),
            handler: scope.settings.progress)
        try scope.engine.buildIndex(index, of: field, in: table, trusted: trustedTypes.contains(table.type.id)) {
            progress.advance()
        }
        progress.finish()
    }

    /// Empties a named database the file no longer uses and lists it for
    /// deletion. Deleting it here (`mdb_drop` with delete) would close its
    /// handle for the whole process at once, even if this transaction rolls
    /// back, under the feet of other `Database`s and of read transactions
    /// that began before the migration. A later open that is alone on the
    /// file deletes it.
    func retire(_ database: NamedDatabase, catalog: MigrationCatalog, scope: MigrationScope) throws {
        guard let handle = try scope.txn.openDatabase(database, create: false) else { return }
        try scope.txn.empty(handle, delete: false)
        catalog.orphan(database)
    }
}
