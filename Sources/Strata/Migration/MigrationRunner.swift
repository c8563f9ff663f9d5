import Foundation
import Logging

/// Carries out a ``MigrationPlan`` whose action changes the file (a
/// migration, or a catalog update), inside one write transaction: catalog,
/// records, indexes and schema version commit together or not at all.
///
/// The old side of every object is read from a read transaction begun
/// inside the write transaction, so it is the exact pre-migration snapshot
/// whatever the closure creates, deletes or rewrites; no object is visited
/// twice and memory does not grow with the number of objects.
final class MigrationRunner {
    let configuration: Database.Configuration
    let environment: Environment
    let txn: LMDBTransaction
    let meta: DatabaseHandle
    /// The file's catalog before the migration, and its tables (every type,
    /// kept ones too) opened by an earlier, committed read transaction.
    let old: Catalog
    let oldTables: [UInt32: ObjectTable]
    /// The catalog as the migration shapes it; written at the end.
    private(set) var working: Catalog
    let newVersion: UInt64
    /// Writes objects created by the closure, through the new schema.
    private let writeContext: ObjectContext
    private var encoder: ObjectEncoder

    private var snapshot: (txn: LMDBTransaction, context: ObjectContext)?
    /// New-side tables opened so far, by type id. A type with one can no
    /// longer be renamed; renaming one of its properties moves the values
    /// already written (``moveRenamedValues(in:to:fresh:source:)``).
    private var materialized: [UInt32: ObjectTable] = [:]
    private var enumerated: Set<UInt32> = []
    /// Whether an enumeration is running (renames are refused inside one).
    private var walking = false
    /// Per type, the properties (by id) whose values the closure set on
    /// some object: only their indexes need rebuilding when nothing else
    /// made every index of the type stale.
    private var changedProperties: [UInt32: Set<UInt32>] = [:]
    /// Types whose every index must be rebuilt: objects created, deleted,
    /// given new keys, or rewritten whole.
    private var staleIndexes: Set<UInt32> = []
    /// Positions of the fields set on the objects written by the current
    /// walk, one bit each (all bits once a position passes 63).
    private var walkChangedPositions: UInt64 = 0
    /// Index databases dropped with their type by `deleteData(forType:)`.
    private var droppedIndexes: Set<String> = []
    /// Per type id, the old properties not yet bound to a new one, by their
    /// name after the renames so far: the possible sources of a rename.
    private var renameSources: [UInt32: [String: CatalogProperty]] = [:]
    /// Property renames, by property id, until the property is bound to
    /// one of the new schema (a rename chain may pass through names the new
    /// schema lacks); any left when the closure returns is an error.
    private var openPropertyRenames: [UInt32: (type: String, from: String, to: String)] = [:]
    private var openTypeRenames: [UInt32: (from: String, to: String)] = [:]
    /// Every name a type has had in this migration (old, intermediate,
    /// new), to its id: renames of types and properties chain in any order.
    private var aliases: [String: UInt32] = [:]
    /// Types whose data `deleteData(forType:)` deleted.
    private var deletedTypes: Set<UInt32> = []
    private var rekeyed: [UInt32: Bool] = [:]
    private var rewritesAll: [UInt32: Bool] = [:]

    /// Records written or deleted by the migration itself (not counting
    /// objects the closure created); tests use it to prove what rewrites.
    private(set) var recordWrites = 0
    var path: String { configuration.path }

    init(configuration: Database.Configuration, environment: Environment, txn: LMDBTransaction, meta: DatabaseHandle,
         old: Catalog, oldTables: [UInt32: ObjectTable], evolved: Catalog) {
        self.configuration = configuration
        self.environment = environment
        self.txn = txn
        self.meta = meta
        self.old = old
        self.oldTables = oldTables
        self.working = evolved
        self.newVersion = configuration.mode == .local ? configuration.schemaVersion : evolved.schemaVersion
        let widest = (evolved.types + old.types).map(\.properties.count).max() ?? 0
        self.writeContext = ObjectContext(lmdb: txn, tables: [:], meta: meta, path: configuration.path,
                                          schemaVersion: configuration.schemaVersion, fieldCapacity: widest)
        self.encoder = ObjectEncoder(fieldCapacity: widest)
        for type in evolved.types { aliases[type.name] = type.id }
    }

    /// Total record puts and deletes, the closure's creations included.
    var totalRecordWrites: Int { recordWrites + writeContext.recordWrites }

    // MARK: Running

    /// Runs the closure (for a migration), rewrites what must be rewritten,
    /// brings the indexes up to date and writes the catalog.
    func run(closure: Database.MigrationBlock?) throws -> Catalog {
        let logger = configuration.logger
        let total = Stopwatch()
        logger?.info("Migrating \(path) from schema version \(old.schemaVersion) to \(newVersion)\(closure == nil ? " without a migration closure" : "")")
        defer {
            snapshot?.context.end()
            snapshot?.txn.finish()
            snapshot = nil
            writeContext.end()
        }
        if let closure {
            let migration = Migration(runner: self, oldSchema: old.schema, newSchema: configuration.schema,
                                      oldSchemaVersion: old.schemaVersion, newSchemaVersion: newVersion)
            defer { migration.invalidate() }
            let clock = Stopwatch()
            do {
                try closure(migration, old.schemaVersion)
                logger?.info("Migration closure of \(path) done: \(totalRecordWrites) records written, \(clock.milliseconds) ms")
            } catch let error as StrataError {
                throw error
            } catch {
                throw StrataError(.migrationFailed, "The migration closure of \(path) threw an error while migrating from schema version \(old.schemaVersion) to \(newVersion): \(error). Nothing was written; the file is still at version \(old.schemaVersion).", path: path)
            }
            try checkOpenRenames()
        }
        for type in working.types where !type.isKept && !enumerated.contains(type.id) {
            guard let before = old[typeID: type.id], type.needsRewrite(comparedTo: before) else { continue }
            try walk(oldType: before, newType: type, body: nil)
        }
        let clock = Stopwatch()
        try finishStorage()
        logger?.debug("Indexes of \(path) up to date: \(clock.milliseconds) ms")
        try writeContext.flush()
        try writeCatalog()
        logger?.info("Migration of \(path) to schema version \(newVersion) ready to commit: \(totalRecordWrites) records written, \(total.milliseconds) ms")
        return working
    }

    private func snapshotContext() throws -> (txn: LMDBTransaction, context: ObjectContext) {
        if let snapshot { return snapshot }
        // Begun while this thread holds the write transaction, and writers
        // are serialized: it sees exactly the state before the migration.
        let reader = try environment.begin(readOnly: true)
        let tables = Dictionary(oldTables.values.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let context = ObjectContext(lmdb: reader, tables: tables, meta: meta, path: path, schemaVersion: old.schemaVersion)
        snapshot = (reader, context)
        return (reader, context)
    }

    // MARK: New-side tables

    private func isRekeyed(_ type: CatalogType) -> Bool {
        if let known = rekeyed[type.id] { return known }
        let value = old[typeID: type.id].map { type.needsNewKeys(comparedTo: $0) } ?? false
        rekeyed[type.id] = value
        return value
    }

    private func rewritesEveryRecord(_ type: CatalogType) -> Bool {
        if let known = rewritesAll[type.id] { return known }
        let value = old[typeID: type.id].map { type.needsRewrite(comparedTo: $0) } ?? false
        rewritesAll[type.id] = value
        return value
    }

    /// The table through which objects of a new-schema type are written.
    /// A type whose objects get new keys starts empty: every object is
    /// inserted again under its new key, so a clash is a real duplicate.
    private func materialize(_ type: CatalogType) throws -> ObjectTable {
        if let table = materialized[type.id] { return table }
        let existed = old[typeID: type.id] != nil
        guard let records = try txn.openDatabase(type.recordsDatabaseName, create: !existed) else {
            throw StrataError(.corruptFile, "The records of '\(type.name)' are missing from \(path); the file is damaged. Restore it from a backup.", path: path)
        }
        if existed && isRekeyed(type) {
            _ = try snapshotContext()
            try txn.empty(records, delete: false)
            staleIndexes.insert(type.id)
        }
        // No index handles: the indexes that the writes made stale are
        // rebuilt once the closure is done (finishStorage).
        let table = ObjectTable(type: type, records: records, indexes: [:], path: path)
        materialized[type.id] = table
        writeContext.tables[type.name] = table
        return table
    }

    /// The position in the working catalog of the type known as `name`
    /// in this migration (by its old, intermediate or new name).
    private func typeIndex(_ name: String) -> Int? {
        guard let id = aliases[name] else { return nil }
        return working.types.firstIndex { $0.id == id }
    }

    /// Whether a working type is one of the new schema's.
    private func isNew(_ type: CatalogType) -> Bool {
        !type.isKept && configuration.schema[type.name] != nil
    }

    private func newType(named name: String) -> CatalogType? {
        typeIndex(name).map { working.types[$0] }.flatMap { isNew($0) ? $0 : nil }
    }

    // MARK: Enumeration

    func enumerate(_ name: String, _ body: (DynamicObject?, MutableObject?) throws -> Void) throws {
        if let id = aliases[name], deletedTypes.contains(id) { return }
        if let index = typeIndex(name) {
            let type = working.types[index]
            if isNew(type) {
                if enumerated.contains(type.id) && isRekeyed(type) {
                    throw StrataError(.migrationFailed, "enumerateObjects(ofType: \"\(name)\") was called twice in the migration of \(path), but '\(type.name)' gets new primary keys in it, so it can be walked only once. Do all the work for '\(type.name)' in one enumeration.", path: path)
                }
                try withoutActuallyEscaping(body) { try walk(oldType: old[typeID: type.id], newType: type, body: $0) }
                return
            }
            if let oldType = old[typeID: type.id] {
                // A type the new schema no longer has: `new` is nil.
                try withoutActuallyEscaping(body) { try walk(oldType: oldType, newType: nil, body: $0) }
                return
            }
        }
        let oldNames = old.types.map(\.name).sorted().joined(separator: ", ")
        let newNames = configuration.schema.typeNames.joined(separator: ", ")
        throw StrataError(.unknownObjectType, "enumerateObjects(ofType: \"\(name)\"): neither the old nor the new schema of \(path) has that type. Old types: \(oldNames). New types: \(newNames).", path: path)
    }

    /// Where and how the objects of one walk are written back, worked out
    /// once per walk rather than per object.
    private struct Target {
        let table: ObjectTable
        /// The type's objects get new keys: every one is inserted again.
        let rekey: Bool
        /// Every record is rewritten, changed by the closure or not.
        let rewriteAll: Bool
        /// Per field of the new table, where records written under the old
        /// schema keep it: a hint that saves walking their fields.
        let storedPositions: [Int]
    }

    private func target(_ type: CatalogType) throws -> Target {
        let table = try materialize(type)
        let oldIDs = (old[typeID: type.id]?.properties.map(\.id) ?? []).sorted()
        let stored = table.fields.map { field in oldIDs.firstIndex(of: field.id) ?? Int.max }
        return Target(table: table, rekey: isRekeyed(type), rewriteAll: rewritesEveryRecord(type), storedPositions: stored)
    }

    /// Walks the old objects of a type (or, for a type new in this
    /// version, the objects created so far), hands each to `body`, and
    /// writes back what changed. With no `body`, rewrites every object.
    private func walk(oldType: CatalogType?, newType: CatalogType?, body: ((DynamicObject?, MutableObject?) throws -> Void)?) throws {
        walking = true
        defer { walking = false }
        let target = try newType.map { try self.target($0) }
        let object = target.map { MutableObject(table: $0.table) }
        let secondPass = newType.map { enumerated.contains($0.id) } ?? false
        if let newType { enumerated.insert(newType.id) }
        guard let oldType, let oldTable = oldTables[oldType.id] else {
            if let target, let object { try walkCreated(target, object, body) }
            return
        }
        let (reader, context) = try snapshotContext()
        var progress = ProgressCounter(typeName: newType?.name ?? oldType.name, step: .migratingObjects,
                                       total: try reader.entryCount(oldTable.records), handler: configuration.progress)
        let writes = recordWrites
        let clock = Stopwatch()
        defer {
            configuration.logger?.debug("Walked '\(newType?.name ?? oldType.name)' of \(path): \(progress.completedCount) objects, \(recordWrites - writes) written, \(clock.milliseconds) ms")
        }
        try reader.withCursor(oldTable.records) { cursor in
            try txn.withCursor(target?.table.records ?? oldTable.records) { writer in
                var entry = try cursor.first()
                while let (key, record) = entry {
                    let oldObject = try context.object(table: oldTable, key: key, record: record)
                    if let target, let object {
                        if secondPass {
                            // Start from what the first pass wrote; a deleted
                            // object has no `new` side.
                            if let current = try txn.get(target.table.records, key) {
                                let copy = CopiedBytes(key: key, record: current)
                                let view = try context.validatedView(table: target.table, key: copy.key, record: copy.record)
                                object.reset(key: key, base: view, storage: copy)
                                try visit(object, old: oldObject, target, writer, body)
                            } else {
                                try body?(oldObject, nil)
                            }
                        } else {
                            object.reset(key: key, base: oldObject.record, storage: nil)
                            try visit(object, old: oldObject, target, writer, body)
                        }
                    } else {
                        try body?(oldObject, nil)
                    }
                    progress.advance()
                    entry = try cursor.next()
                }
            }
        }
        progress.finish()
        if let newType, let target, recordWrites != writes { noteWrites(newType.id, target) }
    }

    /// Records which indexes the writes of a walk made stale.
    private func noteWrites(_ typeID: UInt32, _ target: Target) {
        if target.rewriteAll || target.rekey { staleIndexes.insert(typeID) }
        let changed = walkChangedPositions
        walkChangedPositions = 0
        for field in target.table.fields where changed & (1 << UInt64(min(field.position, 63))) != 0 {
            changedProperties[typeID, default: []].insert(field.id)
        }
    }

    /// For a type new in this version: the objects the closure created.
    private func walkCreated(_ target: Target, _ object: MutableObject, _ body: ((DynamicObject?, MutableObject?) throws -> Void)?) throws {
        let table = target.table
        var keys: [[UInt8]] = []
        try txn.withCursor(table.records) { cursor in
            var entry = try cursor.first()
            while let (key, _) = entry {
                keys.append(Array(key))
                entry = try cursor.next()
            }
        }
        var progress = ProgressCounter(typeName: table.name, step: .migratingObjects, total: keys.count, handler: configuration.progress)
        let writes = recordWrites
        try txn.withCursor(table.records) { writer in
            for key in keys {
                try key.withUnsafeBytes { keyBytes in
                    guard let record = try txn.get(table.records, keyBytes) else { return }
                    let copy = CopiedBytes(key: keyBytes, record: record)
                    let view = try writeContext.validatedView(table: table, key: copy.key, record: copy.record)
                    object.reset(key: keyBytes, base: view, storage: copy)
                    try visit(object, old: nil, target, writer, body)
                }
                progress.advance()
            }
        }
        progress.finish()
        if recordWrites != writes { noteWrites(table.type.id, target) }
    }

    @inline(__always)
    private func visit(_ object: MutableObject, old: DynamicObject?, _ target: Target, _ writer: LMDBCursor,
                       _ body: ((DynamicObject?, MutableObject?) throws -> Void)?) throws {
        if let body {
            object.isActive = true
            defer { object.isActive = false }
            try body(old, object)
        }
        if let error = object.pendingError { throw error }
        try write(object, target, writer)
    }

    /// Writes back one object: deleted, changed, or rewritten because its
    /// type's keys or value types changed. Left alone otherwise.
    private func write(_ object: MutableObject, _ target: Target, _ writer: LMDBCursor) throws {
        let table = target.table
        if object.isDeleted {
            if !target.rekey { _ = try txn.delete(table.records, object.key) }
            recordWrites += 1
            staleIndexes.insert(table.type.id)
            return
        }
        guard object.isDirty || target.rewriteAll else { return }
        walkChangedPositions |= object.changedPositions
        let automaticKey: ObjectEncoder.AutomaticKey = target.rekey && table.primaryKey == nil
            ? .new { try self.writeContext.nextAutomaticID(table) } : .keep
        let keyEncoded: Bool
        do {
            keyEncoded = try encoder.encodeRewrite(table: table, schemaVersion: newVersion, automaticKey: automaticKey, newKeys: target.rekey,
                                                   base: object.base, overrides: object.overrides, storedPositions: target.storedPositions)
        } catch let error as StrataError {
            throw StrataError(error.code, "Migrating a '\(table.name)' object (key \(describeKey(Array(object.key), table: table, oldKey: true))) of \(path) to schema version \(newVersion) failed: \(error.message)", path: path)
        }
        try encoder.record.withUnsafeBytes { record in
            if target.rekey {
                try encoder.key.withUnsafeBytes { key in
                    guard try txn.put(table.records, key, record, noOverwrite: true) else {
                        throw StrataError(.duplicatePrimaryKey, "After the migration of \(path) to schema version \(newVersion), two '\(table.name)' objects have the primary key \(encoder.decodedKey(table)). Give them distinct values in the migration closure, or delete one. Nothing was written.", path: path)
                    }
                }
                return
            }
            if keyEncoded {
                try encoder.key.withUnsafeBytes { key in
                    guard KeyCodec.compare(key, object.key) == 0 else {
                        throw StrataError(.migrationFailed, "The migration of \(path) changed the primary key of a '\(table.name)' object from \(describeKey(Array(object.key), table: table, oldKey: true)) to \(describeKey(Array(key), table: table, oldKey: false)), but the new schema keeps the primary key of '\(table.name)'. Create a new object and delete this one instead. Nothing was written.", path: path)
                    }
                }
            }
            // Objects come in key order: the entry after the last one written
            // is usually the one to replace, and replacing it in place through
            // the cursor skips a search of the tree.
            let found: Bool
            if let next = try writer.next(), KeyCodec.compare(next.key, object.key) == 0 {
                found = true
            } else {
                found = try writer.seek(exactly: object.key) != nil
            }
            if found {
                try writer.replaceCurrent(key: object.key, value: record)
            } else {
                try txn.put(table.records, object.key, record)
            }
        }
        recordWrites += 1
    }

    private func describeKey(_ key: [UInt8], table: ObjectTable, oldKey: Bool) -> String {
        let keyType: PropertyType?
        if oldKey, let before = old[typeID: table.type.id] {
            keyType = before.primaryKeyProperty?.property.type
        } else {
            keyType = table.primaryKey?.type
        }
        let value = key.withUnsafeBytes { try? KeyCodec.decodeKey($0, type: keyType) }
        return value.map { "\($0)" } ?? "\(key)"
    }

    // MARK: Other operations

    func create(_ name: String, _ values: [String: Value]) throws -> Value {
        guard let type = newType(named: name) else {
            throw StrataError(.unknownObjectType, "migration.create(\"\(name)\", ...): the new schema of \(path) has no type '\(name)'. Its types are: \(configuration.schema.typeNames.joined(separator: ", ")).", path: path)
        }
        _ = try materialize(type)
        staleIndexes.insert(type.id)
        return try writeContext.insert(type.name, values)
    }

    func deleteData(_ name: String) throws -> Bool {
        if configuration.schema[name] != nil {
            throw StrataError(.migrationFailed, "migration.deleteData(forType: \"\(name)\"): the new schema of \(path) still has '\(name)'. deleteData removes types the schema no longer has; to empty a type it keeps, delete its objects in enumerateObjects.", path: path)
        }
        guard let index = typeIndex(name), working.types[index].isKept else { return false }
        let type = working.types.remove(at: index)
        deletedTypes.insert(type.id)
        openTypeRenames[type.id] = nil
        for property in type.properties { openPropertyRenames[property.id] = nil }
        try retire(type.recordsDatabaseName, duplicateKeys: false)
        for property in type.properties where property.hasIndex(in: type) {
            let indexName = type.indexDatabaseName(property)
            try retire(indexName, duplicateKeys: true)
            droppedIndexes.insert(indexName)
        }
        _ = try txn.delete(meta, Array("seq.t\(type.id)".utf8))
        return true
    }

    private func renameError(_ call: String, _ problem: String) -> StrataError {
        StrataError(.migrationFailed, "\(call) in the migration of \(path): \(problem) Nothing was written.", path: path)
    }

    func renameProperty(onType typeName: String, from oldName: String, to newName: String) throws {
        let call = "migration.renameProperty(onType: \"\(typeName)\", from: \"\(oldName)\", to: \"\(newName)\")"
        guard let typeIndex = typeIndex(typeName) else {
            throw renameError(call, "neither the old nor the new schema has a type '\(typeName)'.")
        }
        let type = working.types[typeIndex]
        guard let schema = isNew(type) ? configuration.schema[type.name] : nil else {
            // A type that a later renameType brings into the new schema:
            // rename the property in its entry, which is bound by name then.
            guard let position = type.properties.firstIndex(where: { $0.property.name == oldName }) else {
                let known = type.properties.map { "'\($0.property.name)'" }.joined(separator: ", ")
                throw renameError(call, "'\(typeName)' has no property '\(oldName)' at this point of the migration; its properties are \(known).")
            }
            if type.properties.contains(where: { $0.property.name == newName }) {
                throw renameError(call, "'\(typeName)' already has a property '\(newName)'.")
            }
            working.types[typeIndex].properties[position].property.name = newName
            let id = type.properties[position].id
            openPropertyRenames[id] = (typeName, openPropertyRenames[id]?.from ?? oldName, newName)
            return
        }
        guard !walking else {
            throw renameError(call, "it was called inside enumerateObjects; rename properties between enumerations.")
        }
        if materialized[type.id] != nil && isRekeyed(type) {
            throw renameError(call, "objects of '\(type.name)' were already written under new primary keys; rename its properties before enumerating or creating them.")
        }
        if schema[property: oldName] != nil {
            throw renameError(call, "'\(type.name).\(oldName)' is still in the new schema; the source of a rename must be a property the new schema no longer has.")
        }
        var sources = renameSources[type.id] ?? initialRenameSources(type)
        guard let source = sources[oldName] else {
            let known = sources.keys.sorted().map { "'\($0)'" }.joined(separator: ", ")
            throw renameError(call, "'\(type.name)' had no property '\(oldName)' before the migration" + (known.isEmpty ? "." : "; the properties it can rename are \(known)."))
        }
        sources[oldName] = nil
        if let target = schema[property: newName] {
            guard let targetPosition = type.properties.firstIndex(where: { $0.property.name == newName }),
                  !(old[typeID: type.id]?.properties.contains { $0.id == type.properties[targetPosition].id } ?? false) else {
                throw renameError(call, "'\(type.name).\(newName)' already existed before the migration; the target of a rename must be new.")
            }
            let before = source.property
            guard before.type == target.type && before.isOptional == target.isOptional else {
                throw renameError(call, "'\(oldName)' is \(before.typeDescription) but '\(newName)' is \(target.typeDescription); a rename keeps the type and optionality. Rename it to a property of the same type, then convert it in a later version.")
            }
            let freshID = type.properties[targetPosition].id
            working.types[typeIndex].properties[targetPosition].id = source.id
            working.types[typeIndex].retiredProperties.removeAll { $0.id == source.id }
            openPropertyRenames[source.id] = nil
            if let written = materialized[type.id] {
                try moveRenamedValues(in: written, to: working.types[typeIndex], fresh: freshID, source: source.id)
            }
        } else {
            // A step of a chain (a → b in version 2, b → c in version 3):
            // a later rename must move it on.
            var moved = source
            moved.property.name = newName
            sources[newName] = moved
            openPropertyRenames[source.id] = (type.name, openPropertyRenames[source.id]?.from ?? oldName, newName)
        }
        renameSources[type.id] = sources
    }

    /// After a rename of a property of a type whose objects the migration
    /// already wrote: those records hold the target under the id it had
    /// before the rename (`fresh`) and lack the source's values. Rewrites
    /// them with the source's values from the snapshot (objects created in
    /// the migration, which the snapshot lacks, keep what they were given),
    /// and swaps in the type's table under the new ids.
    private func moveRenamedValues(in written: ObjectTable, to type: CatalogType, fresh: UInt32, source: UInt32) throws {
        let table = ObjectTable(type: type, records: written.records, indexes: [:], path: path)
        materialized[type.id] = table
        writeContext.tables[type.name] = table
        guard let oldTable = oldTables[type.id], let target = table.fields.firstIndex(where: { $0.id == source }) else { return }
        let (reader, _) = try snapshotContext()
        let storedPositions = table.fields.map { field in written.fields.firstIndex { $0.name == field.name } ?? Int.max }
        // Each field of the new table, as the written records hold it.
        let writtenFields = table.fields.map { field in written.fields.first { $0.name == field.name } }
        let overrides = UnsafeMutableBufferPointer<Value?>.allocate(capacity: table.fields.count)
        overrides.initialize(repeating: nil)
        defer {
            overrides.deinitialize()
            overrides.deallocate()
        }
        try txn.withCursor(table.records) { cursor in
            var entry = try cursor.first()
            while let (key, record) = entry {
                let copy = CopiedBytes(key: key, record: record)
                let view = try ObjectContext.validatedView(table: table, key: copy.key, record: copy.record)
                guard let given = view.value(forField: fresh, expectedAt: Int.max) else {
                    entry = try cursor.next()
                    continue
                }
                for position in overrides.indices {
                    overrides[position] = writtenFields[position].map { written.value(at: $0.position, in: view) }
                }
                if let stored = try reader.get(oldTable.records, copy.key),
                   let oldView = try? RecordView(validating: stored) {
                    overrides[target] = oldView.value(forField: source, expectedAt: Int.max) ?? table.fields[target].valueWhenAbsent
                } else {
                    overrides[target] = given
                }
                try encoder.encodeRewrite(table: table, schemaVersion: view.schemaVersion, automaticKey: .keep, newKeys: false,
                                          base: nil, overrides: overrides, storedPositions: storedPositions)
                try encoder.record.withUnsafeBytes { try cursor.replaceCurrent(key: copy.key, value: $0) }
                recordWrites += 1
                changedProperties[type.id, default: []].insert(source)
                entry = try cursor.next()
            }
        }
    }

    /// The properties of a type before the migration that no property of
    /// the new schema took over.
    private func initialRenameSources(_ type: CatalogType) -> [String: CatalogProperty] {
        guard let before = old[typeID: type.id] else { return [:] }
        let bound = Set(type.properties.map(\.id))
        var sources: [String: CatalogProperty] = [:]
        for property in before.properties where !bound.contains(property.id) {
            sources[property.property.name] = property
        }
        return sources
    }

    func renameType(from oldName: String, to newName: String) throws {
        let call = "migration.renameType(from: \"\(oldName)\", to: \"\(newName)\")"
        guard !walking else {
            throw renameError(call, "it was called inside enumerateObjects; rename types between enumerations.")
        }
        if configuration.schema[oldName] != nil {
            throw renameError(call, "'\(oldName)' is still in the new schema; the source of a rename must be a type the new schema no longer has.")
        }
        guard let sourceIndex = typeIndex(oldName), working.types[sourceIndex].isKept, old[typeID: working.types[sourceIndex].id] != nil else {
            throw renameError(call, "there was no type '\(oldName)' before the migration (or its data was deleted).")
        }
        var moved = working.types[sourceIndex]
        if let schema = configuration.schema[newName] {
            guard let targetIndex = typeIndex(newName), !working.types[targetIndex].isKept,
                  old[typeID: working.types[targetIndex].id] == nil else {
                throw renameError(call, "'\(newName)' already existed before the migration; the target of a rename must be new.")
            }
            guard materialized[working.types[targetIndex].id] == nil else {
                throw renameError(call, "objects of '\(newName)' were already created; rename the type before that.")
            }
            working.rebind(&moved, to: schema, mode: .local)
            working.types[targetIndex] = moved
            working.types.remove(at: sourceIndex)
            // Renames of its properties done under an earlier name are bound
            // now if the new schema has their last name.
            let bound = Set(moved.properties.map(\.id))
            for id in openPropertyRenames.keys where bound.contains(id) { openPropertyRenames[id] = nil }
            renameSources[moved.id] = nil
            rekeyed[moved.id] = nil
            rewritesAll[moved.id] = nil
            openTypeRenames[moved.id] = nil
        } else {
            if let taken = typeIndex(newName), working.types[taken].id != moved.id {
                throw renameError(call, "a type named '\(newName)' already exists at this point of the migration.")
            }
            moved.name = newName
            working.types[sourceIndex] = moved
            openTypeRenames[moved.id] = (openTypeRenames[moved.id]?.from ?? oldName, newName)
        }
        aliases[newName] = moved.id
    }

    private func checkOpenRenames() throws {
        if let open = openPropertyRenames.values.min(by: { $0.from < $1.from }) {
            throw renameError("migration.renameProperty(onType: \"\(open.type)\", from: \"\(open.from)\", to: \"\(open.to)\")", "the new schema of '\(open.type)' has no property '\(open.to)', and no later rename moves it on.")
        }
        if let open = openTypeRenames.values.min(by: { $0.from < $1.from }) {
            throw renameError("migration.renameType(from: \"\(open.from)\", to: \"\(open.to)\")", "the new schema has no type '\(open.to)', and no later rename moves it on.")
        }
    }

    // MARK: Finishing

    /// Creates the tables of new types and brings every index up to date:
    /// built when new, rebuilt when the values it holds may have changed
    /// (its property set by the closure or renamed onto, its default
    /// changed, objects of its type created, deleted, re-keyed or rewritten
    /// whole), emptied when gone.
    private func finishStorage() throws {
        var oldIndexes: [String: (type: CatalogType, property: CatalogProperty)] = [:]
        for type in old.types {
            for property in type.properties where property.hasIndex(in: type) {
                oldIndexes[type.indexDatabaseName(property)] = (type, property)
            }
        }
        var current: Set<String> = []
        for type in working.types {
            let indexed = type.properties.filter { $0.hasIndex(in: type) }
            current.formUnion(indexed.map { type.indexDatabaseName($0) })
            guard !type.isKept else { continue }
            let table = try materialized[type.id] ?? {
                let existed = old[typeID: type.id] != nil
                guard let records = try txn.openDatabase(type.recordsDatabaseName, create: !existed) else {
                    throw StrataError(.corruptFile, "The records of '\(type.name)' are missing from \(path); the file is damaged. Restore it from a backup.", path: path)
                }
                return ObjectTable(type: type, records: records, indexes: [:], path: path)
            }()
            for property in indexed {
                let name = type.indexDatabaseName(property)
                let before = oldIndexes[name]?.property.property
                let sameDefault = before.map { $0.valueWhenAbsent.isStored(identicallyTo: property.property.valueWhenAbsent) } ?? false
                let stale = staleIndexes.contains(type.id) || changedProperties[type.id]?.contains(property.id) == true
                if before == nil || !sameDefault || stale {
                    try buildIndex(name, property: property, table: table)
                }
            }
        }
        for name in oldIndexes.keys.sorted() where !current.contains(name) && !droppedIndexes.contains(name) {
            try retire(name, duplicateKeys: true)
        }
    }

    /// Empties a named database the file no longer uses and lists it for
    /// deletion. Deleting it here (`mdb_drop` with delete) would close its
    /// handle for the whole process at once, even if this transaction rolls
    /// back, under the feet of other `Database`s and of read transactions
    /// that began before the migration. A later open that is alone on the
    /// file deletes it (`Database.deleteOrphanedDatabases`).
    private func retire(_ name: String, duplicateKeys: Bool) throws {
        guard let dbi = try txn.openDatabase(name, duplicateKeys: duplicateKeys, create: false) else { return }
        try txn.empty(dbi, delete: false)
        if !working.orphanedDatabases.contains(name) { working.orphanedDatabases.append(name) }
    }

    private func buildIndex(_ name: String, property: CatalogProperty, table: ObjectTable) throws {
        // A database emptied earlier and listed for deletion is in use again.
        working.orphanedDatabases.removeAll { $0 == name }
        let clock = Stopwatch()
        defer { configuration.logger?.debug("Built the index on '\(table.name).\(property.property.name)' of \(path): \(clock.milliseconds) ms") }
        guard let index = try txn.openDatabase(name, duplicateKeys: true, create: true),
              let position = table.fields.firstIndex(where: { $0.id == property.id }) else { return }
        try txn.empty(index, delete: false)
        var progress = ProgressCounter(typeName: table.name, step: .buildingIndex, total: try txn.entryCount(table.records), handler: configuration.progress)
        var indexKey = ByteWriter(capacity: 64)
        var objectKey = ByteWriter(capacity: 64)
        try txn.withCursor(table.records) { cursor in
            var entry = try cursor.first()
            while let (key, record) = entry {
                let view = try writeContext.validatedView(table: table, key: key, record: record)
                indexKey.removeAll()
                KeyCodec.appendIndexKey(table.value(at: position, in: view), to: &indexKey)
                // Copy the key: the put may spill the page it points into.
                objectKey.removeAll()
                objectKey.append(contentsOf: key)
                try indexKey.withUnsafeBytes { indexBytes in
                    try objectKey.withUnsafeBytes { _ = try txn.put(index, indexBytes, $0) }
                }
                progress.advance()
                entry = try cursor.next()
            }
        }
        progress.finish()
    }

    private func writeCatalog() throws {
        try txn.put(meta, Database.catalogKey, working.encoded())
        let snapshotKey = Database.schemaKey(configuration.schemaVersion)
        if try configuration.mode == .local || txn.get(meta, snapshotKey) == nil {
            try txn.put(meta, snapshotKey, Array(SchemaSnapshot(schemaVersion: configuration.schemaVersion, schema: configuration.schema).jsonData()))
        }
        let generation = try Database.generation(txn, meta: meta, path: path)
        try txn.put(meta, Database.generationKey, Database.encodeGeneration(generation &+ 1))
    }
}

/// Reports progress at least every 1% or 10,000 objects, and at the end.
struct ProgressCounter {
    let typeName: String
    let step: MigrationProgress.Step
    let total: Int
    let handler: Database.ProgressHandler?
    private var completed = 0
    var completedCount: Int { completed }
    private var reported = 0
    private var nextReport: Int
    private let interval: Int

    init(typeName: String, step: MigrationProgress.Step, total: Int, handler: Database.ProgressHandler?) {
        self.typeName = typeName
        self.step = step
        self.total = total
        self.handler = handler
        interval = Swift.max(1, Swift.min(10_000, total / 100))
        nextReport = interval
        handler?(MigrationProgress(typeName: typeName, step: step, completed: 0, total: total))
    }

    @inline(__always)
    mutating func advance() {
        completed += 1
        if completed == nextReport {
            nextReport += interval
            report()
        }
    }

    private mutating func report() {
        reported = completed
        handler?(MigrationProgress(typeName: typeName, step: step, completed: completed, total: Swift.max(total, completed)))
    }

    /// Reports the end, unless the last report already said it.
    mutating func finish() {
        if completed != reported { report() }
    }
}
