/// Walks the records of one type at a time through a migration: reads each
/// object's old side from the snapshot, hands both sides to the closure,
/// and writes back what changed, through the table engine and a write
/// cursor that follows the walk.
///
/// It owns the new-side tables: a type whose objects get new keys starts
/// empty, and every object is inserted again under its new key, so a clash
/// is a real duplicate.
final class RecordRewriter: MigrationRecords {
    typealias Body = (DynamicObject?, MutableObject?) throws -> Void

    /// Set right after init; the rewriter and the catalog refer to each other.
    unowned var catalog: MigrationCatalog!
    var indexes = MigrationIndexes()
    var links: MigrationLinks
    /// Set by `Migration.setEmbeddingPolicy(_:forType:)`, by type name.
    var embeddingPolicies: [String: EmbeddingPolicy] = [:]
    private let encoder: ObjectEncoder
    /// The encoder whose record ``write(_:_:_:)`` writes back: a typed step
    /// that encodes its new model straight into bytes writes it here
    /// (``MutableObject/adoptEncodedRecord(_:)``).
    var recordEncoder: ObjectEncoder { encoder }
    /// New-side tables opened so far, by type id.
    private(set) var tables: [TypeID: ObjectTable] = [:]
    var enumerated: Set<TypeID> = []
    private var removedWalks: Set<TypeID> = []
    var isWalking = false
    private var rekeyed: [TypeID: Bool] = [:]
    private var rewritesAll: [TypeID: Bool] = [:]
    /// Positions of the fields set on the objects written by the current
    /// walk, one bit each (all bits once a position passes 63), and whether
    /// it wrote anything.
    var walkChangedPositions: UInt64 = 0
    var walkWrote = false
    /// The walk in progress that writes its type's records into the
    /// emptied records database, in key order (`MDB_APPEND`), if any.
    var appending: AppendingWalk?
    /// Types whose table this migration wrote into or walked: a walk
    /// empties only a table that still holds exactly the snapshot's records.
    var touched: Set<TypeID> = []
    /// Records written by walks, and by the whole migration when the
    /// rewriter was made: a write that no walk made (a rename's, say) means
    /// that some table may differ from the snapshot.
    var writesInWalks = 0
    let writesBefore: Int

    let scope: MigrationScope
    /// The scope's table engine, held directly: the write-back runs once per object.
    let engine: TableEngine
    var path: String { scope.path }
    var old: Catalog { scope.old }
    var txn: LMDBTransaction { scope.txn }

    init(scope: MigrationScope, evolved: Catalog) {
        self.scope = scope
        self.engine = scope.engine
        self.links = MigrationLinks(old: scope.old, evolved: evolved)
        let widest = (scope.old.types.map(\.properties.count) + [0]).max() ?? 0
        self.encoder = ObjectEncoder(
            fieldCapacity: max(widest, scope.settings.schema.objectSchemas.map(\.properties.count).max() ?? 0))
        self.writesBefore = scope.engine.tally.recordWrites
    }

    // MARK: MigrationRecords

    func hasWritten(_ type: TypeID) -> Bool { tables[type] != nil }
    func walkedAsRemoved(_ type: TypeID) -> Bool { removedWalks.contains(type) }

    func getsNewKeys(_ type: CatalogType) -> Bool {
        if let known = rekeyed[type.id] { return known }
        let value = old[typeID: type.id].map { type.needsNewKeys(comparedTo: $0) } ?? false
        rekeyed[type.id] = value
        return value
    }

    func typeRebound(_ type: TypeID) {
        rekeyed[type] = nil
        rewritesAll[type] = nil
    }

    private func rewritesEveryRecord(_ type: CatalogType) -> Bool {
        if let known = rewritesAll[type.id] { return known }
        let value = old[typeID: type.id].map { type.needsRewrite(comparedTo: $0) } ?? false
        rewritesAll[type.id] = value
        return value
    }

    // MARK: Tables

    /// The table through which objects of a new-schema type are written.
    func table(for type: CatalogType) throws -> ObjectTable {
        if let table = tables[type.id] { return table }
        let existed = scope.hadTable(type.id)
        // No index handles: the indexes that the writes made stale are
        // rebuilt once the closure is done.
        let table = try ObjectTable.open(
            type, txn, create: !existed, withIndexes: false, related: catalog.working.types, path: path)
        if existed && getsNewKeys(type) {
            touched.insert(type.id)
            _ = try scope.snapshotContext()
            try engine.emptyRecords(table)
            indexes.markStale(type.id)
        }
        install(table)
        return table
    }

    func install(_ table: ObjectTable) {
        tables[table.type.id] = table
        scope.writeContext.tables[table.name] = table
    }

    /// Notes objects created through the write context: every index of
    /// their type must be rebuilt. Called before the insert, which may
    /// read the table of a walk in progress: that walk stops appending.
    func created(in type: TypeID) throws {
        // Any insert may read the walked table by key (a link's target).
        try stopAppending()
        touched.insert(type)
        indexes.markStale(type)
        links.sourceChanged(type)
    }

    /// Notes the type's data deleted: its index databases go with it.
    func dropped(_ database: NamedDatabase) { indexes.markDropped(database) }

    // MARK: Walking

    /// Walks the objects of the type known as `name` in this migration.
    func enumerate(_ name: String, _ body: Body) throws {
        if catalog.wasDeleted(name) { return }
        if let index = catalog.typeIndex(name) {
            let type = catalog.working.types[index]
            if catalog.isNew(type) {
                if enumerated.contains(type.id) && getsNewKeys(type) {
                    throw scope.refusal(
                        .migrationFailed, "A second enumerateObjects(ofType: \"\(name)\")",
                        "'\(type.name)' gets new primary keys in it, so it can be walked only once. Do all the work for '\(type.name)' in one enumeration."
                    )
                }
                try withoutActuallyEscaping(body) { try walk(oldType: old[typeID: type.id], newType: type, body: $0) }
                return
            }
            if let oldType = old[typeID: type.id] {
                // A type the new schema no longer has: `new` is nil.
                removedWalks.insert(oldType.id)
                try withoutActuallyEscaping(body) { try walk(oldType: oldType, newType: nil, body: $0) }
                return
            }
        }
        let oldNames = old.types.map(\.name).sorted().joined(separator: ", ")
        let newNames = scope.settings.schema.typeNames.joined(separator: ", ")
        throw scope.refusal(
            .unknownObjectType, "enumerateObjects(ofType: \"\(name)\")",
            "neither the old nor the new schema has that type. Old types: \(oldNames). New types: \(newNames).")
    }

    /// Rewrites every record of a type whose keys or value types changed
    /// and that the closure did not walk.
    func rewriteUnwalked() throws {
        for type in catalog.working.types where !type.isKept && !enumerated.contains(type.id) {
            guard let before = old[typeID: type.id], type.needsRewrite(comparedTo: before) else { continue }
            try walk(oldType: before, newType: type, body: nil)
        }
    }

    /// Where and how the objects of one walk are written back, worked out
    /// once per walk rather than per object.
    struct Target {
        let table: ObjectTable
        /// The type's objects get new keys: every one is inserted again.
        let rekey: Bool
        /// Every record is rewritten, changed by the closure or not.
        let rewriteAll: Bool
        /// Per field of the new table, where records written under the old
        /// schema keep it: a hint that saves walking their fields.
        let storedPositions: [Int]
        /// The properties whose values move between links and embedded
        /// objects, because their target type changed embedding.
        let conversions: [EmbeddingConversion]
    }

    func target(_ type: CatalogType) throws -> Target {
        let table = try table(for: type)
        let oldIDs = (old[typeID: type.id]?.properties.map(\.id) ?? []).sorted()
        let stored = table.fields.map { field in oldIDs.firstIndex(of: field.id) ?? Int.max }
        return Target(
            table: table, rekey: getsNewKeys(type), rewriteAll: rewritesEveryRecord(type), storedPositions: stored,
            conversions: embeddingConversions(of: type, table: table))
    }

    /// Walks the old objects of a type (or, for a type new in this
    /// version, the objects created so far), hands each to `body`, and
    /// writes back what changed. With no `body`, rewrites every object.
    ///
    /// In a later walk of a type, an object deleted by an earlier one is
    /// skipped, as Realm does: `body` never sees a deleted object again.
    private func walk(oldType: CatalogType?, newType: CatalogType?, body: Body?) throws {
        // A walk inside another one's closure reads the tables whole.
        try stopAppending()
        let nested = isWalking
        isWalking = true
        defer { isWalking = nested }
        let target = try newType.map { try self.target($0) }
        let object = target.map { MutableObject(table: $0.table) }
        let secondPass = newType.map { enumerated.contains($0.id) } ?? false
        // A closure's walk of a type whose properties stayed the same may
        // change a few objects only: those are replaced where they are.
        let appends =
            !nested && !secondPass
            && target.map { canAppend($0, old: oldType) && ($0.rewriteAll || reshapes($0, from: oldType)) } ?? false
        if let newType { enumerated.insert(newType.id) }
        walkChangedPositions = 0
        walkWrote = false
        guard let oldType, let oldTable = scope.oldTables[oldType.id] else {
            if let target, let object { try walkCreated(target, object, body) }
            return
        }
        let context = try scope.snapshotContext().context
        try walkRecords(of: oldTable, as: newType?.name ?? oldType.name, writing: target?.table, appending: appends) {
            key, record, writer in
            let oldObject = try context.object(table: oldTable, key: key, record: record)
            guard let target, let object else {
                return try call(body, oldObject, nil, table: oldTable, key: key)
            }
            if !secondPass {
                object.reset(key: key, base: oldObject.record, storage: nil)
                if !target.conversions.isEmpty { try convert(object, old: oldObject, target) }
                try visit(object, old: oldObject, target, writer, body)
            } else if let current = try txn.get(target.table.records, key) {
                // Start from what the first pass wrote.
                let copy = CopiedBytes(key: key, record: current)
                let view = try target.table.validatedView(key: copy.key, record: copy.record)
                object.reset(key: key, base: view, storage: copy)
                try visit(object, old: oldObject, target, writer, body)
            }
        }
        if let newType, let target { finishWalk(newType.id, target) }
    }

    /// Calls `each` with every record of `oldTable` in the snapshot from
    /// before the migration, and a write cursor on `writing` (else on
    /// `oldTable`) that follows the walk; reports progress as `name`, and
    /// logs the walk.
    ///
    /// `appends`: `writing`'s records database is emptied first and the
    /// walk writes every object that it keeps into it again, in key order,
    /// each appended after the last (``canAppend(_:old:)`` says when).
    func walkRecords(
        of oldTable: ObjectTable, as name: String, writing: ObjectTable?, appending appends: Bool = false,
        _ each: (_ key: UnsafeRawBufferPointer, _ record: UnsafeRawBufferPointer, _ writer: LMDBCursor) throws -> Void
    ) throws {
        let reader = try scope.snapshotContext().txn
        if appends, let writing {
            try engine.emptyRecords(writing, repacking: true)
            appending = AppendingWalk(type: writing.type.id, table: writing, oldTable: oldTable)
        }
        defer { self.appending = nil }
        var progress = ProgressCounter(
            typeName: name, step: .migratingObjects, total: try reader.entryCount(oldTable.records),
            handler: scope.settings.progress)
        let clock = Stopwatch()
        let writesBefore = engine.tally.recordWrites
        defer {
            let written = engine.tally.recordWrites - writesBefore
            writesInWalks += written
            scope.settings.logger?.debug(
                "Walked '\(name)' of \(path): \(progress.completedCount) objects, \(written) written, \(clock.milliseconds) ms\(appends ? ", written into a fresh tree" : "")"
            )
        }
        try reader.withCursor(oldTable.records) { cursor in
            try txn.withCursor(writing?.records ?? oldTable.records) { writer in
                var entry = try cursor.first()
                while let (key, record) = entry {
                    self.appending?.current = key
                    try each(key, record, writer)
                    progress.advance()
                    entry = try cursor.next()
                }
            }
        }
        progress.finish()
    }

    /// After a walk that wrote into `type`'s table: its indexes are
    /// trusted but for those the writes made stale.
    func finishWalk(_ type: TypeID, _ target: Target) {
        touched.insert(type)
        indexes.markTrusted(type)
        if walkWrote { noteWrites(type, target) }
    }

    /// Records which indexes the writes of a walk made stale.
    private func noteWrites(_ type: TypeID, _ target: Target) {
        if target.rewriteAll || target.rekey { indexes.markStale(type) }
        for field in target.table.fields where walkChangedPositions & (1 << UInt64(min(field.position, 63))) != 0 {
            indexes.markChanged(field.id, of: type)
            if field.isLink { links.sourceChanged(type) }
        }
        walkChangedPositions = 0
    }

    /// For a type new in this version: the objects the closure created.
    private func walkCreated(_ target: Target, _ object: MutableObject, _ body: Body?) throws {
        let table = target.table
        var keys: [[UInt8]] = []
        try txn.withCursor(table.records) { cursor in
            var entry = try cursor.first()
            while let (key, _) = entry {
                keys.append(Array(key))
                entry = try cursor.next()
            }
        }
        var progress = ProgressCounter(
            typeName: table.name, step: .migratingObjects, total: keys.count, handler: scope.settings.progress)
        try txn.withCursor(table.records) { writer in
            for key in keys {
                try key.withUnsafeBytes { keyBytes in
                    guard let record = try txn.get(table.records, keyBytes) else { return }
                    let copy = CopiedBytes(key: keyBytes, record: record)
                    let view = try table.validatedView(key: copy.key, record: copy.record)
                    object.reset(key: keyBytes, base: view, storage: copy)
                    try visit(object, old: nil, target, writer, body)
                }
                progress.advance()
            }
        }
        progress.finish()
        finishWalk(table.type.id, target)
    }

    /// Calls the closure's body with one object, restating what it throws
    /// so that the error names the object and the version step.
    @inline(__always)
    private func call(
        _ body: Body?, _ old: DynamicObject?, _ new: MutableObject?, table: ObjectTable,
        key: UnsafeRawBufferPointer
    ) throws {
        guard let body else { return }
        try restating(table: table, key: key) { try body(old, new) }
    }

    /// Runs the app's code for one object (a closure's body, a typed
    /// step), restating what it throws so that the error names the object
    /// and the version step.
    @inline(__always)
    func restating<R>(table: ObjectTable, key: UnsafeRawBufferPointer, _ work: () throws -> R) throws -> R {
        do {
            return try work()
        } catch let error as StrataError where scope.isMigrationError(error) {
            // Raised or restated by this migration: it names the place already.
            throw error
        } catch {
            throw scope.failure(
                error, at: "on the '\(table.name)' object \(scope.describeKey(key, of: table, oldKey: true))")
        }
    }

    @inline(__always)
    func visit(
        _ object: MutableObject, old: DynamicObject?, _ target: Target, _ writer: LMDBCursor, _ body: Body?
    ) throws {
        if body != nil {
            object.isActive = true
            defer { object.isActive = false }
            try call(body, old, object, table: target.table, key: object.key)
        }
        if let error = object.pendingError {
            throw scope.failure(
                error,
                at:
                    "on the '\(target.table.name)' object \(scope.describeKey(object.key, of: target.table, oldKey: true))",
                advice: "Set only properties of the new schema, with values of their type.")
        }
        try write(object, target, writer)
    }

    // MARK: Writing back

    /// Writes back one object: deleted, changed, or rewritten because its
    /// type's keys or value types changed. Left alone otherwise.
    func write(_ object: MutableObject, _ target: Target, _ writer: LMDBCursor) throws {
        let table = target.table
        if object.isDeleted { return try delete(object.key, target) }
        guard object.isDirty || target.rewriteAll else {
            // Appending, the table holds only what the walk wrote: the
            // unchanged record goes in as it was.
            if appending?.type == table.type.id, let base = object.base {
                try carryOver(object.key, base.bytes, writer)
            }
            return
        }
        if object.isEncoded {
            // A typed step wrote the record and its primary key already.
            return try storeEncoded(object.key, changed: object.changedPositions, target, writer)
        }
        walkChangedPositions |= object.changedPositions
        walkWrote = true
        let automaticKey: ObjectEncoder.AutomaticKey =
            target.rekey && table.primaryKey == nil ? engine.newID(table) : .keep
        let keyEncoded: Bool
        do {
            let overrides = object.overrides
            keyEncoded = try encoder.encode(
                table: table, schemaVersion: object.stampedVersion ?? scope.newVersion, automaticKey: automaticKey,
                base: object.base, storedPositions: target.storedPositions, rekeys: target.rekey
            ) { position in
                // What the closure or a typed step set was coerced and
                // checked when it was set.
                overrides[position].map(ObjectEncoder.FieldSource.checked)
                    ?? (object.base == nil ? .value(table.fields[position].valueWhenAbsent) : .stored)
            }
        } catch {
            throw scope.failure(
                error,
                at: "writing the '\(table.name)' object \(scope.describeKey(object.key, of: table, oldKey: true))",
                advice: "Give every required property of the new schema a value of its type in the migration closure.")
        }
        try store(object.key, typed: object.stampedVersion != nil, target, writer, keyEncoded: keyEncoded)
    }

    /// Deletes a walked object, whose key is `key`.
    func delete(_ key: UnsafeRawBufferPointer, _ target: Target) throws {
        let table = target.table
        // A re-keyed table starts empty, as does one the walk appends
        // into: the object is simply not written again (and counts as
        // deleted there).
        if appending?.type == table.type.id {
            engine.tally.recordWritten()
        } else if !target.rekey {
            _ = try engine.deleteRecord(table, key: key)
        }
        links.deleted(in: table.type.id)
        walkWrote = true
        indexes.markStale(table.type.id)
    }

    /// Stores the record in the encoder as that of the walked object whose
    /// key is `objectKey`: under a new key for a re-keyed type, else in
    /// place of the stored one, after checking that the key, when encoded
    /// (`keyEncoded`), is the object's. `typed`: a typed step wrote it.
    func store(
        _ objectKey: UnsafeRawBufferPointer, typed: Bool, _ target: Target, _ writer: LMDBCursor, keyEncoded: Bool
    ) throws {
        let table = target.table
        if target.rekey {
            guard try engine.write(table, encoder, over: nil, entries: .rebuiltLater, placement: .newKey) else {
                let key = "\(encoder.decodedKey(table))"
                throw scope.problem(
                    .duplicatePrimaryKey,
                    "After the migration of \(path) \(scope.step), two '\(table.name)' objects have the primary key \(key).",
                    remedy: "Give them distinct values in the migration closure, or delete one with migration.delete.",
                    typeName: table.name, key: key)
            }
            encoder.key.withUnsafeBytes { links.rekeyed(table.type.id, from: objectKey, to: $0) }
            return
        }
        if keyEncoded {
            try encoder.key.withUnsafeBytes { key in
                guard KeyCodec.compare(key, objectKey) == 0 else {
                    // A typed step stamps its objects; a closure does not.
                    let advice =
                        typed
                        ? "Return nil from the mapping to delete this object, and insert one with the new key through the mapping's context (context.insert) instead."
                        : "Create a new object with migration.create and delete this one with migration.delete instead."
                    let oldKey = scope.describeKey(objectKey, of: table, oldKey: true)
                    throw scope.problem(
                        .migrationFailed,
                        "The migration of \(path) \(scope.step) changed the primary key of a '\(table.name)' object from \(oldKey) to \(scope.describeKey(key, of: table, oldKey: false)), but the new schema keeps the primary key of '\(table.name)'.",
                        remedy: advice, typeName: table.name, key: oldKey)
                }
            }
        }
        try encoder.record.withUnsafeBytes { record in
            if appending?.type == table.type.id {
                try append(objectKey, record, writer)
                engine.tally.recordWritten()
            } else {
                try engine.replaceRecord(table, key: objectKey, record: record, walking: writer)
            }
        }
    }
}
