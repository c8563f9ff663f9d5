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

/// What a sync-enabled file keeps about one object besides its record
/// (`__strata.t<type>.c`, by record key): whether it lives, where its last
/// change is in the change log, which app versions wrote it, and the stamp
/// of each field. A deleted object keeps its row (a tombstone) without a
/// record.
///
/// ```
/// row       = causalLength:varint seq:varint maxWriterVersion:varint
///             baseTime:u64le baseOrigin:varint
///             count:varint (fieldID:varint timeDelta:zigzag-varint origin:varint)*
/// ```
///
/// Every field has the base stamp but the ones listed, by ascending id,
/// with their time as a difference from the base's. The base is the stamp
/// most fields share, so an object written once costs about 15 bytes.
struct ClockRow: Equatable, Sendable {
    /// Odd while the object lives, even once deleted: a delete adds one,
    /// and so does inserting the key again.
    var causalLength: UInt64
    /// The sequence number of the object's last change in this file.
    var seq: UInt64
    /// The highest app schema version that wrote the object.
    var maxWriterVersion: UInt64
    var base: LocalStamp
    /// The fields whose stamp is not the base, by ascending id.
    private(set) var exceptions: [(id: PropertyID, stamp: LocalStamp)]

    init(causalLength: UInt64, seq: UInt64, maxWriterVersion: UInt64, base: LocalStamp) {
        self.causalLength = causalLength
        self.seq = seq
        self.maxWriterVersion = maxWriterVersion
        self.base = base
        self.exceptions = []
    }

    var isLive: Bool { causalLength % 2 == 1 }

    /// The stamp of field `id`.
    func stamp(of id: PropertyID) -> LocalStamp {
        guard let i = exceptionIndex(id) else { return base }
        return exceptions[i].stamp
    }

    /// The stamps of the object's last change: the highest time among the
    /// base and the listed fields (its origin may be any of theirs).
    var lastTime: HybridTime {
        exceptions.reduce(base.time) { max($0, $1.stamp.time) }
    }

    /// Gives field `id` stamp `stamp`.
    mutating func set(_ id: PropertyID, _ stamp: LocalStamp) {
        if let i = exceptionIndex(id) {
            if stamp == base { exceptions.remove(at: i) } else { exceptions[i].stamp = stamp }
        } else if stamp != base {
            let at = exceptions.firstIndex { $0.id > id } ?? exceptions.count
            exceptions.insert((id, stamp), at: at)
        }
    }

    /// Gives every field stamp `stamp` (an insert, a delete).
    mutating func stampAll(_ stamp: LocalStamp) {
        base = stamp
        exceptions = []
    }

    /// Makes the base the stamp most of `fields` (the ids the record
    /// holds) have, so that the row lists as few as it can.
    mutating func rebase(over fields: [PropertyID]) {
        guard !exceptions.isEmpty else { return }
        var counts: [LocalStamp: Int] = [:]
        // Never the unwritten fields' no-stamp: fields a record lacks
        // take the base, and they were written with the object.
        for id in fields where !stamp(of: id).isNone { counts[stamp(of: id), default: 0] += 1 }
        guard let (best, count) = counts.max(by: { $0.value < $1.value }), best != base,
            count > counts[base, default: 0]
        else { return }
        let stamps = fields.map { ($0, stamp(of: $0)) }
        let others = exceptions.filter { !fields.contains($0.id) }
        base = best
        exceptions = others.filter { $0.stamp != best }
        for (id, stamp) in stamps { set(id, stamp) }
    }

    private func exceptionIndex(_ id: PropertyID) -> Int? {
        exceptions.firstIndex { $0.id == id }
    }

    static func == (a: ClockRow, b: ClockRow) -> Bool {
        a.causalLength == b.causalLength && a.seq == b.seq && a.maxWriterVersion == b.maxWriterVersion
            && a.base == b.base && a.exceptions.elementsEqual(b.exceptions) { $0.id == $1.id && $0.stamp == $1.stamp }
    }

    // MARK: Bytes

    func encode(into writer: ByteWriter) {
        writer.removeAll()
        writer.appendVarint(causalLength)
        writer.appendVarint(seq)
        writer.appendVarint(maxWriterVersion)
        writer.appendLittleEndian(base.time.rawValue)
        writer.appendVarint(UInt64(base.origin))
        writer.appendVarint(UInt64(exceptions.count))
        for (id, stamp) in exceptions {
            writer.appendVarint(UInt64(id.rawValue))
            let delta = Int64(bitPattern: stamp.time.rawValue &- base.time.rawValue)
            writer.appendVarint(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)))
            writer.appendVarint(UInt64(stamp.origin))
        }
    }

    /// The row stored in `bytes`; nil when they are not a well-formed row.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> ClockRow? {
        guard let base = bytes.baseAddress else { return nil }
        let end = bytes.count
        var p = 0
        func varint() -> UInt64? { RecordView.varint(base, &p, end) }
        func origin() -> UInt32? { varint().flatMap { UInt32(exactly: $0) } }
        guard let causalLength = varint(), causalLength > 0, let seq = varint(), let maxWriter = varint(),
            p + 8 <= end
        else { return nil }
        let baseTime = HybridTime(
            rawValue: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: p, as: UInt64.self)))
        p += 8
        guard let baseOrigin = origin(), let count = varint(), count <= UInt64(end) else { return nil }
        var row = ClockRow(
            causalLength: causalLength, seq: seq, maxWriterVersion: maxWriter,
            base: LocalStamp(time: baseTime, origin: baseOrigin))
        var previous: UInt32?
        for _ in 0 ..< count {
            guard let rawID = varint(), let id = UInt32(exactly: rawID), previous.map({ $0 < id }) ?? true,
                let zigzag = varint(), let origin = origin()
            else { return nil }
            let delta = Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1)
            let time = HybridTime(rawValue: baseTime.rawValue &+ UInt64(bitPattern: delta))
            row.exceptions.append((PropertyID(id), LocalStamp(time: time, origin: origin)))
            previous = id
        }
        return p == end ? row : nil
    }
}
