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

/// What a sync-enabled file keeps about one object besides its record
/// (`__strata.t<type>.c`, by record key): whether it lives, where its last
/// change is in the change log, which app versions wrote it, and the clock
/// of each field. A deleted object keeps its row (a tombstone) without a
/// record.
///
/// ```
/// row       = causalLength:varint seq:varint maxWriterVersion:varint
///             baseTime:u64le baseOrigin:varint baseSeqBack:varint
///             count:varint (fieldID:varint timeDelta:zigzag-varint origin:varint seqBack:varint)*
/// ```
///
/// Every field has the base clock but the ones listed, by ascending id,
/// with their time as a difference from the base's and their sequence
/// number as a distance back from the row's. The base is the clock most
/// fields share, so an object written once costs about 16 bytes.
struct ClockRow: Equatable, Sendable {
    /// Odd while the object lives, even once deleted: a delete adds one,
    /// and so does inserting the key again.
    var causalLength: UInt64
    /// The sequence number of the object's last change in this file.
    var seq: UInt64
    /// The highest app schema version that wrote the object.
    var maxWriterVersion: UInt64
    var base: FieldClock
    /// The fields whose clock is not the base, by ascending id.
    private(set) var exceptions: [(id: PropertyID, clock: FieldClock)]

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

    /// The clock of field `id`.
    func clock(of id: PropertyID) -> FieldClock {
        guard let i = exceptionIndex(id) else { return base }
        return exceptions[i].clock
    }

    /// The stamp of field `id`.
    func stamp(of id: PropertyID) -> LocalStamp { clock(of: id).stamp }

    /// The latest stamp among the fields (its origin is that field's).
    var lastStamp: LocalStamp {
        exceptions.reduce(base.stamp) { $1.clock.stamp.time > $0.time ? $1.clock.stamp : $0 }
    }

    /// Gives field `id` the clock `clock`.
    mutating func set(_ id: PropertyID, _ clock: FieldClock) {
        if let i = exceptionIndex(id) {
            if clock == base { exceptions.remove(at: i) } else { exceptions[i].clock = clock }
        } else if clock != base {
            let at = exceptions.firstIndex { $0.id > id } ?? exceptions.count
            exceptions.insert((id, clock), at: at)
        }
    }

    /// Gives every field the clock `clock` (an insert, a delete, a new
    /// life).
    mutating func stampAll(_ clock: FieldClock) {
        base = clock
        exceptions = []
    }

    /// Makes the base the clock most of `fields` (the ids the record
    /// holds) have, so that the row lists as few as it can.
    mutating func rebase(over fields: [PropertyID]) {
        guard !exceptions.isEmpty else { return }
        var counts: [FieldClock: Int] = [:]
        for id in fields { counts[clock(of: id), default: 0] += 1 }
        guard let (best, count) = counts.max(by: { $0.value < $1.value }), best != base,
            count > counts[base, default: 0]
        else { return }
        let clocks = fields.map { ($0, clock(of: $0)) }
        let others = exceptions.filter { !fields.contains($0.id) }
        base = best
        exceptions = others.filter { $0.clock != best }
        for (id, clock) in clocks { set(id, clock) }
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

    private func exceptionIndex(_ id: PropertyID) -> Int? {
        exceptions.firstIndex { $0.id == id }
    }

    static func == (a: ClockRow, b: ClockRow) -> Bool {
        a.causalLength == b.causalLength && a.seq == b.seq && a.maxWriterVersion == b.maxWriterVersion
            && a.base == b.base && a.exceptions.elementsEqual(b.exceptions) { $0.id == $1.id && $0.clock == $1.clock }
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
        for (id, clock) in exceptions {
            writer.appendVarint(UInt64(id.rawValue))
            let delta = Int64(bitPattern: clock.stamp.time.rawValue &- base.stamp.time.rawValue)
            writer.appendVarint(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)))
            writer.appendVarint(UInt64(clock.stamp.origin))
            writer.appendVarint(seq &- clock.seq)
        }
    }

    /// The row stored in `bytes`; nil when they are not a well-formed row.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> ClockRow? {
        guard let start = bytes.baseAddress else { return nil }
        let end = bytes.count
        var p = 0
        func varint() -> UInt64? { RecordView.varint(start, &p, end) }
        func origin() -> UInt32? { varint().flatMap { UInt32(exactly: $0) } }
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
        var previous: UInt32?
        for _ in 0 ..< count {
            guard let rawID = varint(), let id = UInt32(exactly: rawID), previous.map({ $0 < id }) ?? true,
                let zigzag = varint(), let origin = origin(), let back = varint(), back <= seq
            else { return nil }
            let delta = Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
            let time = HybridTime(rawValue: baseTime.rawValue &+ UInt64(bitPattern: delta))
            row.exceptions.append(
                (PropertyID(id), FieldClock(stamp: LocalStamp(time: time, origin: origin), seq: seq - back)))
            previous = id
        }
        return p == end ? row : nil
    }
}
