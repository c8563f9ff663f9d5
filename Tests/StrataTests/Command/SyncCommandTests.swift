import Foundation
import Strata
import Testing

/// `strata sync` and `strata sync-status`, run as a user runs them, on
/// files of two app versions: version 2 adds `Note.tag` and the type
/// `Label`.
@Suite(.temporaryFolder) struct SyncCommandTests {
    let folder = TemporaryFolder.current
    static let dataset = UUID(uuidString: "0B6E2D4A-9C1F-4E37-A5D8-7F3B1C9E2A40")!

    static func schema(version: UInt64) -> Schema {
        var note = ObjectSchema("Note", primaryKey: "id") {
            Property("id", .int)
            Property("title", .string, default: "")
        }
        guard version >= 2 else { return Schema([note]) }
        note = ObjectSchema("Note", primaryKey: "id") {
            Property("id", .int)
            Property("title", .string, default: "")
            Property("tag", .string, optional: true)
        }
        let label = ObjectSchema("Label", primaryKey: "name") {
            Property("name", .string)
            Property("color", .string, default: "")
        }
        return Schema([note, label])
    }

    /// A device's file at app `version`, sync enabled with `dataset`.
    func open(_ name: String, version: UInt64, dataset: UUID = SyncCommandTests.dataset) throws -> Database {
        var config = Database.Configuration(
            path: folder.path(name), schemaVersion: version, schema: SyncCommandTests.schema(version: version))
        config.mode = .synced
        config.durability = .noSync
        config.sync = .init(dataset: dataset)
        return try Database(configuration: config)
    }

    /// A newer device with two tagged notes and a label, an older one with
    /// a note of its own; both closed.
    func twoDevices() throws -> (newer: String, older: String) {
        let newer = try open("new.strata", version: 2)
        try newer.write { tx in
            try tx.insert("Note", ["id": 1, "title": "milk", "tag": "home"])
            try tx.insert("Note", ["id": 2, "title": "call", "tag": "work"])
            try tx.insert("Label", ["name": "home", "color": "green"])
        }
        newer.close()
        let older = try open("old.strata", version: 1)
        try older.write { tx in try tx.insert("Note", ["id": 3, "title": "plants"]) }
        older.close()
        return (folder.path("new.strata"), folder.path("old.strata"))
    }

    @Test func syncMovesChangesBothWaysAndTheOlderFileKeepsWhatItDoesNotDeclare() throws {
        let (newer, older) = try twoDevices()
        let result = try StrataBinary.run(["sync", newer, older])
        #expect(result.status == 0, "stderr: \(result.error)")
        let lines = StrataBinary.lines(result.output)
        #expect(lines[0] == "Synced \(newer) and \(older) (dataset \(SiteID(hex: Self.datasetHex)!))")
        #expect(lines[1].hasPrefix("  \(newer) → \(older): 3 objects inserted or changed ("), "\(result.output)")
        #expect(lines[2].hasPrefix("  \(older) → \(newer): 1 object inserted or changed ("), "\(result.output)")
        #expect(lines.contains("  \(older) learned type Label, field Note.tag (kept, sent on)"), "\(result.output)")
        // The older app, upgraded, reads the tag and the label at once.
        let upgraded = try open("old.strata", version: 2)
        let note = try upgraded.read { tx in try tx.object("Note", key: 1)?["tag"] }
        #expect(note == "home")
        #expect(try upgraded.read { tx in try tx.object("Label", key: "home")?["color"] } == "green")
        let atNewer = try open("new.strata", version: 2)
        #expect(try atNewer.read { tx in try tx.object("Note", key: 3)?["title"] } == "plants")
    }

    @Test func aSecondSyncMovesNothing() throws {
        let (newer, older) = try twoDevices()
        #expect(try StrataBinary.run(["sync", newer, older]).status == 0)
        let again = try StrataBinary.run(["sync", older, newer])
        #expect(again.status == 0, "stderr: \(again.error)")
        #expect(
            StrataBinary.lines(again.output).dropFirst().prefix(2) == [
                "  \(older) → \(newer): nothing new", "  \(newer) → \(older): nothing new",
            ], "\(again.output)")
    }

    @Test func syncRelaysKeptTypesAndFieldsThroughAFileThatDoesNotDeclareThem() throws {
        let (newer, older) = try twoDevices()
        try open("third.strata", version: 1).close()
        let third = folder.path("third.strata")
        #expect(try StrataBinary.run(["sync", newer, older]).status == 0)
        // The older file edits note 1 with its own app: the tag stays.
        let app = try open("old.strata", version: 1)
        try app.write { tx in try tx.update("Note", key: 1, ["title": "oat milk"]) }
        app.close()
        let relay = try StrataBinary.run(["sync", older, third])
        #expect(relay.status == 0, "stderr: \(relay.error)")
        #expect(relay.output.contains("\(third) learned type Label, field Note.tag"), "\(relay.output)")
        let upgraded = try open("third.strata", version: 2)
        let note = try upgraded.read { tx in try tx.object("Note", key: 1).map { [$0["title"], $0["tag"]] } }
        #expect(note == ["oat milk", "home"])
        #expect(try upgraded.read { tx in try tx.object("Label", key: "home")?["color"] } == "green")
    }

    @Test func syncRefusesAMissingFileAFileWithoutSyncTwoDatasetsAndOneFileTwice() throws {
        let (newer, older) = try twoDevices()
        let missing = folder.path("missing.strata")
        StrataBinary.expectOneLineError(
            try StrataBinary.run(["sync", newer, missing]), containing: ["\(missing) does not exist."])
        #expect(!FileManager.default.fileExists(atPath: missing))
        var plain = Database.Configuration(
            path: folder.path("plain.strata"), schemaVersion: 1, schema: SyncCommandTests.schema(version: 1))
        plain.mode = .synced
        try Database(configuration: plain).close()
        StrataBinary.expectOneLineError(
            try StrataBinary.run(["sync", newer, plain.path]),
            containing: ["Sync is not enabled on \(plain.path)", "configuration.sync"])
        try open("other.strata", version: 1, dataset: UUID()).close()
        let other = folder.path("other.strata")
        let before = try StrataBinary.run(["sync-status", other])
        StrataBinary.expectOneLineError(
            try StrataBinary.run(["sync", newer, other]),
            containing: ["belongs to dataset \(SiteID(hex: Self.datasetHex)!)", "Nothing of it was applied."])
        #expect(try StrataBinary.run(["sync-status", other]).output == before.output, "nothing written")
        StrataBinary.expectOneLineError(
            try StrataBinary.run(["sync", older, folder.path("./old.strata")]), containing: ["are the same file"])
    }

    @Test func syncStatusShowsSiteClockPeersPendingAndKeptFields() throws {
        let (newer, older) = try twoDevices()
        #expect(try StrataBinary.run(["sync", newer, older]).status == 0)
        let app = try open("old.strata", version: 1)
        try app.write { tx in
            try tx.update("Note", key: 1, ["title": "oat milk"])
            _ = try tx.delete("Note", key: 2)
        }
        let site = try app.sync.site
        let sequence = try app.sync.lastSequenceNumber()
        app.close()
        let newerSite = try Database(inspecting: newer).sync.site
        let result = try StrataBinary.run(["sync-status", older])
        #expect(result.status == 0, "stderr: \(result.error)")
        let lines = StrataBinary.lines(result.output)
        #expect(lines[0] == older)
        #expect(lines.contains("Site: \(site)"), "\(result.output)")
        #expect(lines.contains("Dataset: \(SiteID(hex: Self.datasetHex)!)"), "\(result.output)")
        #expect(lines.contains { $0.hasPrefix("Clock: ") && $0.contains(" ms, counter ") && $0.hasSuffix("Z)") })
        #expect(lines.contains("Last sequence number: \(sequence)"), "\(result.output)")
        // Notes 1 and 3 and the label the older app keeps; note 2 deleted.
        #expect(lines.contains("Objects: 3 alive, 1 tombstone"), "\(result.output)")
        // Note 3 (before any contact) and notes 1 and 2 (after it).
        #expect(lines.contains("Changed here: 3 objects"), "\(result.output)")
        #expect(
            lines.contains("Pending: 2 objects not yet sent to the least up-to-date peer"), "\(result.output)")
        #expect(lines.contains("Peers: 1"))
        #expect(
            lines.contains {
                $0.hasPrefix("  \(newerSite)  cursor ") && $0.contains("Z  acknowledged ")
                    && $0.hasSuffix("  2 pending")
            },
            "\(result.output)")
        #expect(lines.contains("Kept types: Label"), "\(result.output)")
        #expect(lines.contains("Kept fields:"), "\(result.output)")
        #expect(lines.contains("  Note.tag: string?"), "\(result.output)")
    }

    @Test func syncStatusRefusesAFileWithoutSync() throws {
        let path = try StrataBinary.demoFile(folder)
        StrataBinary.expectOneLineError(
            try StrataBinary.run(["sync-status", path]), containing: ["Sync is not enabled on \(path)"])
        StrataBinary.expectOneLineError(
            try StrataBinary.run(["sync-status", folder.path("none.strata")]), containing: ["does not exist"])
    }

    static let datasetHex = dataset.uuidString.replacingOccurrences(of: "-", with: "").lowercased()
}
