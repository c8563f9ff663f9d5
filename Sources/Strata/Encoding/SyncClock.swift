import Foundation

/// The identity of one copy of a sync-enabled file: 16 random bytes made
/// when sync is enabled (or the identity reset), carried by every change
/// the copy makes. Two files with one site id would give two different
/// writes the same stamp, so a copied file must be given a new one.
public struct SiteID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The first eight bytes, big-endian: with ``low``, the order of two
    /// site ids is the order of their bytes.
    public let high: UInt64
    /// The last eight bytes, big-endian.
    public let low: UInt64

    /// The site id whose 16 bytes are `high`'s then `low`'s, big-endian.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A new random site id.
    public static func random() -> SiteID {
        var generator = SystemRandomNumberGenerator()
        return SiteID(high: generator.next(), low: generator.next())
    }

    /// The site id of 16 bytes; nil when `bytes` is not 16 bytes long.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (i, byte) in bytes.enumerated() {
            if i < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// The 16 bytes, as stored and sent.
    public var bytes: [UInt8] {
        (0 ..< 8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
            + (0 ..< 8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
    }

    /// The site id of a UUID's 16 bytes, in order: a dataset's id, or a
    /// hub's epoch (``HubSession/epochSite``).
    public init(uuid: UUID) {
        self = withUnsafeBytes(of: uuid.uuid) { SiteID(bytes: $0)! }
    }

    /// The 16 bytes as a UUID (``init(uuid:)``).
    public var uuid: UUID {
        let b = bytes
        return UUID(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }

    /// 32 hexadecimal digits.
    public var description: String {
        String(format: "%016llx%016llx", high, low)
    }

    /// The site id of 32 hexadecimal digits; nil for anything else.
    public init?(hex: String) {
        guard hex.count == 32, let high = UInt64(hex.prefix(16), radix: 16), let low = UInt64(hex.suffix(16), radix: 16)
        else { return nil }
        self.init(high: high, low: low)
    }

    public static func < (a: SiteID, b: SiteID) -> Bool { (a.high, a.low) < (b.high, b.low) }
}

/// A hybrid logical clock value (Kulkarni et al., "Logical Physical
/// Clocks", 2014): the high 48 bits are milliseconds since 1970, the low
/// 16 a counter that orders events within one millisecond and events whose
/// wall clock went backwards. Its values only grow, on one site and across
/// the sites it hears from, while staying close to the wall clock.
public struct HybridTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The 64 bits: milliseconds in the high 48, the counter in the low 16.
    public let rawValue: UInt64

    /// The time of 64 bits as ``rawValue`` lays them out.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// The time `counter` events into millisecond `milliseconds` (since
    /// 1970).
    public init(milliseconds: UInt64, counter: UInt16) {
        rawValue = milliseconds << 16 | UInt64(counter)
    }

    /// Milliseconds since 1970.
    public var milliseconds: UInt64 { rawValue >> 16 }
    /// Which event of its millisecond the time is.
    public var counter: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    /// Before every time: no write yet.
    public static let zero = HybridTime(rawValue: 0)

    /// Milliseconds since 1970 on this machine's clock.
    static func wallClock() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1000))
    }

    /// The time for a new local event after `self` (the last one issued or
    /// seen): the wall clock when it is ahead, else one more than `self`.
    func tick(wall: UInt64 = HybridTime.wallClock()) -> HybridTime {
        let now = HybridTime(milliseconds: wall, counter: 0)
        return now > self ? now : HybridTime(rawValue: rawValue &+ 1)
    }

    /// The last time known after receiving `remote`: never lower than
    /// either.
    func receiving(_ remote: HybridTime) -> HybridTime { max(self, remote) }

    public var description: String {
        "\(milliseconds).\(counter)"
    }

    public static func < (a: HybridTime, b: HybridTime) -> Bool { a.rawValue < b.rawValue }
}

/// When and where a field or an object was last written: the order of two
/// writes of one register. The higher stamp wins; equal stamps are the
/// same write.
public struct Stamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// When the write happened.
    public var time: HybridTime
    /// The site that wrote it.
    public var origin: SiteID

    /// The stamp of a write at `time` by `origin`.
    public init(time: HybridTime, origin: SiteID) {
        self.time = time
        self.origin = origin
    }

    public static func < (a: Stamp, b: Stamp) -> Bool {
        (a.time, a.origin) < (b.time, b.origin)
    }

    public var description: String { "\(time)@\(origin)" }
}
