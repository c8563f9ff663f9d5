import Foundation

/// The named databases of a sync-enabled file, opened once by the
/// `Database` (named databases are opened while no other transaction of
/// the process opens any).
struct SyncHandles: Sendable {
    /// What the catalog records: dataset, site, when sync was enabled.
    let identity: CatalogSync
    let log: DatabaseHandle
    let origins: DatabaseHandle
    let peers: DatabaseHandle
    let shadow: DatabaseHandle
    let dangling: DatabaseHandle
    /// Each object type's clock rows.
    let clocks: [TypeID: DatabaseHandle]

    /// Whether every object type has its clock database.
    func hasAllClocks(_ catalog: Catalog) -> Bool {
        catalog.types.allSatisfy { $0.isEmbedded || clocks[$0.id] != nil }
    }

    /// Opens (or, with `create`, makes) the sync databases of `catalog`;
    /// nil when sync is not enabled on it.
    static func open(_ txn: LMDBTransaction, _ catalog: Catalog, create: Bool, path: String) throws -> SyncHandles? {
        guard let identity = catalog.sync else { return nil }
        func open(_ database: NamedDatabase) throws -> DatabaseHandle {
            guard let handle = try txn.openDatabase(database, create: create) else {
                throw StrataError.corruptFile(
                    path: path,
                    "\(path) has sync enabled but its database '\(database.name)' is missing; the file is damaged.")
            }
            return handle
        }
        // A type added since sync was enabled has clocks from the first
        // open that may write; until then, none of its objects has a row.
        var clocks: [TypeID: DatabaseHandle] = [:]
        for type in catalog.types where !type.isEmbedded {
            clocks[type.id] = try txn.openDatabase(FileLayout.clocks(type.id), create: create)
        }
        return SyncHandles(
            identity: identity, log: try open(FileLayout.syncLog), origins: try open(FileLayout.syncOrigins),
            peers: try open(FileLayout.syncPeers), shadow: try open(FileLayout.syncShadow),
            dangling: try open(FileLayout.syncDangling), clocks: clocks)
    }
}

/// The sync bookkeeping of one write transaction on a sync-enabled file:
/// the clock time and change sequence number its changes take (one each,
/// taken at the first change), the clock rows and the change log
/// (``SyncChangeLog``: each object's last change, in runs of neighbouring
/// clock rows).
final class SyncLog {
    let lmdb: LMDBTransaction
    let meta: DatabaseHandle
    let handles: SyncHandles
    /// The schema version of the app writing.
    let writerVersion: UInt64
    /// The database file, for messages.
    let path: String
    /// This transaction's clock tick and sequence number, once taken.
    private var takenStamp: LocalStamp?
    private var takenSeq: UInt64?
    private let rowBytes = ByteWriter(capacity: 64)
    /// The change log.
    let changes: SyncChangeLog
    /// Origin indexes and sites read or made in this transaction.
    private var originIndexes: [SiteID: UInt32] = [:]
    private var sites: [UInt32: SiteID] = [:]
    /// Whether this transaction noted a register naming an absent target
    /// (``keepShadow(_:value:absent:)``).
    var addedDangling = false
    /// The largest key of the clock database of `frontierType`, so that
    /// keys written in ascending order go in with `MDB_APPEND` and a new
    /// object's missing row is known without a search.
    private var frontierType: TypeID?
    private var clockFrontier = KeyBuffer()
    /// The clock databases of types learned or opened after the
    /// `Database` was (kept types, types learned from peers).
    private var laterClocks: [TypeID: DatabaseHandle] = [:]
    private var lastClocks: (type: TypeID, handle: DatabaseHandle)?
    /// A cursor on each type's clock rows, kept for the transaction
    /// (``LMDBTransaction/keptCursor(_:)``): a row read and then written
    /// is found on the cursor's page, without a search from the root.
    private var clockCursors: [TypeID: LMDBCursor] = [:]
    private var lastClockType: TypeID?
    private var lastClockCursor: LMDBCursor?
    /// The row the clock cursor of `cursorType` is at, when known: objects
    /// written in key order find theirs there, without a search.
    private var cursorType: TypeID?
    private var cursorKey = KeyBuffer()

    /// The longest record key a sync-enabled file takes: a change log
    /// key is 12 bytes and the record key, and LMDB allows 511 in all.
    static let maxKeySize = KeyCodec.maxKeySize - 12

    /// The origin index of this file's own site.
    static let localOrigin: UInt32 = 0

    init(lmdb: LMDBTransaction, meta: DatabaseHandle, handles: SyncHandles, writerVersion: UInt64, path: String) {
        self.lmdb = lmdb
        self.path = path
        self.meta = meta
        self.handles = handles
        self.writerVersion = writerVersion
        changes = SyncChangeLog(lmdb: lmdb, database: handles.log, path: path)
    }

    deinit {
        clockFrontier.free()
        cursorKey.free()
    }

    // MARK: Clock and sequence

    /// The stamp and sequence number of this transaction's changes: the
    /// first call ticks the file's clock and takes the next number.
    func change() throws -> (stamp: LocalStamp, seq: UInt64) {
        if let takenStamp { return (takenStamp, try seq()) }
        let time = try lastTime().tick()
        try setLastTime(time)
        let stamp = LocalStamp(time: time, origin: SyncLog.localOrigin)
        takenStamp = stamp
        return (stamp, try seq())
    }

    /// The sequence number of this transaction's changes; the first call
    /// takes the next one. Alone it ticks no clock: applying a peer's
    /// changes stamps nothing of its own.
    func seq() throws -> UInt64 {
        if let takenSeq { return takenSeq }
        let seq = try lastSeq() + 1
        try lmdb.put(meta, FileLayout.MetaKey.syncSeq, FileLayout.counterBytes(seq))
        takenSeq = seq
        return seq
    }

    /// The sequence number ``seq()`` gives, without taking it: a merge
    /// works out an object's clocks before it knows whether anything
    /// changes, and a transaction that changes nothing takes no number.
    func nextSeq() throws -> UInt64 {
        if let takenSeq { return takenSeq }
        return try lastSeq() + 1
    }

    /// The last clock time the file issued or saw.
    func lastTime() throws -> HybridTime {
        HybridTime(rawValue: try counter(FileLayout.MetaKey.syncTime))
    }

    /// The last change sequence number.
    func lastSeq() throws -> UInt64 { try counter(FileLayout.MetaKey.syncSeq) }

    /// Moves the file's clock up to `time` (a peer's stamp): its next tick
    /// is later than every stamp it has seen.
    func receive(_ time: HybridTime) throws {
        if time > (try lastTime()) { try setLastTime(time) }
    }

    private func setLastTime(_ time: HybridTime) throws {
        try lmdb.put(meta, FileLayout.MetaKey.syncTime, FileLayout.counterBytes(time.rawValue))
    }

    private func counter(_ key: [UInt8]) throws -> UInt64 {
        guard let bytes = try lmdb.get(meta, key) else { return 0 }
        guard let value = FileLayout.counter(bytes) else {
            throw StrataError.corruptFile(
                path: path, "The sync counter '\(String(decoding: key, as: UTF8.self))' of \(path) is damaged.")
        }
        return value
    }

    // MARK: Clock rows and the log

    /// The clock row of the object with record key `key`; nil when it has
    /// none (never written since sync was enabled).
    func row(_ type: TypeID, _ key: UnsafeRawBufferPointer) throws -> ClockRow? {
        guard let bytes = try storedRow(type, key) else { return nil }
        guard let row = ClockRow.decode(bytes) else {
            throw StrataError.corruptFile(path: path, "A clock row of type \(type) in \(path) is damaged.")
        }
        return row
    }

    /// Gives the record's fields `ids` (ascending) of the object with
    /// record key `key` the clock `clock` in its stored row, moves the row
    /// to `clock.seq` in the change log, and raises its writer version:
    /// ``ClockRow/restamp(_:_:clock:writerVersion:into:)``, straight from
    /// the stored bytes.
    ///
    /// - Returns: false, having written nothing, when the object has no
    ///   row, the row is not one `restamp` handles, or it would list more
    ///   than half of `fieldCount` fields (it is then rebased): the caller
    ///   decodes the row.
    func restamp(
        _ type: TypeID, _ key: UnsafeRawBufferPointer, fields ids: UnsafeBufferPointer<PropertyID>,
        clock: FieldClock, fieldCount: Int
    ) throws -> Bool {
        guard let bytes = try storedRow(type, key),
            let (previous, listed) = ClockRow.restamp(
                bytes, ids, clock: clock, writerVersion: writerVersion, into: rowBytes),
            2 * listed <= fieldCount
        else { return false }
        try writeRow(seq: clock.seq, previousSeq: previous, type, key)
        return true
    }

    /// The stored bytes of the clock row of `key`, valid until the next
    /// write; nil when it has none.
    private func storedRow(_ type: TypeID, _ key: UnsafeRawBufferPointer) throws -> UnsafeRawBufferPointer? {
        guard let cursor = try clockCursor(of: type) else { return nil }
        let isAtRow = isCursorAt(type, key)
        guard let bytes = try (isAtRow ? cursor.current() : cursor.seek(exactly: key))?.value else {
            cursorType = nil
            return nil
        }
        if !isAtRow { noteCursor(at: key, of: type) }
        return bytes
    }

    /// Whether `key` sorts after every clock row of `type`: then the
    /// object has none, and its row can be appended.
    func isBeyondClocks(_ type: TypeID, _ key: UnsafeRawBufferPointer) throws -> Bool {
        guard let clocks = clocks(of: type) else { return false }
        if frontierType != type {
            clockFrontier.removeAll()
            if let last = try lmdb.lastKey(clocks) { last.withUnsafeBytes { clockFrontier.set($0) } }
            frontierType = type
        }
        return clockFrontier.isEmpty || KeyCodec.compare(key, clockFrontier.bytes) > 0
    }

    /// Stores `row` for the object and moves it in the change log from
    /// its run of `previousSeq`, the seq of the row it replaces (nil: it
    /// had none), to the row's seq. `beyondClocks` is what
    /// ``isBeyondClocks(_:_:)`` says of `key`, when the caller asked it.
    func store(
        _ row: ClockRow, previousSeq: UInt64?, _ type: TypeID, _ key: UnsafeRawBufferPointer,
        beyondClocks: Bool? = nil
    ) throws {
        row.encode(into: rowBytes)
        try writeRow(seq: row.seq, previousSeq: previousSeq, type, key, beyondClocks: beyondClocks)
    }

    /// Stores the row encoded in ``rowBytes``, whose seq is `seq`, as
    /// ``store(_:previousSeq:_:_:beyondClocks:)`` does.
    private func writeRow(
        seq: UInt64, previousSeq: UInt64?, _ type: TypeID, _ key: UnsafeRawBufferPointer, beyondClocks: Bool? = nil
    ) throws {
        guard let clocks = try clockCursor(of: type) else {
            preconditionFailure("Sync is enabled but type \(type) has no clock database")
        }
        guard key.count <= SyncLog.maxKeySize else {
            throw StrataError.syncKeyTooLarge(size: key.count, limit: SyncLog.maxKeySize, path: path)
        }
        assert(storedSeq(clocks, key) == previousSeq, "The caller of SyncLog.store misread the object's row")
        let appends = try previousSeq == nil && (beyondClocks ?? isBeyondClocks(type, key))
        let appended = try appends && rowBytes.withUnsafeBytes { try clocks.append(key: key, value: $0) }
        if !appended {
            // The row read before the write left the cursor at it.
            let isAtRow = previousSeq != nil && isCursorAt(type, key)
            try rowBytes.withUnsafeBytes { value in
                if isAtRow {
                    try clocks.replaceCurrent(key: key, value: value)
                } else {
                    try clocks.put(key: key, value: value)
                }
            }
        }
        noteCursor(at: key, of: type)
        if previousSeq != seq {
            let leftAt = try changes.moved(
                type, key, from: previousSeq, to: seq, clocks: clocks,
                appendedAfter: appended ? clockFrontier.bytes : nil)
            if let leftAt { noteCursor(at: leftAt, of: type) } else { cursorType = nil }
        }
        if appended {
            clockFrontier.set(key)
        }
    }

    /// The seq of the stored row of `key`, for an assertion (the run the
    /// object leaves is found by it).
    private func storedSeq(_ clocks: LMDBCursor, _ key: UnsafeRawBufferPointer) -> UInt64? {
        cursorType = nil
        guard let stored = try? clocks.seek(exactly: key) else { return nil }
        return ClockRow.decode(stored.value)?.seq ?? .max
    }

    private func isCursorAt(_ type: TypeID, _ key: UnsafeRawBufferPointer) -> Bool {
        cursorType == type && cursorKey.holds(key)
    }

    private func noteCursor(at key: UnsafeRawBufferPointer, of type: TypeID) {
        cursorType = type
        cursorKey.set(key)
    }

    /// The clock database of `type`: the last one asked for is kept, as
    /// one type's objects are mostly written together (two dictionary
    /// lookups cost 670 instructions an insert).
    func clocks(of type: TypeID) -> DatabaseHandle? {
        if let last = lastClocks, last.type == type { return last.handle }
        guard let handle = handles.clocks[type] ?? laterClocks[type] else { return nil }
        lastClocks = (type, handle)
        return handle
    }

    /// The transaction's cursor on the clock rows of `type`.
    private func clockCursor(of type: TypeID) throws -> LMDBCursor? {
        if lastClockType == type, let cursor = lastClockCursor { return cursor }
        guard let handle = clocks(of: type) else { return nil }
        let cursor = try clockCursors[type] ?? lmdb.keptCursor(handle)
        clockCursors[type] = cursor
        lastClockType = type
        lastClockCursor = cursor
        return cursor
    }

    /// Opens (or makes) the clock database of a type the `Database` did
    /// not open it for. The caller holds the environment's setup lock:
    /// named databases are opened by one transaction at a time.
    func openClocks(of type: TypeID) throws {
        guard clocks(of: type) == nil else { return }
        guard let handle = try lmdb.openDatabase(FileLayout.clocks(type), create: !lmdb.isReadOnly) else { return }
        laterClocks[type] = handle
    }

    /// The table of a type the `Database` did not open (a kept type, one
    /// learned from a peer), with its clock database; with `create`, both
    /// are made when missing, else nil when the type has no records yet.
    /// The caller holds the environment's setup lock.
    func keptTable(_ type: CatalogType, in catalog: Catalog, create: Bool) throws -> ObjectTable? {
        if !create, try lmdb.openDatabase(type.recordsDatabase, create: false) == nil { return nil }
        let table = try ObjectTable.open(
            type, lmdb, create: create, withIndexes: true, related: catalog.types, path: path,
            preservesUnknownFields: true)
        try openClocks(of: type.id)
        return table
    }

    // MARK: Origins

    /// The index of `site` in the file's origins table; nil when the file
    /// has no stamp of it.
    func knownOriginIndex(of site: SiteID) throws -> UInt32? {
        if site == handles.identity.site { return SyncLog.localOrigin }
        if let index = originIndexes[site] { return index }
        guard let bytes = try lmdb.get(handles.origins, [UInt8(ascii: "s")] + site.bytes),
            let index = FileLayout.counter(bytes)
        else { return nil }
        originIndexes[site] = UInt32(truncatingIfNeeded: index)
        return UInt32(truncatingIfNeeded: index)
    }

    /// The index of `site` in the file's origins table, added when new.
    func originIndex(of site: SiteID) throws -> UInt32 {
        if let index = try knownOriginIndex(of: site) { return index }
        return try addOrigin(site)
    }

    /// Gives `site` the next origin index, even the file's own site (whose
    /// stamps are origin 0 until its identity is reset).
    func addOrigin(_ site: SiteID) throws -> UInt32 {
        let siteKey = [UInt8(ascii: "s")] + site.bytes
        let count = try lmdb.entryCount(handles.origins) / 2
        let index = UInt32(count + 1)
        _ = try lmdb.put(handles.origins, siteKey, FileLayout.counterBytes(UInt64(index)))
        _ = try lmdb.put(handles.origins, SyncLog.indexKey(index), site.bytes)
        originIndexes[site] = index
        sites[index] = site
        return index
    }

    /// The site of origin index `index`.
    func site(at index: UInt32) throws -> SiteID {
        if index == SyncLog.localOrigin { return handles.identity.site }
        if let site = sites[index] { return site }
        guard let bytes = try lmdb.get(handles.origins, SyncLog.indexKey(index)), let site = SiteID(bytes: bytes) else {
            throw StrataError.corruptFile(
                path: path, "The sync origins of \(path) lack origin \(index); the file is damaged.")
        }
        sites[index] = site
        return site
    }

    /// The full stamp of a stored one.
    func stamp(_ local: LocalStamp) throws -> Stamp {
        Stamp(time: local.time, origin: try site(at: local.origin))
    }

    private static func indexKey(_ index: UInt32) -> [UInt8] {
        [UInt8(ascii: "i")] + FileLayout.counterBytes(UInt64(index))
    }
}
