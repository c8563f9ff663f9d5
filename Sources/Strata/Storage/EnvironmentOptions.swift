/// How an environment is opened.
struct EnvironmentOptions: Sendable, Equatable {
    /// The map size a new environment starts with, unless told otherwise:
    /// 1 GiB of address space on 64-bit systems (LMDB does not grow the file
    /// to the map's size, so this costs no disk), 8 MiB elsewhere. Large
    /// enough that few apps ever pay for a transaction that fills the map,
    /// is rolled back and runs again.
    static let defaultInitialMapSize = MemoryLayout<Int>.size == 8 ? 1 << 30 : 8 << 20

    var readOnly = false
    /// The map size to start with; the map doubles whenever it fills up.
    var initialMapSize = defaultInitialMapSize
    /// `MDB_NOSYNC`: no fsync at commit.
    var noSync = false
    /// `MDB_NOMETASYNC`: fsync data but not the meta page at commit.
    var noMetaSync = false
    var maxNamedDatabases: UInt32 = 4096
    /// Whether to run ``LMDBFileCheck`` on an existing file before LMDB
    /// maps it (only when this process does not have it open yet).
    var checksFileStructure = false
}
