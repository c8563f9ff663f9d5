import Foundation
import Strata

// Two releases of one app that stores tasks with enum properties. The
// newer release added the case `archived`; the older one reads it as
// its fallback case, `open`. `StrictTask` is the older release without a
// fallback: reading `archived` is an error.

/// The older app's status: no `archived`; unknown raw values read as
/// `open`.
enum OldStatus: String, PersistableEnum {
    case open, done
    static var unknownCase: OldStatus? { .open }
}

/// The newer app's status.
enum NewStatus: String, PersistableEnum {
    case open, done, archived
}

/// The older app's status without a fallback.
enum StrictStatus: String, PersistableEnum {
    case open, done
}

/// An enum stored by `Int` raw values, with a fallback.
enum Priority: Int, PersistableEnum {
    case low = 1
    case normal = 2
    case high = 3
    static var unknownCase: Priority? { .normal }
}

@Embedded(name: "Step") struct OldStep: Equatable {
    var name: String
    var status: OldStatus = .open
}

@Embedded(name: "Step") struct NewStep: Equatable {
    var name: String
    var status: NewStatus = .open
}

@Embedded(name: "Step") struct StrictStep: Equatable {
    var name: String
    var status: StrictStatus = .open
}

@Model(name: "Task") struct OldTask: Equatable {
    @PrimaryKey var id: Int
    var title: String
    @Indexed var status: OldStatus = .open
    var previous: OldStatus?
    var history: [OldStatus] = []
    var priority: Priority = .normal
    var steps: [OldStep] = []
}

@Model(name: "Task") struct NewTask: Equatable {
    @PrimaryKey var id: Int
    var title: String
    @Indexed var status: NewStatus = .open
    var previous: NewStatus?
    var history: [NewStatus] = []
    var priority: Priority = .normal
    var steps: [NewStep] = []
}

@Model(name: "Task") struct StrictTask: Equatable {
    @PrimaryKey var id: Int
    var title: String
    @Indexed var status: StrictStatus = .open
    var previous: StrictStatus?
    var history: [StrictStatus] = []
    var priority: Priority = .normal
    var steps: [StrictStep] = []
}

enum EnumModels {
    /// A configuration of `model` for the file at `path`.
    static func configuration(
        _ path: String, _ model: any Model.Type, version: UInt64 = 1, mode: Database.Mode = .local
    ) -> Database.Configuration {
        var config = Database.Configuration(path: path, schemaVersion: version, models: [model])
        config.durability = .noSync
        config.mode = mode
        return config
    }
}

@Model struct EnumProject: Equatable {
    @PrimaryKey var id: Int
    var status: NewStatus = .open
}

/// A model that links and holds enums, indexed and in a list.
@Model struct EnumTicket: Equatable {
    @PrimaryKey var id: Int
    @Relationship(deleteRule: .cascade) var project: Link<EnumProject>?
    @Indexed var status: NewStatus
    var labels: [Priority] = []
}
