import Foundation

/// How a `Decimal` is stored: its parts, its record payload, and its
/// order-preserving key. Read through ``StoredKind/decimal``.
///
/// A finite `Decimal` is `(-1)^sign × mantissa × 10^exponent`, with a
/// mantissa below 2^128 and an exponent from -128 to 127. The record keeps
/// those parts as they are; the key keeps the number, so that 1.0 and
/// 1.00 share one key. NaN has no stored form.
enum DecimalStorage {
    /// The most bytes a payload's mantissa takes.
    static let maxMantissaBytes = 16
    /// The most bytes a key takes, its tag not counted: sign, exponent,
    /// 20 bytes of digits, end mark.
    static let maxKeySize = 24

    /// A finite decimal taken apart.
    struct Parts: Equatable {
        var isNegative: Bool
        var exponent: Int8
        var mantissa: UInt128Words

        /// The parts of `decimal`; nil for NaN.
        init?(_ decimal: Decimal) {
            guard !decimal.isNaN, let exponent = Int8(exactly: decimal.exponent) else { return nil }
            var mantissa = UInt128Words()
            for digit in decimal.significand.description.utf8 {
                guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9"),
                    mantissa.multiplyBy10Adding(UInt64(digit - UInt8(ascii: "0")))
                else { return nil }
            }
            self.isNegative = decimal.isSignMinus && !mantissa.isZero
            self.exponent = exponent
            self.mantissa = mantissa
        }

        init(isNegative: Bool, exponent: Int8, mantissa: UInt128Words) {
            self.isNegative = isNegative
            self.exponent = exponent
            self.mantissa = mantissa
        }

        /// The decimal the parts make.
        var decimal: Decimal {
            var significand = Decimal(mantissa.low)
            if mantissa.high != 0 {
                significand += Decimal(mantissa.high) * (Decimal(UInt64.max) + 1)
            }
            let negative = isNegative && !mantissa.isZero
            return Decimal(sign: negative ? .minus : .plus, exponent: Int(exponent), significand: significand)
        }
    }

    /// Whether `decimal` can be stored: every decimal but NaN.
    @inline(__always)
    static func isStorable(_ decimal: Decimal) -> Bool { !decimal.isNaN }

    // MARK: Record payload

    /// Appends the payload: `length:varint exponent:i8 sign:u8 mantissa`,
    /// the mantissa little-endian without its high zero bytes (none for
    /// zero). A NaN, which the value checks refuse first, is stored as zero.
    static func appendPayload(_ decimal: Decimal, to writer: ByteWriter) {
        let parts = Parts(decimal) ?? Parts(isNegative: false, exponent: 0, mantissa: UInt128Words())
        let count = parts.mantissa.byteCount
        writer.appendVarint(UInt64(2 + count))
        writer.append(UInt8(bitPattern: parts.exponent))
        writer.append(parts.isNegative ? 1 : 0)
        for index in 0 ..< count { writer.append(parts.mantissa.byte(index)) }
    }

    /// Whether the `length` bytes at `p` are a payload that
    /// ``appendPayload(_:to:)`` writes: a sign of 0 or 1, a mantissa of at
    /// most 16 bytes without a high zero byte, zero never negative.
    @inline(__always)
    static func isValidPayload(_ base: UnsafeRawPointer, _ p: Int, length: Int) -> Bool {
        guard length >= 2, length <= 2 + maxMantissaBytes else { return false }
        let sign = base.load(fromByteOffset: p + 1, as: UInt8.self)
        if length == 2 { return sign == 0 }
        return sign <= 1 && base.load(fromByteOffset: p + length - 1, as: UInt8.self) != 0
    }

    /// The decimal of a payload of `length` bytes at `p` (after its length),
    /// or nil when it is not one ``isValidPayload(_:_:length:)`` accepts.
    static func readPayload(_ base: UnsafeRawPointer, _ p: Int, length: Int) -> Decimal? {
        guard isValidPayload(base, p, length: length) else { return nil }
        var mantissa = UInt128Words()
        for index in 0 ..< length - 2 {
            mantissa.setByte(index, base.load(fromByteOffset: p + 2 + index, as: UInt8.self))
        }
        return Parts(
            isNegative: base.load(fromByteOffset: p + 1, as: UInt8.self) == 1,
            exponent: Int8(bitPattern: base.load(fromByteOffset: p, as: UInt8.self)), mantissa: mantissa
        ).decimal
    }

    // MARK: Key

    /// The order-preserving key of a decimal, without its tag: one sign
    /// byte (`01` negative, `02` zero, `03` positive); for a nonzero
    /// number, its scientific exponent (the power of ten of its first
    /// digit) plus 256 as two big-endian bytes, then its digits without
    /// trailing zeros, two to a byte, each digit plus one in a half byte
    /// (an odd count ends in a zero half byte). A negative number has
    /// every byte after the sign inverted and ends with `ff`, so that
    /// larger magnitudes sort first. Equal numbers, whatever their
    /// exponents, have one key. NaN, which is never stored, is `04`: after
    /// every number, as a double's NaN sorts, so a query for it finds
    /// nothing.
    static func appendKey(_ decimal: Decimal, to writer: ByteWriter) {
        withKey(decimal) { writer.append(contentsOf: $0) }
    }

    /// Compares two decimals numerically, as their keys order them.
    static func compare(_ a: Decimal, _ b: Decimal) -> Int {
        withKey(a) { x in withKey(b) { y in KeyCodec.compare(x, y) } }
    }

    /// Calls `body` with the key of `decimal`, built on the stack.
    static func withKey<T>(_ decimal: Decimal, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try withKey(parts: Parts(decimal), body)
    }

    /// Calls `body` with the key of the number `parts` make (NaN's for nil).
    static func withKey<T>(parts: Parts?, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        try withUnsafeTemporaryAllocation(byteCount: maxKeySize, alignment: 1) { buffer in
            let count = key(parts, into: buffer)
            return try body(UnsafeRawBufferPointer(rebasing: buffer[0 ..< count]))
        }
    }

    private static func key(_ parts: Parts?, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let parts else {
            buffer[0] = 0x04
            return 1
        }
        guard !parts.mantissa.isZero else {
            buffer[0] = 0x02
            return 1
        }
        var mantissa = parts.mantissa
        var exponent = Int(parts.exponent)
        while mantissa.remainderDividingBy10IsZero {
            _ = mantissa.divideBy10()
            exponent += 1
        }
        // The digits, least significant first.
        var digits: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
        let count = withUnsafeMutableBytes(of: &digits) { digits in
            var count = 0
            while !mantissa.isZero {
                digits[count] = UInt8(mantissa.divideBy10())
                count += 1
            }
            return count
        }
        let negative = parts.isNegative
        let flip: UInt8 = negative ? 0xFF : 0
        let scientific = UInt16(exponent + count - 1 + 256)
        buffer[0] = negative ? 0x01 : 0x03
        buffer[1] = UInt8(scientific >> 8) ^ flip
        buffer[2] = UInt8(scientific & 0xFF) ^ flip
        var length = 3
        withUnsafeBytes(of: &digits) { digits in
            var index = count - 1
            while index >= 0 {
                let high = (digits[index] + 1) << 4
                let low = index > 0 ? digits[index - 1] + 1 : 0
                buffer[length] = (high | low) ^ flip
                length += 1
                index -= 2
            }
        }
        if negative {
            buffer[length] = 0xFF
            length += 1
        }
        return length
    }
}

/// A 128-bit unsigned integer as two words: a decimal's mantissa, with the
/// few operations its payload and key need (`UInt128` needs macOS 15).
struct UInt128Words: Equatable {
    var low: UInt64 = 0
    var high: UInt64 = 0

    var isZero: Bool { low == 0 && high == 0 }

    /// `self = self × 10 + digit`; false when that overflows 128 bits.
    mutating func multiplyBy10Adding(_ digit: UInt64) -> Bool {
        let lowProduct = low.multipliedFullWidth(by: 10)
        let highProduct = high.multipliedFullWidth(by: 10)
        guard highProduct.high == 0 else { return false }
        let (newLow, carry) = lowProduct.low.addingReportingOverflow(digit)
        let (newHigh, overflow1) = highProduct.low.addingReportingOverflow(lowProduct.high)
        let (finalHigh, overflow2) = newHigh.addingReportingOverflow(carry ? 1 : 0)
        guard !overflow1 && !overflow2 else { return false }
        low = newLow
        high = finalHigh
        return true
    }

    /// Divides by 10 and returns the remainder.
    mutating func divideBy10() -> UInt64 {
        let (highQuotient, highRemainder) = high.quotientAndRemainder(dividingBy: 10)
        let (lowQuotient, remainder) = UInt64(10).dividingFullWidth((highRemainder, low))
        high = highQuotient
        low = lowQuotient
        return remainder
    }

    /// Whether the number is a nonzero multiple of 10.
    var remainderDividingBy10IsZero: Bool {
        guard !isZero else { return false }
        var copy = self
        return copy.divideBy10() == 0
    }

    /// How many bytes the number takes without its high zero bytes.
    var byteCount: Int {
        if high != 0 { return 16 - high.leadingZeroBitCount / 8 }
        return 8 - low.leadingZeroBitCount / 8
    }

    /// Byte `index`, least significant first.
    func byte(_ index: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: index < 8 ? low >> (8 * UInt64(index)) : high >> (8 * UInt64(index - 8)))
    }

    mutating func setByte(_ index: Int, _ byte: UInt8) {
        if index < 8 {
            low |= UInt64(byte) << (8 * UInt64(index))
        } else {
            high |= UInt64(byte) << (8 * UInt64(index - 8))
        }
    }
}
