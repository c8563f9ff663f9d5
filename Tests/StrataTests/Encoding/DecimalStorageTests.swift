import Foundation
import Testing

@testable import Strata

/// The decimal kind's record payload and key (`DecimalStorage`): every
/// finite decimal round-trips exactly, and keys sort as the numbers do.
@Suite struct DecimalStorageTests {
    static let maxMantissa = UInt128Words(low: .max, high: .max)

    static func make(_ negative: Bool, _ exponent: Int8, _ mantissa: UInt128Words) -> Decimal {
        DecimalStorage.Parts(isNegative: negative, exponent: exponent, mantissa: mantissa).decimal
    }

    /// Zero, signs, the extremes of mantissa and exponent, and plain numbers.
    static let edgeDecimals: [Decimal] = [
        0, Decimal(-0.0), Decimal(sign: .minus, exponent: 0, significand: 0), 1, -1, Decimal(string: "1.5")!,
        Decimal(string: "-2.5")!, Decimal(string: "0.1")!, Decimal(string: "9.99")!, 10, 100,
        Decimal(string: "-3.250")!, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude,
        -.leastNonzeroMagnitude, make(false, -128, maxMantissa), make(true, -128, maxMantissa),
        make(false, -128, UInt128Words(low: 1)), make(false, 127, UInt128Words(low: 1)),
        make(false, 0, UInt128Words(low: .max)), make(false, 0, UInt128Words(low: 0, high: 1)),
        make(true, 0, UInt128Words(low: .max, high: 0x7FFF)),
        Decimal(string: "12345678901234567890123456789012345678")!, Decimal(Int64.max), Decimal(Int64.min),
    ]

    /// A random finite decimal: a mantissa of 0 to 128 random bits, any
    /// exponent, either sign. (Parts that `Decimal` cannot hold, such as
    /// 1000 at exponent 127, which it would have to write as 1e130, are
    /// drawn again.)
    static func random(_ generator: inout SplitMix64) -> Decimal {
        while true {
            let decimal = randomParts(&generator)
            if !decimal.isNaN { return decimal }
        }
    }

    private static func randomParts(_ generator: inout SplitMix64) -> Decimal {
        let bits = Int(generator.next() % 129)
        var mantissa = UInt128Words(low: generator.next(), high: generator.next())
        if bits <= 64 {
            mantissa.high = 0
            mantissa.low = bits == 64 ? mantissa.low : mantissa.low & ((1 << UInt64(bits)) - 1)
        } else if bits < 128 {
            mantissa.high &= (1 << UInt64(bits - 64)) - 1
        }
        let exponent = Int8(truncatingIfNeeded: generator.next())
        return make(generator.next() & 1 == 1, exponent, mantissa)
    }

    /// A random decimal near the others: small mantissas and exponents, so
    /// that equal and adjacent numbers come up often.
    static func randomSmall(_ generator: inout SplitMix64) -> Decimal {
        let mantissa = UInt128Words(low: generator.next() % 2000)
        let exponent = Int8(Int(generator.next() % 7) - 3)
        return make(generator.next() & 1 == 1, exponent, mantissa)
    }

    /// The value read back from a one-field record holding `decimal`.
    static func roundTrip(_ decimal: Decimal) throws -> Value? {
        let writer = ByteWriter()
        RecordCodec.beginRecord(writer, schemaVersion: 1, fieldCount: 1)
        RecordCodec.appendField(writer, id: PropertyID(1), value: .decimal(decimal))
        return try writer.withUnsafeBytes { bytes in
            try RecordView(validating: bytes).value(forField: PropertyID(1), expectedAt: 0)
        }
    }

    static func key(_ decimal: Decimal) -> [UInt8] {
        let writer = ByteWriter()
        KeyCodec.appendIndexKey(.decimal(decimal), to: writer)
        return writer.withUnsafeBytes { Array($0) }
    }

    @Test(arguments: edgeDecimals) func edgeDecimalRoundTripsExactly(_ decimal: Decimal) throws {
        let read = try #require(try Self.roundTrip(decimal)?.decimal)
        #expect(read == decimal)
        #expect(read.exponent == decimal.exponent && read.significand == decimal.significand)
        #expect(read.description == decimal.description)
    }

    @Test func randomDecimalsRoundTripExactly() throws {
        var generator = SplitMix64(seed: 24)
        for _ in 0 ..< 5000 {
            let decimal = Self.random(&generator)
            let read = try #require(try Self.roundTrip(decimal)?.decimal)
            #expect(read == decimal && read.description == decimal.description, "\(decimal) read back as \(read)")
            #expect(DecimalStorage.Parts(read) == DecimalStorage.Parts(decimal))
        }
    }

    @Test func keyOrderIsNumericOrder() {
        var generator = SplitMix64(seed: 7)
        let values =
            Self.edgeDecimals + (0 ..< 350).map { _ in Self.random(&generator) }
            + (0 ..< 350).map { _ in Self.randomSmall(&generator) }
        let keys = values.map(Self.key)
        for i in values.indices {
            for j in values.indices where i < j || i == j {
                let a = values[i]
                let b = values[j]
                let order = KeyCodec.compare(keys[i].withUnsafeBytes { $0 }, keys[j])
                let expected = a < b ? -1 : (a == b ? 0 : 1)
                #expect(order.signum() == expected, "\(a) vs \(b): key order \(order), numeric \(expected)")
                #expect(KeyCodec.compareInIndexOrder(.decimal(a), .decimal(b)).signum() == expected)
                #expect(Value.decimal(a).isStored(identicallyTo: .decimal(b)) == (a == b))
            }
        }
    }

    @Test func sortingByKeyGivesNumericOrder() {
        let texts = ["-10", "-3", "-2.5", "-2", "-0.001", "0", "0.001", "1", "1.5", "1.52", "2", "10", "10.5", "1e20"]
        let decimals = texts.map { Decimal(string: $0)! }
        let shuffled = decimals.shuffled()
        #expect(shuffled.sorted { Self.key($0).lexicographicallyPrecedes(Self.key($1)) } == decimals)
    }

    @Test func equalNumbersWithOtherExponentsShareOneKey() {
        // 1, 1.0, 1.00; 150e-2 and 15e-1; zero at any exponent.
        let pairs: [(DecimalStorage.Parts, DecimalStorage.Parts)] = [
            (
                .init(isNegative: false, exponent: 0, mantissa: .init(low: 1)),
                .init(isNegative: false, exponent: -2, mantissa: .init(low: 100))
            ),
            (
                .init(isNegative: true, exponent: -1, mantissa: .init(low: 15)),
                .init(isNegative: true, exponent: -2, mantissa: .init(low: 150))
            ),
            (
                .init(isNegative: false, exponent: 0, mantissa: .init()),
                .init(isNegative: false, exponent: -7, mantissa: .init())
            ),
            (
                .init(isNegative: false, exponent: 1, mantissa: .init(low: 1)),
                .init(
                    isNegative: false, exponent: -36,
                    mantissa: .init(low: 0x00F4_36A0_0000_0000, high: 0x0785_EE10_D5DA_46D9))
            ),
        ]
        for (a, b) in pairs {
            let keyA = DecimalStorage.withKey(parts: a) { Array($0) }
            let keyB = DecimalStorage.withKey(parts: b) { Array($0) }
            #expect(keyA == keyB, "\(a) and \(b)")
        }
        #expect(Self.key(Decimal(string: "1.0")!) == Self.key(1))
        #expect(Self.key(Decimal(string: "0.5")! * 2) == Self.key(1))
        #expect(Value.decimal(Decimal(string: "2.50")!).isStored(identicallyTo: .decimal(Decimal(string: "2.5")!)))
    }

    @Test func nanSortsAfterEveryNumberAndMatchesNone() {
        #expect(Self.key(.nan).lexicographicallyPrecedes(Self.key(.greatestFiniteMagnitude)) == false)
        #expect(Self.key(.greatestFiniteMagnitude).lexicographicallyPrecedes(Self.key(.nan)))
        #expect(!Value.decimal(.nan).isStored(identicallyTo: .decimal(0)))
        #expect(!Value.decimal(.nan).fits(.decimal, optional: true))
        #expect(Value.decimal(1).fits(.decimal, optional: false))
    }

    @Test func keysAreShort() {
        for decimal in Self.edgeDecimals {
            #expect(Self.key(decimal).count <= 1 + DecimalStorage.maxKeySize)
        }
    }

    /// Payloads that the encoder never writes are refused as damage.
    @Test(arguments: [
        [UInt8](),  // no exponent or sign
        [0],  // no sign
        [0, 1],  // negative zero
        [0, 2, 1],  // sign 2
        [0, 0, 1, 0],  // a high zero byte
        [0, 0] + [UInt8](repeating: 1, count: 17),  // a mantissa of 17 bytes
    ])
    func malformedPayloadsAreDamage(_ payload: [UInt8]) {
        let writer = ByteWriter()
        RecordCodec.beginRecord(writer, schemaVersion: 1, fieldCount: 1)
        writer.append(contentsOf: [1, RecordCodec.Tag.decimal.rawValue, UInt8(payload.count)] + payload)
        let refused = writer.withUnsafeBytes { bytes in
            (try? RecordView(validating: bytes)) == nil
        }
        #expect(refused)
    }

    @Test func payloadBytesAreAsDocumented() {
        // -12.5: exponent -1, negative, mantissa 125.
        let writer = ByteWriter()
        RecordCodec.appendTagged(writer, .decimal(Decimal(string: "-12.5")!))
        #expect(writer.withUnsafeBytes { Array($0) } == [0x0C, 3, 0xFF, 1, 125])
        #expect(Self.key(Decimal(string: "-12.5")!) == [0x0C, 0x01, 0xFE, 0xFE, ~0x23, ~0x60, 0xFF])
        #expect(Self.key(Decimal(string: "12.5")!) == [0x0C, 0x03, 0x01, 0x01, 0x23, 0x60])
        #expect(Self.key(0) == [0x0C, 0x02])
    }
}
