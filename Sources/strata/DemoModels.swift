import Strata

/// The models of the demo's two app versions. Each shipped version keeps its
/// own Swift type; all of them store their objects as "Person".
enum DemoModels {
    /// Version 1 of the app.
    @Model(name: "Person")
    struct PersonV1 {
        @PrimaryKey var id: Int
        var firstName: String
        var lastName: String
        @Indexed var age: Int = 0
        var email: String?
    }

    /// Version 2: firstName + lastName become fullName, and `status` is new,
    /// with a default that the objects stored by version 1 read.
    @Model(name: "Person")
    struct PersonV2 {
        @PrimaryKey var id: Int
        var fullName: String
        @Indexed var age: Int = 0
        var email: String?
        var status: String = "active"
    }

    /// A version 2 for a file shared with older app versions (synced mode):
    /// additive only. `lastName` is left out and stays in the file for them;
    /// `status` is added.
    @Model(name: "Person")
    struct PersonSyncedV2 {
        @PrimaryKey var id: Int
        var firstName: String
        @Indexed var age: Int = 0
        var email: String?
        var status: String = "active"
    }

    enum AppV1: VersionedSchema {
        static let version: UInt64 = 1
        static let models: [any Model.Type] = [PersonV1.self]
    }

    enum AppV2: VersionedSchema {
        static let version: UInt64 = 2
        static let models: [any Model.Type] = [PersonV2.self]
    }

    /// A project that people work on, for the relationships story.
    @Model(name: "Project")
    struct Project {
        @PrimaryKey var id: Int
        var name: String
    }

    /// A task belongs to a project: deleting the project deletes its tasks
    /// (cascade), and deleting the person it is assigned to leaves it
    /// unassigned (nullify, the default rule).
    @Model(name: "Task")
    struct Task {
        @PrimaryKey var id: Int
        var title: String
        @Relationship(deleteRule: .cascade) var project: Link<Project>?
        var assignee: Link<PersonV2>?
    }

    /// The step from version 1 to 2, typed on both sides.
    static let fullNames = MigrationStep.step(from: AppV1.self, to: AppV2.self) {
        $0.map(PersonV1.self, to: PersonV2.self) { old in
            PersonV2(id: old.id, fullName: "\(old.firstName) \(old.lastName)", age: old.age, email: old.email)
        }
    }
}
