import Foundation
import Testing

@testable import Strata

@Suite(.temporaryFolder) struct MapGrowthTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    @Test(arguments: Fixtures.modes) func theMapGrowsFromATinySizePastOneGigabyte(_ mode: Database.Mode) throws {
        var config = Fixtures.configuration(folder.path(), schema: Blobs.schema, mode: mode)
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
                        try tx.insert(
                            "Blob", ["id": .int(Int64(id)), "payload": .data(Blobs.payload(id, size: megabyte))])
                    }
                }
            }
            #expect(db.environment.mapSize > 1 << 30)
            #expect(try db.fileSize.used > 1 << 30)
        }
        let db = try Database(configuration: Fixtures.configuration(folder.path(), schema: Blobs.schema, mode: mode))
        try db.read { tx in
            #expect(try tx.objects("Blob").count == transactions * blobsPerTransaction)
            for id in [0, 500, transactions * blobsPerTransaction - 1] {
                let payload = try #require(try tx.object("Blob", key: .int(Int64(id)))?["payload"].data)
                #expect(payload == Blobs.payload(id, size: megabyte))
            }
        }
    }

    @Test(arguments: Fixtures.modes) func oneValueLargerThanTheWholeInitialMapIsStored(_ mode: Database.Mode) throws {
        var config = Fixtures.configuration(folder.path(), schema: Blobs.schema, mode: mode)
        config.initialMapSize = 32 << 10
        let db = try Database(configuration: config)
        let big = Blobs.payload(1, size: 8 << 20)
        try db.write { tx in try tx.insert("Blob", ["id": 1, "payload": .data(big)]) }
        #expect(try db.read { tx in try tx.object("Blob", key: 1)?["payload"].data } == big)
    }

    @Test(arguments: Fixtures.modes) func theWriteClosureRunsAgainAfterTheMapGrows(_ mode: Database.Mode) throws {
        var config = Fixtures.configuration(folder.path(), schema: Blobs.schema, mode: mode)
        config.initialMapSize = 32 << 10
        let db = try Database(configuration: config)
        var runs = 0
        try db.write { tx in
            runs += 1
            for id in 0 ..< 8 {
                try tx.insert("Blob", ["id": .int(Int64(id)), "payload": .data(Blobs.payload(id, size: 256 << 10))])
            }
        }
        #expect(runs > 1)
        #expect(try db.read { tx in try tx.objects("Blob").count } == 8)
    }
}
