import Testing

@testable import Strata

/// ``ClockRow/restamp(_:_:clock:writerVersion:into:)``: sync capture stamps
/// an update straight in the stored row's bytes. Whatever row it takes, it
/// must write the bytes that decoding, setting each field and encoding
/// write, and it must refuse every row that decoding refuses.
@Suite struct ClockRowRestampTests {
    /// A row of random clocks: live or deleted, listing record fields, and
    /// sometimes a path inside an embedded object or a life.
    static func randomRow(_ random: inout SplitMix64) -> ClockRow {
        let seq = UInt64.random(in: 1 ... 5_000, using: &random)
        let time = UInt64.random(in: 1 << 40 ... 1 << 50, using: &random)
        var row = ClockRow(
            causalLength: UInt64.random(in: 1 ... 4, using: &random), seq: seq,
            maxWriterVersion: UInt64.random(in: 0 ... 3, using: &random),
            base: LocalStamp(
                time: HybridTime(rawValue: time), origin: UInt32.random(in: 0 ... 2, using: &random)))
        row.base.seq = UInt64.random(in: 0 ... seq, using: &random)
        for id in 1 ... 12 where Int.random(in: 0 ..< 3, using: &random) == 0 {
            row.set(PropertyID(UInt32(id)), randomClock(&random, maxSeq: seq))
        }
        if Int.random(in: 0 ..< 6, using: &random) == 0 {
            row.set(ClockPath(PropertyID(3), [PropertyID(1)]), randomClock(&random, maxSeq: seq))
        }
        if Int.random(in: 0 ..< 8, using: &random) == 0 {
            row.setLife(ClockPath(PropertyID(4)), 2, present: true)
        }
        return row
    }

    static func randomClock(_ random: inout SplitMix64, maxSeq: UInt64) -> FieldClock {
        let time = UInt64.random(in: 0 ... 1 << 51, using: &random)
        return FieldClock(
            stamp: LocalStamp(
                time: HybridTime(rawValue: time), origin: UInt32.random(in: 0 ... 300, using: &random)),
            seq: UInt64.random(in: 0 ... maxSeq, using: &random))
    }

    static func encoded(_ row: ClockRow) -> [UInt8] {
        let writer = ByteWriter()
        row.encode(into: writer)
        return writer.bytes
    }

    @Test func restampWritesWhatDecodingSettingAndEncodingWrite() {
        var random = SplitMix64(seed: 40)
        var (restamped, refused) = (0, 0)
        for _ in 0 ..< 5_000 {
            let row = Self.randomRow(&random)
            let bytes = Self.encoded(row)
            let ids = (1 ... 14).filter { _ in Int.random(in: 0 ..< 4, using: &random) == 0 }.map {
                PropertyID(UInt32($0))
            }
            // Mostly a later transaction; sometimes the row's own clock or
            // an earlier seq, which restamp leaves to the decoded row.
            var clock = FieldClock(
                stamp: LocalStamp(
                    time: HybridTime(rawValue: UInt64.random(in: 1 << 40 ... 1 << 51, using: &random)),
                    origin: 0),
                seq: row.seq + UInt64.random(in: 0 ... 3, using: &random))
            switch Int.random(in: 0 ..< 10, using: &random) {
            case 0: clock = row.base
            case 1: clock.seq = row.seq - min(row.seq, 1)
            default: break
            }
            let version = UInt64.random(in: 0 ... 4, using: &random)
            let writer = ByteWriter()
            let result = bytes.withUnsafeBytes { raw in
                ids.withUnsafeBufferPointer {
                    ClockRow.restamp(raw, $0, clock: clock, writerVersion: version, into: writer)
                }
            }
            let handles =
                row.isLive && row.lives.isEmpty && row.exceptions.allSatisfy { $0.path.tail.isEmpty }
                && clock != row.base && clock.seq >= row.seq
            guard let result else {
                #expect(!handles, "restamp refused a row it handles: \(row)")
                refused += 1
                continue
            }
            #expect(handles, "restamp took a row it leaves to decoding: \(row)")
            var expected = row
            for id in ids { expected.set(id, clock) }
            expected.seq = clock.seq
            expected.maxWriterVersion = max(expected.maxWriterVersion, version)
            #expect(writer.bytes == Self.encoded(expected), "\(row) restamped \(ids.map(\.rawValue))")
            #expect(result.previousSeq == row.seq)
            #expect(result.count == expected.exceptions.count)
            #expect(writer.withUnsafeBytes { ClockRow.decode($0) } == expected)
            restamped += 1
        }
        // Both halves ran.
        #expect(restamped > 1_000)
        #expect(refused > 1_000)
    }

    @Test func restampRefusesEveryRowDecodingRefuses() {
        var random = SplitMix64(seed: 41)
        let writer = ByteWriter()
        let ids = [PropertyID(2), PropertyID(5)]
        var damaged = 0
        for _ in 0 ..< 500 {
            var row = Self.randomRow(&random)
            row.causalLength |= 1
            let bytes = Self.encoded(row)
            let clock = FieldClock(
                stamp: LocalStamp(time: HybridTime(rawValue: 1 << 52), origin: 0), seq: row.seq + 1)
            var variants = (0 ..< bytes.count).map { Array(bytes[..<$0]) }
            for _ in 0 ..< 8 {
                var flipped = bytes
                flipped[Int.random(in: 0 ..< bytes.count, using: &random)] ^= UInt8.random(
                    in: 1 ... 255, using: &random)
                variants.append(flipped)
            }
            variants.append(bytes + [0])
            for variant in variants {
                let decoded = variant.withUnsafeBytes { ClockRow.decode($0) }
                let result = variant.withUnsafeBytes { raw in
                    ids.withUnsafeBufferPointer {
                        ClockRow.restamp(raw, $0, clock: clock, writerVersion: 1, into: writer)
                    }
                }
                guard decoded == nil else { continue }
                damaged += 1
                #expect(result == nil, "restamp took bytes decoding refuses: \(variant)")
            }
        }
        #expect(damaged > 5_000)
    }
}
