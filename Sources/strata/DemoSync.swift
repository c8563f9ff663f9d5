import Foundation
import Strata

/// The models of the sync story: two app versions of a notes app.
enum SyncDemoModels {
    /// Version 1: a note with a title and stars.
    @Model(name: "Note")
    struct NoteV1 {
        @PrimaryKey var id: Int
        var title: String
        var stars: Int = 0
    }

    /// Version 2 adds a tag to notes, and labels.
    @Model(name: "Note")
    struct NoteV2 {
        @PrimaryKey var id: Int
        var title: String
        var stars: Int = 0
        var tag: String?
    }

    /// New in version 2: a label, by name.
    @Model(name: "Label")
    struct Label {
        @PrimaryKey var name: String
        var color: String
    }

    /// The dataset both devices share (an app's constant).
    static let dataset = UUID(uuidString: "5A7C9E11-3B2D-4F60-8E1A-0C4D2B6F9A37")!
}

extension StrataCommand.Demo {
    /// Two devices at app versions 2 and 1 exchange changes: the older one
    /// keeps the field and type it does not declare, edits a note without
    /// losing its tag, and after its app is upgraded reads them at once,
    /// with nothing pulled again.
    func syncStory(phonePath: String, tabletPath: String) throws {
        print("\nSync: two devices, a phone on app version 2 and a tablet still on version 1, one dataset.")
        print("  Version 2 adds Note.tag and the type Label; version 1 knows neither.")
        let phone = try Self.device(phonePath, version: 2, [SyncDemoModels.NoteV2.self, SyncDemoModels.Label.self])
        defer { phone.close() }
        var tablet: Database? = try Self.device(tabletPath, version: 1, [SyncDemoModels.NoteV1.self])
        defer { tablet?.close() }
        try phone.write { tx in
            try tx.insert(SyncDemoModels.NoteV2(id: 1, title: "Buy milk", tag: "home"))
            try tx.insert(SyncDemoModels.NoteV2(id: 2, title: "Call Ada", stars: 2, tag: "work"))
            try tx.insert(SyncDemoModels.Label(name: "home", color: "green"))
        }
        try tablet!.write { tx in try tx.insert(SyncDemoModels.NoteV1(id: 3, title: "Water the plants")) }
        print("  The phone writes two tagged notes and a label; the tablet writes a note.")
        try exchange(phone, tablet!, "phone", "tablet")

        print("\n  The tablet (version 1) edits note 1; it cannot see the tag, and does not drop it:")
        try tablet!.write { tx in
            try tx.update(SyncDemoModels.NoteV1(id: 1, title: "Buy oat milk", stars: 1))
        }
        try tablet!.read { tx in
            let notes = try tx.objects(SyncDemoModels.NoteV1.self).map {
                "    tablet reads Note(id: \($0.id), title: \"\($0.title)\", stars: \($0.stars))"
            }
            print(notes.joined(separator: "\n"))
        }
        try exchange(phone, tablet!, "phone", "tablet")
        try phone.read { tx in
            if let note = try tx.object(SyncDemoModels.NoteV2.self, primaryKey: 1) {
                print(
                    "    phone reads Note(id: 1, title: \"\(note.title)\", stars: \(note.stars), tag: \"\(note.tag ?? "nil")\"): the tablet's edit, the phone's tag"
                )
            }
        }
        print("\n  The tablet's sync status (what `strata sync-status \(tabletPath)` prints):")
        let status = try tablet!.sync.status()
        for line in StrataCommand.SyncStatusCommand.lines(status, indent: "    ") { print(line) }

        print("\n  The tablet's app is upgraded to version 2; it opens the same file:")
        tablet!.close()
        tablet = nil
        let upgraded = try Self.device(
            tabletPath, version: 2, [SyncDemoModels.NoteV2.self, SyncDemoModels.Label.self])
        defer { upgraded.close() }
        try upgraded.read { tx in
            let notes = try tx.objects(SyncDemoModels.NoteV2.self).map { note in
                "    upgraded tablet reads Note(id: \(note.id), title: \"\(note.title)\", tag: \(note.tag.map { "\"\($0)\"" } ?? "nil"))"
            }
            let labels = try tx.objects(SyncDemoModels.Label.self).map {
                "    upgraded tablet reads Label(name: \"\($0.name)\", color: \"\($0.color)\")"
            }
            print((notes + labels).joined(separator: "\n"))
        }
        let sequence = try upgraded.sync.lastSequenceNumber()
        print(
            "    at once: no record rewritten, last sequence number still \(sequence) (it was \(status.lastSequenceNumber)), cursor of the phone still \(try upgraded.sync.cursor(of: phone.sync.site))"
        )
        try exchange(phone, upgraded, "phone", "upgraded tablet")
    }

    /// A device's file: synced mode, sync enabled with the demo's dataset.
    static func device(_ path: String, version: UInt64, _ models: [any Model.Type]) throws -> Database {
        var config = Database.Configuration(path: path, schemaVersion: version, models: models)
        config.mode = .synced
        config.durability = .noSync
        config.sync = Database.SyncConfiguration(dataset: SyncDemoModels.dataset)
        return try Database(configuration: config)
    }

    /// Exchanges `a`'s and `b`'s changes and prints what moved.
    func exchange(_ a: Database, _ b: Database, _ nameA: String, _ nameB: String) throws {
        print("  Exchange (db.sync.exchange, what `strata sync` runs):")
        let report = try a.sync.exchange(with: b)
        for line in StrataCommand.Sync.lines(report, a: nameA, b: nameB, indent: "    ") { print(line) }
    }
}
