import Foundation

extension LMDBFileCheck {
    /// A B-tree of the file, to say where damage is.
    enum Tree {
        case free
        case main
        case named(String)
        case duplicates(String)

        var description: String {
            switch self {
            case .free: "the free-page database"
            case .main: "the main database"
            case .named(let name): "'\(name)'"
            case .duplicates(let name): "the duplicates of a key of '\(name)'"
            }
        }
    }

    /// What a walk of a tree found, to compare with its `MDB_db`.
    struct Counts {
        var branchPages: UInt64 = 0
        var leafPages: UInt64 = 0
        var overflowPages: UInt64 = 0
        var entries: UInt64 = 0
    }

    /// Walks the free-page database, then the main database and everything
    /// it holds.
    func walkAll(_ meta: LMDBMeta) throws {
        let index = meta.transactionID & 1
        try walk(meta.free, .free, recordPlace: "meta page \(index)", checkFlags: false)
        try walk(meta.main, .main, recordPlace: "meta page \(index)")
    }

    /// Checks a tree's `MDB_db`, walks its pages and compares what they hold
    /// with the counts it records.
    func walk(
        _ record: LMDBDatabaseRecord, _ tree: Tree, recordPlace: String, checkFlags: Bool = true
    ) throws {
        func fail(_ what: String) -> StrataError {
            Self.damage(file.path, "\(recordPlace) describes \(tree.description) with \(what)")
        }
        if checkFlags && record.flags & ~LMDBPageLayout.DatabaseFlag.known != 0 {
            throw fail("unknown flags 0x\(String(record.flags, radix: 16))")
        }
        guard record.depth <= LMDBPageLayout.maxDepth else { throw fail("a depth of \(record.depth)") }
        var counts = Counts()
        if record.root == LMDBPageLayout.invalidPage || record.depth == 0 {
            guard record.root == LMDBPageLayout.invalidPage, record.depth == 0 else {
                throw fail("root page \(record.root) and a depth of \(record.depth)")
            }
        } else {
            guard record.root >= 2, record.root < UInt64(pageCount) else {
                throw fail("root page \(record.root), outside pages 2 to \(pageCount - 1)")
            }
            try walkPage(record.root, level: 1, record, tree, &counts)
        }
        let recorded = (record.branchPages, record.leafPages, record.overflowPages, record.entries)
        let found = (counts.branchPages, counts.leafPages, counts.overflowPages, counts.entries)
        guard recorded == found else {
            throw fail(
                "\(record.entries) entries in \(record.branchPages) branch, \(record.leafPages) leaf and \(record.overflowPages) overflow pages, but its pages hold \(counts.entries) entries in \(counts.branchPages), \(counts.leafPages) and \(counts.overflowPages)"
            )
        }
    }

    /// Marks a page as reached, failing if it was reached before or is
    /// listed as free.
    func reach(_ page: UInt64, _ place: String) throws {
        let word = Int(page / 64)
        let bit = UInt64(1) << (page % 64)
        if reached[word] & bit != 0 { throw damage(page: page, place, "is reached twice") }
        if listedFree[word] & bit != 0 { throw damage(page: page, place, "is in use and listed as free") }
        reached[word] |= bit
        summary.reachedPages += 1
    }

    /// Whether `page` may be a tree's page: past the meta pages, within the
    /// pages the meta page counts (which the file holds).
    func isTreePage(_ page: UInt64) -> Bool { page >= 2 && page < UInt64(pageCount) }

    private func walkPage(
        _ number: UInt64, level: Int, _ record: LMDBDatabaseRecord, _ tree: Tree, _ counts: inout Counts
    ) throws {
        let isLeaf = level == record.depth
        let place = "\(isLeaf ? "a leaf" : "a branch page") of \(tree.description)"
        try reach(number, place)
        let page = try file.read(at: Int(number) * pageSize, length: pageSize)
        func fail(_ what: String) -> StrataError { damage(page: number, place, what) }
        guard page.count == pageSize else { throw fail("is cut short by the end of the file") }
        let header = page.u64(0)
        guard header == number else { throw fail("has page number \(header) in its header") }
        let flags = page.u16(10)
        let isLeaf2 = { if case .duplicates = tree { record.isDupFixed } else { false } }()
        let expected =
            isLeaf
            ? LMDBPageLayout.PageFlag.leaf | (isLeaf2 ? LMDBPageLayout.PageFlag.leaf2 : 0)
            : LMDBPageLayout.PageFlag.branch
        guard flags == expected else {
            throw fail("has page flags 0x\(String(flags, radix: 16)), not 0x\(String(expected, radix: 16))")
        }
        let keyCount = try nodeTable(page, size: pageSize, fail)
        if isLeaf {
            counts.leafPages += 1
            if isLeaf2 {
                try checkFixedKeys(page, keyCount: keyCount, size: pageSize, keySize: record.pad, fail)
                counts.entries += UInt64(keyCount)
                return
            }
        } else {
            counts.branchPages += 1
        }
        for index in 0 ..< keyCount {
            let offset = Int(page.u16(LMDBPageLayout.headerSize + 2 * index))
            let node = try nodeBounds(page, offset: offset, upper: Int(page.u16(14)), size: pageSize, fail)
            if isLeaf {
                try checkLeafNode(page, node, in: number, place, record, tree, &counts)
                continue
            }
            guard node.keySize <= LMDBPageLayout.maxKeySize, node.keyEnd <= pageSize else {
                throw fail("has a node at offset \(offset) whose key of \(node.keySize) bytes runs past the page end")
            }
            // A branch node's page number is in mn_lo, mn_hi and mn_flags.
            let child = UInt64(node.lo) | UInt64(node.hi) << 16 | UInt64(node.flags) << 32
            guard isTreePage(child) else {
                throw fail("points to page \(child), outside pages 2 to \(pageCount - 1)")
            }
            try walkPage(child, level: level + 1, record, tree, &counts)
        }
    }

    /// Checks `mp_lower` and `mp_upper` of a page or sub-page of `size`
    /// bytes and returns its number of keys.
    func nodeTable(_ page: LMDBBytes, base: Int = 0, size: Int, _ fail: (String) -> StrataError) throws -> Int {
        let lower = Int(page.u16(base + 12))
        let upper = Int(page.u16(base + 14))
        let header = LMDBPageLayout.headerSize
        guard lower >= header, (lower - header) % 2 == 0, lower <= upper, upper <= size else {
            throw fail("has free space from \(lower) to \(upper), outside its \(size) bytes or reversed")
        }
        let keyCount = (lower - header) / 2
        guard keyCount >= 1 else { throw fail("holds no keys") }
        return keyCount
    }

    /// The fixed-size keys of a `P_LEAF2` page or sub-page.
    func checkFixedKeys(
        _ page: LMDBBytes, base: Int = 0, keyCount: Int, size: Int, keySize: UInt32,
        _ fail: (String) -> StrataError
    ) throws {
        let pad = page.u16(base + 8)
        guard pad > 0, UInt32(pad) == keySize else {
            throw fail("has fixed keys of \(pad) bytes, and its database's are \(keySize) bytes")
        }
        guard LMDBPageLayout.headerSize + keyCount * Int(pad) <= size else {
            throw fail("has \(keyCount) keys of \(pad) bytes, more than its \(size) bytes hold")
        }
    }

    /// A node's header, read after checking it lies within the page.
    struct Node {
        var offset: Int
        var lo: UInt16
        var hi: UInt16
        var flags: UInt16
        var keySize: Int
        var dataSize: Int { Int(lo) | Int(hi) << 16 }
        var keyStart: Int { offset + LMDBPageLayout.nodeHeaderSize }
        var keyEnd: Int { keyStart + keySize }
    }

    func nodeBounds(
        _ page: LMDBBytes, base: Int = 0, offset: Int, upper: Int, size: Int, _ fail: (String) -> StrataError
    ) throws -> Node {
        guard offset >= upper, offset + LMDBPageLayout.nodeHeaderSize <= size else {
            throw fail(
                offset < upper
                    ? "has a node at offset \(offset), inside its free space (which ends at \(upper))"
                    : "has a node at offset \(offset) past the page end (\(size) bytes)")
        }
        let at = base + offset
        return Node(
            offset: offset, lo: page.u16(at), hi: page.u16(at + 2), flags: page.u16(at + 4),
            keySize: Int(page.u16(at + 6)))
    }
}
