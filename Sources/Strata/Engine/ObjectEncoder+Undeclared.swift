/// Records written over a stored one field by field id: what a merge of a
/// peer's changes writes (``ChangeMerger``), where the fields that change
/// may be ones this app does not declare, learned just now.
extension ObjectEncoder {
    /// What a record written over a stored one holds for one field id.
    enum FieldOverride {
        /// This value, already checked against the field's type: a
        /// declared field's is encoded as that field (an embedded object
        /// or a list by its layout), any other's as it is.
        case value(Value)
        /// These encoded bytes (the field's id, tag and payload): an
        /// embedded object merged field by field, or a learned field.
        case encoded([UInt8])
    }

    /// The fields a record written over a stored one overrides, by
    /// ascending id: a short list (an object has a handful of fields), which
    /// a merge empties and fills again for each object instead of hashing
    /// ids into a dictionary of its own.
    struct FieldOverrides {
        struct Field {
            var id: PropertyID
            var override: FieldOverride
        }

        /// By ascending id, each id once.
        private(set) var fields: [Field] = []

        /// Whether field `id` is overridden.
        func contains(_ id: PropertyID) -> Bool { fields.contains { $0.id == id } }

        /// Overrides field `id` with `override`, in place of an earlier
        /// override of it.
        mutating func set(_ id: PropertyID, _ override: FieldOverride) {
            // Fields mostly come in id order: the search starts at the end.
            var at = fields.endIndex
            while at > 0 && fields[at - 1].id >= id {
                at -= 1
                if fields[at].id == id {
                    fields[at].override = override
                    return
                }
            }
            let field = Field(id: id, override: override)
            if at == fields.endIndex { fields.append(field) } else { fields.insert(field, at: at) }
        }

        /// Forgets every override, keeping the storage for the next object.
        mutating func removeAll() { fields.removeAll(keepingCapacity: true) }
    }

    /// Encodes a record of `table` holding `overrides` and, for every
    /// other field id, the bytes `base` stores, copied as they are (nil
    /// `base`: a new object or a new life, whose other fields are absent
    /// and read as their defaults). ``key`` keeps what the caller put
    /// there: the object's record key.
    ///
    /// Unlike ``encode(table:schemaVersion:automaticKey:base:storedPositions:rekeys:_:)``,
    /// nothing is filled in: a field neither overridden nor stored stays
    /// absent, as the peer that wrote the object left it.
    func encode(table: ObjectTable, schemaVersion: UInt64, base: RecordView?, overrides: FieldOverrides) throws {
        let fields = overrides.fields
        // The stored fields and the overrides are both in id order: each
        // walk of the stored ones goes beside the overrides.
        var count = fields.count
        var next = 0
        base?.forEachEncodedField { id, _ in
            while next < fields.count && fields[next].id < id { next += 1 }
            if next == fields.count || fields[next].id != id { count += 1 }
        }
        record.removeAll()
        RecordCodec.beginRecord(record, schemaVersion: schemaVersion, fieldCount: count)
        next = 0
        try base?.forEachEncodedField { id, bytes in
            while next < fields.count && fields[next].id < id {
                try append(fields[next].override, id: fields[next].id, of: table)
                next += 1
            }
            if next < fields.count && fields[next].id == id {
                try append(fields[next].override, id: id, of: table)
                next += 1
            } else {
                record.append(contentsOf: bytes)
            }
        }
        for field in fields[next...] { try append(field.override, id: field.id, of: table) }
    }

    /// Appends one overridden field.
    private func append(_ override: FieldOverride, id: PropertyID, of table: ObjectTable) throws {
        switch override {
        case .encoded(let bytes):
            record.append(contentsOf: bytes)
        case .value(let value):
            guard let position = table.shape.position(ofField: id) else {
                RecordCodec.appendField(record, id: id, value: value)
                return
            }
            let field = table.fields[position]
            if field.type.isComposite, field.embedded != nil {
                try CompositeCodec.appendField(
                    record, field, value, owner: table.name, path: table.path, replacing: nil)
            } else {
                RecordCodec.appendField(record, id: id, value: value)
            }
        }
    }
}

/// Typed writes in a synced file: a model's binding writes the fields
/// this app declares straight from the model (no ``Value`` per field); the
/// fields it does not declare are spliced in after, by id.
extension ObjectEncoder {
    /// Puts into ``record``, which holds a record of only `table`'s
    /// declared fields (a model's binding wrote it), the fields the app
    /// does not declare, as ``encode(table:schemaVersion:automaticKey:base:storedPositions:rekeys:_:)``
    /// would: with `base`, its kept fields and the fields learned after
    /// the table was opened, copied as they are (a retired property's
    /// field is dropped); without, the kept fields' empty values.
    func spliceUndeclared(_ table: ObjectTable, base: RecordView?) {
        func isUndeclared(_ id: PropertyID) -> Bool {
            table.shape.position(ofField: id) == nil
                && (!table.knowsHidden(id) || table.keptFields.contains(where: { $0.id == id }))
        }
        var count = 0
        if let base {
            base.forEachEncodedField { id, _ in if isUndeclared(id) { count += 1 } }
        } else {
            count = table.keptFields.count
        }
        guard count > 0 else { return }
        let declared = spliceBuffer
        declared.removeAll()
        record.withUnsafeBytes { declared.append(contentsOf: $0) }
        declared.withUnsafeBytes { declaredBytes in
            let own: RecordView
            do throws(DecodingFailure) {
                own = try RecordView(trusting: declaredBytes)
            } catch {
                preconditionFailure("A record Strata encoded for '\(table.name)' does not decode: \(error.reason)")
            }
            record.removeAll()
            RecordCodec.beginRecord(
                record, schemaVersion: own.effectiveSchemaVersion, fieldCount: own.fieldCount + count)
            // The model's fields, walked beside the undeclared ones: both
            // are in id order.
            let ownBase = declaredBytes.baseAddress!
            let end = declaredBytes.count
            var p = own.fieldsOffset
            var left = own.fieldCount
            func appendOwn(before id: PropertyID?) {
                while left > 0 {
                    var q = p
                    guard let ownID = RecordView.varint(ownBase, &q, end), RecordView.skip(ownBase, &q, end) else {
                        return
                    }
                    if let id, ownID >= UInt64(id.rawValue) { return }
                    record.append(contentsOf: UnsafeRawBufferPointer(start: ownBase + p, count: q - p))
                    p = q
                    left -= 1
                }
            }
            if let base {
                base.forEachEncodedField { id, bytes in
                    guard isUndeclared(id) else { return }
                    appendOwn(before: id)
                    record.append(contentsOf: bytes)
                }
            } else {
                for field in table.keptFields {
                    appendOwn(before: field.id)
                    CompositeCodec.appendEmpty(record, field)
                }
            }
            appendOwn(before: nil)
        }
    }
}
