import Foundation
import Testing

@testable import Strata

/// An older and a newer app sharing one file, the newer one with an enum
/// case the older one lacks: the older app reads it as its fallback case,
/// and writing the object back keeps the newer app's raw value unless the
/// older app changed the property.
@Suite(.temporaryFolder) struct EnumForwardCompatibilityTests {
    let folder = TemporaryFolder.current

    /// The file's Task objects as the dynamic API reads them, by key.
    func stored(_ db: Database) throws -> [Int64: [String: Value]] {
        try db.read { tx in
            Dictionary(uniqueKeysWithValues: try tx.objects("Task").map { ($0["id"].int!, $0.values) })
        }
    }

    /// Opens with the older app, then the newer, then the older again (in
    /// synced mode the newer app has a higher schema version; in local mode
    /// the enums are the only difference, so both open version 1).
    @Test(arguments: Fixtures.modes) func anOlderAppKeepsANewerAppsCases(mode: Database.Mode) throws {
        let path = folder.path()
        let newerVersion: UInt64 = mode == .synced ? 2 : 1
        do {
            let older = try Database(configuration: EnumModels.configuration(path, OldTask.self, mode: mode))
            try older.write { tx in
                for id in 1 ... 4 { try tx.insert(OldTask(id: id, title: "t\(id)", status: .done)) }
            }
        }
        do {
            let newer = try Database(
                configuration: EnumModels.configuration(path, NewTask.self, version: newerVersion, mode: mode))
            try newer.write { tx in
                for id in 1 ... 4 {
                    try tx.update(
                        NewTask(
                            id: id, title: "t\(id)", status: .archived, previous: .archived,
                            history: [.archived, .done], steps: [NewStep(name: "s", status: .archived)]))
                }
                try tx.insert(NewTask(id: 5, title: "t5", status: .archived))
            }
        }
        let older = try Database(configuration: EnumModels.configuration(path, OldTask.self, mode: mode))
        let read = try older.read { tx in try tx.objects(OldTask.self).array() }
        // Read: every unknown value is the fallback case, never a crash.
        #expect(read.map(\.status) == Array(repeating: .open, count: 5))
        #expect(read[0].previous == .open)
        #expect(read[0].history == [.open, .done])
        #expect(read[0].steps == [OldStep(name: "s", status: .open)])
        #expect(try older.read { tx in try tx.objects(OldTask.self).where(\.status, equals: .open).count } == 0)
        try older.write { tx in
            // 1: another property changes; every enum keeps its raw value.
            var one = read[0]
            one.title = "renamed"
            try tx.update(one)
            // 2: the status changes to another case: that case is written.
            var two = read[1]
            two.status = .done
            two.previous = nil
            try tx.update(two)
            // 3: an element is appended: the new one is written, the
            // elements left in place keep their raw values.
            var three = read[2]
            three.history.append(.done)
            try tx.upsert(three)
            // 4: written back whole by upsert, unchanged.
            try tx.upsert(read[3])
            // 6: a new object with the fallback case is just that case.
            try tx.insert(OldTask(id: 6, title: "t6", status: .open))
        }
        let objects = try stored(older)
        #expect(objects[1]?["title"] == "renamed")
        for id: Int64 in [1, 4] {
            #expect(objects[id]?["status"] == "archived", "\(id)")
            #expect(objects[id]?["previous"] == "archived", "\(id)")
            #expect(objects[id]?["history"] == ["archived", "done"], "\(id)")
        }
        // Inside embedded objects too.
        let archivedStep: Value = ["name": "s", "status": "archived"]
        #expect(objects[1]?["steps"] == [archivedStep])
        #expect(objects[2]?["steps"] == [archivedStep])
        #expect(objects[2]?["status"] == "done")
        #expect(objects[2]?["previous"] == .null)
        #expect(objects[2]?["history"] == ["archived", "done"])
        #expect(objects[3]?["status"] == "archived")
        #expect(objects[3]?["history"] == ["archived", "done", "done"])
        #expect(objects[6]?["status"] == "open")
        // The index follows the stored values, not the fallback.
        #expect(try older.read { tx in try tx.objects("Task").where("status", equals: "archived").count } == 4)
        #expect(try older.verify() == [])
        older.close()

        let newer = try Database(
            configuration: EnumModels.configuration(path, NewTask.self, version: newerVersion, mode: mode))
        let again = try newer.read { tx in try tx.objects(NewTask.self).array() }
        #expect(again.map(\.status) == [.archived, .done, .archived, .archived, .archived, .open])
        #expect(again[0].title == "renamed")
        #expect(again[0].history == [.archived, .done])
        #expect(again[0].steps == [NewStep(name: "s", status: .archived)])
    }

    /// Setting the fallback case by hand cannot be told from leaving the
    /// property as read: the stored value stays. Writing it with the
    /// dynamic API replaces it.
    @Test func theFallbackCaseSetByHandKeepsTheStoredValue() throws {
        let path = folder.path()
        do {
            let newer = try Database(configuration: EnumModels.configuration(path, NewTask.self))
            try newer.write { tx in try tx.insert(NewTask(id: 1, title: "t", status: .archived)) }
        }
        let older = try Database(configuration: EnumModels.configuration(path, OldTask.self))
        try older.write { tx in
            var task = try #require(try tx.object(OldTask.self, primaryKey: 1))
            task.status = .open
            try tx.update(task)
        }
        #expect(try stored(older)[1]?["status"] == "archived")
        try older.write { tx in try tx.update("Task", key: 1, ["status": "open"]) }
        #expect(try stored(older)[1]?["status"] == "open")
    }
}
