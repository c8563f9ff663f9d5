import Foundation
import Testing

@testable import Strata

/// The plan is a promise: for each kind of migration, the work it predicts
/// (typed steps, declared renames, records rewritten, indexes built) is
/// the work the open then does, as the test-only instrumentation counts it.
@Suite(.temporaryFolder) struct MigrationPlanAccuracyTests {
    let folder = TemporaryFolder.current

    static let bookV1 = ObjectSchema("Book", primaryKey: "id") {
        Property("id", .int)
        Property("title", .string, indexed: true)
        Property("year", .string)
        Property("note", .string, optional: true)
    }

    static let author = ObjectSchema("Author", primaryKey: "id") {
        Property("id", .int)
        Property("name", .string)
    }

    /// 50 books and 20 authors at version 1.
    private func seed(_ books: ObjectSchema = bookV1) throws {
        let db = try Database(
            configuration: Migrations.configuration(folder.path(), version: 1, [books, Self.author]))
        defer { db.close() }
        try db.write { tx in
            for id in 1 ... 50 {
                try tx.insert(
                    "Book",
                    [
                        "id": .int(Int64(id)), "title": .string("Title \(id)"), "year": .string("\(1900 + id)"),
                        "note": id % 2 == 0 ? .string("n") : .null,
                    ])
            }
            for id in 1 ... 20 { try tx.insert("Author", ["id": .int(Int64(id)), "name": .string("A\(id)")]) }
        }
    }

    /// Plans `config`, opens with it, and compares.
    @discardableResult
    private func expectPlanMatchesTheOpen(
        _ config: Database.Configuration, closureWrites: Int = 0, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> MigrationPlan {
        let path = config.path
        let plan = try Database.migrationPlan(for: config)
        #expect(plan.action == .migrate, "\(plan)", sourceLocation: sourceLocation)
        let predicted = try plan.rewrittenTypes.reduce(0) { $0 + (try RawFile.objectCount(path, type: $1)) }
        try Database(configuration: config).close()
        #expect(
            Instrumentation.recordWritesOfLastOpen(path) == predicted + closureWrites, "\(plan)",
            sourceLocation: sourceLocation)
        #expect(
            Instrumentation.indexesBuiltByLastOpen(path).sorted() == plan.rebuiltIndexes.sorted(), "\(plan)",
            sourceLocation: sourceLocation)
        return plan
    }

    @Test func additiveChangesRewriteNothingAndBuildTheNewIndex() throws {
        try seed()
        let v2 = ObjectSchema("Book", primaryKey: "id") {
            Property("id", .int)
            Property("title", .string, indexed: true)
            Property("year", .string, indexed: true)
            Property("pages", .int, default: 0)
        }
        let plan = try expectPlanMatchesTheOpen(
            Migrations.configuration(folder.path(), version: 2, [v2, Self.author]))
        #expect(plan.rewrittenTypes == [])
        #expect(plan.rebuiltIndexes == ["Book.year"])
    }

    @Test func aDiscardedTypeChangeRewritesTheTypeAndItsIndexes() throws {
        try seed()
        let v2 = ObjectSchema("Book", primaryKey: "id") {
            Property("id", .int)
            Property("title", .string, indexed: true)
            Property("year", .int, default: 0)
            Property("note", .string, optional: true)
        }
        var config = Migrations.configuration(folder.path(), version: 2, [v2, Self.author])
        config.discardValues(of: "year", onType: "Book")
        let plan = try expectPlanMatchesTheOpen(config)
        #expect(plan.rewrittenTypes == ["Book"])
        #expect(plan.rebuiltIndexes == ["Book.title"])
    }

    @Test func aClosureThatConvertsATypeChangeRewritesNothingMore() throws {
        try seed()
        let v2 = ObjectSchema("Book", primaryKey: "id") {
            Property("id", .int)
            Property("title", .string, indexed: true)
            Property("year", .int, default: 0, indexed: true)
            Property("note", .string, optional: true)
        }
        let config = Migrations.configuration(folder.path(), version: 2, [v2, Self.author]) { migration, _ in
            try migration.enumerateObjects(ofType: "Book") { old, new in
                new?["year"] = .int(Int64(old?["year"].string ?? "") ?? 0)
            }
        }
        let plan = try expectPlanMatchesTheOpen(config)
        #expect(plan.runsMigrationClosure)
        #expect(plan.rewrittenTypes == ["Book"])
        #expect(plan.rebuiltIndexes.sorted() == ["Book.title", "Book.year"])
    }

    @Test func optionalToRequiredAndANewPrimaryKeyRewriteTheirTypes() throws {
        try seed()
        let books = ObjectSchema("Book", primaryKey: "id") {
            Property("id", .int)
            Property("title", .string, indexed: true)
            Property("year", .string)
            Property("note", .string, default: "none")
        }
        let authors = ObjectSchema("Author", primaryKey: "name") {
            Property("id", .int)
            Property("name", .string)
        }
        let plan = try expectPlanMatchesTheOpen(Migrations.configuration(folder.path(), version: 2, [books, authors]))
        #expect(plan.rewrittenTypes.sorted() == ["Author", "Book"])
    }

    @Test func aRemovedTypeAndPropertyAndAChangedDefaultRewriteNothing() throws {
        try seed()
        let v2 = ObjectSchema("Book", primaryKey: "id") {
            Property("id", .int)
            Property("title", .string, default: "untitled", indexed: true)
            Property("year", .string)
        }
        let plan = try expectPlanMatchesTheOpen(Migrations.configuration(folder.path(), version: 2, [v2]))
        #expect(plan.rewrittenTypes == [])
        #expect(plan.rebuiltIndexes == ["Book.title"])
        let removed = plan.steps.first { $0.change.kind == .propertyRemoved }
        #expect(removed?.effect.contains("migration closure") == false)
    }

    @Test func addingALinkPropertyRewritesNothing() throws {
        try seed()
        let v2 = ObjectSchema("Book", primaryKey: "id") {
            Property("id", .int)
            Property("title", .string, indexed: true)
            Property("year", .string)
            Property("note", .string, optional: true)
            Property("author", .link, optional: true, target: "Author")
        }
        let plan = try expectPlanMatchesTheOpen(Migrations.configuration(folder.path(), version: 2, [v2, Self.author]))
        #expect(plan.rewrittenTypes == [])
    }

    @Test func aTypedStepWithADeclaredRenameIsOneStepAndOneRename() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        let plan = try expectPlanMatchesTheOpen(Releases.configuration(path, version: 2))
        #expect(plan.typedSteps == ["AppV1 → AppV2 (1 → 2): maps PersonV1 to PersonV2"])
        #expect(plan.renames == ["'Person.name' to 'fullName'"])
        #expect(plan.rewrittenTypes == ["Person"])
        let text = plan.description
        #expect(text.contains(": migrate, running 1 typed step."), "\(text)")
        #expect(!text.contains("'Person.fullName' has been added"), "\(text)")
        #expect(!text.contains("'Person.name' has been removed"), "\(text)")
        #expect(text.contains("Property 'Person.name' has been renamed to 'fullName'."), "\(text)")
        #expect(!text.contains("migration closure"), "\(text)")
        #expect(text.contains("The typed step AppV1 → AppV2 sets its values from the old objects"), "\(text)")
    }

    @Test func typedStepsOverSeveralVersionsPredictTheirWork() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        // The step to version 3 inserts an Address per person: objects that
        // code creates are its own writes, which no plan can count.
        let plan = try expectPlanMatchesTheOpen(Releases.configuration(path, version: 4), closureWrites: 3)
        #expect(plan.typedSteps.count == 3)
        // The steps carry name and lastName; no rename reaches version 4's models.
        #expect(plan.renames == [])
        #expect(plan.rewrittenTypes == ["Person"])
        #expect(plan.rebuiltIndexes == ["Person.age"])
        let added = plan.steps.first { $0.change.kind == .propertyAdded && $0.change.propertyName == "nickname" }
        #expect(added?.effect.contains("typed step") == true, "\(plan)")
    }

    @Test func aTypedStepThatDeletesCountsItsDeletesAsItsWrites() throws {
        let path = folder.path()
        try Releases.seed(path, version: 1)
        let step = MigrationStep.step(from: AppV1.self, to: AppV2.self) {
            $0.map(PersonV1.self, to: PersonV2.self) { old in
                old.id == 2 ? nil : PersonV2(id: old.id, fullName: old.name, age: Int(old.age) ?? 0)
            }
        }
        let plan = try expectPlanMatchesTheOpen(Releases.configuration(path, version: 2, steps: [step]))
        #expect(plan.rewrittenTypes == ["Person"])
    }

    @Test func makingALinkedTypeEmbeddedRewritesItsOwners() throws {
        let path = folder.path()
        let address = ObjectSchema("Address") {
            Property("street", .string)
        }
        let linking = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property.link("home", to: "Address")
        }
        do {
            let db = try Database(configuration: Migrations.configuration(path, version: 1, [linking, address]))
            defer { db.close() }
            try db.write { tx in
                for id in 1 ... 10 {
                    let key = try tx.insert("Address", ["street": .string("\(id) Main St")])
                    try tx.insert("Person", ["id": .int(Int64(id)), "home": .link(key)])
                }
            }
        }
        let embedding = ObjectSchema("Person", primaryKey: "id") {
            Property("id", .int)
            Property.embedded("home", "Address")
        }
        let embedded = ObjectSchema("Address", embedded: true) {
            Property("street", .string)
        }
        let addresses = try RawFile.objectCount(path, type: "Address")
        // The addresses move into their owners: their own records go (the
        // table is emptied, not written object by object).
        let plan = try expectPlanMatchesTheOpen(Migrations.configuration(path, version: 2, [embedding, embedded]))
        #expect(plan.rewrittenTypes == ["Person"])
        #expect(addresses == 10)
    }

    /// A rename in a closure is a catalog change the plan cannot see: it
    /// shows a removal and an addition, each rewriting no record, and none is.
    @Test func aRenameInTheClosureRewritesNothing() throws {
        try seed()
        let v2 = ObjectSchema("Book", primaryKey: "id") {
            Property("id", .int)
            Property("title", .string, indexed: true)
            Property("published", .string)
            Property("note", .string, optional: true)
        }
        let config = Migrations.configuration(folder.path(), version: 2, [v2, Self.author]) { migration, _ in
            try migration.renameProperty(onType: "Book", from: "year", to: "published")
        }
        let plan = try expectPlanMatchesTheOpen(config)
        #expect(plan.rewrittenTypes == [])
        let db = try Database(configuration: Migrations.configuration(folder.path(), version: 2, [v2, Self.author]))
        #expect(try db.read { tx in try tx.object("Book", key: 1)?["published"] } == "1901")
    }

    /// Deleting a removed type's data in the closure empties its table
    /// without writing its records one by one, and rebuilds nothing.
    @Test func deletingARemovedTypesDataWritesNoRecord() throws {
        try seed()
        let config = Migrations.configuration(folder.path(), version: 2, [Self.bookV1]) { migration, _ in
            _ = try migration.deleteData(forType: "Author")
        }
        let plan = try expectPlanMatchesTheOpen(config)
        #expect(plan.rewrittenTypes == [])
        #expect(plan.steps.map(\.change.kind) == [.typeRemoved])
    }
}
