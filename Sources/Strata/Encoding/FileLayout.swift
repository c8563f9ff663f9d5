/// The one owner of how Strata lays a database out in an LMDB file: the
/// named databases and their flags, the keys of the meta database, and the
/// layout of record, index and counter keys and values.
///
/// Every other file asks this type; none spells a database name or a meta
/// key itself. docs/FileFormat.md describes the same layout for people.
///
/// | named database | flags | keys → values |
/// |---|---|---|
/// | `__strata.meta` | — | meta key → catalog JSON, schema snapshot JSON, counters |
/// | `__strata.t<type>` | — | record key → record |
/// | `__strata.t<type>.i<property>` | `MDB_DUPSORT` | index key → record key, one pair per object |
/// | `__strata.t<type>.l<property>` | `MDB_DUPSORT` | target's record key → linking object's record key, one pair per link |
/// | `__strata.t<type>.c` | — | record key → clock row (sync-enabled files) |
/// | `__strata.sync.log` | — | seq ‖ type ‖ last record key → first record key: runs of clock rows last changed at seq |
/// | `__strata.sync.origins` | — | origin index → site id, and site id → origin index |
/// | `__strata.sync.peers` | — | peer site id → what was exchanged with it |
/// | `__strata.sync.shadow` | — | type ‖ field ‖ holder key → a link register naming an absent target |
/// | `__strata.sync.dangling` | `MDB_DUPSORT` | absent target's type ‖ key → type ‖ field ‖ holder key |
enum FileLayout {
    /// The newest file format this version of Strata reads and writes,
    /// recorded in the catalog.
    static let formatVersion: UInt32 = 2
    /// The format of a file without sync: version 1, which earlier
    /// versions of Strata read too.
    static let plainFormatVersion: UInt32 = 1
    /// The format of a file with sync enabled: version 2, since a version
    /// of Strata that does not capture changes must not write it.
    static let syncFormatVersion: UInt32 = 2

    private static let prefix = "__strata."

    // MARK: Named databases

    /// The meta database: the catalog, the schema snapshots, the catalog
    /// generation and the automatic-id counters.
    static let meta = NamedDatabase(name: prefix + "meta", duplicateKeys: false)

    /// The records of one object type, by record key.
    static func records(_ type: TypeID) -> NamedDatabase {
        NamedDatabase(name: "\(prefix)t\(type.rawValue)", duplicateKeys: false)
    }

    /// The index on one property of a type: each index key holds the record
    /// keys of every object with that value, so it allows duplicate keys.
    static func index(_ type: TypeID, _ property: PropertyID) -> NamedDatabase {
        NamedDatabase(name: "\(prefix)t\(type.rawValue).i\(property.rawValue)", duplicateKeys: true)
    }

    /// The backlinks of one link property (a link or a list of links) of a
    /// type: each target's record key holds the record keys of every object
    /// whose property links to it, so "who links here" is one seek.
    static func backlinks(_ type: TypeID, _ property: PropertyID) -> NamedDatabase {
        NamedDatabase(name: "\(prefix)t\(type.rawValue).l\(property.rawValue)", duplicateKeys: true)
    }

    /// The clock rows of one object type's objects (sync-enabled files):
    /// causal length, change sequence number and the stamp of each field.
    static func clocks(_ type: TypeID) -> NamedDatabase {
        NamedDatabase(name: "\(prefix)t\(type.rawValue).c", duplicateKeys: false)
    }

    /// The change log of a sync-enabled file: runs of neighbouring clock
    /// rows last changed at one sequence number, each row in the run of
    /// its own, so that "what changed since N" is one cursor walk and the
    /// log never outgrows the objects (``SyncChangeLog``).
    static let syncLog = NamedDatabase(name: prefix + "sync.log", duplicateKeys: false)
    /// The sites a sync-enabled file has stamps of, by a small index.
    static let syncOrigins = NamedDatabase(name: prefix + "sync.origins", duplicateKeys: false)
    /// What a sync-enabled file exchanged with each peer.
    static let syncPeers = NamedDatabase(name: prefix + "sync.peers", duplicateKeys: false)
    /// The link registers whose record holds less than they name, because
    /// a target is absent: `type ‖ field ‖ holder key` → the register's value.
    static let syncShadow = NamedDatabase(name: prefix + "sync.shadow", duplicateKeys: false)
    /// For each absent target (`type ‖ key`), the registers that name it
    /// (`type ‖ field ‖ holder key`), so that they are restored when it
    /// appears.
    static let syncDangling = NamedDatabase(name: prefix + "sync.dangling", duplicateKeys: true)
    /// The sync databases of a file as a whole (each type has its clock
    /// rows besides).
    static let syncFileDatabases = [syncLog, syncOrigins, syncPeers, syncShadow, syncDangling]

    /// The database a name denotes, with the flags the layout declares for
    /// it, or nil for a name this layout does not use (catalog lists of
    /// emptied databases are read through this, not guessed from the name).
    static func database(named name: String) -> NamedDatabase? {
        if name == meta.name { return meta }
        for database in syncFileDatabases where name == database.name {
            return database
        }
        guard name.hasPrefix(prefix + "t") else { return nil }
        let parts = name.dropFirst(prefix.count + 1).split(separator: ".", omittingEmptySubsequences: false)
        guard let type = parts.first.flatMap({ UInt32($0) }) else { return nil }
        switch parts.count {
        case 1:
            return records(TypeID(type))
        case 2 where parts[1].hasPrefix("i"):
            guard let property = UInt32(parts[1].dropFirst()) else { return nil }
            return index(TypeID(type), PropertyID(property))
        case 2 where parts[1].hasPrefix("l"):
            guard let property = UInt32(parts[1].dropFirst()) else { return nil }
            return backlinks(TypeID(type), PropertyID(property))
        case 2 where parts[1] == "c":
            return clocks(TypeID(type))
        default:
            return nil
        }
    }

    // MARK: Meta keys

    /// The keys of the meta database.
    enum MetaKey {
        /// The catalog: JSON with the format and schema versions, the mode,
        /// and every type and property with its id.
        static let catalog = Array("catalog".utf8)
        /// The catalog generation, a counter raised by every catalog change.
        static let generation = Array("generation".utf8)

        /// The schema snapshot (JSON) of one schema version.
        static func schemaSnapshot(_ version: UInt64) -> [UInt8] { Array("schema.v\(version)".utf8) }

        /// The last automatic id given to an object of a type without a
        /// primary key.
        static func sequence(_ type: TypeID) -> [UInt8] { Array("seq.t\(type.rawValue)".utf8) }

        /// Sync: the last hybrid logical clock time issued or seen.
        static let syncTime = Array("sync.hlc".utf8)
        /// Sync: the last change sequence number given to a transaction.
        static let syncSeq = Array("sync.seq".utf8)
        /// Sync: the file's subscriptions (JSON), when it has some.
        static let syncSubscriptions = Array("sync.subscriptions".utf8)
    }

    // MARK: Keys and values

    /// Appends the record key of an object with a primary key: the key's
    /// order-preserving encoding. Returns false when `value` is not of
    /// `type`.
    @inline(__always)
    static func appendRecordKey(primaryKey value: Value, type: PropertyType, to writer: ByteWriter) -> Bool {
        KeyCodec.appendPrimaryKey(value, type: type, to: writer)
    }

    /// Appends the record key of an object without a primary key: its
    /// automatic id.
    @inline(__always)
    static func appendRecordKey(automaticID id: UInt64, to writer: ByteWriter) {
        KeyCodec.appendAutomaticID(id, to: writer)
    }

    /// Appends the index key of a value; the entry's value is the object's
    /// record key. Long strings and data are cut, so a lookup re-checks the
    /// record.
    /// Returns whether the key was cut.
    @inline(__always) @discardableResult
    static func appendIndexKey(_ value: Value, to writer: ByteWriter) -> Bool {
        KeyCodec.appendIndexKey(value, to: writer)
    }

    /// The bytes of a counter (generation, automatic id): 8 bytes, big-endian.
    static func counterBytes(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// A counter read back, or nil when the bytes are not 8 long.
    static func counter(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        guard bytes.count == 8 else { return nil }
        return UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))
    }
}
