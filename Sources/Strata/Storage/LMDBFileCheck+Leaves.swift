import Foundation

extension LMDBFileCheck {
    /// Checks one node of a leaf page: its key and data fit the page, its
    /// flags fit the tree, and what its data points to (an overflow run, a
    /// named database, a subtree or a sub-page of duplicates) is sound.
    func checkLeafNode(
        _ page: LMDBBytes, _ node: Node, in number: UInt64, _ place: String, _ record: LMDBDatabaseRecord,
        _ tree: Tree, _ counts: inout Counts
    ) throws {
        func fail(_ what: String) -> StrataError {
            damage(page: number, place, "has a node at offset \(node.offset) \(what)")
        }
        typealias Flag = LMDBPageLayout.NodeFlag
        let isBig = node.flags & Flag.bigData != 0
        let inPage = isBig ? 8 : node.dataSize
        guard (1 ... LMDBPageLayout.maxKeySize).contains(node.keySize) else {
            throw fail("with a key of \(node.keySize) bytes")
        }
        guard node.keyEnd + inPage <= pageSize else {
            throw fail(
                "whose key of \(node.keySize) bytes and data of \(inPage) bytes run past the page end (\(pageSize) bytes)"
            )
        }
        let dataStart = node.keyEnd
        func nodeFlags(_ allowed: Bool) throws {
            guard allowed else {
                throw fail("with flags 0x\(String(node.flags, radix: 16)), which \(tree.description) cannot hold")
            }
        }
        switch tree {
        case .free:
            try nodeFlags(node.flags == 0 || node.flags == Flag.bigData)
            guard node.keySize == 8 else { throw fail("with a key of \(node.keySize) bytes, not a transaction id") }
            let list: LMDBBytes
            if isBig {
                let first = try checkOverflow(page.u64(dataStart), size: node.dataSize, tree, &counts, fail)
                list = try file.read(at: Int(first) * pageSize + LMDBPageLayout.headerSize, length: node.dataSize)
            } else {
                list = LMDBBytes(bytes: Array(page.bytes[dataStart ..< dataStart + node.dataSize]))
            }
            try checkFreeList(list, fail)
        case .main:
            try nodeFlags(node.flags == 0 || node.flags == Flag.bigData || node.flags == Flag.subData)
            if isBig { _ = try checkOverflow(page.u64(dataStart), size: node.dataSize, tree, &counts, fail) }
            if node.flags == Flag.subData {
                guard node.dataSize == LMDBPageLayout.databaseRecordSize else {
                    throw fail(
                        "naming a database with \(node.dataSize) bytes of data, not \(LMDBPageLayout.databaseRecordSize)"
                    )
                }
                let name = String(decoding: page.bytes[node.keyStart ..< node.keyEnd], as: UTF8.self)
                summary.namedDatabases += 1
                try walk(
                    LMDBDatabaseRecord(page, at: dataStart), .named(name),
                    recordPlace: "page \(number) (a leaf of the main database)")
            }
        case .named(let name) where record.isDupSort:
            try nodeFlags(node.flags == 0 || node.flags == Flag.dupData || node.flags == Flag.dupData | Flag.subData)
            if node.flags == Flag.dupData | Flag.subData {
                guard node.dataSize == LMDBPageLayout.databaseRecordSize else {
                    throw fail(
                        "holding duplicates with \(node.dataSize) bytes of data, not \(LMDBPageLayout.databaseRecordSize)"
                    )
                }
                let subtree = LMDBDatabaseRecord(page, at: dataStart)
                summary.duplicateSubtrees += 1
                try walk(subtree, .duplicates(name), recordPlace: "page \(number) (a leaf of '\(name)')")
                counts.entries += subtree.entries
                return
            }
            if node.flags == Flag.dupData {
                summary.duplicateSubpages += 1
                counts.entries += try checkSubpage(page, base: dataStart, size: node.dataSize, record, fail)
                return
            }
        case .named:
            try nodeFlags(node.flags == 0 || node.flags == Flag.bigData)
            if isBig { _ = try checkOverflow(page.u64(dataStart), size: node.dataSize, tree, &counts, fail) }
        case .duplicates:
            try nodeFlags(node.flags == 0)
            guard node.dataSize == 0 else { throw fail("holding a duplicate with \(node.dataSize) bytes of data") }
        }
        counts.entries += 1
    }

    /// Checks the overflow run that holds a value of `size` bytes and
    /// returns its first page.
    private func checkOverflow(
        _ first: UInt64, size: Int, _ tree: Tree, _ counts: inout Counts, _ fail: (String) -> StrataError
    ) throws -> UInt64 {
        let length = LMDBPageLayout.overflowPages(size, pageSize: pageSize)
        guard isTreePage(first), UInt64(length) <= UInt64(pageCount) - first else {
            throw fail(
                "whose value of \(size) bytes is on overflow pages \(first) to \(first &+ UInt64(length) &- 1), outside pages 2 to \(pageCount - 1)"
            )
        }
        let place = "an overflow page of \(tree.description)"
        try reach(first, place)
        let header = try file.read(at: Int(first) * pageSize, length: LMDBPageLayout.headerSize)
        let number = header.u64(0)
        let flags = header.u16(10)
        let pages = header.u32(12)
        guard number == first else { throw damage(page: first, place, "has page number \(number) in its header") }
        guard flags == LMDBPageLayout.PageFlag.overflow else {
            throw damage(page: first, place, "has page flags 0x\(String(flags, radix: 16)), not an overflow page's")
        }
        guard pages == UInt32(length) else {
            throw damage(page: first, place, "counts \(pages) pages, and its value of \(size) bytes takes \(length)")
        }
        for page in first + 1 ..< first + UInt64(length) { try reach(page, place) }
        counts.overflowPages += UInt64(length)
        summary.overflowPages += length
        return first
    }

    /// Checks a sub-page of duplicates, inline in a node's data, and
    /// returns the number of duplicates it holds.
    private func checkSubpage(
        _ page: LMDBBytes, base: Int, size: Int, _ record: LMDBDatabaseRecord, _ fail: (String) -> StrataError
    ) throws -> UInt64 {
        func subfail(_ what: String) -> StrataError { fail("holding a sub-page of duplicates that \(what)") }
        guard size >= LMDBPageLayout.headerSize else { throw subfail("is \(size) bytes long") }
        typealias PageFlag = LMDBPageLayout.PageFlag
        let flags = page.u16(base + 10) & ~PageFlag.dirty
        let expected = PageFlag.leaf | PageFlag.subpage | (record.isDupFixed ? PageFlag.leaf2 : 0)
        guard flags == expected else {
            throw subfail("has page flags 0x\(String(flags, radix: 16)), not 0x\(String(expected, radix: 16))")
        }
        let keyCount = try nodeTable(page, base: base, size: size, subfail)
        if record.isDupFixed {
            try checkFixedKeys(
                page, base: base, keyCount: keyCount, size: size, keySize: UInt32(page.u16(base + 8)), subfail)
            return UInt64(keyCount)
        }
        let upper = Int(page.u16(base + 14))
        for index in 0 ..< keyCount {
            let offset = Int(page.u16(base + LMDBPageLayout.headerSize + 2 * index))
            let node = try nodeBounds(page, base: base, offset: offset, upper: upper, size: size, subfail)
            guard node.flags == 0, node.dataSize == 0 else {
                throw subfail(
                    "has a node at offset \(offset) with flags 0x\(String(node.flags, radix: 16)) and \(node.dataSize) bytes of data"
                )
            }
            guard (1 ... LMDBPageLayout.maxKeySize).contains(node.keySize), node.keyEnd <= size else {
                throw subfail(
                    "has a node at offset \(offset) with a key of \(node.keySize) bytes, past its \(size) bytes")
            }
        }
        return UInt64(keyCount)
    }

    /// Checks a free-page list (`MDB_IDL`: a count, then page numbers) and
    /// marks its pages as free.
    private func checkFreeList(_ list: LMDBBytes, _ fail: (String) -> StrataError) throws {
        let slots = list.count / 8
        guard list.count % 8 == 0, slots >= 1 else {
            throw fail("holding a list of free pages of \(list.count) bytes")
        }
        let count = list.u64(0)
        guard count <= UInt64(slots - 1) else {
            throw fail("listing \(count) free pages in room for \(slots - 1)")
        }
        for index in 1 ... max(1, Int(count)) where count > 0 {
            let page = list.u64(8 * index)
            guard isTreePage(page) else {
                throw fail("listing page \(page) as free, outside pages 2 to \(pageCount - 1)")
            }
            let word = Int(page / 64)
            let bit = UInt64(1) << (page % 64)
            if listedFree[word] & bit != 0 { throw fail("listing page \(page) as free twice") }
            if reached[word] & bit != 0 { throw fail("listing page \(page) as free, which is in use") }
            listedFree[word] |= bit
            summary.freePages += 1
        }
    }
}
