/// What a query asks of one object type, whichever API described it: the
/// conditions on stored values, the order, the limit, and from these the
/// walk that reaches the values (``walk(sorting:)``).
///
/// ``ObjectQuery`` turns its `where`s, `sorted` and `limit`, by key path
/// or by property name, into a plan and runs it with
/// ``run(in:orderValues:_:)`` (in `QueryPlan+Execution.swift`); its element
/// type (a model, or a ``DynamicObject``) decides only how a record becomes
/// a value, on which the query runs its filters. An observation of a query
/// evaluates the same plan: ``matches(_:)`` for one written object,
/// ``resultOrder`` and ``QueryOrder`` for where a value sits in its
/// results.
struct QueryPlan {
    let table: ObjectTable
    /// The conditions, all of which an object passes, in the order asked.
    private(set) var conditions: [QueryCondition] = []
    /// Per condition, where its property is declared: between two
    /// conditions that could choose the walk equally well, the one
    /// declared first does.
    private var declaredPositions: [Int] = []
    private(set) var order: QueryOrder?
    private(set) var limit: Int?
    /// How many values to pass over before the first one given, counted
    /// after every condition and filter, before the limit.
    private(set) var offset = 0
    /// The first mistake in the query's description (a key path that is
    /// not a stored property): thrown when the query runs.
    private(set) var error: StrataError?
    /// The objects that link to one target through one link property: its
    /// backlinks database and the target's record key. The walk then goes
    /// through that target's entries there, in key order.
    private(set) var backlinks: (database: DatabaseHandle, target: [UInt8], property: String)?
    /// What a record must pass besides the conditions, checked before
    /// them: its schema version (``whereSchemaVersion``, read from its
    /// header), the fields it holds (``keepHoldingUndeclaredFields()``).
    private(set) var recordTest: (@Sendable (RecordView) -> Bool)?
    /// Whether a condition on a property that the table lacks excludes
    /// every object (the value such a property reads as is outside it).
    private(set) var matchesNothing = false
    /// The properties inside embedded objects that conditions and the
    /// order read: the one at offset `i` has position
    /// `table.fields.count + i` in them. No index holds them.
    var embeddedPaths: [EmbeddedPath] = []

    init(table: ObjectTable) {
        self.table = table
    }

    /// Whether the plan is a plain walk of every record in key order.
    var isPlain: Bool {
        conditions.isEmpty && recordTest == nil && backlinks == nil && order == nil && limit == nil && offset == 0
            && error == nil
            && !matchesNothing
    }

    /// Adds a condition; when it tests one property, `declared` is where
    /// that property is declared among the properties of the front end's
    /// schema (the model's, or the file's for the dynamic API). An AND is
    /// added as its parts, each of which may choose the walk; a constant
    /// is kept as ``matchesNothing``.
    mutating func add(_ condition: QueryCondition, declaredAt declared: (Int) -> Int) {
        switch condition.simplified {
        case .constant(let holds):
            addConstantCondition(holds: holds)
        case .all(let parts):
            for part in parts { add(part, declaredAt: declared) }
        case let part:
            conditions.append(part)
            declaredPositions.append(part.position.map(declared) ?? .max)
        }
    }

    /// Adds a condition on a property that the table lacks, where every
    /// object reads as the same value: `holds` says whether it is inside.
    mutating func addConstantCondition(holds: Bool) {
        if !holds { matchesNothing = true }
    }

    /// Orders the values by the table fields at `keys`' positions, in
    /// order: the first key orders, each later one orders the values the
    /// earlier ones leave equal, and the primary key orders what they all
    /// leave equal (in the first key's direction). Replaces an earlier
    /// order. Keys after one on the primary key change nothing and are
    /// dropped; no keys: the order is dropped.
    mutating func sort(by keys: [(position: Int, ascending: Bool)]) {
        guard let first = keys.first else {
            order = nil
            return
        }
        let firstIsKey = isTableField(first.position) && table.fields[first.position].isPrimaryKey
        var order = QueryOrder(position: firstIsKey ? nil : first.position, ascending: first.ascending)
        if !firstIsKey {
            for key in keys.dropFirst() {
                order.ties.append(QueryOrder.Tie(position: key.position, ascending: key.ascending))
                if isTableField(key.position) && table.fields[key.position].isPrimaryKey { break }
            }
        }
        self.order = order
    }

    /// Keeps the objects last written under a schema version in
    /// `versions` (and in those of an earlier call).
    mutating func keepSchemaVersions(_ versions: some RangeExpression<UInt64> & Sendable) {
        keep { versions.contains($0.effectiveSchemaVersion) }
    }

    /// Keeps the objects whose records hold a value for a field this app
    /// does not declare (``ObjectQuery/holdingUndeclaredFields()``).
    mutating func keepHoldingUndeclaredFields() {
        let table = self.table
        keep { table.holdsUndeclaredFields($0) }
    }

    private mutating func keep(_ test: @escaping @Sendable (RecordView) -> Bool) {
        let earlier = recordTest
        recordTest = { record in test(record) && earlier?(record) ?? true }
    }

    /// Passes over the first `count` values: replaces an earlier offset,
    /// and applies before the limit whichever was given first.
    mutating func skip(_ count: Int) {
        precondition(count >= 0, "A query's offset cannot be negative (\(count)).")
        offset = count
    }

    /// Keeps at most `count` values.
    mutating func cut(to count: Int) {
        precondition(count >= 0, "A query's limit cannot be negative (\(count)).")
        limit = min(count, limit ?? .max)
    }

    /// Records a mistake in the query's description; the first one stays.
    mutating func fail(_ error: StrataError) {
        if self.error == nil { self.error = error }
    }

    /// The plan without its order: for counting, where order does not
    /// matter and a sort in memory would only cost.
    var unordered: QueryPlan {
        var copy = self
        copy.order = nil
        return copy
    }

    /// Whether the values depend on objects outside them: a limit or an
    /// offset (an observation runs such a plan again).
    var isBounded: Bool { limit != nil || offset > 0 || backlinks != nil }

    /// Keeps the objects whose link field at `position` links to the object
    /// of record key `target` (a to-one link to it, or a list holding it).
    mutating func keepLinking(to target: [UInt8], through position: Int) {
        let field = table.fields[position]
        // The callers check the field is a link (`ObjectContext.backlinks`):
        // without its table, the plan would answer every object.
        guard let database = field.backlinks else {
            preconditionFailure("'\(table.name).\(field.name)' has no backlinks table")
        }
        backlinks = (database, target, field.name)
        // A key too long to store names no object: none links to it.
        if target.count > KeyCodec.maxKeySize { matchesNothing = true }
    }

    /// The plan with its order made explicit: ``resultOrder``.
    func inResultOrder() throws -> QueryPlan {
        var copy = self
        copy.order = try resultOrder
        return copy
    }

    // MARK: Matching

    /// Whether `position` is a table field's, not one of
    /// ``embeddedPaths``.
    @inline(__always)
    func isTableField(_ position: Int) -> Bool { position < table.fields.count }

    /// What the table field at `position`, or the property inside embedded
    /// objects there, reads as in `record`.
    @inline(__always)
    func value(at position: Int, in record: RecordView) -> Value {
        Self.value(at: position, in: record, table, embeddedPaths)
    }

    @inline(__always)
    static func value(at position: Int, in record: RecordView, _ table: ObjectTable, _ paths: [EmbeddedPath])
        -> Value
    {
        let count = table.fields.count
        return position < count ? table.value(at: position, in: record) : paths[position - count].value(in: record)
    }

    /// Whether the object of `record` passes every condition.
    func matches(_ record: RecordView) -> Bool {
        guard !matchesNothing, recordTest?(record) ?? true else { return false }
        for condition in conditions where !passes(condition, record) { return false }
        return true
    }

    /// Whether the object of `record` passes `condition`.
    @inline(__always)
    func passes(_ condition: QueryCondition, _ record: RecordView) -> Bool {
        if case .range(let range) = condition { return range.contains(value(at: range.position, in: record)) }
        // The table alone in the closure: one capturing `self` copied the
        // whole plan per record (six copies, 1,190 instructions, for a `!=`).
        let table = self.table
        guard !embeddedPaths.isEmpty else { return condition.holds { table.value(at: $0, in: record) } }
        let paths = embeddedPaths
        return condition.holds { Self.value(at: $0, in: record, table, paths) }
    }

    /// The value that orders `record` by `order`: the property's, or null
    /// in primary-key order (the keys then decide).
    @inline(__always)
    func orderValue(_ order: QueryOrder, in record: RecordView) -> Value {
        guard let position = order.position else { return .null }
        let first = value(at: position, in: record)
        guard !order.ties.isEmpty else { return first }
        return .list([first] + order.ties.map { value(at: $0.position, in: record) })
    }

    // MARK: Choosing the walk

    /// How a plan reaches its values.
    enum Access {
        /// Every record, in key order.
        case scan
        /// The records within intervals of keys (in key order, apart), in
        /// key order or its reverse.
        case records([QueryRange.Keys], ascending: Bool)
        /// The entries of an index within intervals of keys (in key order,
        /// apart), in index order or its reverse.
        case index(DatabaseHandle, [QueryRange.Keys], ascending: Bool)
        /// The objects a backlinks database lists for one target, in key
        /// order.
        case backlinks(DatabaseHandle, target: [UInt8], property: String)
    }

    /// The walk of a plan: its access, the condition whose keys bound it
    /// (up to rechecks), and the order the values are sorted in memory
    /// when the walk does not give it.
    struct Walk {
        var access: Access
        var driver: Int?
        /// Whether the driver's keys hold values outside it (a prefix, or
        /// intervals merged), so that it is checked on each record too.
        var rechecksDriver = false
        var sortInMemory: QueryOrder?
    }

    /// Works out the walk. `sorting` is false when the order does not
    /// matter (counting).
    ///
    /// Without an order, one condition chooses the walk: an equality on
    /// the primary key, else an equality on an index, else a range on the
    /// primary key, else a range on an index; between two of one kind, the
    /// property declared first in the schema, so that the order of the
    /// values (index order, for a range on an index) does not depend on
    /// the order of the `where`s. With an order on the primary key or an
    /// indexed property, the walk follows it (bounded by a condition on
    /// the same property), unless an equality on the primary key reads at
    /// most one object; on any other property the values are sorted in
    /// memory.
    func walk(sorting: Bool) throws -> Walk {
        if let error { throw error }
        if let backlinks {
            // The objects linking to one target, usually few: every
            // condition is checked on each, and any order but the keys'
            // is sorted in memory.
            var walk = Walk(
                access: .backlinks(backlinks.database, target: backlinks.target, property: backlinks.property),
                driver: nil)
            if sorting, let order, order.position != nil || !order.ascending { walk.sortInMemory = order }
            return walk
        }
        if sorting, let order {
            let oneObject = conditions.contains { seek($0).map { $0.isEquality && $0.primaryKeys != nil } ?? false }
            if !oneObject {
                guard let position = order.position else {
                    // Primary-key order. A bound that cannot be a key of the
                    // type leaves the walk unbounded and the condition
                    // checked on each record.
                    let found = conditions.indices.lazy.compactMap { offset in
                        self.seek(self.conditions[offset]).map { (offset, $0) }
                    }.first { $0.1.primaryKeys != nil }
                    return Walk(
                        access: .records(found?.1.primaryKeys ?? [QueryRange.Keys()], ascending: order.ascending),
                        driver: found?.0, rechecksDriver: found?.1.rechecks ?? false)
                }
                if isTableField(position), let index = table.fields[position].index {
                    let found = conditions.indices.lazy.compactMap { offset in
                        self.seek(self.conditions[offset]).map { (offset, $0) }
                    }.first { $0.1.position == position }
                    return Walk(
                        access: .index(index, found?.1.indexKeys ?? [QueryRange.Keys()], ascending: order.ascending),
                        driver: found?.0, rechecksDriver: found?.1.rechecks ?? false)
                }
            }
            var walk = try self.walk(sorting: false)
            walk.sortInMemory = order
            return walk
        }
        var best: (rank: (Int, Int), offset: Int, access: Access, rechecks: Bool)?
        for (offset, condition) in conditions.enumerated() {
            guard let seek = seek(condition) else { continue }
            let rank: Int
            let access: Access
            if let keys = seek.primaryKeys {
                rank = seek.isEquality ? 0 : 2
                access = .records(keys, ascending: true)
            } else if isTableField(seek.position), let index = table.fields[seek.position].index {
                rank = seek.isEquality ? 1 : 3
                access = .index(index, seek.indexKeys, ascending: true)
            } else {
                continue
            }
            let declared = declaredPositions[offset]
            if best.map({ (rank, declared) < $0.rank }) ?? true {
                best = ((rank, declared), offset, access, seek.rechecks)
            }
        }
        guard let best else { return Walk(access: .scan, driver: nil) }
        return Walk(access: best.access, driver: best.offset, rechecksDriver: best.rechecks)
    }

    /// The order the values come in: the plan's order; without one, the
    /// order of the index that a condition walks (by value, then primary
    /// key); else primary-key order.
    ///
    /// - Throws: The plan's ``error``.
    var resultOrder: QueryOrder {
        get throws {
            if let order { return order }
            let walk = try walk(sorting: false)
            if case .index = walk.access, let driver = walk.driver {
                return QueryOrder(position: conditions[driver].position, ascending: true)
            }
            return QueryOrder(position: nil, ascending: true)
        }
    }
}

/// The order of a query's values: by a property's stored value as the
/// index orders it (``KeyCodec/compareInIndexOrder(_:_:)``), values equal
/// there by the further keys (``ties``), then by the object's key; and the
/// exact reverse when descending. The one comparison behind a walk's
/// in-memory sort, its sort of the entries of one index key, and an
/// observation's results.
struct QueryOrder: Equatable {
    /// The plan position of the property; nil for primary-key
    /// order.
    var position: Int?
    var ascending: Bool
    /// The further keys, each for the values the keys before it leave
    /// equal. With ties, an order value is a list: the first key's value,
    /// then each tie's.
    var ties: [Tie] = []

    /// A further sort key.
    struct Tie: Equatable {
        var position: Int
        var ascending: Bool
    }

    /// Per tie, whether it goes against the first key's direction: bit
    /// `i + 1` for tie `i` (its comparison is reversed before the whole
    /// order is).
    var tieFlips: UInt64 {
        var flips: UInt64 = 0
        for (index, tie) in ties.enumerated() where tie.ascending != ascending && index < 63 {
            flips |= 1 << UInt64(index + 1)
        }
        return flips
    }

    /// Compares two values by their order values and keys, ascending in
    /// the first key's direction: a negative number, zero (the same
    /// object) or a positive number.
    @inline(__always)
    func compare(_ a: Value?, _ aKey: UnsafeRawBufferPointer, _ b: Value?, _ bKey: UnsafeRawBufferPointer) -> Int {
        if let a, let b {
            let order = ties.isEmpty ? KeyCodec.compareInIndexOrder(a, b) : Self.compareLists(a, b, flips: tieFlips)
            if order != 0 { return order }
        }
        return KeyCodec.compare(aKey, bKey)
    }

    /// Compares two order values of several keys (lists), key by key, each
    /// reversed where `flips` has its bit.
    static func compareLists(_ a: Value, _ b: Value, flips: UInt64) -> Int {
        guard case .list(let x) = a, case .list(let y) = b else { return KeyCodec.compareInIndexOrder(a, b) }
        for index in 0 ..< min(x.count, y.count) {
            let order = KeyCodec.compareInIndexOrder(x[index], y[index])
            if order != 0 { return index < 64 && flips & (1 << UInt64(index)) != 0 ? -order : order }
        }
        return 0
    }
}
