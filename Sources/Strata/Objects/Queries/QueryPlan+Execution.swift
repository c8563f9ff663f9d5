/// Running a ``QueryPlan``: the one executor behind both query APIs. It
/// walks the records (or an index), checks the conditions on the stored
/// bytes, hands each record that passes to the front end's `decode` (which
/// makes the value and runs its filters), sorts when the walk does not
/// give the order, and stops at the limit.
///
/// ## Writes during a walk
///
/// In a write transaction the body may write. Three guards keep a walk
/// finite and in place:
/// - it does not go past the entry that was last (first, walking
///   backward) when it began, so that a body that inserts objects still
///   finishes;
/// - a bounded walk finds its place again by the bytes of the entry it
///   visited, because LMDB moves a cursor whose entry another cursor
///   deletes, but not always to the right place (a duplicate-key node of
///   an index deleted under a cursor walking backward); the plain scan of
///   every record steps with the cursor, as LMDB keeps a cursor of a
///   database without duplicate keys on its entry while others write;
/// - it stops when the body empties a table (`deleteAll`), whose cursor
///   then points at nothing.
extension QueryPlan {
    /// Walks the objects that pass every condition, in the plan's order,
    /// until `visit` returns false. `visit` gets each object's key, its
    /// record, its order value when `orderValues` is true and the plan
    /// orders by a property, and whether the object is passed over (the
    /// offset: `visit` then runs the front end's filters only); it
    /// returns nil for an object that the filters reject, which counts
    /// toward neither the offset nor the limit.
    ///
    /// Not generic over the front end's values: `visit` makes the value
    /// and runs the body, so that a typed query's closure is compiled in
    /// the app's module for its model. Objects held back for a sort are
    /// visited once the walk has found them all, from their records as
    /// they were found: in a write transaction, copies taken then, so
    /// that what the body writes in between does not change them.
    func run(
        in context: ObjectContext, orderValues: Bool = false,
        _ visit: (_ key: UnsafeRawBufferPointer, _ record: RecordView, _ orderValue: Value?, _ passOver: Bool) throws
            -> Bool?
    ) throws {
        if isPlain {
            return try scanRecords(in: context) { key, record in try visit(key, record, nil, false) ?? true }
        }
        let walk = try walk(sorting: true)
        var remaining = limit ?? .max
        var skipping = offset
        guard remaining > 0, !matchesNothing else { return }
        let engine = context.engine
        let copies = context.copiesObjects
        func wanted(_ value: Value) -> Value? { orderValues && order?.position != nil ? value : nil }
        /// Emits one object; false when the walk stops (the body said so,
        /// the limit is reached or, where the walk still follows a cursor,
        /// the body emptied a table).
        func emit(_ key: UnsafeRawBufferPointer, _ record: RecordView, _ value: Value?, followsCursor: Bool)
            throws -> Bool
        {
            let emptied = engine.tablesEmptied
            if skipping > 0 {
                // Passed over by the offset, after the filters.
                guard try visit(key, record, value, true) != nil else { return true }
                skipping -= 1
                return true
            }
            guard let goesOn = try visit(key, record, value, false) else { return true }
            remaining -= 1
            guard goesOn, !followsCursor || engine.tablesEmptied == emptied else { return false }
            return remaining > 0
        }
        func hold(_ key: UnsafeRawBufferPointer, _ record: RecordView, _ value: Value) -> HeldObject {
            guard copies else { return HeldObject(value: value, key: key, record: record, copy: nil) }
            let copy = CopiedBytes(key: key, record: record.bytes)
            return HeldObject(value: value, key: copy.key, record: record.rebased(onto: copy.record), copy: copy)
        }
        if let order = walk.sortInMemory {
            var held: [HeldObject] = []
            try candidates(walk, context) { key, record, _ in
                held.append(hold(key, record, orderValue(order, in: record)))
                return true
            }
            held.sort { order.compare($0.value, $0.key, $1.value, $1.key) < 0 }
            if !order.ascending { held.reverse() }
            for object in held {
                guard try emit(object.key, object.record, wanted(object.value), followsCursor: false) else { return }
            }
            return
        }
        // An index orders the values that share a key by primary key: a
        // walk through the index sorts each such run by the order (the
        // further keys of an order by several, for every key; the order's
        // property or, without an order, the index's, for a cut key, whose
        // run holds several values; values then come in index order).
        var runOrder = order
        if runOrder == nil, case .index = walk.access, let driver = walk.driver {
            runOrder = QueryOrder(position: conditions[driver].position, ascending: true)
        }
        let sortsRuns = runOrder?.position != nil
        let runsByEveryKey = !(order?.ties.isEmpty ?? true)
        let ascending = runOrder?.ascending ?? true
        let valueOrder = orderValues ? order : nil
        // The open run: its cut index key (nil when none is open) and its
        // objects.
        var runKey: [UInt8]?
        var run: [HeldObject] = []
        func flush() throws -> Bool {
            guard runKey != nil else { return true }
            runKey = nil
            var objects = run
            run = []
            if let runOrder { objects.sort { runOrder.compare($0.value, $0.key, $1.value, $1.key) < 0 } }
            if !ascending { objects.reverse() }
            for object in objects {
                guard try emit(object.key, object.record, wanted(object.value), followsCursor: true) else {
                    return false
                }
            }
            return true
        }
        try candidates(walk, context) { key, record, indexKey in
            if let indexKey, sortsRuns, let runOrder, runsByEveryKey || indexKey.count >= KeyCodec.maxKeySize {
                let object = hold(key, record, orderValue(runOrder, in: record))
                if let open = runKey, KeyCodec.compare(indexKey, open) == 0 {
                    run.append(object)
                    return true
                }
                guard try flush() else { return false }
                runKey = Array(indexKey)
                run = [object]
                return true
            }
            let value = valueOrder.flatMap { $0.position == nil ? nil : orderValue($0, in: record) }
            return try flush() && emit(key, record, value, followsCursor: true)
        }
        _ = try flush()
    }

    /// The number of matching objects, before any filter of a front end:
    /// it decodes nothing. Without conditions it reads one counter; an
    /// index equality counts the entries of one key without reading a
    /// record.
    func count(in context: ObjectContext) throws -> Int {
        if let error { throw error }
        let limit = self.limit ?? .max
        // The objects past the offset, at most the limit.
        func counted(_ n: Int) -> Int { min(max(n - offset, 0), limit) }
        guard !matchesNothing else { return 0 }
        if conditions.isEmpty && recordTest == nil {
            guard let backlinks else { return counted(try context.lmdb.entryCount(table.records)) }
            // The number of the target's entries: no record is read.
            return counted(try context.engine.linkingCount(in: backlinks.database, to: backlinks.target))
        }
        let walk = try walk(sorting: false)
        guard limit > 0 else { return 0 }
        // Counting stops once it has passed the offset and reached the limit.
        let enough = limit > Int.max - offset ? Int.max : limit + offset
        var n = 0
        if case .index(let index, let intervals, _) = walk.access, conditions.count == 1, !walk.rechecksDriver,
            recordTest == nil
        {
            // The one condition is the index's: a key that tells counts its
            // entries without reading a record.
            let condition = conditions[0]
            try context.lmdb.withCursor(index) { cursor in
                for keys in intervals {
                    var entry = try start(cursor, keys, ascending: true, duplicates: true)
                    scan: while let (indexKey, objectKey) = entry, n < enough {
                        switch keys.place(of: indexKey) {
                        case .below:
                            entry = try cursor.nextKey()
                        case .above:
                            break scan
                        case .inside(recheck: false):
                            n += try cursor.duplicateCount()
                            entry = try cursor.nextKey()
                        case .inside(recheck: true):
                            let record = try self.record(objectKey, from: index, context)
                            let view = try table.validatedView(key: objectKey, record: record)
                            if passes(condition, view) { n += 1 }
                            entry = try cursor.next()
                        }
                    }
                }
            }
            return counted(n)
        }
        try candidates(walk, context) { _, _, _ in
            n += 1
            return n < enough
        }
        return counted(n)
    }

    /// The walk of a plain plan (``isPlain``): every record in key order,
    /// until `visit` returns false, without the layers that conditions, an
    /// order or a limit need. In a write transaction the walk stops at the
    /// key that was last when it began. `checkingHeaders`: each record's
    /// header only is checked, for a `visit` that reads the record as a
    /// model's decode or a scan's ``DynamicObject`` does, checking what it
    /// touches (``ObjectTable/headerCheckedView(key:record:)``); otherwise
    /// each record is validated whole.
    func scanRecords(
        in context: ObjectContext, checkingHeaders: Bool = false,
        _ visit: (UnsafeRawBufferPointer, RecordView) throws -> Bool
    ) throws {
        let table = self.table
        try context.lmdb.withCursor(table.records) { cursor in
            let end = context.copiesObjects ? try cursor.last().map { Array($0.key) } : nil
            var entry = try cursor.first()
            while let (key, record) = entry {
                if let end, KeyCodec.compare(key, end) > 0 { return }
                let view =
                    checkingHeaders
                    ? try table.headerCheckedView(key: key, record: record)
                    : try table.validatedView(key: key, record: record)
                let emptied = context.engine.tablesEmptied
                guard try visit(key, view), context.engine.tablesEmptied == emptied else { return }
                entry = try cursor.next()
            }
        }
    }

    /// Walks the records the plan reaches that pass every condition, until
    /// `visit` returns false; decodes nothing. `visit` gets the object's
    /// key, its record, and the index key when the walk is an index's.
    private func candidates(
        _ walk: Walk, _ context: ObjectContext,
        _ visit: (UnsafeRawBufferPointer, RecordView, UnsafeRawBufferPointer?) throws -> Bool
    ) throws {
        let table = self.table
        let driver = walk.rechecksDriver ? nil : walk.driver
        func admit(
            _ key: UnsafeRawBufferPointer, _ record: UnsafeRawBufferPointer, recheck: Bool,
            indexKey: UnsafeRawBufferPointer? = nil
        ) throws -> Bool {
            let view = try table.validatedView(key: key, record: record)
            if let recordTest, !recordTest(view) { return true }
            for (offset, condition) in conditions.enumerated() where offset != driver || recheck {
                guard passes(condition, view) else { return true }
            }
            return try visit(key, view, indexKey)
        }
        switch walk.access {
        case .scan:
            try context.lmdb.withCursor(table.records) { cursor in
                try self.walk(cursor, [QueryRange.Keys()], context, ascending: true, duplicates: false) {
                    key, record, _ in
                    try admit(key, record, recheck: false)
                }
            }
        case .records(let keys, let ascending):
            try context.lmdb.withCursor(table.records) { cursor in
                // A recheck at a bound cut from a key too long to store.
                try self.walk(cursor, keys, context, ascending: ascending, duplicates: false) {
                    key, record, recheck in
                    try admit(key, record, recheck: recheck)
                }
            }
        case .backlinks(let database, let target, let property):
            try walkBacklinks(database, target, property, context) { key, record in
                try admit(key, record, recheck: true)
            }
        case .index(let index, let keys, let ascending):
            try context.lmdb.withCursor(index) { cursor in
                try self.walk(cursor, keys, context, ascending: ascending, duplicates: true) {
                    indexKey, objectKey, recheck in
                    try admit(
                        objectKey, try record(objectKey, from: index, context), recheck: recheck,
                        indexKey: indexKey)
                }
            }
        }
    }

    /// Calls `visit` with the key and record of each object the backlinks
    /// database lists for `target`, in key order, until it returns false.
    /// The keys are read first: a body that writes links may change the
    /// entries under the walk.
    private func walkBacklinks(
        _ database: DatabaseHandle, _ target: [UInt8], _ property: String, _ context: ObjectContext,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        let table = self.table
        for key in try context.engine.linkingKeys(in: database, to: target) {
            // Through a cursor, for LMDB's own copy of the key: a held
            // object keeps it, and the array's bytes do not last.
            let entry = try key.withUnsafeBytes { key in
                try context.lmdb.withLookupCursor(table.records) { try $0.seek(exactly: key) }
            }
            guard let entry else { throw table.missingLinkingObject(property) }
            guard try visit(entry.key, entry.value) else { return }
        }
    }

    /// The record an index entry names.
    private func record(_ objectKey: UnsafeRawBufferPointer, from index: DatabaseHandle, _ context: ObjectContext)
        throws -> UnsafeRawBufferPointer
    {
        guard let record = try context.lmdb.get(table.records, objectKey) else {
            throw table.missingIndexedObject(indexed: table.indexedFields.first { $0.index == index }?.name ?? "?")
        }
        return record
    }

    /// Walks the entries of `cursor` whose keys lie within `intervals` (in
    /// key order, apart), forward or backward, until `visit` returns false. `visit` gets the key, the
    /// value, and whether the key leaves the range open (a cut key). In a
    /// write transaction it keeps the guards of the type's documentation.
    private func walk(
        _ cursor: LMDBCursor, _ intervals: [QueryRange.Keys], _ context: ObjectContext, ascending: Bool,
        duplicates: Bool, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, Bool) throws -> Bool
    ) throws {
        var end: (key: [UInt8], value: [UInt8])?
        if context.copiesObjects, let edge = try ascending ? cursor.last() : cursor.first() {
            end = (Array(edge.key), duplicates ? Array(edge.value) : [])
        }
        for keys in ascending ? intervals : intervals.reversed() {
            var entry = try start(cursor, keys, ascending: ascending, duplicates: duplicates)
            interval: while let (key, value) = entry {
                if let end {
                    var order = KeyCodec.compare(key, end.key)
                    if order == 0 && duplicates { order = KeyCodec.compare(value, end.value) }
                    if ascending ? order > 0 : order < 0 { return }
                }
                switch keys.place(of: key) {
                case .below:
                    if !ascending { break interval }
                case .above:
                    if ascending { break interval }
                case .inside(let recheck) where context.copiesObjects:
                    let place = (Array(key), duplicates ? Array(value) : [])
                    guard try visit(key, value, recheck) else { return }
                    entry = try resume(cursor, after: place, ascending: ascending, duplicates: duplicates)
                    continue
                case .inside(let recheck):
                    guard try visit(key, value, recheck) else { return }
                }
                entry = try ascending ? cursor.next() : cursor.previous()
            }
        }
    }

    /// Puts `cursor` on the entry that follows `place` in a walk (precedes
    /// it, walking backward), whether or not `place` is still there.
    private func resume(
        _ cursor: LMDBCursor, after place: (key: [UInt8], value: [UInt8]), ascending: Bool, duplicates: Bool
    ) throws -> LMDBCursor.Entry? {
        try place.key.withUnsafeBytes { key in
            if duplicates, let found = try place.value.withUnsafeBytes({ try cursor.seek(exactly: key, atLeast: $0) }) {
                // At `key`, on the first value at or after the place's.
                if ascending { return KeyCodec.compare(found.value, place.value) == 0 ? try cursor.next() : found }
                return try cursor.previous()
            }
            guard let found = try cursor.seek(atLeast: key) else { return ascending ? nil : try cursor.last() }
            let atKey = KeyCodec.compare(found.key, key) == 0
            if ascending {
                // In a duplicate-key database, every value of `key` is before
                // the place's.
                guard atKey else { return found }
                return try duplicates ? cursor.nextKey() : cursor.next()
            }
            guard atKey, duplicates, let last = try cursor.lastDuplicate() else { return try cursor.previous() }
            return last
        }
    }

    /// Puts `cursor` on the first entry of a walk: the first at or after
    /// the lower key, or, walking backward, the last at or before the
    /// upper key.
    private func start(_ cursor: LMDBCursor, _ keys: QueryRange.Keys, ascending: Bool, duplicates: Bool) throws
        -> LMDBCursor.Entry?
    {
        if ascending {
            guard let lower = keys.lower else { return try cursor.first() }
            return try lower.withUnsafeBytes { try cursor.seek(atLeast: $0) }
        }
        guard let upper = keys.upper, let found = try upper.withUnsafeBytes({ try cursor.seek(atLeast: $0) })
        else { return try cursor.last() }
        let atUpper = KeyCodec.compare(found.key, upper) == 0
        if atUpper && (keys.upperInclusive || keys.upperCut) {
            guard duplicates, let last = try cursor.lastDuplicate() else { return found }
            return last
        }
        return try cursor.previous()
    }
}

/// An object a query's walk holds back for a sort: its order value, key
/// and record, the last two in the transaction's memory map (a read
/// transaction) or in a copy (a write transaction).
struct HeldObject {
    let value: Value
    let key: UnsafeRawBufferPointer
    let record: RecordView
    let copy: CopiedBytes?
}
