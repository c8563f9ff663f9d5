/// The walk of a typed migration: each stored record goes to the typed
/// steps as it is, and what they write goes back through the same write
/// cursor, with no ``DynamicObject`` or ``MutableObject`` in between but
/// for an object whose values must be written the general way.
extension RecordRewriter {
    /// What the typed steps did with one walked object.
    enum TypedOutcome {
        /// A step returned nil: the object goes.
        case deleted
        /// The last step wrote the object's whole record, and its primary
        /// key when the type has one, into ``recordEncoder``.
        case encoded
        /// The steps' values are written the general way, which converts
        /// or explains what does not fit (`writeValues`).
        case values
    }

    /// Walks the stored objects of the type `name` for a typed migration.
    /// `run` gets each record, validated, and its key; for an object whose
    /// outcome is ``TypedOutcome/values``, `writeValues` sets the new
    /// values on a ``MutableObject`` standing for it.
    ///
    /// - Returns: False, having walked nothing, when the type needs the
    ///   closure API's walk: a type the app's schema does not have, one
    ///   walked before in this migration, or one whose links become
    ///   embedded objects.
    func walkTyped(
        _ name: String, run: (_ record: RecordView, _ key: UnsafeRawBufferPointer) throws -> TypedOutcome,
        writeValues: (MutableObject) -> Void
    ) throws -> Bool {
        guard !catalog.wasDeleted(name), let index = catalog.typeIndex(name) else { return false }
        let type = catalog.working.types[index]
        guard catalog.isNew(type), !enumerated.contains(type.id), let oldTable = scope.oldTables[type.id] else {
            return false
        }
        let target = try self.target(type)
        guard target.conversions.isEmpty else { return false }
        isWalking = true
        defer { isWalking = false }
        enumerated.insert(type.id)
        walkChangedPositions = 0
        walkWrote = false
        let table = target.table
        let encoder = recordEncoder
        var object: MutableObject?
        // Every object goes through the steps: the walk rewrites the table.
        let appends = canAppend(target, old: old[typeID: type.id])
        try walkRecords(of: oldTable, as: type.name, writing: table, appending: appends) { key, record, writer in
            let view = try oldTable.validatedView(key: key, record: record)
            switch try restating(table: table, key: key, { try run(view, key) }) {
            case .deleted:
                try delete(key, target)
            case .encoded:
                let changed = encoder.record.withUnsafeBytes { bytes in
                    guard let written = try? RecordView(trusting: bytes) else {
                        preconditionFailure("A record a typed step encoded for '\(table.name)' does not decode")
                    }
                    return table.changedPositions(of: written, from: view)
                }
                try storeEncoded(key, changed: changed, target, writer)
            case .values:
                let values = object ?? MutableObject(table: table)
                object = values
                values.reset(key: key, base: view, storage: nil)
                writeValues(values)
                try visit(values, old: nil, target, writer, nil)
            }
        }
        finishWalk(type.id, target)
        return true
    }

    // MARK: Records a typed step encoded whole

    /// Stores the record a typed step encoded whole, with its primary key
    /// when it has one, for the walked object whose key is `key`; the
    /// fields at the positions of `changed` differ from the stored ones.
    func storeEncoded(
        _ key: UnsafeRawBufferPointer, changed: UInt64, _ target: Target, _ writer: LMDBCursor
    ) throws {
        walkChangedPositions |= changed
        walkWrote = true
        let table = target.table
        let automaticKey: ObjectEncoder.AutomaticKey =
            target.rekey && table.primaryKey == nil ? engine.newID(table) : .keep
        try store(key, typed: true, target, writer, keyEncoded: try takeEncodedKey(table, automaticKey))
    }

    /// For a record a typed step encoded whole: whether its key is in the
    /// encoder (a primary key, which the step wrote), after giving a
    /// re-keyed type without one its new automatic id.
    @inline(never)
    private func takeEncodedKey(_ table: ObjectTable, _ automaticKey: ObjectEncoder.AutomaticKey) throws -> Bool {
        if case .new(let nextID) = automaticKey {
            recordEncoder.key.removeAll()
            KeyCodec.appendAutomaticID(try nextID(), to: recordEncoder.key)
        }
        return table.primaryKey != nil
    }
}
