import Foundation

/// Where a file is in the changes of one peer: what to hand the peer's
/// ``DatabaseSync/changes(from:limit:)`` for the next page.
///
/// `after` (with `afterKey`): how far this file has walked the peer's
/// changes in the current pull. `since`: the peer's sequence number up to
/// which it has every field change (where the last complete pull ended).
/// A pull in pages asks for the objects after the walk with the fields
/// changed after `since`, so an object changed in an earlier page's range
/// and again after it loses none of its fields.
///
/// A page may end inside one of the peer's sequence numbers (a
/// transaction that changed more objects than a page holds): `afterKey`
/// then says where, as the peer's change-log key of the last object
/// walked. It means something to the peer only: hand it back as it is.
public struct SyncCursor: Sendable, Hashable, CustomStringConvertible {
    /// The peer's sequence number up to which this file has every field
    /// change: where its last complete pull ended.
    public var since: UInt64
    /// The peer's last sequence number whose objects this file has walked
    /// (never below ``since``): all of them, or those up to ``afterKey``.
    public var after: UInt64
    /// Empty when the walk took every object of ``after``; else the
    /// peer's change-log key (type id and record key) of the last object
    /// of ``after`` it took, the objects of ``after`` being walked in the
    /// order of those keys.
    public var afterKey: Data

    /// A cursor; `after` is raised to `since` when below it, and
    /// `afterKey` dropped when `after` is not above `since` (the walk of a
    /// complete pull stops inside no sequence number).
    public init(since: UInt64, after: UInt64, afterKey: Data = Data()) {
        self.since = since
        self.after = max(since, after)
        self.afterKey = after > since ? afterKey : Data()
    }

    /// Nothing applied yet.
    public static let start = SyncCursor(since: 0, after: 0)

    /// `5` for a complete pull, `5 (walked to 9)` in the middle of one,
    /// `5 (walked into 9, to key 0x…)` when its last page ended inside
    /// sequence number 9.
    public var description: String {
        guard since != after else { return "\(since)" }
        guard !afterKey.isEmpty else { return "\(since) (walked to \(after))" }
        return "\(since) (walked into \(after), to key 0x\(afterKey.map { String(format: "%02X", $0) }.joined()))"
    }

    /// Where the walk is in the peer's change log.
    var position: LogPosition { LogPosition(seq: after, key: [UInt8](afterKey)) }

    init(since: UInt64, position: LogPosition) {
        self.init(since: since, after: position.seq, afterKey: Data(position.key))
    }
}

/// What a file keeps about each peer (`__strata.sync.peers`, by the
/// peer's site id): its ``SyncCursor`` of the peer, when it was last heard
/// from, how much of this file's changes the peer is known to have, and
/// how recent the pages of the current pull are:
/// `since:u64be after:u64be lastContact:u64be acknowledged:u64be
/// walkedAt:u64be afterKey` (`afterKey` the rest of the value: empty, or
/// 5 to 515 bytes).
enum PeerCursor {
    struct Entry {
        var cursor = SyncCursor.start
        var lastContact: UInt64 = 0
        /// This file's sequence number up to which the peer has every
        /// change: its own cursor's `since`, learned at an exchange.
        var acknowledged: UInt64 = 0
        /// The peer's last sequence number when it made the newest
        /// changeset that moved the cursor: what this file has of the
        /// peer's objects up to the cursor's walk is as recent as that.
        var walkedAt: UInt64 = 0
    }

    /// The bytes of an entry before the cursor's key.
    static let fixedLength = 40

    static func entry(_ lmdb: LMDBTransaction, _ handles: SyncHandles, peer: SiteID, path: String) throws -> Entry? {
        guard let bytes = try lmdb.get(handles.peers, peer.bytes) else { return nil }
        func number(_ at: Int) -> UInt64 { UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
        let damaged = StrataError.corruptFile(path: path, "The sync peer entry of \(peer) in \(path) is damaged.")
        guard bytes.count >= fixedLength else { throw damaged }
        let (since, after) = (number(0), number(8))
        let key = bytes[fixedLength...]
        guard since <= after, LogPosition.isValidKey(length: key.count), key.isEmpty || after > since else {
            throw damaged
        }
        return Entry(
            cursor: SyncCursor(since: since, after: after, afterKey: Data(key)), lastContact: number(16),
            acknowledged: number(24), walkedAt: number(32))
    }

    static func store(_ entry: Entry, _ lmdb: LMDBTransaction, _ handles: SyncHandles, peer: SiteID) throws {
        let cursor = entry.cursor
        let numbers = [cursor.since, cursor.after, entry.lastContact, entry.acknowledged, entry.walkedAt]
        _ = try lmdb.put(handles.peers, peer.bytes, numbers.flatMap(FileLayout.counterBytes) + cursor.afterKey)
    }

    /// Moves the cursor of the changeset's sender when the changeset
    /// follows what was walked (it starts at or before the walk's
    /// position) and holds every field change since what was complete
    /// (its baseline is at or before `since`): the walk goes on to the
    /// changeset's end. A changeset out of order leaves the cursor (its
    /// merge is kept).
    ///
    /// A last page completes the pull only when the sender made it no
    /// earlier than every page the walk took (``Entry/walkedAt``). An
    /// object the walk passed can have changed before a later page was
    /// made, and moved past the walk, after an older last page's end: the
    /// pull must go on to fetch it with the fields it had before. (A last
    /// page of an earlier pull applied again, or an early page of a resend
    /// delivered late, would otherwise end a pull that lacks them.)
    static func advance(_ log: SyncLog, _ content: ChangesetContent) throws {
        var entry = try entry(log.lmdb, log.handles, peer: content.sender, path: log.path) ?? Entry()
        var progress = PeerProgress(cursor: entry.cursor, walkedAt: entry.walkedAt)
        progress.advance(by: content)
        (entry.cursor, entry.walkedAt) = (progress.cursor, progress.walkedAt)
        entry.lastContact = HybridTime.wallClock()
        try store(entry, log.lmdb, log.handles, peer: content.sender)
    }
}

/// A receiver's cursor of one sender and how recent its walk is: what
/// ``PeerCursor`` keeps of a peer, and what the hub keeps of each device
/// (`@_spi(Hub)`), moved by the same rule.
@_spi(Hub) public struct PeerProgress: Sendable, Equatable {
    /// Where the next changes from the sender start.
    public var cursor: SyncCursor
    /// The sender's last sequence number when it made the newest changeset
    /// that moved the cursor.
    public var walkedAt: UInt64

    public init(cursor: SyncCursor = .start, walkedAt: UInt64 = 0) {
        self.cursor = cursor
        self.walkedAt = walkedAt
    }

    /// Moves the cursor past `content` when it follows what was walked
    /// (``PeerCursor/advance(_:_:)`` says when).
    public mutating func advance(by content: ChangesetContent) {
        guard content.baseline <= cursor.since, content.from <= cursor.position else { return }
        if !content.hasMore, content.senderSeq >= walkedAt {
            let end = max(cursor.after, content.toSeq)
            cursor = SyncCursor(since: end, after: end)
        } else {
            cursor = SyncCursor(since: cursor.since, position: max(cursor.position, content.to))
        }
        walkedAt = max(walkedAt, content.senderSeq)
    }
}
