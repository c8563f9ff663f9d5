/// How a ``ModelQuery`` reaches its values: which walk (the records in key
/// order, an index, or every record), bounded by which `where`, and
/// whether the values are sorted in memory afterwards.
extension ModelQuery {
    enum Access {
        /// Every record, in key order.
        case scan
        /// The records within keys, in key order or its reverse.
        case records(QueryRange.Keys, ascending: Bool)
        /// The entries of an index within keys, in index order or its reverse.
        case index(DatabaseHandle, QueryRange.Keys, ascending: Bool)
    }

    struct Plan {
        var access: Access
        /// The condition that the walk's keys enforce, up to rechecks.
        var driver: Int?
        var sortInMemory: (position: Int, ascending: Bool)?
    }

    /// Works out the walk. `sorting` is false when the order does not
    /// matter (counting).
    func plan(sorting: Bool) throws -> Plan {
        if let keyPathError { throw keyPathError }
        if sorting, let order {
            // An equality on the primary key reads at most one object: it
            // beats a walk in the sort's order.
            let oneObject = conditions.contains {
                $0.isEquality && binding.field(at: $0.position)?.isPrimaryKey == true
            }
            if !oneObject, let field = binding.field(at: order.position) {
                let driver = conditions.firstIndex { $0.position == order.position }
                if field.isPrimaryKey {
                    // A bound that cannot be a key leaves the walk unbounded
                    // and the condition checked on each record.
                    let keys = driver.flatMap { conditions[$0].primaryKeys(type: field.type) }
                    return Plan(
                        access: .records(keys ?? QueryRange.Keys(), ascending: order.ascending),
                        driver: keys == nil ? nil : driver)
                } else if let index = field.index {
                    let keys = driver.map { conditions[$0].indexKeys } ?? QueryRange.Keys()
                    return Plan(access: .index(index, keys, ascending: order.ascending), driver: driver)
                }
            }
            var plan = try self.plan(sorting: false)
            plan.sortInMemory = order
            return plan
        }
        // Between two conditions of one rank, the property declared first
        // chooses, so that the order of the values (index order, for a
        // range on an index) does not depend on the order of the `where`s.
        var best: (rank: (Int, Int), offset: Int, access: Access)?
        for (offset, condition) in conditions.enumerated() {
            guard let field = binding.field(at: condition.position) else { continue }
            let rank: Int
            let access: Access
            if field.isPrimaryKey, let keys = condition.primaryKeys(type: field.type) {
                rank = condition.isEquality ? 0 : 2
                access = .records(keys, ascending: true)
            } else if let index = field.index {
                rank = condition.isEquality ? 1 : 3
                access = .index(index, condition.indexKeys, ascending: true)
            } else {
                continue
            }
            if best.map({ (rank, condition.position) < $0.rank }) ?? true {
                best = ((rank, condition.position), offset, access)
            }
        }
        guard let best else { return Plan(access: .scan, driver: nil) }
        return Plan(access: best.access, driver: best.offset)
    }

    /// Walks the matching values until `body` returns false.
    @inline(__always)
    func iterate(_ body: (M) throws -> Bool) throws {
        try iterateWithKeys { model, _ in try body(model) }
    }

    /// Walks the matching values until `body` returns false; `body` gets
    /// each value and its object's key.
    func iterateWithKeys(_ body: (M, UnsafeRawBufferPointer) throws -> Bool) throws {
        if conditions.isEmpty && order == nil && maximumCount == nil && keyPathError == nil {
            // The common full scan, without the layers that queries need.
            if predicates.isEmpty { return try scan(body) }
            let predicates = self.predicates
            return try scan { value, key in
                for predicate in predicates where try !predicate(value) { return true }
                return try body(value, key)
            }
        }
        let plan = try plan(sorting: true)
        var remaining = maximumCount ?? .max
        guard remaining > 0 else { return }
        let predicates = self.predicates
        let binding = self.binding
        if let order = plan.sortInMemory {
            var found: [Sortable] = []
            try candidates(plan) { key, record, _ in
                let model = try binding.decode(M.self, record: record, key: key)
                for predicate in predicates where try !predicate(model) { return true }
                found.append((binding.value(at: order.position, in: record), Array(key), model))
                return true
            }
            found.sort(by: Self.inIndexOrder)
            if !order.ascending { found.reverse() }
            for entry in found.prefix(remaining) where try !entry.key.withUnsafeBytes({ try body(entry.model, $0) }) {
                return
            }
            return
        }
        let engine = context.engine
        func emit(_ model: M, _ key: UnsafeRawBufferPointer) throws -> Bool {
            let emptied = engine.tablesEmptied
            remaining -= 1
            guard try body(model, key), engine.tablesEmptied == emptied else { return false }
            return remaining > 0
        }
        // An index orders the values that share a cut key by primary key,
        // not by value: a walk through the index sorts each such run, by
        // the sort's property or, without a sort, by the index's (values
        // then come in index order, by value).
        var sortPosition = order?.position
        if sortPosition == nil, case .index = plan.access, let driver = plan.driver {
            sortPosition = conditions[driver].position
        }
        let ascending = order?.ascending ?? true
        var run: (indexKey: [UInt8], values: [Sortable])?
        func flush() throws -> Bool {
            guard var values = run?.values else { return true }
            run = nil
            values.sort(by: Self.inIndexOrder)
            if !ascending { values.reverse() }
            for entry in values where try !entry.key.withUnsafeBytes({ try emit(entry.model, $0) }) { return false }
            return true
        }
        try candidates(plan) { key, record, cutIndexKey in
            let model = try binding.decode(M.self, record: record, key: key)
            for predicate in predicates where try !predicate(model) { return true }
            if let cutIndexKey, let sortPosition {
                let entry = (binding.value(at: sortPosition, in: record), Array(key), model)
                if let indexKey = run?.indexKey, KeyCodec.compare(cutIndexKey, indexKey) == 0 {
                    run!.values.append(entry)
                    return true
                }
                guard try flush() else { return false }
                run = (Array(cutIndexKey), [entry])
                return true
            }
            return try flush() && emit(model, key)
        }
        _ = try flush()
    }

    /// A value with what orders it: the sorted property's stored value and
    /// the object's key.
    typealias Sortable = (value: Value, key: [UInt8], model: M)

    /// Index order: by value, then by primary key.
    static func inIndexOrder(_ a: Sortable, _ b: Sortable) -> Bool {
        let order = KeyCodec.compareInIndexOrder(a.value, b.value)
        return order != 0 ? order < 0 : a.key.lexicographicallyPrecedes(b.key)
    }

    /// The number of matching values, decoding objects only for filters.
    func countValues() throws -> Int {
        if let keyPathError { throw keyPathError }
        let limit = maximumCount ?? .max
        if conditions.isEmpty && predicates.isEmpty {
            return min(limit, try context.lmdb.entryCount(binding.table.records))
        }
        var n = 0
        guard predicates.isEmpty else {
            // Counting needs no order: without it, a sort on a property
            // without an index decodes and sorts nothing.
            var unsorted = self
            unsorted.order = nil
            try unsorted.iterate { _ in
                n += 1
                return true
            }
            return n
        }
        let plan = try plan(sorting: false)
        guard limit > 0 else { return 0 }
        if case .index(let index, let keys, _) = plan.access, conditions.count == 1 {
            // The one condition is the index's: a key that tells counts its
            // entries without reading a record.
            let condition = conditions[0]
            try context.lmdb.withCursor(index) { cursor in
                var entry = try start(cursor, keys, ascending: true, duplicates: true)
                while let (indexKey, objectKey) = entry, n < limit {
                    switch keys.place(of: indexKey) {
                    case .below:
                        entry = try cursor.nextKey()
                    case .above:
                        return
                    case .inside(recheck: false):
                        n += try cursor.duplicateCount()
                        entry = try cursor.nextKey()
                    case .inside(recheck: true):
                        let record = try self.record(objectKey, from: index)
                        let view = try binding.table.validatedView(key: objectKey, record: record)
                        if condition.contains(binding.value(at: condition.position, in: view)) { n += 1 }
                        entry = try cursor.next()
                    }
                }
            }
            return min(n, limit)
        }
        try candidates(plan) { _, _, _ in
            n += 1
            return n < limit
        }
        return n
    }

    /// Walks the records the plan reaches that pass every condition, until
    /// `visit` returns false; decodes nothing. `visit` gets the object's
    /// key, its record, and the index key when the walk is an index's and
    /// the key is cut.
    private func candidates(
        _ plan: Plan, _ visit: (UnsafeRawBufferPointer, RecordView, UnsafeRawBufferPointer?) throws -> Bool
    ) throws {
        let table = binding.table
        let binding = self.binding
        let conditions = self.conditions
        let driver = plan.driver
        func admit(
            _ key: UnsafeRawBufferPointer, _ record: UnsafeRawBufferPointer, recheck: Bool,
            cutIndexKey: UnsafeRawBufferPointer? = nil
        ) throws -> Bool {
            let view = try table.validatedView(key: key, record: record)
            for (offset, condition) in conditions.enumerated() where offset != driver || recheck {
                guard condition.contains(binding.value(at: condition.position, in: view)) else { return true }
            }
            return try visit(key, view, cutIndexKey)
        }
        switch plan.access {
        case .scan:
            try context.lmdb.withCursor(table.records) { cursor in
                try walk(cursor, QueryRange.Keys(), ascending: true, duplicates: false) { key, record, _ in
                    try admit(key, record, recheck: false)
                }
            }
        case .records(let keys, let ascending):
            try context.lmdb.withCursor(table.records) { cursor in
                try walk(cursor, keys, ascending: ascending, duplicates: false) { key, record, _ in
                    try admit(key, record, recheck: false)
                }
            }
        case .index(let index, let keys, let ascending):
            try context.lmdb.withCursor(index) { cursor in
                try walk(cursor, keys, ascending: ascending, duplicates: true) { indexKey, objectKey, recheck in
                    try admit(
                        objectKey, try record(objectKey, from: index), recheck: recheck,
                        cutIndexKey: indexKey.count >= KeyCodec.maxKeySize ? indexKey : nil)
                }
            }
        }
    }

    /// The record an index entry names.
    private func record(_ objectKey: UnsafeRawBufferPointer, from index: DatabaseHandle) throws
        -> UnsafeRawBufferPointer
    {
        let table = binding.table
        guard let record = try context.lmdb.get(table.records, objectKey) else {
            throw table.missingIndexedObject(indexed: table.indexedFields.first { $0.index == index }?.name ?? "?")
        }
        return record
    }

    /// Walks the entries of `cursor` whose keys lie within `keys`, forward
    /// or backward, until `visit` returns false. `visit` gets the key, the
    /// value, and whether the key leaves the range open (a cut key). In a
    /// write transaction the walk stops at the entry that was last (first,
    /// walking backward) when it began, as the scan does.
    private func walk(
        _ cursor: LMDBCursor, _ keys: QueryRange.Keys, ascending: Bool, duplicates: Bool,
        _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, Bool) throws -> Bool
    ) throws {
        var end: (key: [UInt8], value: [UInt8])?
        if context.copiesObjects, let edge = try ascending ? cursor.last() : cursor.first() {
            end = (Array(edge.key), duplicates ? Array(edge.value) : [])
        }
        var entry = try start(cursor, keys, ascending: ascending, duplicates: duplicates)
        while let (key, value) = entry {
            if let end {
                var order = KeyCodec.compare(key, end.key)
                if order == 0 && duplicates { order = KeyCodec.compare(value, end.value) }
                if ascending ? order > 0 : order < 0 { return }
            }
            switch keys.place(of: key) {
            case .below:
                if !ascending { return }
            case .above:
                if ascending { return }
            case .inside(let recheck) where context.copiesObjects:
                // The body may write to this database: LMDB moves the
                // cursor of an entry another cursor deletes, but not always
                // to the right place (a duplicate-key node deleted under a
                // cursor walking backward), so the walk finds its place
                // again by the entry's bytes.
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

    /// Walks the table in key order, decoding each record. In a write
    /// transaction the walk stops at the key that was last when it began,
    /// as ``ObjectCollection`` does.
    private func scan(_ body: (M, UnsafeRawBufferPointer) throws -> Bool) throws {
        let table = binding.table
        let binding = self.binding
        try context.lmdb.withCursor(table.records) { cursor in
            let end = context.copiesObjects ? try cursor.last().map { Array($0.key) } : nil
            var entry = try cursor.first()
            while let (key, record) = entry {
                if let end, KeyCodec.compare(key, end) > 0 { return }
                let view = try table.validatedView(key: key, record: record)
                let emptied = context.engine.tablesEmptied
                guard try body(try binding.decode(M.self, record: view, key: key), key),
                    context.engine.tablesEmptied == emptied
                else { return }
                entry = try cursor.next()
            }
        }
    }
}
