import Foundation
import Testing

@testable import Strata

@Model(name: "OracleProject") struct OracleProject {
    @PrimaryKey var id: Int
}

@Model(name: "OracleTask") struct OracleTask: Equatable {
    @PrimaryKey var id: Int
    var project: Link<OracleProject>?
}

/// Typed queries on a link property compare the target's key, as the
/// dynamic `where` and the index order do.
@Suite(.temporaryFolder) struct LinkQueryTests {
    let folder = TemporaryFolder.current

    /// Ten projects and 200 tasks, 20 per project (the task's id modulo
    /// 10, plus one), every seventh without one.
    func openWithTasks(_ mode: Database.Mode) throws -> (Database, [OracleTask]) {
        var config = Database.Configuration(path: folder.path(), models: [OracleTask.self, OracleProject.self])
        config.durability = .noSync
        config.mode = mode
        let db = try Database(configuration: config)
        let tasks = (0 ..< 200).map { OracleTask(id: $0, project: $0 % 7 == 0 ? nil : Link($0 % 10 + 1)) }
        try db.write { tx in
            for id in 1 ... 10 { try tx.insert(OracleProject(id: id)) }
            for task in tasks { try tx.insert(task) }
        }
        return (db, tasks)
    }

    @Test(arguments: Fixtures.modes)
    func whereAndSortedOnALinkCompareTheTargetsKey(mode: Database.Mode) throws {
        let (db, tasks) = try openWithTasks(mode)
        let inThree = tasks.filter { $0.project == Link(3) }.map(\.id)
        let byProject = tasks.sorted { ($0.project?.key ?? 0, $0.id) < ($1.project?.key ?? 0, $1.id) }.map(\.id)
        #expect(inThree.count == 17)
        try db.read { tx in
            let query = try tx.objects(OracleTask.self)
            #expect(try query.where(\.project, equals: Link(3)).map(\.id) == inThree)
            #expect(try query.where(\.project, equals: Link(3)).count == inThree.count)
            #expect(try query.where(\.project, equals: Link(999)).count == 0)
            #expect(try query.where(\.project, equals: Link(999)).first() == nil)
            #expect(try query.where(\.project, equals: nil).count == tasks.count { $0.project == nil })
            #expect(try query.sorted(by: \.project).map(\.id) == byProject)
            #expect(try query.sorted(by: \.project, ascending: false).map(\.id) == byProject.reversed())
            let dynamic = try tx.objects("OracleTask").where("project", equals: .link(3))
            #expect(try dynamic.map { Int($0["id"].int!) } == inThree)
        }
    }

    /// An observation runs the query through the same comparison: its
    /// first element and a later one hold the tasks of one project.
    @Test(arguments: Fixtures.modes)
    func observingALinkQueryHoldsOnlyThatTargetsObjects(mode: Database.Mode) async throws {
        let (db, tasks) = try openWithTasks(mode)
        try await withTimeout {
            var iterator = db.observe(OracleTask.self) { $0.where(\.project, equals: Link(3)) }.makeAsyncIterator()
            let first = try #require(try await iterator.next())
            #expect(first.isInitial)
            #expect(first.results.map(\.id) == tasks.filter { $0.project == Link(3) }.map(\.id))
            try await db.write { tx in
                try tx.update(OracleTask(id: 1, project: Link(3)))
                try tx.update(OracleTask(id: 2, project: Link(4)))
            }
            let next = try #require(try await iterator.next())
            let inThree = tasks.filter { $0.project == Link(3) && $0.id != 2 }.map(\.id)
            #expect(next.results.map(\.id) == [1] + inThree)
        }
    }
}
