import Foundation
@_spi(Hub) import Strata
import StrataHub
import Testing

@Model
struct Note {
    @PrimaryKey var id: Int
    var title: String
    var body: String = ""
}

@Suite("Devices exchanging through the hub")
struct HubExchangeTests {
    static func open(_ path: String, dataset: UUID) throws -> Database {
        var config = Database.Configuration(path: path, schemaVersion: 1, models: [Note.self])
        config.mode = .synced
        config.sync = .init(dataset: dataset)
        return try Database(configuration: config)
    }

    @Test func twoDevicesConvergeThroughTheHub() async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let dataset = UUID()
            let phone = try Self.open(folder.file("phone.strata"), dataset: dataset)
            let laptop = try Self.open(folder.file("laptop.strata"), dataset: dataset)
            defer {
                phone.close()
                laptop.close()
            }
            let phoneDevice = try await hub.addDevice(tenant: dataset, name: "phone")
            let laptopDevice = try await hub.addDevice(tenant: dataset, name: "laptop")
            let a = Device(
                database: phone, hub: hub, device: try await #require(await hub.device(token: phoneDevice.token)))
            let b = Device(
                database: laptop, hub: hub, device: try await #require(await hub.device(token: laptopDevice.token)))
            try await phone.write { tx in
                for i in 0 ..< 1_200 { try tx.insert(Note(id: i, title: "phone \(i)")) }
            }
            try await laptop.write { tx in
                try tx.insert(Note(id: 5_000, title: "laptop"))
            }
            try await a.exchange()
            try await b.exchange()
            try await a.exchange()
            #expect(try await phone.read { try $0.objects(Note.self).count } == 1_201)
            #expect(try await laptop.read { try $0.objects(Note.self).count } == 1_201)
            // Concurrent edits of two fields of one note both survive.
            try await phone.write { tx in try tx.update("Note", key: 3, ["title": "edited on the phone"]) }
            try await laptop.write { tx in try tx.update("Note", key: 3, ["body": "written on the laptop"]) }
            try await a.exchange()
            try await b.exchange()
            try await a.exchange()
            for db in [phone, laptop] {
                let note = try #require(try await db.read { try $0.object(Note.self, primaryKey: 3) })
                #expect(note.title == "edited on the phone")
                #expect(note.body == "written on the laptop")
            }
            // A delete travels.
            try await laptop.write { tx in _ = try tx.delete(Note.self, primaryKey: 7) }
            try await b.exchange()
            try await a.exchange()
            #expect(try await phone.read { try $0.object(Note.self, primaryKey: 7) } == nil)
        }
    }
}
