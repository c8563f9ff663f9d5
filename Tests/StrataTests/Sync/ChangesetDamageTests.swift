import Foundation
import Testing

@_spi(Hub) @testable import Strata

/// Damage at every place: a changeset cut anywhere, a byte changed
/// anywhere, and bytes changed with the checksum made right again (the
/// reader's fuzz): refused with `invalidChangeset`, or read; never a trap,
/// never another error.
@Suite struct ChangesetDamageTests {
    /// A few valid changesets: small, with every value kind, and empty.
    static func samples() -> [Data] {
        var random = RandomChangesets(seed: 7)
        var samples = [
            ChangesetCodec.encode(ChangesetSample.oneField(descriptor: "string", value: "hello")),
            ChangesetCodec.encode(random.content(entries: 12, origins: 3)),
            ChangesetCodec.encode(random.content(entries: 40, origins: 200)),
        ]
        var empty = ChangesetSample.oneField(descriptor: "int", value: 1)
        empty.entries = []
        samples.append(ChangesetCodec.encode(empty))
        return samples
    }

    /// Decodes `data`: true when it is read, false when it is refused with
    /// `invalidChangeset`; records an issue for any other error.
    static func outcome(_ data: Data, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        do {
            let content = try ChangesetCodec.decode(data)
            // What is read is what the format can write: it reads back the
            // same, byte for byte (a NaN date or double is not == itself).
            let bytes = ChangesetCodec.encode(content)
            #expect(
                try ChangesetCodec.encode(ChangesetCodec.decode(bytes)) == bytes, sourceLocation: sourceLocation)
            return true
        } catch let error as StrataError {
            #expect(error.code == .invalidChangeset, "\(error.message)", sourceLocation: sourceLocation)
            #expect(error.offset.map { $0 >= 0 && $0 <= data.count } == true, sourceLocation: sourceLocation)
            return false
        } catch {
            Issue.record("not a StrataError: \(error)", sourceLocation: sourceLocation)
            return false
        }
    }

    @Test func truncationAtEveryOffsetIsRefused() throws {
        for sample in Self.samples() {
            #expect(Self.outcome(sample))
            for length in 0 ..< sample.count {
                let cut = sample.prefix(length)
                #expect(!Self.outcome(Data(cut)), "a changeset cut to \(length) of \(sample.count) bytes was read")
                #expect(throws: StrataError.self) { _ = try Changeset(data: Data(cut)).summary() }
            }
        }
    }

    @Test func truncationResealedAtEveryOffsetIsRefused() throws {
        for sample in Self.samples() {
            let body = Array(sample.dropLast(4))
            for length in ChangesetCodec.minimumLength - 4 ..< body.count {
                let cut = ChangesetSample.resealed(Array(body.prefix(length)) + [0, 0, 0, 0])
                #expect(!Self.outcome(cut), "a changeset cut to \(length) bytes and resealed was read")
            }
        }
    }

    @Test func everySingleByteChangeIsRefusedByTheChecksum() throws {
        var generator = SplitMix64(seed: 11)
        for sample in Self.samples() {
            for offset in 0 ..< sample.count {
                var damaged = sample
                damaged[offset] ^= UInt8.random(in: 1 ... 255, using: &generator)
                #expect(!Self.outcome(damaged), "a change of byte \(offset) of \(sample.count) was read")
            }
        }
    }

    /// The structural checks, with the checksum out of the way: random
    /// changes, insertions and deletions, resealed.
    @Test(arguments: 0 ..< 8 as Range<UInt64>)
    func resealedDamageNeverTraps(seed: UInt64) throws {
        var generator = SplitMix64(seed: 1_000 + seed)
        let samples = Self.samples()
        var read = 0
        var refused = 0
        for round in 0 ..< 3_000 {
            var body = Array(samples[round % samples.count].dropLast(4))
            for _ in 0 ..< Int.random(in: 1 ... 4, using: &generator) {
                let at = Int.random(in: 6 ..< body.count, using: &generator)
                switch Int.random(in: 0 ... 5, using: &generator) {
                case 0: body.insert(UInt8.random(in: 0 ... 255, using: &generator), at: at)
                case 1: body.remove(at: at)
                case 2: body[at] = [0x00, 0x7F, 0x80, 0xFF, 0x0A, 0x0B][Int.random(in: 0 ... 5, using: &generator)]
                default: body[at] ^= UInt8(1) << UInt8.random(in: 0 ... 7, using: &generator)
                }
            }
            if Self.outcome(ChangesetSample.resealed(body + [0, 0, 0, 0])) { read += 1 } else { refused += 1 }
        }
        #expect(refused > 1_000)
        print("resealed damage, seed \(seed): \(refused) refused, \(read) read (bytes that still form a changeset)")
    }
}
