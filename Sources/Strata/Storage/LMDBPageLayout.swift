import Foundation

/// The on-disk layout of LMDB 0.9's pages on a 64-bit system, as `mdb.c`
/// declares it (`MDB_page`, `MDB_meta`, `MDB_db`, `MDB_node`), for
/// ``LMDBFileCheck``, which reads a file without LMDB.
///
/// Every number is little-endian. A page starts with a 16-byte header:
/// `mp_pgno` (8 bytes), `mp_pad` (2), `mp_flags` (2), then `mp_lower` and
/// `mp_upper` (2 each), or for an overflow page `mp_pages` (4). A branch or
/// leaf page's node offsets (2 bytes each, from the page's start) follow
/// the header up to `mp_lower`; the nodes fill the page from `mp_upper` to
/// its end.
enum LMDBPageLayout {
    /// `PAGEHDRSZ`.
    static let headerSize = 16
    /// `NODESIZE`: `mn_lo`, `mn_hi`, `mn_flags`, `mn_ksize`.
    static let nodeHeaderSize = 8
    /// `sizeof(MDB_db)`.
    static let databaseRecordSize = 48
    /// The bytes of `MDB_meta` that the check reads, from the page's start.
    static let metaEnd = 152
    /// `P_INVALID`: the root of an empty database.
    static let invalidPage = UInt64.max
    /// `CURSOR_STACK`: the deepest tree a cursor can walk.
    static let maxDepth = 32
    /// `MDB_MAGIC`.
    static let magic: UInt32 = 0xBEEF_C0DE
    /// `MDB_DATA_VERSION` of LMDB 0.9.
    static let dataVersion: UInt32 = 1
    /// LMDB's default largest key (`mdb_env_get_maxkeysize`).
    static let maxKeySize = 511
    /// The page sizes LMDB 0.9 writes: a power of two, at most `MAX_PAGESIZE`.
    static let pageSizes = 512 ... 32_768

    /// `mp_flags` bits.
    enum PageFlag {
        static let branch: UInt16 = 0x01
        static let leaf: UInt16 = 0x02
        static let overflow: UInt16 = 0x04
        static let meta: UInt16 = 0x08
        static let dirty: UInt16 = 0x10
        static let leaf2: UInt16 = 0x20
        static let subpage: UInt16 = 0x40
    }

    /// `mn_flags` bits of a leaf node.
    enum NodeFlag {
        static let bigData: UInt16 = 0x01
        static let subData: UInt16 = 0x02
        static let dupData: UInt16 = 0x04
    }

    /// `md_flags` bits of a database.
    enum DatabaseFlag {
        static let dupSort: UInt16 = 0x04
        static let dupFixed: UInt16 = 0x10
        /// Every flag LMDB stores for a database (`PERSISTENT_FLAGS`).
        static let known: UInt16 = 0x7E
    }

    /// The pages an overflow run of `size` bytes takes (`OVPAGES`).
    static func overflowPages(_ size: Int, pageSize: Int) -> Int {
        (headerSize - 1 + size) / pageSize + 1
    }
}

/// Bytes read from the file, with loads that never read outside them:
/// a load past the end gives 0, and every caller checks its bounds first.
struct LMDBBytes {
    var bytes: [UInt8]

    var count: Int { bytes.count }

    func contains(_ offset: Int, _ length: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= bytes.count && length <= bytes.count - offset
    }

    func u16(_ offset: Int) -> UInt16 {
        guard contains(offset, 2) else { return 0 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    func u32(_ offset: Int) -> UInt32 {
        guard contains(offset, 4) else { return 0 }
        return UInt32(u16(offset)) | UInt32(u16(offset + 2)) << 16
    }

    func u64(_ offset: Int) -> UInt64 {
        guard contains(offset, 8) else { return 0 }
        return UInt64(u32(offset)) | UInt64(u32(offset + 4)) << 32
    }
}

/// An `MDB_db`: one B-tree's root, depth, flags and counts.
struct LMDBDatabaseRecord {
    var pad: UInt32
    var flags: UInt16
    var depth: Int
    var branchPages: UInt64
    var leafPages: UInt64
    var overflowPages: UInt64
    var entries: UInt64
    var root: UInt64

    init(_ bytes: LMDBBytes, at offset: Int) {
        pad = bytes.u32(offset)
        flags = bytes.u16(offset + 4)
        depth = Int(bytes.u16(offset + 6))
        branchPages = bytes.u64(offset + 8)
        leafPages = bytes.u64(offset + 16)
        overflowPages = bytes.u64(offset + 24)
        entries = bytes.u64(offset + 32)
        root = bytes.u64(offset + 40)
    }

    var isDupSort: Bool { flags & LMDBPageLayout.DatabaseFlag.dupSort != 0 }
    var isDupFixed: Bool { flags & LMDBPageLayout.DatabaseFlag.dupFixed != 0 }
}

/// An `MDB_meta`, read from a meta page.
struct LMDBMeta {
    var pageNumber: UInt64
    var pageFlags: UInt16
    var magic: UInt32
    var version: UInt32
    var mapSize: UInt64
    var free: LMDBDatabaseRecord
    var main: LMDBDatabaseRecord
    var lastPage: UInt64
    var transactionID: UInt64

    /// `mm_psize`, which LMDB keeps in the free database's `md_pad`.
    var pageSize: Int { Int(free.pad) }

    init(_ bytes: LMDBBytes) {
        pageNumber = bytes.u64(0)
        pageFlags = bytes.u16(10)
        magic = bytes.u32(16)
        version = bytes.u32(20)
        mapSize = bytes.u64(32)
        free = LMDBDatabaseRecord(bytes, at: 40)
        main = LMDBDatabaseRecord(bytes, at: 88)
        lastPage = bytes.u64(136)
        transactionID = bytes.u64(144)
    }
}

/// The data file, read with `pread`.
final class LMDBPageFile {
    let path: String
    let size: Int
    private let descriptor: Int32

    init(path: String) throws {
        descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else {
            let code = errno
            throw StrataError.unreadableFile(path: path, reason: String(cString: strerror(code)))
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let code = errno
            close(descriptor)
            throw StrataError.unreadableFile(path: path, reason: String(cString: strerror(code)))
        }
        self.path = path
        size = Int(status.st_size)
    }

    deinit { close(descriptor) }

    /// The `length` bytes at `offset`, or fewer where the file ends.
    func read(at offset: Int, length: Int) throws -> LMDBBytes {
        guard offset >= 0, length > 0, offset < size else { return LMDBBytes(bytes: []) }
        let wanted = min(length, size - offset)
        var bytes = [UInt8](repeating: 0, count: wanted)
        var done = 0
        while done < wanted {
            let got = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + done, wanted - done, off_t(offset + done))
            }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else {
                let code = errno
                throw StrataError.unreadableFile(path: path, reason: String(cString: strerror(code)))
            }
            if got == 0 { break }
            done += got
        }
        if done < wanted { bytes.removeLast(wanted - done) }
        return LMDBBytes(bytes: bytes)
    }
}
