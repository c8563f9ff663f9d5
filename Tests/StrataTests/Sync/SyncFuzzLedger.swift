import Foundation

@testable import Strata

/// One register of the fuzz's dataset: a field of an object.
struct SyncFuzzRegister: Hashable, CustomStringConvertible {
    var type: String
    var key: Int64
    var field: String

    var description: String { "\(type)[\(key)].\(field)" }
}

/// What every write of the fuzz did, kept as the winner of each register:
/// the write with the highest stamp among those of the object's last life
/// (its highest causal length), since a delete undoes the writes before
/// it and a re-insert starts the object empty. After quiescence every file
/// must hold each winner (a link: its target when that lives, else null),
/// and each never-written field's empty value.
struct SyncFuzzLedger {
    struct Write {
        var causalLength: UInt64
        var stamp: Stamp
        var value: Value
    }

    struct Object: Hashable {
        var type: String
        var key: Int64
    }

    private(set) var winners: [SyncFuzzRegister: Write] = [:]
    /// The highest causal length each object reached at its writers.
    private(set) var causalLengths: [Object: UInt64] = [:]
    /// Writes recorded, and how many of them lost to a later stamp.
    private(set) var writes = 0

    /// Records that a write gave `register` `value` at `stamp`, while its
    /// object's causal length was `causalLength`. A write that did not
    /// change the stored bytes keeps the field's earlier stamp, and its
    /// value is that stamp's: recording it again changes nothing.
    mutating func record(_ register: SyncFuzzRegister, _ value: Value, stamp: Stamp, causalLength: UInt64) {
        writes += 1
        note(Object(type: register.type, key: register.key), causalLength: causalLength)
        let write = Write(causalLength: causalLength, stamp: stamp, value: value)
        guard let current = winners[register] else {
            winners[register] = write
            return
        }
        if (causalLength, stamp) >= (current.causalLength, current.stamp) { winners[register] = write }
    }

    /// Records the causal length of an object after a write or a delete.
    mutating func note(_ object: Object, causalLength: UInt64) {
        causalLengths[object] = max(causalLengths[object] ?? 0, causalLength)
    }

    /// The value every file must hold for `register` when its object's
    /// causal length is `causalLength` (odd: it lives); `empty` when no
    /// write of that life reached the field; `liveTargets`: the keys of the
    /// live objects a link may name.
    func expected(_ register: SyncFuzzRegister, causalLength: UInt64, empty: Value, liveTargets: Set<Value>)
        -> Value
    {
        guard let winner = winners[register], winner.causalLength == causalLength else { return empty }
        if case .link(let target) = winner.value, !liveTargets.contains(target) { return .null }
        return winner.value
    }
}
