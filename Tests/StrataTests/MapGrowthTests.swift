import Foundation
import Testing
@testable import Strata

@Suite struct MapGrowthTests {
    static let blobs = Schema([
        ObjectSchema("Blob", primaryKey: "id") {
            Property("id", .int)
            Property("payload", .data)
        },
    ])

    @Test func theMapGrowsFromATinySizePastOneGigabyte() throws {
        let folder = try TemporaryFolder()
        var config = Fixtures.configuration(folder.path(), schema: Self.blobs)
        config.initialMapSize = 64 << 10
        let megabyte = 1 << 20
        let blobsPerTransaction = 64
        let transactions = 17  // 17 × 64 MiB = 1088 MiB of payload
        do {
            let db = try Database(configuration: config)
            #expect(db.environment.mapSize < 1 << 20)
            for t in 0 ..< transactions {
                try db.write { tx in
                    for i in 0 ..< blobsPerTransaction {
                        let id = t * blobsPerTransaction + i
                        try tx.insert("Blob", ["id": .int(Int64(id)), "payload": .data(Self.payload(id, size: megabyte))])
                    }
                }
            }
            #expect(db.environment.mapSize > 1 << 30)
            #expect(try db.fileSize.used > 1 << 30)
        }
        let db = try Database(configuration: Fixtures.configuration(folder.path(), schema: Self.blobs))
        try db.read { tx in
            #expect(try tx.objects("Blob").count == transactions * blobsPerTransaction)
            for id in [0, 500, transactions * blobsPerTransaction - 1] {
                let payload = try #require(try tx.object("Blob", key: .int(Int64(id)))?["payload"].data)
                #expect(payload == Self.payload(id, size: megabyte))
            }
        }
    }

    @Test func oneValueLargerThanTheWholeInitialMapIsStored() throws {
        let folder = try TemporaryFolder()
        var config = Fixtures.configuration(folder.path(), schema: Self.blobs)
        config.initialMapSize = 32 << 10
        let db = try Database(configuration: config)
        let big = Self.payload(1, size: 8 << 20)
        try db.write { tx in try tx.insert("Blob", ["id": 1, "payload": .data(big)]) }
        #expect(try db.read { tx in try tx.object("Blob", key: 1)?["payload"].data } == big)
    }

    @Test func theWriteClosureRunsAgainAfterTheMapGrows() throws {
        let folder = try TemporaryFolder()
        var config = Fixtures.configuration(folder.path(), schema: Self.blobs)
        config.initialMapSize = 32 << 10
        let db = try Database(configuration: config)
        var runs = 0
        try db.write { tx in
            runs += 1
            for id in 0 ..< 8 {
                try tx.insert("Blob", ["id": .int(Int64(id)), "payload": .data(Self.payload(id, size: 256 << 10))])
            }
        }
        #expect(runs > 1)
        #expect(try db.read { tx in try tx.objects("Blob").count } == 8)
    }

    /// Bytes that differ per id, so a mixed-up record would be noticed.
    static func payload(_ id: Int, size: Int) -> Data {
        var data = Data(count: size)
        data.withUnsafeMutableBytes { bytes in
            let words = bytes.bindMemory(to: UInt64.self)
            var x = UInt64(id) &* 0x9E37_79B9_7F4A_7C15 | 1
            for i in words.indices {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17
                words[i] = x
            }
        }
        return data
    }
}
