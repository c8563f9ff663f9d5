import Foundation
import Strata

/// A database file as an old app version wrote it: a schema snapshot of
/// that version, and the objects to put in the file.
///
/// ```swift
/// var v1 = try MigrationFixture(snapshot: Data(contentsOf: snapshots.appendingPathComponent("v1.json")))
/// v1.add("Person", ["id": 1, "firstName": "Ada", "lastName": "Lovelace"])
/// ```
public struct MigrationFixture: Sendable {
    /// The schema and schema version the file is written with.
    public var snapshot: SchemaSnapshot
    /// The file's mode.
    public var mode: Database.Mode
    /// The objects, by type, in the order they are written.
    public private(set) var objects: [(type: String, values: [String: Value])] = []

    /// A fixture from a snapshot.
    public init(snapshot: SchemaSnapshot, mode: Database.Mode = .local) {
        self.snapshot = snapshot
        self.mode = mode
    }

    /// A fixture from a snapshot's JSON, as kept in the app's repository.
    ///
    /// - Throws: ``StrataError`` with code ``StrataError/Code/invalidSchema``
    ///   when the data is not a valid snapshot.
    public init(snapshot jsonData: Data, mode: Database.Mode = .local) throws {
        self.init(snapshot: try SchemaSnapshot(jsonData: jsonData), mode: mode)
    }

    /// A fixture from a schema and its version.
    public init(schemaVersion: UInt64, schema: Schema, mode: Database.Mode = .local) {
        self.init(snapshot: SchemaSnapshot(schemaVersion: schemaVersion, schema: schema), mode: mode)
    }

    /// A fixture at a shipped schema version, from that version's models:
    /// no snapshot needed.
    ///
    /// ```swift
    /// var v1 = MigrationFixture(version: AppV1.self)
    /// v1.add(PersonV1(id: 1, name: "Ada Lovelace", age: "36"))
    /// ```
    public init<V: VersionedSchema>(version: V.Type, mode: Database.Mode = .local) {
        self.init(schemaVersion: V.version, schema: V.schema, mode: mode)
    }

    /// Adds an object to write into the file.
    public mutating func add(_ type: String, _ values: [String: Value]) {
        objects.append((type, values))
    }

    /// Adds a model value to write into the file, under its stored type
    /// name.
    public mutating func add<M: Model>(_ object: M) {
        objects.append((M.schema.name, object.storedValues))
    }

    /// Creates the file at `path` at the snapshot's schema version, with the
    /// objects, as the old app version would have.
    ///
    /// - Throws: ``StrataError`` when the file exists, or an object does not
    ///   fit the snapshot's schema.
    public func write(to path: String) throws {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw StrataError.fileExists(path: path, role: "a fixture")
        }
        var configuration = Database.Configuration(
            path: path, schemaVersion: snapshot.schemaVersion, schema: snapshot.schema)
        configuration.mode = mode
        configuration.durability = .noSync
        let db = try Database(configuration: configuration)
        defer { db.close() }
        try db.write { tx in
            for (type, values) in objects { try tx.insert(type, values) }
        }
    }
}

/// The harness for one migration test: a temporary folder, files written
/// from fixtures, and the app's current configuration opened on them.
///
/// ```swift
/// @Test func fullNameJoinsFirstAndLastName() throws {
///     let test = try MigrationTest()
///     var v1 = MigrationFixture(schemaVersion: 1, schema: schemaV1)
///     v1.add("Person", ["id": 1, "firstName": "Ada", "lastName": "Lovelace"])
///     let db = try test.open(v1, with: AppDatabase.configuration)
///     #expect(try test.objects("Person", in: db) == [["id": 1, "fullName": "Ada Lovelace"]])
/// }
/// ```
///
/// The folder and its files are removed when the harness is released.
public final class MigrationTest {
    /// The temporary folder of the test.
    public let folder: URL
    private var count = 0

    /// Creates a temporary folder for the test, in the system's temporary
    /// directory.
    public convenience init() throws {
        try self.init(directory: FileManager.default.temporaryDirectory)
    }

    /// Creates the test's folder inside `directory`: for test suites that
    /// keep every file of a run under a folder of their own.
    ///
    /// - Parameter directory: An existing folder; the test's folder is a
    ///   new one inside it, removed when the harness is released.
    /// - Throws: When the folder cannot be created.
    public init(directory: URL) throws {
        folder = directory.appendingPathComponent("strata-migration-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// A new file path in the folder.
    public func newPath() -> String {
        count += 1
        return folder.appendingPathComponent("fixture-\(count).strata").path
    }

    /// Writes the fixture to a new file and opens it with `configuration`
    /// (its path replaced by the file's), running the migration exactly as
    /// the app would.
    ///
    /// - Returns: The opened database.
    /// - Throws: What opening throws: a refused or failed migration.
    public func open(_ fixture: MigrationFixture, with configuration: Database.Configuration) throws -> Database {
        let path = newPath()
        try fixture.write(to: path)
        var configuration = configuration
        configuration.path = path
        return try Database(configuration: configuration)
    }

    /// What opening the fixture's file with `configuration` would do,
    /// without doing it.
    public func plan(_ fixture: MigrationFixture, with configuration: Database.Configuration) throws -> MigrationPlan {
        let path = newPath()
        try fixture.write(to: path)
        var configuration = configuration
        configuration.path = path
        return try Database.migrationPlan(for: configuration)
    }

    /// Every object of a type, its values by name, in key order.
    public func objects(_ type: String, in db: Database) throws -> [[String: Value]] {
        try db.read { tx in try tx.objects(type).map(\.values) }
    }

    /// Every object of a model type, decoded, in key order.
    public func objects<M: Model>(_ type: M.Type, in db: Database) throws -> [M] {
        try db.read { tx in try tx.objects(M.self).array() }
    }

    /// The effective schema version of every object of a type, in key order.
    public func schemaVersions(_ type: String, in db: Database) throws -> [UInt64] {
        try db.read { tx in try tx.objects(type).map(\.schemaVersion) }
    }
}
