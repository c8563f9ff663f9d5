#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One object the engine inserted, replaced or deleted, as the subscribers
/// of its transaction see it (``ChangeSubscriber``): which object, and its
/// record before and after the write, from which the fields whose bytes
/// changed follow.
///
/// Made only while a transaction has subscribers. Its views are valid only
/// during the call that hands it over: the write that follows may move the
/// stored bytes.
struct ChangeRecord {
    /// What happened to the object.
    enum Kind: Sendable, Equatable {
        /// A new object: there was no record with its key.
        case inserted
        /// An existing object's record was written again (an update, an
        /// upsert of an existing key, a nullified link, a migration's
        /// rewrite, `compact`'s repack).
        case replaced
        /// The object was deleted (by the app, a cascade or a migration).
        case deleted
    }

    let kind: Kind
    /// The object's table (its type and fields).
    let table: ObjectTable
    /// The object's record key.
    let key: UnsafeRawBufferPointer
    /// The record before the write; nil for an insert.
    let before: RecordView?
    /// The record after the write; nil for a delete.
    let after: RecordView?
    /// Who made the change.
    var origin: ChangeOrigin = .local

    /// The ids of the fields whose encoded bytes differ between ``before``
    /// and ``after``, ascending: a field in one record and not the other,
    /// or stored with other bytes. Every field of the record for an insert
    /// or a delete. Fields are compared at the top level: a change inside
    /// an embedded object or a list names the property that holds it.
    func changedFields() -> [PropertyID] {
        var changed: [PropertyID] = []
        forEachChangedField { id, _ in changed.append(id) }
        return changed
    }

    /// Calls `body` with the id of each field ``changedFields()`` lists, in
    /// its order, and whether ``before`` holds the field, without
    /// collecting them: sync capture calls this for every object an app
    /// writes.
    @inline(__always)
    func forEachChangedField(_ body: (PropertyID, _ inBefore: Bool) throws -> Void) rethrows {
        switch (before, after) {
        case (nil, let record?):
            try record.forEachEncodedField { id, _ in try body(id, false) }
        case (let record?, nil):
            try record.forEachEncodedField { id, _ in try body(id, true) }
        case (let old?, let new?):
            try ChangeRecord.compare(old, new, body)
        case (nil, nil):
            break
        }
    }

    /// Calls `body` with the id of each field whose encoded bytes differ
    /// between `old` and `new`, ascending: both records are walked side by
    /// side, as both hold their fields by ascending id.
    @inline(__always)
    private static func compare(
        _ old: RecordView, _ new: RecordView, _ body: (PropertyID, _ inBefore: Bool) throws -> Void
    ) rethrows {
        guard let a = old.bytes.baseAddress, let b = new.bytes.baseAddress else {
            try old.forEachEncodedField { id, _ in try body(id, true) }
            try new.forEachEncodedField { id, _ in try body(id, false) }
            return
        }
        let (aEnd, bEnd) = (old.bytes.count, new.bytes.count)
        var (p, q) = (old.fieldsOffset, new.fieldsOffset)
        var (aLeft, bLeft) = (old.fieldCount, new.fieldCount)
        var x = field(a, &p, aEnd, &aLeft)
        var y = field(b, &q, bEnd, &bLeft)
        while x.id != .max || y.id != .max {
            if x.id < y.id {
                try body(PropertyID(UInt32(truncatingIfNeeded: x.id)), true)
                x = field(a, &p, aEnd, &aLeft)
            } else if y.id < x.id {
                try body(PropertyID(UInt32(truncatingIfNeeded: y.id)), false)
                y = field(b, &q, bEnd, &bLeft)
            } else {
                let length = p - x.start
                if length != q - y.start || !equalBytes(a + x.start, b + y.start, length) {
                    try body(PropertyID(UInt32(truncatingIfNeeded: x.id)), true)
                }
                x = field(a, &p, aEnd, &aLeft)
                y = field(b, &q, bEnd, &bLeft)
            }
        }
    }

    /// Whether the `count` bytes at `a` and `b` are equal: most fields are
    /// a few bytes, which a call of `memcmp` per field costs more than
    /// comparing them here.
    @inline(__always)
    private static func equalBytes(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int) -> Bool {
        guard count <= 32 else { return memcmp(a, b, count) == 0 }
        var i = 0
        while i + 8 <= count {
            if a.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                != b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            {
                return false
            }
            i += 8
        }
        while i < count {
            if a.load(fromByteOffset: i, as: UInt8.self) != b.load(fromByteOffset: i, as: UInt8.self) { return false }
            i += 1
        }
        return true
    }

    /// The id of the field at `at` (`.max` past the last, or at damage)
    /// and where it starts; `at` moves past it.
    @inline(__always)
    private static func field(_ base: UnsafeRawPointer, _ at: inout Int, _ end: Int, _ left: inout Int) -> (
        id: UInt64, start: Int
    ) {
        guard left > 0 else { return (.max, at) }
        left -= 1
        let start = at
        guard let id = RecordView.varint(base, &at, end), RecordView.skip(base, &at, end) else {
            left = 0
            return (.max, start)
        }
        return (id, start)
    }
}

/// Who made a change the engine writes, for its subscribers: sync
/// capture stamps only the app's own changes.
enum ChangeOrigin {
    /// The app, through its transaction (or a migration, `compact`):
    /// sync capture stamps the fields whose bytes changed.
    case local
    /// A peer's changes merged into the file: `row` is the object's clock
    /// row after the merge (the peer's stamps on the fields that won), the
    /// one to store in place of the row at `previousSeq` (nil: none).
    /// Boxed, so that an origin is one word: every write passes one down
    /// several calls, and most are `.local`.
    indirect case peer(row: ClockRow, previousSeq: UInt64?)
    /// Links written again from sync's registers (a target appeared, or a
    /// peer deleted one): the registers, and so the stamps, are unchanged.
    case materialized
}

/// Told of every object a write transaction's ``TableEngine`` writes or
/// deletes, inside the transaction, before the engine's next write: the
/// one place where every mutation (insert, update, upsert, delete,
/// cascade, nullify, a migration's rewrite, `compact`'s repack) can be
/// seen. Observation's ``CommitFeedRecorder`` is one; a sync change log is
/// another.
///
/// A subscriber that throws fails the write that called it; the caller's
/// transaction then rolls everything back.
protocol ChangeSubscriber: AnyObject {
    /// An object was inserted, replaced or deleted.
    func objectChanged(_ change: ChangeRecord) throws

    /// Every object of `table` is about to be deleted at once, by a
    /// `deleteAll` with no delete rule to apply or by a migration that
    /// writes the type's objects again under new keys. The records are
    /// still there to be read in `engine`'s transaction.
    func tableWillEmpty(_ table: ObjectTable, in engine: TableEngine) throws

    /// The transaction's last writes are done and it is about to commit:
    /// a subscriber may write through `engine` now (never from
    /// ``objectChanged(_:)``, which runs in the middle of a write).
    func transactionWillCommit(_ engine: TableEngine) throws
}

extension ChangeSubscriber {
    func transactionWillCommit(_ engine: TableEngine) throws {}
}

/// The subscriber behind observation: notes the key of every object a
/// transaction writes or deletes, and the types it empties, for the file's
/// ``CommitFeed`` to publish after the commit. A transaction has one only
/// while someone in the process observes the file.
final class CommitFeedRecorder: ChangeSubscriber {
    private(set) var changes = CommittedChanges()

    func objectChanged(_ change: ChangeRecord) {
        changes.wrote(change.table.type.id.rawValue, key: change.key)
    }

    func tableWillEmpty(_ table: ObjectTable, in engine: TableEngine) {
        changes.emptied(table.type.id.rawValue)
    }
}

extension CommittedChanges {
    /// Whether the transaction wrote or deleted anything of `type`.
    func touches(_ type: TypeID) -> Bool {
        emptied.contains(type.rawValue) || keys[type.rawValue] != nil
    }

    /// Whether the transaction deleted every object of `type` at once.
    func wasEmptied(_ type: TypeID) -> Bool {
        emptied.contains(type.rawValue)
    }

    /// The keys of the objects of `type` written or deleted; nil when none.
    func keys(of type: TypeID) -> Set<[UInt8]>? {
        keys[type.rawValue]
    }
}
