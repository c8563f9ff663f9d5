import Foundation
import Testing

@testable import Strata

/// What a cursor returns lives in the database, not in the buffers it was
/// given: a walk keeps an entry after the key it sought with is gone.
@Suite(.temporaryFolder) struct LMDBCursorTests {
    let folder = TemporaryFolder.current

    /// An entry sought from buffers that are gone when the seek returns,
    /// with whether it pointed into them while they lived.
    struct Sought {
        let key: [UInt8]
        let value: [UInt8]
        let pointedIntoTheCallersBuffers: Bool
    }

    /// Runs `seek` with copies of `key` and `value` on the heap, frees
    /// them when it returns, then reads the entry it returned. LMDB leaves
    /// the key of `MDB_GET_BOTH` and `MDB_GET_BOTH_RANGE` (and the value of
    /// `MDB_GET_BOTH`) pointing at the caller's buffers: an entry that kept
    /// them is read here after they are freed, which AddressSanitizer
    /// reports as a heap-use-after-free; without the sanitizer, the check
    /// of the pointers made while they lived tells.
    func seek(
        _ key: [UInt8], _ value: [UInt8],
        _ seek: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> LMDBCursor.Entry?
    ) throws -> Sought? {
        func copy(_ bytes: [UInt8]) -> UnsafeMutableRawBufferPointer {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
            buffer.copyBytes(from: bytes)
            return UnsafeMutableRawBufferPointer(rebasing: buffer[..<bytes.count])
        }
        let (keyCopy, valueCopy) = (UnsafeRawBufferPointer(copy(key)), UnsafeRawBufferPointer(copy(value)))
        func within(_ inner: UnsafeRawBufferPointer?, _ outer: UnsafeRawBufferPointer) -> Bool {
            guard let start = inner?.baseAddress, let base = outer.baseAddress else { return false }
            return start >= base && start <= base + outer.count
        }
        let entry: LMDBCursor.Entry?
        do {
            defer {
                keyCopy.baseAddress!.deallocate()
                valueCopy.baseAddress!.deallocate()
            }
            entry = try seek(keyCopy, valueCopy)
        }
        let pointed =
            within(entry?.key, keyCopy) || within(entry?.key, valueCopy) || within(entry?.value, keyCopy)
            || within(entry?.value, valueCopy)
        guard let entry else { return nil }
        return Sought(key: Array(entry.key), value: Array(entry.value), pointedIntoTheCallersBuffers: pointed)
    }

    @Test(arguments: Fixtures.modes)
    func everySeekReturnsTheDatabasesKeyAndValue(mode: Database.Mode) throws {
        let db = try Database(configuration: Fixtures.configuration(folder.path(), mode: mode))
        try db.write { tx in
            for id: Int64 in 1 ... 4 { try tx.insert("Person", Fixtures.person(id, age: 30)) }
        }
        try db.read { tx in
            let table = try tx.context.table("Person")
            let index = try #require(table.indexedFields.first { $0.name == "age" }?.index)
            let writer = ByteWriter()
            FileLayout.appendIndexKey(.int(30), to: writer)
            let indexKey = writer.withUnsafeBytes { Array($0) }
            try tx.context.lmdb.withCursor(index) { cursor in
                var objectKeys: [[UInt8]] = []
                var entry = try cursor.first()
                while let found = entry {
                    objectKeys.append(Array(found.value))
                    entry = try cursor.next()
                }
                #expect(objectKeys.count == 4)
                let (first, second, last) = (objectKeys[0], objectKeys[1], objectKeys[3])
                // A value between the first and the second object key.
                let between = first + [0]
                let seeks: [(String, [UInt8], [UInt8], (key: [UInt8], value: [UInt8]))] = [
                    ("seek(atLeast:)", indexKey, [], (indexKey, first)),
                    ("seek(exactly:)", indexKey, [], (indexKey, first)),
                    ("seek(exactly:value:)", indexKey, second, (indexKey, second)),
                    ("seek(exactly:atLeast:)", indexKey, between, (indexKey, second)),
                    ("firstDuplicate()", indexKey, [], (indexKey, first)),
                    ("lastDuplicate()", indexKey, [], (indexKey, last)),
                ]
                for (name, key, value, expected) in seeks {
                    let sought = try self.seek(key, value) { key, value in
                        switch name {
                        case "seek(atLeast:)": return try cursor.seek(atLeast: key)
                        case "seek(exactly:)": return try cursor.seek(exactly: key)
                        case "seek(exactly:value:)": return try cursor.seek(exactly: key, value: value)
                        case "seek(exactly:atLeast:)": return try cursor.seek(exactly: key, atLeast: value)
                        case "firstDuplicate()": return try cursor.firstDuplicate()
                        default: return try cursor.lastDuplicate()
                        }
                    }
                    let found = try #require(sought, "\(name)")
                    #expect(!found.pointedIntoTheCallersBuffers, "\(name)")
                    #expect(found.key == expected.key, "\(name)")
                    #expect(found.value == expected.value, "\(name)")
                }
            }
        }
    }
}
