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
    @Test func twoDevicesConvergeThroughTheHub() async throws {
        try await TestCluster.withHub { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let devices = try await TwoDevices(hub, in: folder)
            defer { devices.close() }
            let (phone, laptop) = (devices.phone, devices.laptop)
            let a = Device(database: phone, hub: hub, device: devices.phoneDevice)
            let b = Device(database: laptop, hub: hub, device: devices.laptopDevice)
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

    /// A push sent again (its answer was lost) gets the first answer back,
    /// byte for byte, even after other commits, and changes nothing.
    @Test func aRetriedPushGetsItsFirstAnswer() async throws {
        try await TestCluster.withHub { hub, settings in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let devices = try await TwoDevices(hub, in: folder)
            defer { devices.close() }
            let (phone, laptop, dataset) = (devices.phone, devices.laptop, devices.tenant)
            let (phoneDevice, laptopDevice) = (devices.phoneDevice, devices.laptopDevice)
            try await phone.write { tx in try tx.insert(Note(id: 1, title: "once")) }
            let body = try phone.sync.changes().data
            let first = try await hub.push(body, device: phoneDevice)
            #expect(first.status == 200)
            try await laptop.write { tx in try tx.insert(Note(id: 2, title: "later")) }
            #expect(try await hub.push(try laptop.sync.changes().data, device: laptopDevice).status == 200)
            let retry = try await hub.push(body, device: phoneDevice)
            #expect(retry.status == first.status)
            #expect(retry.answer == first.answer)
            #expect(try JSONDecoder().decode(HubPushAnswer.self, from: retry.answer).hubSeq == 1)
            #expect(try await hub.hubSeq(tenant: dataset) == 2)
            #expect(try await HubSecurityTests.rowCounts(settings)[2] == 2)
        }
    }
}
