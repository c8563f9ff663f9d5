import Foundation

/// A Strata file that relays the changes of every file of a dataset it
/// syncs with: devices on one machine, tests, a desktop app's helper.
///
/// The hub declares no types of its own: every type and field it
/// receives, it learns, keeps and passes on, whatever the app versions of
/// the devices. It merges as every file does, so devices that never meet
/// converge through it.
///
/// ```swift
/// let hub = try InProcessHub(path: hubPath, dataset: dataset)
/// try hub.sync(phone)
/// try hub.sync(laptop)   // the laptop now has the phone's changes
/// ```
public final class InProcessHub: Sendable {
    /// The hub's file.
    public let database: Database

    /// Opens (or creates) the hub's file for `dataset`.
    ///
    /// - Throws: ``StrataError`` when the file exists and is not a hub of
    ///   that dataset (another dataset, a local-mode file).
    public init(path: String, dataset: UUID) throws {
        var config = Database.Configuration(path: path, schemaVersion: 1, schema: Schema([]))
        config.mode = .synced
        config.sync = .init(dataset: dataset)
        database = try Database(configuration: config)
    }

    /// Exchanges changes with `device`, both ways, until neither has
    /// anything the other lacks.
    @discardableResult
    public func sync(_ device: Database) throws -> SyncExchangeReport {
        try database.sync.exchange(with: device)
    }

    /// Closes the hub's file.
    public func close() { database.close() }
}
