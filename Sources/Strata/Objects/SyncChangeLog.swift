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
    private let openFirst = ByteWriter(capacity: 64)
    private let openLast = ByteWriter(capacity: 64)
    /// The key of the row after the run's last, when known (empty: none):
    /// an update in key order finds it while taking the object out of its
    /// old run, and the next object joins the run when it is that row.
    private let openNext = ByteWriter(capacity: 64)
    private var knowsOpenNext = false
    private var flushesAtCommit = false
    /// Kept cursors: one where new runs go (the end of the log), one
    /// where objects leave their old runs.
    private var appendCursor: LMDBCursor?
    private var trimCursor: LMDBCursor?
    /// The largest key of the log, once read: an entry above it is
    /// appended.
    private let frontier = ByteWriter(capacity: 80)
    private var frontierRead = false
    /// The run ``trimCursor`` is at, whose entry's key, first and last
    /// keys are in ``entryKey``, ``runFirst`` and ``runLast``; nil when
    /// unknown. Objects updated in key order leave one run after another.
    private var atRun: (seq: UInt64, type: TypeID)?
    private let entryKey = ByteWriter(capacity: 80)
    private let runFirst = ByteWriter(capacity: 64)
    private let runLast = ByteWriter(capacity: 64)
    private let newKey = ByteWriter(capacity: 80)
    /// The keys of the rows before and after the one being moved, read
    /// once each (``neighbour(before:)``), and where the clock cursor is
    /// from that row: -1, 0, 1, or nil when unknown.
    private let before = ByteWriter(capacity: 64)
    private let after = ByteWriter(capacity: 64)
    private var found: (before: Bool?, after: Bool?) = (nil, nil)
    private var offset: Int?
    private var moving: (key: UnsafeRawBufferPointer, clocks: LMDBCursor)?

    init(lmdb: LMDBTransaction, database: DatabaseHandle, path: String) {
        self.lmdb = lmdb
        self.database = database
        self.path = path
    }

    // MARK: Writing

    /// Records that the object `key` of `type`, whose clock row has just
    /// been written through `clocks` (which LMDB leaves at it), changed at
    /// `seq`; it had last changed at `previous`, or had no row when nil.
    /// `appendedAfter` is the key its row was appended after (empty when
    /// it is the type's first row), or nil when the row was not appended.
    ///
    /// - Returns: The key of the row `clocks` is left at, when known.
    func moved(
        _ type: TypeID, _ key: UnsafeRawBufferPointer, from previous: UInt64?, to seq: UInt64, clocks: LMDBCursor,
        appendedAfter: ByteWriter?
    ) throws -> ByteWriter? {
        moving = (key, clocks)
        found = (nil, nil)
        offset = 0
        defer { moving = nil }
        if let previous {
            try leave(previous, type, key)
        } else if appendedAfter == nil, try joinsRunAround(type, key, seq) {
            return nil
        }
        try join(seq, type, key, appendedAfter: appendedAfter)
        switch offset {
        case -1: return before
        case 1: return after
        default: return nil
        }
    }

    /// Whether the object being moved has a row before (or after) its
    /// own; its key is then in ``before`` (or ``after``).
    private func neighbour(before isBefore: Bool) throws -> Bool {
        if let known = isBefore ? found.before : found.after { return known }
        guard let (key, clocks) = moving else { preconditionFailure("No object is being moved") }
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
        let writer = isBefore ? before : after
        writer.removeAll()
        if let entry, offset == step { writer.append(contentsOf: entry.key) }
        // At an end of the database LMDB leaves the cursor where it is.
        if entry == nil { offset = nil }
        let exists = writer.count > 0
        if isBefore { found.before = exists } else { found.after = exists }
        return exists
    }

    /// Writes the run being extended to the log.
    func flush() throws {
        guard let (seq, type) = open else { return }
        open = nil
        atRun = nil
        SyncChangeLog.key(newKey, seq: seq, type: type, last: openLast)
        let cursor = try appendCursor ?? lmdb.keptCursor(database)
        appendCursor = cursor
        if !frontierRead {
            if let last = try lmdb.lastKey(database) { frontier.append(contentsOf: last) }
            frontierRead = true
        }
        try newKey.withUnsafeBytes { key in
            try SyncChangeLog.firstValue(first: openFirst, last: openLast) { value in
                let appends = frontier.count == 0 || frontier.withUnsafeBytes { KeyCodec.compare(key, $0) } > 0
                if appends, try cursor.append(key: key, value: value) {
                    frontier.removeAll()
                    frontier.append(contentsOf: key)
                } else {
                    try cursor.put(key: key, value: value)
                }
            }
        }
    }

    /// Adds the object to the run being extended when its row is the next
    /// one after that run's last, else begins a run with it.
    private func join(_ seq: UInt64, _ type: TypeID, _ key: UnsafeRawBufferPointer, appendedAfter: ByteWriter?)
        throws
    {
        if let open, open.seq == seq, open.type == type {
            let adjacent: Bool
            if let appendedAfter {
                adjacent = SyncChangeLog.equal(appendedAfter, openLast)
            } else if knowsOpenNext {
                adjacent = openNext.withUnsafeBytes { KeyCodec.compare(key, $0) == 0 }
            } else {
                adjacent = try neighbour(before: true) && SyncChangeLog.equal(before, openLast)
            }
            if adjacent {
                openLast.removeAll()
                openLast.append(contentsOf: key)
                noteOpenNext(appended: appendedAfter != nil)
                return
            }
        }
        try flush()
        open = (seq, type)
        openFirst.removeAll()
        openFirst.append(contentsOf: key)
        openLast.removeAll()
        openLast.append(contentsOf: key)
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
            if hasAfter { after.withUnsafeBytes { openNext.append(contentsOf: $0) } }
            knowsOpenNext = true
        } else {
            knowsOpenNext = false
        }
    }

    /// Takes the object out of its run of `seq`: the run loses its first
    /// or last key, is cut in two around it, or goes.
    private func leave(_ seq: UInt64, _ type: TypeID, _ key: UnsafeRawBufferPointer) throws {
        if let open, open.seq == seq, open.type == type { try flush() }
        let cursor = try trimCursor ?? lmdb.keptCursor(database)
        trimCursor = cursor
        try findRun(seq, type, holding: key, cursor)
        let isFirst = runFirst.withUnsafeBytes { KeyCodec.compare(key, $0) == 0 }
        let isLast = runLast.withUnsafeBytes { KeyCodec.compare(key, $0) == 0 }
        if isFirst && isLast {
            atRun = nil
            try cursor.deleteCurrent()
            return
        }
        if !isLast {
            try requireNeighbour(before: false)
            // The run keeps its entry (its last key) from the next row on.
            try entryKey.withUnsafeBytes { entry in
                try SyncChangeLog.firstValue(first: after, last: runLast) {
                    try cursor.replaceCurrent(key: entry, value: $0)
                }
            }
        }
        guard !isFirst else {
            runFirst.removeAll()
            after.withUnsafeBytes { runFirst.append(contentsOf: $0) }
            return
        }
        try requireNeighbour(before: true)
        atRun = nil
        if isLast { try cursor.deleteCurrent() }
        // The rows before the object: a run that ends at its neighbour.
        SyncChangeLog.key(newKey, seq: seq, type: type, last: before)
        try newKey.withUnsafeBytes { entry in
            try SyncChangeLog.firstValue(first: runFirst, last: before) { try cursor.put(key: entry, value: $0) }
        }
    }

    /// Whether a row new in this transaction, written between two others,
    /// lies inside a run of its own `seq` (it is one of that run's objects
    /// now). A run of another sequence number around it is cut in two.
    private func joinsRunAround(_ type: TypeID, _ key: UnsafeRawBufferPointer, _ seq: UInt64) throws -> Bool {
        guard try neighbour(before: true), try neighbour(before: false),
            let beforeSeq = try rowSeq(before), let afterSeq = try rowSeq(after), beforeSeq == afterSeq
        else { return false }
        if let open, open.seq == beforeSeq, open.type == type, SyncChangeLog.holds(openFirst, openLast, before, before) {
            // The run being extended holds the row before.
            guard SyncChangeLog.holds(openFirst, openLast, after, after) else { return false }
            if beforeSeq == seq {
                knowsOpenNext = false
                return true
            }
            try flush()
        }
        let cursor = try trimCursor ?? lmdb.keptCursor(database)
        trimCursor = cursor
        try before.withUnsafeBytes { try findRun(beforeSeq, type, holding: $0, cursor) }
        guard SyncChangeLog.holds(runFirst, runLast, before, after) else { return false }
        if beforeSeq == seq {
            knowsOpenNext = false
            return true
        }
        atRun = nil
        try entryKey.withUnsafeBytes { entry in
            try SyncChangeLog.firstValue(first: after, last: runLast) { try cursor.replaceCurrent(key: entry, value: $0) }
        }
        SyncChangeLog.key(newKey, seq: beforeSeq, type: type, last: before)
        try newKey.withUnsafeBytes { entry in
            try SyncChangeLog.firstValue(first: runFirst, last: before) { try cursor.put(key: entry, value: $0) }
        }
        return false
    }

    /// Moves `cursor` to the run of `seq` and `type` that holds `key`, and
    /// copies its entry's key, first and last keys (``entryKey``,
    /// ``runFirst``, ``runLast``).
    private func findRun(_ seq: UInt64, _ type: TypeID, holding key: UnsafeRawBufferPointer, _ cursor: LMDBCursor)
        throws
    {
        if let atRun, atRun.seq == seq, atRun.type == type,
            runFirst.withUnsafeBytes({ KeyCodec.compare($0, key) <= 0 }),
            runLast.withUnsafeBytes({ KeyCodec.compare(key, $0) <= 0 })
        {
            return
        }
        atRun = nil
        SyncChangeLog.key(newKey, seq: seq, type: type, key: key)
        guard let entry = try newKey.withUnsafeBytes({ try cursor.seek(atLeast: $0) }),
            let run = SyncChangeLog.run(entry), run.seq == seq, run.type == type,
            KeyCodec.compare(run.first, key) <= 0
        else {
            throw StrataError.corruptFile(
                path: path,
                "The sync change log of \(path) lacks the change at sequence number \(seq) of an object of type \(type); the file is damaged."
            )
        }
        entryKey.removeAll()
        entryKey.append(contentsOf: entry.key)
        runFirst.removeAll()
        runFirst.append(contentsOf: run.first)
        runLast.removeAll()
        runLast.append(contentsOf: run.last)
        atRun = (seq, type)
    }

    /// Reads the key of the row before (or after) the object's, which a
    /// run that holds the object names.
    private func requireNeighbour(before isBefore: Bool) throws {
        guard try neighbour(before: isBefore) else {
            throw StrataError.corruptFile(
                path: path, "A run of the sync change log of \(path) names clock rows that are missing.")
        }
    }

    /// The seq of the row `key` names (a neighbour's).
    private func rowSeq(_ key: ByteWriter) throws -> UInt64? {
        guard let (_, clocks) = moving,
            let entry = try key.withUnsafeBytes({ try clocks.seek(exactly: $0) })
        else { return nil }
        offset = nil
        guard let row = ClockRow.decode(entry.value) else {
            throw StrataError.corruptFile(path: path, "A clock row in \(path) is damaged.")
        }
        return row.seq
    }

    private static func equal(_ a: ByteWriter, _ b: ByteWriter) -> Bool {
        a.withUnsafeBytes { a in b.withUnsafeBytes { KeyCodec.compare(a, $0) == 0 } }
    }

    /// Whether the run from `first` to `last` holds both `a` and `b`.
    private static func holds(_ first: ByteWriter, _ last: ByteWriter, _ a: ByteWriter, _ b: ByteWriter) -> Bool {
        first.withUnsafeBytes { first in
            last.withUnsafeBytes { last in
                a.withUnsafeBytes { a in
                    b.withUnsafeBytes { b in
                        KeyCodec.compare(first, a) <= 0 && KeyCodec.compare(b, last) <= 0
                    }
                }
            }
        }
    }

    // MARK: Bytes

    /// Calls `body` with the value of a run's entry: its first key, or
    /// nothing when that is its last.
    private static func firstValue<T>(
        first: ByteWriter, last: ByteWriter, _ body: (UnsafeRawBufferPointer) throws -> T
    ) rethrows -> T {
        try first.withUnsafeBytes { first in
            let single = last.withUnsafeBytes { KeyCodec.compare(first, $0) == 0 }
            return try body(single ? UnsafeRawBufferPointer(start: nil, count: 0) : first)
        }
    }

    /// Writes a log key: `seq:u64be ‖ type:u32be ‖ last record key`.
    static func key(_ writer: ByteWriter, seq: UInt64, type: TypeID, key: UnsafeRawBufferPointer) {
        writer.removeAll()
        writer.appendBigEndian(seq)
        for shift in stride(from: 24, through: 0, by: -8) {
            writer.append(UInt8(truncatingIfNeeded: type.rawValue >> UInt32(shift)))
        }
        writer.append(contentsOf: key)
    }

    private static func key(_ writer: ByteWriter, seq: UInt64, type: TypeID, last: ByteWriter) {
        last.withUnsafeBytes { key(writer, seq: seq, type: type, key: $0) }
    }

    /// The parts of a log entry; nil when it is not one.
    static func run(_ entry: LMDBCursor.Entry) -> (
        seq: UInt64, type: TypeID, first: UnsafeRawBufferPointer, last: UnsafeRawBufferPointer
    )? {
        let bytes = entry.key
        guard bytes.count > 12, let base = bytes.baseAddress else { return nil }
        let seq = UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
        let type = (0 ..< 4).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[8 + $1]) }
        let last = UnsafeRawBufferPointer(start: base + 12, count: bytes.count - 12)
        return (seq, TypeID(type), entry.value.isEmpty ? last : entry.value, last)
    }
}
