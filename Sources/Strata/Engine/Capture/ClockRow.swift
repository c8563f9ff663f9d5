/// A stamp as a file stores it: the time and the index of the site in the
/// file's origins table (``SyncLog``), four bytes or fewer instead of 16.
struct LocalStamp: Hashable, Sendable {
    var time: HybridTime
    var origin: UInt32

    /// No write yet: a field an app stores without declaring it (a kept
    /// property's empty value) until a peer's value arrives. Every real
    /// stamp is above it.
    static let none = LocalStamp(time: .zero, origin: 0)

    var isNone: Bool { time == .zero }
}

/// A field's clock in a ``ClockRow``: the stamp of its last write, and
/// the sequence number at which it last changed in this file (what a
/// changeset "since N" sends is the fields changed after N).
struct FieldClock: Hashable, Sendable {
    var stamp: LocalStamp
    var seq: UInt64

    static let none = FieldClock(stamp: .none, seq: 0)
}

/// A field's place in an object: a property id, and for a field inside an
/// embedded object, the ids of the fields down to it (`home.street` is the
/// id of `home`, then that of `street`). Paths sort by their ids, so a
/// field's path comes just before those of the fields inside it.
struct ClockPath: Hashable, Comparable, Sendable {
    /// The id of the record's field.
    var head: PropertyID
    /// The ids inside the embedded objects, outermost first; empty for a
    /// field of the record itself.
    var tail: [PropertyID]

    init(_ head: PropertyID, _ tail: [PropertyID] = []) {
        self.head = head
        self.tail = tail
    }

    /// The path of field `id` of the embedded object at this path.
    func appending(_ id: PropertyID) -> ClockPath { ClockPath(head, tail + [id]) }

    /// Whether `self` is `ancestor` or a field inside it.
    func isWithin(_ ancestor: ClockPath) -> Bool {
        head == ancestor.head && tail.count >= ancestor.tail.count && tail.starts(with: ancestor.tail)
    }

    static func < (a: ClockPath, b: ClockPath) -> Bool {
        if a.head != b.head { return a.head < b.head }
        return a.tail.lexicographicallyPrecedes(b.tail)
    }
}

/// What a sync-enabled file keeps about one object besides its record
/// (`__strata.t<type>.c`, by record key): whether it lives, where its last
/// change is in the change log, which app versions wrote it, and the clock
/// of each field. A deleted object keeps its row (a tombstone) without a
/// record, until every peer has acknowledged the delete
/// (``DatabaseSync/dropAcknowledgedTombstones()``).
///
/// ```
/// row       = causalLength:varint seq:varint maxWriterVersion:varint
///             baseTime:u64le baseOrigin:varint baseSeqBack:varint
///             count:varint (path timeDelta:zigzag-varint origin:varint seqBack:varint)*
///             [lifeCount:varint (path life:varint)*]
/// path      = (fieldID << 1 | nested):varint [depth:varint fieldID:varint*]
/// ```
///
/// Every field has the base clock but the ones listed, by ascending path,
/// with their time as a difference from the base's and their sequence
/// number as a distance back from the row's. The base is the clock most
/// fields share, so an object written once costs about 16 bytes. A field
/// inside an embedded object is listed by its path (``ClockPath``).
///
/// An optional embedded object has a life, as objects have a causal
/// length: even while null, odd while it holds an object; each change
/// between the two adds one. The lives listed are those that are not what
/// the record implies (1 for an object, 0 for null), so only an embedded
/// object set to null and back again costs a few bytes more.
struct ClockRow: Equatable, Sendable {
    /// Odd while the object lives, even once deleted: a delete adds one,
    /// and so does inserting the key again.
    var causalLength: UInt64
    /// The sequence number of the object's last change in this file.
    var seq: UInt64
    /// The highest app schema version that wrote the object.
    var maxWriterVersion: UInt64
    var base: FieldClock
    /// The fields whose clock is not the base, by ascending path.
    private(set) var exceptions: [(path: ClockPath, clock: FieldClock)]
    /// The lives of embedded objects that the record does not imply, by
    /// ascending path.
    private(set) var lives: [(path: ClockPath, life: UInt64)] = []

    /// A row whose every field has `stamp`, changed at `seq`.
    init(causalLength: UInt64, seq: UInt64, maxWriterVersion: UInt64, base: LocalStamp) {
        self.causalLength = causalLength
        self.seq = seq
        self.maxWriterVersion = maxWriterVersion
        self.base = FieldClock(stamp: base, seq: seq)
        self.exceptions = []
    }

    /// The row of an object of `table` written whole at `stamp`: live,
    /// every field the app declares stamped, the fields it keeps (others'
    /// properties) unstamped.
    static func written(
        _ table: ObjectTable, stamp: LocalStamp, seq: UInt64, writerVersion: UInt64, causalLength: UInt64 = 1
    ) -> ClockRow {
        var row = ClockRow(causalLength: causalLength, seq: seq, maxWriterVersion: writerVersion, base: stamp)
        for kept in table.keptFields { row.set(kept.id, .none) }
        return row
    }

    var isLive: Bool { causalLength % 2 == 1 }

    /// The clock of field `id` of the record.
    func clock(of id: PropertyID) -> FieldClock { clock(at: ClockPath(id)) }

    /// The clock of the field at `path`.
    func clock(at path: ClockPath) -> FieldClock {
        guard case .found(let i) = exceptionIndex(path) else { return base }
        return exceptions[i].clock
    }

    /// The stamp of field `id`.
    func stamp(of id: PropertyID) -> LocalStamp { clock(of: id).stamp }

    /// The latest stamp among the fields (its origin is that field's).
    var lastStamp: LocalStamp {
        exceptions.reduce(base.stamp) { $1.clock.stamp.time > $0.time ? $1.clock.stamp : $0 }
    }

    /// Gives field `id` of the record the clock `clock`.
    mutating func set(_ id: PropertyID, _ clock: FieldClock) { set(ClockPath(id), clock) }

    /// Gives the field at `path` the clock `clock`.
    mutating func set(_ path: ClockPath, _ clock: FieldClock) {
        switch exceptionIndex(path) {
        case .found(let i):
            if clock == base { exceptions.remove(at: i) } else { exceptions[i].clock = clock }
        case .insert(let at):
            guard clock != base else { return }
            // Appending is the common case, and far cheaper than an insert.
            if at == exceptions.endIndex {
                exceptions.append((path, clock))
            } else {
                exceptions.insert((path, clock), at: at)
            }
        }
    }

    /// The life of the embedded object at `path`, whose record holds an
    /// object there when `present`.
    func life(at path: ClockPath, present: Bool) -> UInt64 {
        lives.first { $0.path == path }?.life ?? (present ? 1 : 0)
    }

    /// Gives the embedded object at `path` the life `life`; listed unless
    /// the record implies it (`present`: it holds an object there).
    mutating func setLife(_ path: ClockPath, _ life: UInt64, present: Bool) {
        lives.removeAll { $0.path == path }
        guard life != (present ? 1 : 0) else { return }
        let at = lives.firstIndex { $0.path > path } ?? lives.count
        lives.insert((path, life), at: at)
    }

    /// Forgets the clocks and lives of the fields inside the embedded
    /// object at `path` (not its own): a new life of it starts empty.
    mutating func removeInside(_ path: ClockPath) {
        exceptions.removeAll { $0.path != path && $0.path.isWithin(path) }
        lives.removeAll { $0.path != path && $0.path.isWithin(path) }
    }

    /// Gives every field the clock `clock` (an insert, a delete, a new
    /// life).
    mutating func stampAll(_ clock: FieldClock) {
        base = clock
        exceptions = []
        lives = []
    }

    /// Makes the base the clock most of `fields` (the paths the record
    /// holds, those inside its embedded objects included) have, so that
    /// the row lists as few as it can.
    mutating func rebase(over fields: [ClockPath]) {
        guard !exceptions.isEmpty else { return }
        var counts: [FieldClock: Int] = [:]
        for path in fields { counts[clock(at: path), default: 0] += 1 }
        guard let (best, count) = counts.max(by: { $0.value < $1.value }), best != base,
            count > counts[base, default: 0]
        else { return }
        let clocks = fields.map { ($0, clock(at: $0)) }
        let held = Set(fields)
        let others = exceptions.filter { !held.contains($0.path) }
        base = best
        exceptions = others.filter { $0.clock != best }
        for (path, clock) in clocks { set(path, clock) }
    }

    /// The row with every stamp of origin `from` given origin `to`.
    func replacingOrigin(_ from: UInt32, with to: UInt32) -> ClockRow {
        var copy = self
        if copy.base.stamp.origin == from { copy.base.stamp.origin = to }
        for i in copy.exceptions.indices where copy.exceptions[i].clock.stamp.origin == from {
            copy.exceptions[i].clock.stamp.origin = to
        }
        return copy
    }

    private enum Slot {
        case found(Int)
        case insert(Int)
    }

    /// Where `path` is in the exceptions, or where it goes (binary search:
    /// they are sorted by path).
    private func exceptionIndex(_ path: ClockPath) -> Slot {
        var low = 0
        var high = exceptions.count
        while low < high {
            let mid = (low + high) / 2
            let other = exceptions[mid].path
            if other == path { return .found(mid) }
            if other < path { low = mid + 1 } else { high = mid }
        }
        return .insert(low)
    }

    static func == (a: ClockRow, b: ClockRow) -> Bool {
        a.causalLength == b.causalLength && a.seq == b.seq && a.maxWriterVersion == b.maxWriterVersion
            && a.base == b.base
            && a.exceptions.elementsEqual(b.exceptions) { $0.path == $1.path && $0.clock == $1.clock }
            && a.lives.elementsEqual(b.lives) { $0.path == $1.path && $0.life == $1.life }
    }

    // MARK: Bytes

    func encode(into writer: ByteWriter) {
        writer.removeAll()
        writer.appendVarint(causalLength)
        writer.appendVarint(seq)
        writer.appendVarint(maxWriterVersion)
        writer.appendLittleEndian(base.stamp.time.rawValue)
        writer.appendVarint(UInt64(base.stamp.origin))
        writer.appendVarint(seq &- base.seq)
        writer.appendVarint(UInt64(exceptions.count))
        for (path, clock) in exceptions {
            Self.append(path, to: writer)
            let delta = Int64(bitPattern: clock.stamp.time.rawValue &- base.stamp.time.rawValue)
            writer.appendVarint(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)))
            writer.appendVarint(UInt64(clock.stamp.origin))
            writer.appendVarint(seq &- clock.seq)
        }
        guard !lives.isEmpty else { return }
        writer.appendVarint(UInt64(lives.count))
        for (path, life) in lives {
            Self.append(path, to: writer)
            writer.appendVarint(life)
        }
    }

    private static func append(_ path: ClockPath, to writer: ByteWriter) {
        writer.appendVarint(UInt64(path.head.rawValue) << 1 | (path.tail.isEmpty ? 0 : 1))
        guard !path.tail.isEmpty else { return }
        writer.appendVarint(UInt64(path.tail.count))
        for id in path.tail { writer.appendVarint(UInt64(id.rawValue)) }
    }

    /// Writes into `writer` the row stored in `bytes` with the record's
    /// fields `ids` (ascending) given `clock`, its seq moved to
    /// `clock.seq` and its highest writer version raised to
    /// `writerVersion`: the bytes that ``decode(_:)``, ``set(_:_:)`` of each
    /// field, and ``encode(into:)`` write, made without decoding the row
    /// into lists. An update of a live object's fields, the most common
    /// write of a synced file, then allocates nothing for its clocks.
    ///
    /// - Returns: The row's seq before, and how many fields it lists now;
    ///   nil when the row is not one this handles (writing nothing
    ///   useful): a deleted object's, one listing paths inside embedded
    ///   objects or lives, one whose base is `clock`, a seq that would go
    ///   back, or bytes that are not a well-formed row. The caller then
    ///   decodes the row.
    static func restamp(
        _ bytes: UnsafeRawBufferPointer, _ ids: UnsafeBufferPointer<PropertyID>, clock: FieldClock,
        writerVersion: UInt64, into writer: ByteWriter
    ) -> (previousSeq: UInt64, count: Int)? {
        guard let start = bytes.baseAddress else { return nil }
        let end = bytes.count
        var p = 0
        @inline(__always) func varint() -> UInt64? { RecordView.varint(start, &p, end) }
        guard let causalLength = varint(), causalLength % 2 == 1, let seq = varint(), clock.seq >= seq,
            let maxWriter = varint(), p + 8 <= end
        else { return nil }
        let baseTime = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: p, as: UInt64.self))
        p += 8
        guard let baseOrigin = varint(), let origin = UInt32(exactly: baseOrigin), let baseBack = varint(),
            baseBack <= seq, let count = varint(), count <= UInt64(end)
        else { return nil }
        let base = FieldClock(
            stamp: LocalStamp(time: HybridTime(rawValue: baseTime), origin: origin), seq: seq - baseBack)
        guard clock != base else { return nil }
        // Checked first, as decode checks it, and the fields `ids` replace
        // counted: the count is written before the list.
        let listStart = p
        var replaced = 0
        var next = 0
        var lastHead: UInt64?
        for _ in 0 ..< count {
            guard let path = varint(), path & 1 == 0, UInt32(exactly: path >> 1) != nil,
                lastHead.map({ path >> 1 > $0 }) ?? true, varint() != nil,
                let origin = varint(), UInt32(exactly: origin) != nil, let back = varint(), back <= seq
            else { return nil }
            let head = path >> 1
            lastHead = head
            while next < ids.count && UInt64(ids[next].rawValue) < head { next += 1 }
            if next < ids.count && UInt64(ids[next].rawValue) == head {
                replaced += 1
                next += 1
            }
        }
        guard p == end else { return nil }
        let listed = Int(count) + ids.count - replaced
        writer.removeAll()
        writer.appendVarint(causalLength)
        writer.appendVarint(clock.seq)
        writer.appendVarint(max(maxWriter, writerVersion))
        writer.appendLittleEndian(baseTime)
        writer.appendVarint(baseOrigin)
        writer.appendVarint(clock.seq - base.seq)
        writer.appendVarint(UInt64(listed))
        let delta = Int64(bitPattern: clock.stamp.time.rawValue &- baseTime)
        let zigzag = UInt64(bitPattern: (delta << 1) ^ (delta >> 63))
        func appendClock(of id: PropertyID) {
            writer.appendVarint(UInt64(id.rawValue) << 1)
            writer.appendVarint(zigzag)
            writer.appendVarint(UInt64(clock.stamp.origin))
            writer.appendVarint(0)
        }
        p = listStart
        next = 0
        for _ in 0 ..< count {
            // Checked above.
            let path = varint()!
            let zigzag = varint()!
            let origin = varint()!
            let back = varint()!
            let head = path >> 1
            while next < ids.count && UInt64(ids[next].rawValue) < head {
                appendClock(of: ids[next])
                next += 1
            }
            if next < ids.count && UInt64(ids[next].rawValue) == head {
                appendClock(of: ids[next])
                next += 1
                continue
            }
            writer.appendVarint(path)
            writer.appendVarint(zigzag)
            writer.appendVarint(origin)
            // The field's seq is kept: its distance back from the row's grows.
            writer.appendVarint(back + (clock.seq - seq))
        }
        while next < ids.count {
            appendClock(of: ids[next])
            next += 1
        }
        return (seq, listed)
    }

    /// The row stored in `bytes`; nil when they are not a well-formed row.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> ClockRow? {
        guard let start = bytes.baseAddress else { return nil }
        let end = bytes.count
        var p = 0
        func varint() -> UInt64? { RecordView.varint(start, &p, end) }
        func origin() -> UInt32? { varint().flatMap { UInt32(exactly: $0) } }
        func id() -> PropertyID? { varint().flatMap { UInt32(exactly: $0) }.map { PropertyID($0) } }
        func path() -> ClockPath? {
            guard let first = varint(), let head = UInt32(exactly: first >> 1) else { return nil }
            guard first & 1 == 1 else { return ClockPath(PropertyID(head)) }
            guard let depth = varint(), depth > 0, depth <= UInt64(RecordCodec.maxNesting) else { return nil }
            var tail: [PropertyID] = []
            for _ in 0 ..< depth {
                guard let inner = id() else { return nil }
                tail.append(inner)
            }
            return ClockPath(PropertyID(head), tail)
        }
        guard let causalLength = varint(), causalLength > 0, let seq = varint(), let maxWriter = varint(),
            p + 8 <= end
        else { return nil }
        let baseTime = HybridTime(
            rawValue: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: p, as: UInt64.self)))
        p += 8
        guard let baseOrigin = origin(), let baseBack = varint(), baseBack <= seq, let count = varint(),
            count <= UInt64(end)
        else { return nil }
        var row = ClockRow(
            causalLength: causalLength, seq: seq, maxWriterVersion: maxWriter,
            base: LocalStamp(time: baseTime, origin: baseOrigin))
        row.base.seq = seq - baseBack
        row.exceptions.reserveCapacity(Int(count))
        for _ in 0 ..< count {
            guard let path = path(), row.exceptions.last.map({ $0.path < path }) ?? true,
                let zigzag = varint(), let origin = origin(), let back = varint(), back <= seq
            else { return nil }
            let delta = Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
            let time = HybridTime(rawValue: baseTime.rawValue &+ UInt64(bitPattern: delta))
            row.exceptions.append((path, FieldClock(stamp: LocalStamp(time: time, origin: origin), seq: seq - back)))
        }
        if p < end {
            guard let lifeCount = varint(), lifeCount > 0, lifeCount <= UInt64(end) else { return nil }
            for _ in 0 ..< lifeCount {
                guard let path = path(), row.lives.last.map({ $0.path < path }) ?? true, let life = varint() else {
                    return nil
                }
                row.lives.append((path, life))
            }
        }
        return p == end ? row : nil
    }
}
