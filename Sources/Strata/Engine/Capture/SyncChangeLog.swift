/// The change log of a sync-enabled file (`__strata.sync.log`): which
/// objects changed at each sequence number, as runs of clock rows.
///
/// A run is one entry, `seq:u64be ‖ type:u32be ‖ last record key` →
/// `first record key` (empty when it is the last one): the objects of the
/// type whose clock rows lie from `first` to `last`, every row between them
/// included, all last changed at `seq`. Each clock row is in exactly one
/// run, the one of its `seq`. So "changes since N" is one walk of the log
/// from `N + 1` and of each run's rows; a transaction that writes objects
/// whose rows are neighbours (an insert of ascending keys, an update in key
/// order) adds one entry, not one per object; and an object that changes
/// again leaves its old run by a change of that run's first key in place,
/// where a log of one entry per object deleted an entry, which LMDB pays
/// for by moving entries between pages.
///
/// The run this transaction is extending stays in memory until it ends (a
/// row that is not the next one, another type or sequence number) and
/// before the commit (``LMDBTransaction/onCommit(_:)``).
final class SyncChangeLog {
    let lmdb: LMDBTransaction
    let database: DatabaseHandle
    /// The database file, for messages.
    let path: String

    /// The run being extended.
    private var open: (seq: UInt64, type: TypeID)?
    private var openFirst = KeyBuffer()
    private var openLast = KeyBuffer()
    /// The key of the row after the run's last, when known (empty: none):
    /// an update in key order finds it while taking the object out of its
    /// old run, and the next object joins the run when it is that row.
    private var openNext = KeyBuffer()
    private var knowsOpenNext = false
    private var flushesAtCommit = false
    /// Kept cursors: one where new runs go (the end of the log), one
    /// where objects leave their old runs.
    private var appendCursor: LMDBCursor?
    private var trimCursor: LMDBCursor?
    /// The largest key of the log, once read: an entry above it is
    /// appended.
    private var frontier = KeyBuffer()
    private var frontierRead = false
    /// The run ``trimCursor`` is at, whose entry's key, first and last
    /// keys are in ``entryKey``, ``runFirst`` and ``runLast``; nil when
    /// unknown. Objects updated in key order leave one run after another.
    private var atRun: (seq: UInt64, type: TypeID)?
    /// Whether the entry at ``atRun`` still names a first key that left
    /// it (``runFirst`` is its first now): objects that leave the start of
    /// a run one after another write its first key once, when the walk
    /// moves on (``settle()``).
    private var firstIsStale = false
    private var entryKey = KeyBuffer()
    private var runFirst = KeyBuffer()
    private var runLast = KeyBuffer()
    private var newKey = KeyBuffer()
    /// The keys of the rows before and after the one being moved, read
    /// once each (``neighbour(before:of:_:)``), and where the clock cursor
    /// is from that row: -1, 0, 1, or nil when unknown.
    private var before = KeyBuffer()
    private var after = KeyBuffer()
    private var found: (before: Bool?, after: Bool?) = (nil, nil)
    private var offset: Int?

    init(lmdb: LMDBTransaction, database: DatabaseHandle, path: String) {
        self.lmdb = lmdb
        self.database = database
        self.path = path
    }

    deinit {
        for buffer in [openFirst, openLast, openNext, frontier, entryKey, runFirst, runLast, newKey, before, after] {
            buffer.free()
        }
    }

    // MARK: Writing

    /// Records that the object `key` of `type`, whose clock row has just
    /// been written through `clocks` (which LMDB leaves at it), changed at
    /// `seq`; it had last changed at `previous`, or had no row when nil.
    /// `appendedAfter` is the key its row was appended after (empty when
    /// it is the type's first row), or nil when the row was not appended.
    ///
    /// - Returns: The key of the row `clocks` is left at, when known
    ///   (valid until the next call).
    func moved(
        _ type: TypeID, _ key: UnsafeRawBufferPointer, from previous: UInt64?, to seq: UInt64, clocks: LMDBCursor,
        appendedAfter: UnsafeRawBufferPointer?
    ) throws -> UnsafeRawBufferPointer? {
        found = (nil, nil)
        offset = 0
        if let previous {
            try leave(previous, type, key, clocks)
        } else if appendedAfter == nil, try joinsRunAround(type, key, seq, clocks) {
            return nil
        }
        try join(seq, type, key, clocks, appendedAfter: appendedAfter)
        switch offset {
        case -1: return before.bytes
        case 1: return after.bytes
        default: return nil
        }
    }

    /// Takes the object `key` of `type`, last changed at `seq`, out of the
    /// log, before its clock row is deleted (a tombstone dropped):
    /// `clocks` is a cursor on the type's clock rows, which still hold it.
    func removing(_ type: TypeID, _ key: UnsafeRawBufferPointer, seq: UInt64, clocks: LMDBCursor) throws {
        found = (nil, nil)
        offset = nil
        try leave(seq, type, key, clocks)
    }

    /// Whether the object `key` has a row before (or after) its own; its
    /// key is then in ``before`` (or ``after``).
    private func neighbour(before isBefore: Bool, of key: UnsafeRawBufferPointer, _ clocks: LMDBCursor) throws -> Bool {
        if let known = isBefore ? found.before : found.after { return known }
        let step = isBefore ? -1 : 1
        if offset == nil {
            guard try clocks.seek(exactly: key) != nil else {
                throw StrataError.corruptFile(path: path, "A clock row being written in \(path) is missing.")
            }
            offset = 0
        }
        var entry = offset == step ? try clocks.current() : nil
        while offset != step {
            entry = try offset! < step ? clocks.next() : clocks.previous()
            guard entry != nil else { break }
            offset! += offset! < step ? 1 : -1
        }
        let neighbour = offset == step ? entry?.key : nil
        if isBefore { before.set(neighbour ?? UnsafeRawBufferPointer(start: nil, count: 0)) }
        if !isBefore { after.set(neighbour ?? UnsafeRawBufferPointer(start: nil, count: 0)) }
        // At an end of the database LMDB leaves the cursor where it is.
        if entry == nil { offset = nil }
        if isBefore { found.before = neighbour != nil } else { found.after = neighbour != nil }
        return neighbour != nil
    }

    /// Writes the run being extended to the log.
    func flush() throws {
        try settle()
        guard let (seq, type) = open else { return }
        open = nil
        atRun = nil
        newKey.setLogKey(seq: seq, type: type, key: openLast.bytes)
        if appendCursor == nil { appendCursor = try lmdb.keptCursor(database) }
        let cursor = appendCursor!
        if !frontierRead {
            if let last = try lmdb.lastKey(database) { last.withUnsafeBytes { frontier.set($0) } }
            frontierRead = true
        }
        let key = newKey.bytes
        let value = SyncChangeLog.firstValue(first: openFirst, last: openLast)
        if frontier.isEmpty || KeyCodec.compare(key, frontier.bytes) > 0, try cursor.append(key: key, value: value) {
            frontier.set(key)
        } else {
            try cursor.put(key: key, value: value)
        }
    }

    /// Adds the object to the run being extended when its row is the next
    /// one after that run's last, else begins a run with it.
    private func join(
        _ seq: UInt64, _ type: TypeID, _ key: UnsafeRawBufferPointer, _ clocks: LMDBCursor,
        appendedAfter: UnsafeRawBufferPointer?
    ) throws {
        if let open, open.seq == seq, open.type == type {
            let adjacent: Bool
            if let appendedAfter {
                adjacent = openLast.holds(appendedAfter)
            } else if knowsOpenNext {
                adjacent = openNext.holds(key)
            } else {
                adjacent = try neighbour(before: true, of: key, clocks) && openLast.holds(before.bytes)
            }
            if adjacent {
                openLast.set(key)
                noteOpenNext(appended: appendedAfter != nil)
                return
            }
        }
        try flush()
        open = (seq, type)
        openFirst.set(key)
        openLast.set(key)
        noteOpenNext(appended: appendedAfter != nil)
        if !flushesAtCommit {
            flushesAtCommit = true
            // Held by the transaction until it ends, which may outlive
            // this log's other owners.
            lmdb.onCommit { try self.flush() }
        }
    }

    /// Notes the row after the run's new last, when it is known.
    private func noteOpenNext(appended: Bool) {
        openNext.removeAll()
        if appended {
            knowsOpenNext = true
        } else if let hasAfter = found.after {
            if hasAfter { openNext.set(after.bytes) }
            knowsOpenNext = true
        } else {
            knowsOpenNext = false
        }
    }

    /// Takes the object out of its run of `seq`: the run loses its first
    /// or last key, is cut in two around it, or goes.
    private func leave(_ seq: UInt64, _ type: TypeID, _ key: UnsafeRawBufferPointer, _ clocks: LMDBCursor) throws {
        if let open, open.seq == seq, open.type == type { try flush() }
        let cursor = try trimmingCursor()
        try findRun(seq, type, holding: key, cursor)
        let isFirst = runFirst.holds(key)
        let isLast = runLast.holds(key)
        if isFirst && isLast {
            atRun = nil
            firstIsStale = false
            try cursor.deleteCurrent()
            return
        }
        if !isLast { try requireNeighbour(before: false, of: key, clocks) }
        if isFirst {
            // The run keeps its entry (its last key) from the next row on.
            runFirst.set(after.bytes)
            firstIsStale = true
            return
        }
        try requireNeighbour(before: true, of: key, clocks)
        atRun = nil
        firstIsStale = false
        if isLast {
            try cursor.deleteCurrent()
        } else {
            try cursor.replaceCurrent(key: entryKey.bytes, value: SyncChangeLog.firstValue(first: after, last: runLast))
        }
        // The rows before the object: a run that ends at its neighbour.
        newKey.setLogKey(seq: seq, type: type, key: before.bytes)
        try cursor.put(key: newKey.bytes, value: SyncChangeLog.firstValue(first: runFirst, last: before))
    }

    /// Whether a row new in this transaction, written between two others,
    /// lies inside a run of its own `seq` (it is one of that run's objects
    /// now). A run of another sequence number around it is cut in two.
    private func joinsRunAround(_ type: TypeID, _ key: UnsafeRawBufferPointer, _ seq: UInt64, _ clocks: LMDBCursor)
        throws -> Bool
    {
        guard try neighbour(before: true, of: key, clocks), try neighbour(before: false, of: key, clocks),
            let beforeSeq = try rowSeq(before, clocks), let afterSeq = try rowSeq(after, clocks), beforeSeq == afterSeq
        else { return false }
        if let open, open.seq == beforeSeq, open.type == type, SyncChangeLog.holds(openFirst, openLast, before, before)
        {
            // The run being extended holds the row before.
            guard SyncChangeLog.holds(openFirst, openLast, after, after) else { return false }
            if beforeSeq == seq {
                knowsOpenNext = false
                return true
            }
            try flush()
        }
        let cursor = try trimmingCursor()
        try findRun(beforeSeq, type, holding: before.bytes, cursor)
        guard SyncChangeLog.holds(runFirst, runLast, before, after) else { return false }
        if beforeSeq == seq {
            knowsOpenNext = false
            return true
        }
        atRun = nil
        firstIsStale = false
        try cursor.replaceCurrent(key: entryKey.bytes, value: SyncChangeLog.firstValue(first: after, last: runLast))
        newKey.setLogKey(seq: beforeSeq, type: type, key: before.bytes)
        try cursor.put(key: newKey.bytes, value: SyncChangeLog.firstValue(first: runFirst, last: before))
        return false
    }

    /// Writes the first key of the run at ``atRun`` when it changed.
    private func settle() throws {
        guard firstIsStale, let trimCursor else { return }
        firstIsStale = false
        try trimCursor.replaceCurrent(
            key: entryKey.bytes, value: SyncChangeLog.firstValue(first: runFirst, last: runLast))
    }

    /// The cursor where objects leave their runs, opened at the first use.
    private func trimmingCursor() throws -> LMDBCursor {
        if let trimCursor { return trimCursor }
        let cursor = try lmdb.keptCursor(database)
        trimCursor = cursor
        return cursor
    }

    /// Moves `cursor` to the run of `seq` and `type` that holds `key`, and
    /// copies its entry's key, first and last keys (``entryKey``,
    /// ``runFirst``, ``runLast``).
    private func findRun(_ seq: UInt64, _ type: TypeID, holding key: UnsafeRawBufferPointer, _ cursor: LMDBCursor)
        throws
    {
        if let atRun, atRun.seq == seq, atRun.type == type, KeyCodec.compare(runFirst.bytes, key) <= 0,
            KeyCodec.compare(key, runLast.bytes) <= 0
        {
            return
        }
        try settle()
        atRun = nil
        newKey.setLogKey(seq: seq, type: type, key: key)
        guard let entry = try cursor.seek(atLeast: newKey.bytes), let run = SyncChangeLog.run(entry), run.seq == seq,
            run.type == type, KeyCodec.compare(run.first, key) <= 0
        else {
            throw StrataError.corruptFile(
                path: path,
                "The sync change log of \(path) lacks the change at sequence number \(seq) of an object of type \(type); the file is damaged."
            )
        }
        entryKey.set(entry.key)
        runFirst.set(run.first)
        runLast.set(run.last)
        atRun = (seq, type)
    }

    /// Reads the key of the row before (or after) the object's, which a
    /// run that holds the object names.
    private func requireNeighbour(before isBefore: Bool, of key: UnsafeRawBufferPointer, _ clocks: LMDBCursor) throws {
        guard try neighbour(before: isBefore, of: key, clocks) else {
            throw StrataError.corruptFile(
                path: path, "A run of the sync change log of \(path) names clock rows that are missing.")
        }
    }

    /// The seq of the row whose key is in `key` (a neighbour's).
    private func rowSeq(_ key: KeyBuffer, _ clocks: LMDBCursor) throws -> UInt64? {
        offset = nil
        guard let entry = try clocks.seek(exactly: key.bytes) else { return nil }
        guard let row = ClockRow.decode(entry.value) else {
            throw StrataError.corruptFile(path: path, "A clock row in \(path) is damaged.")
        }
        return row.seq
    }

    /// Whether the run from `first` to `last` holds both `a` and `b`.
    private static func holds(_ first: KeyBuffer, _ last: KeyBuffer, _ a: KeyBuffer, _ b: KeyBuffer) -> Bool {
        KeyCodec.compare(first.bytes, a.bytes) <= 0 && KeyCodec.compare(b.bytes, last.bytes) <= 0
    }

    // MARK: Bytes

    /// The value of a run's entry: its first key, or nothing when that is
    /// its last.
    private static func firstValue(first: KeyBuffer, last: KeyBuffer) -> UnsafeRawBufferPointer {
        last.holds(first.bytes) ? UnsafeRawBufferPointer(start: nil, count: 0) : first.bytes
    }

    /// The parts of a log entry; nil when it is not one.
    static func run(_ entry: LMDBCursor.Entry) -> (
        seq: UInt64, type: TypeID, first: UnsafeRawBufferPointer, last: UnsafeRawBufferPointer
    )? {
        let bytes = entry.key
        guard bytes.count > 12, let base = bytes.baseAddress else { return nil }
        let seq = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
        let type = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        let last = UnsafeRawBufferPointer(start: base + 12, count: bytes.count - 12)
        return (seq, TypeID(type), entry.value.isEmpty ? last : entry.value, last)
    }
}
