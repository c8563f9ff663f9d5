import Foundation

/// Checks the structure of an LMDB data file by reading it with plain file
/// reads, before LMDB maps it: LMDB's pages carry no checksums, and LMDB
/// trusts every page number, offset and size it finds, so a damaged page
/// can make it read outside a page or the file and crash the process.
///
/// The check reads both meta pages, picks the one LMDB would use (the
/// higher transaction id), then walks the free-page database, the main
/// database, every named database the main database holds, and every
/// sorted-duplicates subtree or sub-page of those. It checks every page
/// header, node, key and data size, overflow run and child page number
/// against the page and the file, the trees' depths and counts, and that no
/// page is reached twice or both used and listed as free. It reports the
/// first damage it finds, as a ``StrataError`` with code `.corruptFile`.
///
/// It cannot see damage that leaves the structure valid: changed bytes
/// inside a key or a value, or keys out of order. Strata's record
/// validation and `verify()` catch most of those.
///
/// Every loop is bounded by the file's size, and every offset is checked
/// before it is read, so no input can make the check crash or run away.
final class LMDBFileCheck {
    /// What a sound file holds, as the check saw it.
    struct Summary: Equatable {
        /// The page size, in bytes.
        var pageSize: Int
        /// The number of pages the file's newest meta page says are in use.
        var pageCount: Int
        /// The pages the trees reach (branch, leaf and overflow pages).
        var reachedPages: Int
        /// The pages the free-page database lists.
        var freePages: Int
        /// The named databases the main database holds.
        var namedDatabases: Int
        /// The keys whose duplicates fill a subtree of their own.
        var duplicateSubtrees = 0
        /// The keys whose duplicates sit in a sub-page inside their node.
        var duplicateSubpages = 0
        /// The overflow pages of long values.
        var overflowPages = 0
    }

    let file: LMDBPageFile
    let pageSize: Int
    /// The number of pages the walk may reach: `mm_last_pg + 1`.
    let pageCount: Int
    var reached: [UInt64]
    var listedFree: [UInt64]
    var summary: Summary

    /// Checks the data file at `path`.
    ///
    /// - Returns: What the file holds, when its structure is sound.
    /// - Throws: ``StrataError`` `.corruptFile` naming the first damage found,
    ///   `.notAStrataFile` for an empty file or one without an LMDB meta
    ///   page, `.fileSystem` when it cannot be read.
    @discardableResult
    static func run(path: String) throws -> Summary {
        let file = try LMDBPageFile(path: path)
        guard file.size > 0 else {
            throw StrataError.notAStrataFile(
                path: path, because: "it is an empty file", remedy: "Delete it or choose another path.")
        }
        let meta = try newestMeta(file)
        let check = LMDBFileCheck(file: file, meta: meta)
        try check.walkAll(meta)
        return check.summary
    }

    private init(file: LMDBPageFile, meta: LMDBMeta) {
        self.file = file
        pageSize = meta.pageSize
        pageCount = Int(meta.lastPage) + 1
        let words = (pageCount + 63) / 64
        reached = [UInt64](repeating: 0, count: words)
        listedFree = [UInt64](repeating: 0, count: words)
        summary = Summary(
            pageSize: pageSize, pageCount: pageCount, reachedPages: 0, freePages: 0, namedDatabases: 0)
    }

    /// The error for damage found at `page`, described as `place`.
    func damage(page: UInt64, _ place: String, _ what: String) -> StrataError {
        Self.damage(file.path, "page \(page) (\(place)) \(what)")
    }

    static func damage(_ path: String, _ what: String) -> StrataError {
        .damagedFile(path: path, problem: what)
    }

    /// Reads both meta pages and returns the one LMDB would use, after
    /// checking that both are meta pages of this LMDB version and that the
    /// newest one describes a file that fits.
    private static func newestMeta(_ file: LMDBPageFile) throws -> LMDBMeta {
        let path = file.path
        let first = LMDBMeta(try file.read(at: 0, length: LMDBPageLayout.metaEnd))
        guard isMetaPage(first) else {
            // LMDB finds the second meta page through the first one's page
            // size; look for it at every page size it could have.
            let second = LMDBPageLayout.pageSizes.lazy.filter { $0 & ($0 - 1) == 0 }.first { size in
                (try? file.read(at: size, length: LMDBPageLayout.metaEnd)).map { isMetaPage(LMDBMeta($0)) } ?? false
            }
            guard second != nil else {
                throw StrataError.notAStrataFile(path: path, because: "it has no LMDB meta page")
            }
            throw damage(path, "meta page 0 \(metaProblem(first, page: 0))")
        }
        if let problem = metaHeaderProblem(first, page: 0, fileSize: file.size) {
            throw damage(path, "meta page 0 \(problem)")
        }
        let pageSize = first.pageSize
        let second = LMDBMeta(try file.read(at: pageSize, length: LMDBPageLayout.metaEnd))
        if !isMetaPage(second) {
            throw damage(path, "meta page 1 \(metaProblem(second, page: 1))")
        }
        if let problem = metaHeaderProblem(second, page: 1, fileSize: file.size) {
            throw damage(path, "meta page 1 \(problem)")
        }
        guard second.pageSize == pageSize else {
            throw damage(
                path, "meta page 1 gives a page size of \(second.pageSize) bytes, meta page 0 \(pageSize) bytes")
        }
        // As mdb_env_pick_meta: the second page wins only with a higher id.
        let index = second.transactionID > first.transactionID ? 1 : 0
        let meta = index == 1 ? second : first
        // Readers take the meta page of their transaction id's parity.
        guard meta.transactionID & 1 == UInt64(index) else {
            throw damage(
                path,
                "meta page \(index) is the newest, with transaction id \(meta.transactionID), which belongs on meta page \(1 - index)"
            )
        }
        let pages = UInt64(file.size / pageSize)
        guard meta.lastPage >= 1, meta.lastPage < pages else {
            let cut = meta.lastPage >= 1 && meta.lastPage < UInt64(Int.max / pageSize)
            throw damage(
                path,
                cut
                    ? "it is truncated: meta page \(index) uses \(meta.lastPage + 1) pages of \(pageSize) bytes, and the file holds \(pages)"
                    : "meta page \(index) gives \(meta.lastPage) as the last page number, which the file (\(pages) pages) cannot hold"
            )
        }
        // No 64-bit system maps more than 2^47 bytes for a process.
        guard meta.mapSize <= 1 << 47 else {
            throw damage(path, "meta page \(index) gives a map size of \(meta.mapSize) bytes")
        }
        return meta
    }

    private static func isMetaPage(_ meta: LMDBMeta) -> Bool {
        meta.magic == LMDBPageLayout.magic && meta.pageFlags & LMDBPageLayout.PageFlag.meta != 0
    }

    private static func metaProblem(_ meta: LMDBMeta, page: Int) -> String {
        if meta.magic != LMDBPageLayout.magic {
            return "has magic number 0x\(String(meta.magic, radix: 16)), not LMDB's 0xbeefc0de"
        }
        return "has page flags 0x\(String(meta.pageFlags, radix: 16)), not a meta page's"
    }

    private static func metaHeaderProblem(_ meta: LMDBMeta, page: Int, fileSize: Int) -> String? {
        if meta.pageFlags != LMDBPageLayout.PageFlag.meta {
            return "has page flags 0x\(String(meta.pageFlags, radix: 16)), not a meta page's"
        }
        if meta.pageNumber != UInt64(page) { return "has page number \(meta.pageNumber) in its header" }
        if meta.version != LMDBPageLayout.dataVersion {
            return "has data version \(meta.version), not LMDB 0.9's \(LMDBPageLayout.dataVersion)"
        }
        let size = meta.pageSize
        guard LMDBPageLayout.pageSizes.contains(size), size & (size - 1) == 0 else {
            return "gives a page size of \(size) bytes"
        }
        if fileSize < 2 * size {
            return
                "gives a page size of \(size) bytes, and the file is truncated to \(fileSize) bytes, less than two pages"
        }
        return nil
    }
}
