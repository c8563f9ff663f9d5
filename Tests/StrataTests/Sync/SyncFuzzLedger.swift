import Foundation

@_spi(Hub) @testable import Strata

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
        /// For a field inside an embedded object: the object's life.
        var life: UInt64
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
    /// Per embedded object's register: the highest (causal length of its
    /// owner, life) its writers gave it.
    private(set) var lives: [SyncFuzzRegister: (causalLength: UInt64, life: UInt64)] = [:]

    /// Records that a write gave `register` `value` at `stamp`, while its
    /// object's causal length was `causalLength`. A write that did not
    /// change the stored bytes keeps the field's earlier stamp, and its
    /// value is that stamp's: recording it again changes nothing.
    mutating func record(
        _ register: SyncFuzzRegister, _ value: Value, stamp: Stamp, causalLength: UInt64, life: UInt64 = 0
    ) {
        writes += 1
        note(Object(type: register.type, key: register.key), causalLength: causalLength)
        let write = Write(causalLength: causalLength, life: life, stamp: stamp, value: value)
        guard let current = winners[register] else {
            winners[register] = write
            return
        }
        if (causalLength, life, stamp) >= (current.causalLength, current.life, current.stamp) {
            winners[register] = write
        }
    }

    /// Records the life an embedded object's register `register` has after
    /// a write of its owner.
    mutating func note(_ register: SyncFuzzRegister, life: UInt64, causalLength: UInt64) {
        let current = lives[register] ?? (0, 0)
        if (causalLength, life) > (current.causalLength, current.life) { lives[register] = (causalLength, life) }
    }

    /// The life every file must give the embedded object `register` when
    /// its owner's causal length is `causalLength`: 0 (never written) when
    /// no writer of that life of the owner gave it one.
    func life(_ register: SyncFuzzRegister, causalLength: UInt64) -> UInt64 {
        guard let known = lives[register], known.causalLength == causalLength else { return 0 }
        return known.life
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
        // A field inside an embedded object: written in the object's last
        // life, else the life started empty.
        if let dot = register.field.firstIndex(of: ".") {
            let holder = SyncFuzzRegister(
                type: register.type, key: register.key, field: String(register.field[..<dot]))
            guard winner.life == life(holder, causalLength: causalLength) else { return empty }
        }
        if case .link(let target) = winner.value, !liveTargets.contains(target) { return .null }
        return winner.value
    }
}
