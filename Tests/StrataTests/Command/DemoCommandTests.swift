import Foundation
import Strata
import Testing

/// Runs the built `strata` binary, as `make demo` does.
@Suite(.temporaryFolder) struct DemoCommandTests {
    /// The running test's own folder, removed when it ends.
    let folder = TemporaryFolder.current

    @Test func demoTellsItsStoryAndLeavesAWorkingFile() throws {
        let path = folder.path("demo.strata")
        let result = try StrataBinary.run(["demo", "--path", path, "--objects", "200"])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(result.output.contains("Wrote 205 people in one transaction"))
        #expect(result.output.contains("File schema version 1; 205 people"))
        #expect(result.output.contains("Lookup by primary key 1: Ada Lovelace"))
        #expect(result.output.contains("Range query through the age index (age >= 18): 156 adults"))
        #expect(result.output.contains("Index lookup (age == 41): 3 people, first: Alan Turing"))
        #expect(
            result.output.contains(
                "Sorted through the index, oldest first: Max Mensah (89), Noor Kowalski (89), Jo Tanaka (88)"))
        // The migration story: the plan, before, progress, after.
        #expect(result.output.contains("- Property 'Person.fullName' has been added."))
        #expect(result.output.contains("- Property 'Person.lastName' has been removed."))
        #expect(result.output.contains("migrate, running 1 typed step."))
        #expect(result.output.contains("- runs AppV1 → AppV2 (1 → 2): maps PersonV1 to PersonV2"))
        #expect(
            result.output.contains(
                "Person(id: 1, firstName: \"Ada\", lastName: \"Lovelace\", age: 36) at effective schema version 1"))
        #expect(result.output.contains("\n  Person: migrating objects, 205 of 205\n"))
        #expect(!result.output.contains("migrating objects, 0 of"), "a plain line only once there is progress")
        #expect(!result.output.contains("\r"), "no progress bar when stdout is not a terminal")
        #expect(result.output.contains("Migrated to schema version 2"))
        #expect(
            result.output.contains(
                "Person(id: 1, fullName: \"Ada Lovelace\", age: 36, status: \"active\") at effective schema version 2"))
        // The observation: the first element, a newcomer at the top pushes
        // the third out, a write outside the three gives nothing, a
        // birthday that keeps its place is a modification, and putting it
        // all back (which the checks of the file below rely on) is one
        // element.
        #expect(result.output.contains("  first element: "))
        #expect(
            result.output.contains(
                "  after a commit: Jeanne Calment (120), Max Mensah (89), Noor Kowalski (89); deletions [2], insertions [0], modifications []"
            ))
        #expect(
            result.output.contains(
                "  after a commit: Jeanne Calment (120), Max Mensah (90), Noor Kowalski (89); deletions [], insertions [], modifications [1]"
            ))
        #expect(
            result.output.contains(
                "  after a commit: Max Mensah (89), Noor Kowalski (89), Jo Tanaka (88); deletions [0], insertions [2], modifications [0]"
            ))
        // Synced mode: the other mode, a closure and destructive changes are refused.
        #expect(result.output.contains("Refused (modeMismatch)"))
        #expect(result.output.contains("Refused (migrationForbidden)"))
        #expect(result.output.contains("so typed migration steps (AppV1 → AppV2) cannot run"))
        #expect(result.output.contains("- Property 'Person.age' has been changed from 'int' to 'string'."))
        #expect(result.output.contains("Katherine's (written by version 2) is \"\" at effective version 2"))
        // Relationships: links followed, a backlink query, cascade and nullify.
        #expect(result.output.contains("    Write the first linker (Compiler, Grace Hopper)"))
        #expect(
            result.output.contains(
                "  Grace's tasks, from the backlinks index: Write the first linker, Find the moth, Review the notes"))
        #expect(
            result.output.contains(
                "After deleting the Compiler project (cascade: its tasks go too):\n    Design the mill (Engine, Ada Lovelace)\n    Punch the cards (Engine, Ada Lovelace)\n    Review the notes (Engine, Grace Hopper)\n"
            ))
        #expect(result.output.contains("    Review the notes (Engine, unassigned)\n  verify: no problems"))
        // Sync: two app versions exchange changes; the older keeps the tag
        // it does not declare and reads it once upgraded, pulling nothing.
        #expect(result.output.contains("    phone → tablet: 3 objects inserted or changed ("))
        #expect(result.output.contains("    tablet learned type Label, field Note.tag (kept, sent on)"))
        #expect(result.output.contains("    tablet reads Note(id: 1, title: \"Buy oat milk\", stars: 1)"))
        #expect(
            result.output.contains(
                "    phone reads Note(id: 1, title: \"Buy oat milk\", stars: 1, tag: \"home\"): the tablet's edit, the phone's tag"
            ))
        #expect(result.output.contains("    Kept types: Label\n    Kept fields:\n      Note.tag: string?\n"))
        #expect(result.output.contains("    upgraded tablet reads Note(id: 1, title: \"Buy oat milk\", tag: \"home\")"))
        #expect(result.output.contains("    upgraded tablet reads Label(name: \"home\", color: \"green\")"))
        #expect(result.output.contains("last sequence number still 4 (it was 4), cursor of the phone still 4"))
        #expect(
            result.output.hasSuffix(
                "    phone → upgraded tablet: nothing new\n    upgraded tablet → phone: nothing new\n"),
            "\(result.output.suffix(300))")
        #expect(FileManager.default.fileExists(atPath: path))
        // The file the demo leaves is at version 2 and opens with the v2 schema.
        let v2 = Schema([
            ObjectSchema("Person", primaryKey: "id") {
                Property("id", .int)
                Property("fullName", .string)
                Property("age", .int, default: 0, indexed: true)
                Property("email", .string, optional: true)
                Property("status", .string, default: "active")
            }
        ])
        let db = try Database(configuration: Database.Configuration(path: path, schemaVersion: 2, schema: v2))
        #expect(try db.read { tx in try tx.object("Person", key: 2)?["fullName"] } == "Charles Babbage")
    }

    @Test func demoDrawsAProgressBarOnATerminal() throws {
        let script = URL(fileURLWithPath: "/usr/bin/script")
        try #require(
            FileManager.default.isExecutableFile(atPath: script.path), "script (util-linux) gives the demo a terminal")
        let strata = try #require(StrataBinary.binary)
        let command = [strata.path, "demo", "--objects", "3000", "--path", folder.path("bar.strata")]
        #if os(Linux)
        let arguments = ["-qec", command.map { "'\($0)'" }.joined(separator: " "), "/dev/null"]
        #else
        let arguments = ["-q", "/dev/null"] + command
        #endif
        let result = try StrataBinary.run(arguments, executable: script)
        #expect(result.status == 0, "\(result.output)")
        // The terminal turns each "\n" into "\r\n".
        #expect(
            result.output.contains("\r\n\r[..............................] 0% Person: migrating objects, 0 of 3005\r["),
            "\(result.output)")
        #expect(
            result.output.contains("\r[###############...............] 50% Person: migrating objects, "),
            "\(result.output)")
        // The closure leaves the indexed age alone: its index is not rebuilt.
        #expect(
            result.output.contains(
                "\r[##############################] 100% Person: migrating objects, 3005 of 3005\r\nMigrated to schema version 2"
            ), "\(result.output)")
        #expect(!result.output.contains("buildingIndex"), "\(result.output)")
        #expect(!result.output.contains("  Person: migrating objects"), "no plain progress lines on a terminal")
    }

    @Test func demoWithoutAPathRemovesItsTemporaryFolder() throws {
        let temporary = folder.path("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        let result = try StrataBinary.run(["demo", "--objects", "10"], environment: ["TMPDIR": temporary])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(result.output.contains("Creating \(temporary)/strata-demo-"), "\(result.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary) == [])
        #expect(result.output.contains("Removed \(temporary)/strata-demo-"), "\(result.output)")
    }

    @Test func demoRefusesAnExistingPathWithAOneLineError() throws {
        let path = folder.path("taken.strata")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("keep me".utf8)))
        let result = try StrataBinary.run(["demo", "--path", path])
        #expect(result.status != 0)
        #expect(result.error.hasPrefix("Error: \(path) already exists"), "\(result.error)")
        #expect(result.error.filter { $0 == "\n" }.count == 1, "one line: \(result.error)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "keep me")
    }

    @Test func demoRefusesAPathWhoseCompanionFileExists() throws {
        let path = folder.path("fresh.strata")
        let tasks = folder.path("fresh-tasks.strata")
        #expect(FileManager.default.createFile(atPath: tasks, contents: Data("keep me".utf8)))
        let result = try StrataBinary.run(["demo", "--path", path])
        #expect(result.status != 0)
        #expect(result.error.hasPrefix("Error: \(tasks) already exists"), "\(result.error)")
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try String(contentsOfFile: tasks, encoding: .utf8) == "keep me")
    }
}
