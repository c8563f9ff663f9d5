/// What a migration closure works with: the old and new schemas, the
/// objects, and the operations that carry data from one to the other.
///
/// The closure runs once per open that raises the schema version, however
/// many versions the jump spans, inside the one write transaction that
/// migrates the file. Additive changes are already applied when it runs;
/// removed properties disappear after it returns. If it throws, nothing is
/// written and the file stays at its old version.
///
/// ```swift
/// config.migration = { migration, oldVersion in
///     if oldVersion < 2 {
///         try migration.enumerateObjects(ofType: "Person") { old, new in
///             let first = old!["firstName"].string!, last = old!["lastName"].string!
///             new?["fullName"] = .string("\(first) \(last)")
///         }
///     }
///     if oldVersion < 3 {
///         try migration.renameProperty(onType: "Person", from: "yob", to: "birthYear")
///     }
/// }
/// ```
///
/// A `Migration` is valid only while the closure runs.
public final class Migration {
    /// The schema the file had before the migration.
    public let oldSchema: Schema
    /// The schema the file has after it.
    public let newSchema: Schema
    /// The file's schema version before the migration.
    public let oldSchemaVersion: UInt64
    /// The schema version the migration moves the file to.
    public let newSchemaVersion: UInt64
    private var runner: MigrationRunner?

    init(
        runner: MigrationRunner, oldSchema: Schema, newSchema: Schema, oldSchemaVersion: UInt64,
        newSchemaVersion: UInt64
    ) {
        self.runner = runner
        self.oldSchema = oldSchema
        self.newSchema = newSchema
        self.oldSchemaVersion = oldSchemaVersion
        self.newSchemaVersion = newSchemaVersion
    }

    /// Ends the migration: later calls stop the program.
    func invalidate() { runner = nil }

    private var active: MigrationRunner {
        guard let runner else {
            preconditionFailure("A Migration was used after its migration closure returned.")
        }
        return runner
    }

    /// The runner, for the typed steps that run on this migration.
    var activeRunner: MigrationRunner { active }

    /// Calls `body` once for each object of a type: `old` as it was before
    /// the migration, read-only, through the old schema; `new` writable,
    /// through the new schema.
    ///
    /// `old` is nil for a type new in this version (only objects created by
    /// ``create(_:value:)`` are visited); `new` is nil for a type the new
    /// schema removed, and for an object deleted earlier in the migration.
    /// The walk streams through the stored objects in key order: memory use
    /// does not grow with their number. What `body` sets on `new` is written
    /// when it returns, stamped with the new schema version; an object whose
    /// `new` side `body` leaves alone is not rewritten (unless the type's
    /// keys or value types changed, which rewrites them all).
    ///
    /// - Parameters:
    ///   - typeName: A type of the new schema, or of the old schema (a
    ///     removed type, or the old name of a renamed one).
    ///   - body: Called with each object.
    /// - Throws: What `body` throws, or a ``StrataError``: an unknown type,
    ///   an invalid value set on `new`, a damaged record. The migration then
    ///   fails and nothing is written.
    public func enumerateObjects(
        ofType typeName: String, _ body: (_ old: DynamicObject?, _ new: MutableObject?) throws -> Void
    ) throws {
        try active.enumerate(typeName, body)
    }

    /// Creates an object of a type of the new schema.
    ///
    /// - Returns: The object's primary key, or its automatic id.
    /// - Throws: ``StrataError`` for an unknown type, an invalid or missing
    ///   value, or a primary key that another object already has.
    @discardableResult
    public func create(_ typeName: String, value: [String: Value]) throws -> Value {
        try active.create(typeName, value)
    }

    /// Deletes the object that `enumerateObjects` handed to the closure: it
    /// is not written back, and is gone after the migration.
    public func delete(_ object: MutableObject) {
        _ = active
        object.markDeleted()
    }

    /// The object that the to-one link `property` of an `old` object links
    /// to, as it was before the migration, read through the old schema; nil
    /// when the link is null.
    ///
    /// ```swift
    /// try migration.enumerateObjects(ofType: "Dog") { old, new in
    ///     let owner = try migration.oldObject(linkedFrom: old!, through: "owner")
    ///     new?["ownerName"] = owner?["name"] ?? ""
    /// }
    /// ```
    ///
    /// - Throws: ``StrataError`` when `property` is not a to-one link of the
    ///   old schema's type.
    public func oldObject(linkedFrom object: DynamicObject, through property: String) throws -> DynamicObject? {
        try active.oldObject(linkedFrom: object, through: property)
    }

    /// The object that the to-one link `property` of a `new` object links
    /// to, in the new schema, as the migration has left it so far: with the
    /// values an earlier enumeration set, and nil for an object it deleted.
    /// A link to a type whose primary keys change in this migration holds
    /// the target's old key until the migration ends, when every link
    /// follows its target to its new key: resolve those through
    /// ``oldObject(linkedFrom:through:)``.
    ///
    /// - Throws: ``StrataError`` when `property` is not a to-one link of the
    ///   new schema's type.
    public func newObject(linkedFrom object: MutableObject, through property: String) throws -> DynamicObject? {
        try active.newObject(linkedFrom: object, through: property)
    }

    /// Chooses how this migration makes the type `typeName` embedded, when
    /// the new schema declares it embedded and the old one had it
    /// top-level: what happens to objects no other object linked to, and
    /// to objects several objects linked to. Without it, either kind of
    /// object fails the migration, and the error lists them.
    ///
    /// The conversion itself needs no code: each link of a property that
    /// the new schema declares embedded (under the same name) becomes a
    /// copy of the object it linked to, and the type's table goes.
    ///
    /// ```swift
    /// try migration.setEmbeddingPolicy(.init(orphans: .delete, sharedObjects: .copyPerParent), forType: "Address")
    /// ```
    ///
    /// - Throws: ``StrataError`` when the new schema has no embedded type
    ///   `typeName` that was top-level before.
    public func setEmbeddingPolicy(_ policy: EmbeddingPolicy, forType typeName: String) throws {
        try active.setEmbeddingPolicy(policy, forType: typeName)
    }

    /// Deletes every object of a type that the new schema no longer has,
    /// with its indexes, and forgets the type. Without this, the objects of
    /// a removed type stay in the file, ignored.
    ///
    /// Other types' links to the deleted objects follow their properties'
    /// delete rules, as they were in the old schema: an object that linked
    /// to one under a cascade rule is deleted too, and a deny rule makes
    /// the call fail, naming the objects. (Links under nullify went with
    /// their properties: the new schema cannot link to a type it lacks.)
    ///
    /// - Returns: Whether the file had objects (or a table) of that type.
    /// - Throws: ``StrataError`` when the new schema still has the type, or
    ///   a deny rule refuses.
    @discardableResult
    public func deleteData(forType typeName: String) throws -> Bool {
        try active.deleteData(typeName)
    }

    /// Renames a property, keeping its values: a catalog change that
    /// rewrites no record.
    ///
    /// `oldName` must be a property of the type before the migration that
    /// the new schema no longer has, and `newName` a property of the new
    /// schema with the same type and optionality that did not exist before.
    /// For a file that skips versions, chain the renames of each version in
    /// order (`a` → `b`, then `b` → `c`): an intermediate name need not be
    /// in the new schema, as long as a later rename moves it on. Call it
    /// between enumerations, not inside one; after an enumeration of the
    /// type, the objects it rewrote get the source's values too.
    ///
    /// - Parameters:
    ///   - typeName: The type's name in this migration: new, old, or
    ///     one in the middle of a chain of type renames.
    ///   - oldName: The property's name before the rename.
    ///   - newName: Its name after.
    /// - Throws: ``StrataError`` with code ``StrataError/Code/migrationFailed``
    ///   when one of the rules above is broken.
    public func renameProperty(onType typeName: String, from oldName: String, to newName: String) throws {
        try active.renameProperty(onType: typeName, from: oldName, to: newName)
    }

    /// Renames an object type, keeping its objects: a catalog change that
    /// rewrites no record.
    ///
    /// `oldName` must be a type of the old schema that the new schema no
    /// longer has, and `newName` a type of the new schema that the old one
    /// did not have. Properties are matched by name, as in any migration.
    /// Renames chain like ``renameProperty(onType:from:to:)``. Call it before
    /// creating or enumerating objects of either type.
    ///
    /// - Throws: ``StrataError`` with code ``StrataError/Code/migrationFailed``
    ///   when one of the rules above is broken.
    public func renameType(from oldName: String, to newName: String) throws {
        try active.renameType(from: oldName, to: newName)
    }
}

@available(*, unavailable, message: "A Migration is valid only inside its migration closure.")
extension Migration: Sendable {}

/// How far a migration has got, reported to ``Database/Configuration/progress``.
public struct MigrationProgress: Sendable, Hashable, CustomStringConvertible {
    /// What the migration is doing.
    public enum Step: String, Sendable, Hashable {
        /// Walking a type's objects, for the migration closure or to
        /// rewrite records whose keys or value types changed.
        case migratingObjects
        /// Building an index.
        case buildingIndex
    }

    /// The object type being worked on.
    public var typeName: String
    /// What is being done to it.
    public var step: Step
    /// Objects done so far.
    public var completed: Int
    /// Objects to do in all.
    public var total: Int

    /// The fraction done, from 0 to 1.
    public var fractionCompleted: Double { total == 0 ? 1 : Double(completed) / Double(total) }

    /// E.g. `Person: migrating objects, 5000 of 10000`.
    public var description: String {
        let doing =
            switch step {
            case .migratingObjects: "migrating objects"
            case .buildingIndex: "building an index"
            }
        return "\(typeName): \(doing), \(completed) of \(total)"
    }
}
