/// Embedded objects, merged per path: each field inside one is a register
/// of its own, and an optional one has a life (odd while it holds an
/// object, even while null) that decides as an object's causal length
/// does. A higher life wins over everything of a lower one: setting the
/// object to null beats concurrent edits of its fields, and setting it
/// again beats the null. Within one life, each field's highest stamp wins,
/// so two devices editing two fields of one object both keep their edit.
extension ChangeMerger {
    /// An embedded field of this file: where it is, and its type.
    struct EmbeddedTarget {
        var path: ClockPath
        /// The embedded type's name.
        var typeName: String
        /// Whether it may be null.
        var isOptional: Bool
        /// Its layout, when the app declares the field.
        var layout: EmbeddedLayout?
    }

    /// A field inside an embedded object of this file.
    struct InsideTarget {
        var path: ClockPath
        var property: Property
        /// The field, when the app declares it.
        var declared: ObjectTable.Field?
    }

    /// An entry's changes inside embedded objects, by path.
    struct EmbeddedChanges {
        var lives: [ClockPath: (life: UInt64, stamp: LocalStamp, target: EmbeddedTarget)] = [:]
        var values: [ClockPath: (target: InsideTarget, value: Value, stamp: LocalStamp)] = [:]
    }

    /// Where the changeset's field of index `index` goes in `table`:
    /// a declared property of the same name and descriptor, a kept one, or
    /// one learned now; for a field inside an embedded object, a property
    /// of the embedded type, learned there when new. Worked out once per
    /// field (`known`).
    func target(_ index: Int, of content: ChangesetContent, _ table: ObjectTable, known: inout [Target?]) throws
        -> Target
    {
        if let target = known[index] { return target }
        let wire = content.fields[index]
        let target: Target
        if let parent = wire.parent {
            guard case .embedded(let outer) = try self.target(parent, of: content, table, known: &known) else {
                known[index] = .skipped
                return .skipped
            }
            target = inside(outer, wire, table, name: "\(table.name).\(content.name(of: wire))")
        } else {
            target = topLevel(wire, table)
        }
        known[index] = target
        return target
    }

    private func topLevel(_ wire: WireField, _ table: ObjectTable) -> Target {
        guard let type = catalog[typeID: table.type.id],
            let (id, property) = storedProperty(wire, of: type, name: "\(table.name).\(wire.path)")
        else { return .skipped }
        // A field the app declares is one of the table's, by id.
        let declared = table.shape.position(ofField: id).map { table.fields[$0] }
        guard property.type == .embedded else { return declared.map { .declared($0) } ?? .kept(id) }
        return .embedded(
            EmbeddedTarget(
                path: ClockPath(id), typeName: property.target ?? "", isOptional: property.isOptional,
                layout: declared?.embedded))
    }

    private func inside(_ outer: EmbeddedTarget, _ wire: WireField, _ table: ObjectTable, name: String) -> Target {
        guard let type = catalog[type: outer.typeName], type.isEmbedded,
            let (id, property) = storedProperty(wire, of: type, name: name)
        else { return .skipped }
        let declared = outer.layout?.shape.position(ofField: id).map { outer.layout!.fields[$0] }
        let path = outer.path.appending(id)
        guard property.type == .embedded else {
            return .inside(InsideTarget(path: path, property: property, declared: declared))
        }
        return .embedded(
            EmbeddedTarget(
                path: path, typeName: property.target ?? "", isOptional: property.isOptional,
                layout: declared?.embedded))
    }

    /// The field of the catalog's `type` that `wire` names: a current or
    /// kept property of its name and descriptor, else one learned now as a
    /// kept property (with its embedded type, when the file lacks it); nil
    /// for a field that cannot be learned: a list of embedded objects
    /// (its objects' fields are not named), or a descriptor this version
    /// of Strata does not read.
    private func storedProperty(_ wire: WireField, of type: CatalogType, name: String) -> (PropertyID, Property)? {
        let named = FieldDescriptor.property(named: wire.path, descriptor: wire.descriptor)
        if let named, let stored = type.storedProperty(named: wire.path, sameFieldAs: named) {
            return (stored.id, stored.property)
        }
        guard let property = named, !(property.type == .list && property.isEmbedding) else {
            report.skippedFields.insert("\(name): \(wire.descriptor)")
            return nil
        }
        if property.type == .embedded, let target = property.target, catalog.learnEmbeddedType(named: target) {
            addLearnedType(target)
        }
        report.learnedFields.insert(name)
        return (catalog.learnProperty(property, in: type.id), property)
    }

    // MARK: Merging

    /// Merges `changes` into the embedded fields of the record `stored`
    /// (nil: a new life of the object), moving `row`'s clocks: the bytes
    /// of each record field that changed (its id, tag and payload), and
    /// how many registers changed.
    func mergeEmbedded(_ changes: EmbeddedChanges, in stored: RecordView?, row: inout ClockRow, seq: UInt64) throws
        -> (fields: [PropertyID: [UInt8]], changed: Int)
    {
        var fields: [PropertyID: [UInt8]] = [:]
        var changed = 0
        for (path, life) in changes.lives where path.tail.isEmpty {
            let current = stored.flatMap { record in
                record.fieldOffset(forField: path.head, expectedAt: Int.max).map {
                    CompositeCodec.Stored(base: record.bytes.baseAddress!, offset: $0, end: record.bytes.count)
                }
            }
            guard
                let value = try merge(
                    life.target, changes, current, row: &row, seq: seq, changed: &changed)
            else { continue }
            let writer = ByteWriter(capacity: value.count + 5)
            writer.appendVarint(UInt64(path.head.rawValue))
            writer.append(contentsOf: value)
            fields[path.head] = writer.bytes
        }
        return (fields, changed)
    }

    /// Merges the changes at and inside the embedded field `target`, whose
    /// stored value is `stored` (at its tag): its new value (tag and
    /// payload), or nil when it keeps its bytes.
    private func merge(
        _ target: EmbeddedTarget, _ changes: EmbeddedChanges, _ stored: CompositeCodec.Stored?, row: inout ClockRow,
        seq: UInt64, changed: inout Int
    ) throws -> [UInt8]? {
        let path = target.path
        let isObject = stored?.tag == RecordCodec.Tag.object.rawValue
        let local = row.life(at: path, present: isObject)
        guard let incoming = changes.lives[path], incoming.life >= local else { return nil }
        if incoming.life > local {
            // A new life: what it holds is what the changes hold.
            let present = incoming.life % 2 == 1
            guard present || target.isOptional else {
                throw notFitting(.null, "a required embedded \(target.typeName)")
            }
            row.removeInside(path)
            row.set(path, FieldClock(stamp: incoming.stamp, seq: seq))
            row.setLife(path, incoming.life, present: present)
            changed += 1
            guard present else { return [RecordCodec.Tag.null.rawValue] }
            return try object(target, changes, over: nil, row: &row, seq: seq, changed: &changed)
        }
        // The field a record lacks was never written: any stamp is above.
        let current = stored == nil ? LocalStamp.none : row.clock(at: path).stamp
        if try isAbove(incoming.stamp, current) {
            row.set(path, FieldClock(stamp: incoming.stamp, seq: seq))
            changed += 1
            // Null written as such: a later local rewrite that writes the
            // same null must not read as the first write of the field.
            if stored == nil { return [RecordCodec.Tag.null.rawValue] }
        }
        guard isObject, let stored else { return nil }
        return try object(target, changes, over: stored, row: &row, seq: seq, changed: &changed)
    }

    /// The embedded object at `target` with the changes inside it that win
    /// over `stored` (nil: a new object, which holds what the changes do);
    /// nil when no change wins.
    private func object(
        _ target: EmbeddedTarget, _ changes: EmbeddedChanges, over stored: CompositeCodec.Stored?,
        row: inout ClockRow, seq: UInt64, changed: inout Int
    ) throws -> [UInt8]? {
        let depth = target.path.tail.count + 1
        let existing = stored.map(CompositeCodec.fields(of:)) ?? [:]
        var replaced: [PropertyID: [UInt8]] = [:]
        let writer = ByteWriter(capacity: 32)
        for (path, change) in changes.values where path.tail.count == depth && path.isWithin(target.path) {
            let id = path.tail[depth - 1]
            let current = existing[id] == nil ? LocalStamp.none : row.clock(at: path).stamp
            if stored != nil, !(try isAbove(change.stamp, current)) { continue }
            writer.removeAll()
            try encode(change.value, change.target, to: writer)
            replaced[id] = writer.bytes
            row.set(path, FieldClock(stamp: change.stamp, seq: seq))
            changed += 1
        }
        for (path, life) in changes.lives where path.tail.count == depth && path.isWithin(target.path) {
            let id = path.tail[depth - 1]
            let inner = existing[id]?.value
            guard let value = try merge(life.target, changes, inner, row: &row, seq: seq, changed: &changed) else {
                continue
            }
            writer.removeAll()
            writer.appendVarint(UInt64(id.rawValue))
            writer.append(contentsOf: value)
            replaced[id] = writer.bytes
        }
        guard stored == nil || !replaced.isEmpty else { return nil }
        let ids = Set(existing.keys).union(replaced.keys).sorted()
        let object = ByteWriter(capacity: 64)
        RecordCodec.appendObject(object, fieldCount: ids.count) { body in
            for id in ids {
                if let bytes = replaced[id] {
                    body.append(contentsOf: bytes)
                } else if let field = existing[id]?.field {
                    body.append(contentsOf: UnsafeRawBufferPointer(rebasing: field))
                }
            }
        }
        return object.bytes
    }

    /// Appends the field `target` holding `value`: its id, tag and payload,
    /// checked against the declared field, when there is one.
    private func encode(_ value: Value, _ target: InsideTarget, to writer: ByteWriter) throws {
        let id = target.path.tail.last ?? target.path.head
        guard let field = target.declared else {
            RecordCodec.appendField(writer, id: id, value: value)
            return
        }
        let coerced = value.coerced(to: field.type)
        guard coerced.fits(field.type, optional: field.isOptional) else {
            throw notFitting(value, "\(field.name) (inside an embedded object)")
        }
        if field.type.isComposite {
            try CompositeCodec.appendField(writer, field, coerced, owner: field.name, path: store.path)
        } else {
            RecordCodec.appendField(writer, id: id, value: coerced)
        }
    }

    /// The refusal of a changeset whose value does not fit its field.
    func notFitting(_ value: Value, _ field: String) -> StrataError {
        StrataError.changesetRefused(
            path: store.path, "its value \(value) does not fit '\(field)'",
            remedy:
                "The sender's changeset is not what Strata writes for that field; ask for it again, and check the sender's version of Strata."
        )
    }
}
