/// Dropping tombstones every known peer has (``DatabaseSync/dropAcknowledgedTombstones()``).
extension SyncLog {
    /// Deletes the clock rows of deleted objects (tombstones) of the types
    /// `types` last changed at or before `seq`, each taken out of the change
    /// log first. Returns how many it deleted.
    func dropTombstones(through seq: UInt64, types: [TypeID]) throws -> Int {
        var dropped = 0
        for type in types {
            try openClocks(of: type)
            guard let handle = clocks(of: type) else { continue }
            var doomed: [(key: [UInt8], seq: UInt64)] = []
            try lmdb.withCursor(handle) { cursor in
                var entry = try cursor.first()
                while let (key, bytes) = entry {
                    guard let row = ClockRow.decode(bytes) else {
                        throw StrataError.corruptFile(path: path, "A clock row of type \(type) in \(path) is damaged.")
                    }
                    if !row.isLive, row.seq <= seq { doomed.append((Array(key), row.seq)) }
                    entry = try cursor.next()
                }
            }
            guard !doomed.isEmpty else { continue }
            let cursor = try lmdb.keptCursor(handle)
            for (key, rowSeq) in doomed {
                try key.withUnsafeBytes { key in
                    try changes.removing(type, key, seq: rowSeq, clocks: cursor)
                    guard try cursor.seek(exactly: key) != nil else {
                        throw StrataError.corruptFile(path: path, "A clock row being dropped in \(path) is missing.")
                    }
                    try cursor.deleteCurrent()
                }
                dropped += 1
            }
        }
        try changes.flush()
        return dropped
    }

    /// Deletes the clock rows (tombstones) of the deleted objects `keys` of
    /// `type`, each taken out of the change log first: objects removed
    /// from this file alone (a subscription removed), whose delete no peer
    /// is to hear of.
    func dropTombstones(of type: TypeID, keys: [[UInt8]]) throws {
        guard !keys.isEmpty, let handle = clocks(of: type) else { return }
        let cursor = try lmdb.keptCursor(handle)
        for key in keys {
            try key.withUnsafeBytes { key in
                guard let stored = try cursor.seek(exactly: key), let row = ClockRow.decode(stored.value), !row.isLive
                else {
                    throw StrataError.corruptFile(path: path, "A tombstone being dropped in \(path) is missing.")
                }
                try changes.removing(type, key, seq: row.seq, clocks: cursor)
                guard try cursor.seek(exactly: key) != nil else {
                    throw StrataError.corruptFile(path: path, "A clock row being dropped in \(path) is missing.")
                }
                try cursor.deleteCurrent()
            }
        }
        try changes.flush()
    }
}
