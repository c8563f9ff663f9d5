/// Reading the change log: the objects changed after a sequence number,
/// and the check that every clock row is in the run of its seq.
extension SyncLog {
    /// One object's last change.
    typealias Change = (seq: UInt64, type: TypeID, key: [UInt8])

    /// The objects whose last change is past `position`, in the log's
    /// order (by seq, then type, then key), at most `limit`: `hasMore`
    /// says whether the walk stopped before the end of the log, and
    /// `endsInsideSeq` whether the first object it left has the last one's
    /// sequence number (the page ends inside it).
    func changedObjects(after position: LogPosition, limit: Int) throws -> (
        changes: [Change], hasMore: Bool, endsInsideSeq: Bool
    ) {
        var changes: [Change] = []
        var hasMore = false
        var endsInsideSeq = false
        try forEachChange(after: position) { seq, type, key in
            if changes.count >= limit {
                hasMore = true
                endsInsideSeq = seq == changes.last?.seq
                return false
            }
            changes.append((seq, type, Array(key)))
            return true
        }
        return (changes, hasMore, endsInsideSeq)
    }

    /// How many objects' last change is after `seq`.
    func changedObjectCount(after seq: UInt64) throws -> Int {
        var count = 0
        try forEachChange(after: LogPosition(seq: seq)) { _, _, _ in
            count += 1
            return true
        }
        return count
    }

    /// Calls `body` with each object whose last change is past `position`,
    /// in the log's order, until it returns false. The runs of a type
    /// whose clock rows this log has not opened are skipped.
    ///
    /// A position inside a sequence number (`seq`, then the type and key
    /// of the last object walked) starts at the run whose last key is at
    /// or past it, one seek: runs of one seq and type do not overlap, and
    /// a committed seq gains no rows.
    func forEachChange(after position: LogPosition, _ body: (UInt64, TypeID, UnsafeRawBufferPointer) throws -> Bool)
        throws
    {
        try changes.flush()
        // One cursor a type for the walk: a log of many small runs would
        // open one a run.
        var cursors: [TypeID: LMDBCursor] = [:]
        // Inside a seq: the type and record key of the last object walked.
        var resume: (type: TypeID, key: [UInt8])?
        if position.isInsideSeq {
            let type = position.key.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            resume = (TypeID(type), Array(position.key.dropFirst(4)))
        }
        let start = FileLayout.counterBytes(position.isInsideSeq ? position.seq : position.seq &+ 1) + position.key
        try lmdb.withCursor(handles.log) { log in
            var entry = try start.withUnsafeBytes { try log.seek(atLeast: $0) }
            while let found = entry {
                guard let run = SyncChangeLog.run(found) else {
                    throw StrataError.corruptFile(path: path, "The sync change log of \(path) is damaged.")
                }
                if let clocks = clocks(of: run.type) {
                    let cursor = try cursors[run.type] ?? lmdb.keptCursor(clocks)
                    cursors[run.type] = cursor
                    var row: LMDBCursor.Entry?
                    if let (type, key) = resume, run.seq == position.seq, run.type == type,
                        key.withUnsafeBytes({ KeyCodec.compare($0, run.first) }) >= 0
                    {
                        // The run holding the position: its rows past the key.
                        row = try key.withUnsafeBytes { try cursor.seek(atLeast: $0) }
                        if let current = row, key.withUnsafeBytes({ KeyCodec.compare(current.key, $0) }) == 0 {
                            row = try cursor.next()
                        }
                        if let current = row, KeyCodec.compare(current.key, run.last) > 0 { row = nil }
                        resume = nil
                        if row == nil {
                            entry = try log.next()
                            continue
                        }
                    } else {
                        row = try cursor.seek(exactly: run.first)
                    }
                    while let current = row {
                        guard try body(run.seq, run.type, current.key) else { return }
                        if KeyCodec.compare(current.key, run.last) >= 0 { break }
                        row = try cursor.next()
                    }
                    guard row != nil else {
                        throw StrataError.corruptFile(
                            path: path, "A run of the sync change log of \(path) names clock rows that are missing.")
                    }
                }
                resume = nil
                entry = try log.next()
            }
        }
    }

    /// What is wrong with the change log, one sentence each: every clock
    /// row must lie in exactly one run, of its seq, and every run must
    /// begin and end at a row.
    func checkChanges(_ catalog: Catalog) throws -> [String] {
        var runs: [TypeID: [(seq: UInt64, first: [UInt8], last: [UInt8])]] = [:]
        try lmdb.withCursor(handles.log) { log in
            var entry = try log.first()
            while let found = entry {
                guard let run = SyncChangeLog.run(found) else {
                    throw StrataError.corruptFile(path: path, "The sync change log of \(path) is damaged.")
                }
                runs[run.type, default: []].append((run.seq, Array(run.first), Array(run.last)))
                entry = try log.next()
            }
        }
        var problems: [String] = []
        for type in catalog.types where !type.isEmbedded {
            guard let clocks = clocks(of: type.id) else { continue }
            let typeRuns = (runs.removeValue(forKey: type.id) ?? []).sorted { a, b in
                a.first.withUnsafeBytes { KeyCodec.compare($0, b.first) } < 0
            }
            problems += try check(type.name, typeRuns, clocks)
        }
        for type in runs.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            problems.append("The sync change log names type \(type.rawValue), which has no clock rows.")
        }
        return problems
    }

    /// Walks the rows of one type beside its runs, sorted by first key.
    private func check(
        _ name: String, _ runs: [(seq: UInt64, first: [UInt8], last: [UInt8])], _ clocks: DatabaseHandle
    ) throws -> [String] {
        var problems: [String] = []
        for (a, b) in zip(runs, runs.dropFirst()) where a.last.withUnsafeBytes({ KeyCodec.compare($0, b.first) }) >= 0 {
            problems.append("Two runs of '\(name)' in the sync change log overlap.")
        }
        let missing = "A run of '\(name)' in the sync change log begins or ends at a missing row."
        var index = 0
        // Whether the current run's first and last keys are rows.
        var ends = (first: false, last: false)
        try lmdb.withCursor(clocks) { cursor in
            var entry = try cursor.first()
            while let (key, value) = entry, problems.count < 10 {
                while index < runs.count, KeyCodec.compare(key, runs[index].last) > 0 {
                    if ends != (true, true) { problems.append(missing) }
                    index += 1
                    ends = (false, false)
                }
                let seq = ClockRow.decode(value)?.seq
                let at = seq.map(String.init) ?? "?"
                if index < runs.count, KeyCodec.compare(key, runs[index].first) >= 0 {
                    ends.first = ends.first || KeyCodec.compare(key, runs[index].first) == 0
                    ends.last = KeyCodec.compare(key, runs[index].last) == 0
                    if seq != runs[index].seq {
                        problems.append(
                            "An object of '\(name)' last changed at \(at) lies in a run of \(runs[index].seq) in the sync change log."
                        )
                    }
                } else {
                    problems.append("An object of '\(name)' last changed at \(at) is missing from the sync change log.")
                }
                entry = try cursor.next()
            }
        }
        if index < runs.count, problems.isEmpty, ends != (true, true) || index + 1 < runs.count {
            problems.append(missing)
        }
        return problems
    }
}

/// A place in a file's change log: past every object whose last change
/// has a sequence number below `seq` and, of `seq`, past the objects up to
/// `key` (`type:u32be ‖ record key`) included, in the log's order; an
/// empty key is past all of `seq`.
///
/// A sequence number gains no rows once its transaction committed (an
/// object changed again leaves its run for a new number, above every
/// other), so a position stays meaningful while the log changes: what is
/// past it was walked, or moved there since.
struct LogPosition: Comparable, Sendable {
    var seq: UInt64
    var key: [UInt8] = []

    /// Whether the position is inside `seq`, with entries of it after it.
    var isInsideSeq: Bool { !key.isEmpty }

    /// The longest key a position holds: a type id and a record key.
    static let maxKeyLength = 4 + KeyCodec.maxKeySize

    /// Whether a key of `length` bytes can be a position's: none, or a
    /// type id and a record key of at least one byte.
    static func isValidKey(length: Int) -> Bool {
        length == 0 || (5 ... maxKeyLength).contains(length)
    }

    /// Positions in the order of the log's keys: by sequence number, then
    /// by key as LMDB orders keys (bytes, then length), all of a sequence
    /// number past any part of it.
    static func < (a: LogPosition, b: LogPosition) -> Bool {
        if a.seq != b.seq { return a.seq < b.seq }
        if a.key.isEmpty { return false }
        if b.key.isEmpty { return true }
        return a.key.lexicographicallyPrecedes(b.key)
    }
}
