/// A read transaction: a consistent snapshot of the database.
///
/// Reachable only inside ``Database/read(_:)-5ewn1`` (and
/// as the base of ``WriteTransaction``); valid only during that closure.
/// Not thread-safe: use it on the thread that runs the closure.
public class ReadTransaction {
    @usableFromInline let context: ObjectContext

    init(context: ObjectContext) {
        self.context = context
    }

    /// The schema version the app opened the file with
    /// (``Database/Configuration/schemaVersion``): objects written in this
    /// transaction are stamped with it. In local mode it is the file's
    /// version; in synced mode a newer app version may have raised the
    /// file's (see ``Database/fileSchemaVersion``).
    public var appSchemaVersion: UInt64 { context.writingSchemaVersion }

    /// The schema version the app opened the file with.
    @available(*, deprecated, renamed: "appSchemaVersion")
    public var schemaVersion: UInt64 { appSchemaVersion }

    /// The schema of an object type as this transaction reads it: for a
    /// database opened with ``Database/init(inspecting:readOnly:)``, also a
    /// type the file keeps without its schema naming it.
    ///
    /// - Throws: ``StrataError`` with code ``StrataError/Code/unknownObjectType``.
    public func objectSchema(_ type: String) throws -> ObjectSchema {
        try context.table(type).type.objectSchema
    }

    /// The names of the object types, sorted.
    public var typeNames: [String] { context.tables.keys.sorted() }

    /// All objects of a type, lazily, in primary-key order, as dynamic
    /// objects: a query to narrow, sort and cut by property name.
    ///
    /// - Parameter type: The object type's name.
    /// - Throws: ``StrataError`` with code ``StrataError/Code/unknownObjectType``
    ///   when the schema has no such type.
    public func objects(_ type: String) throws -> ObjectQuery<DynamicObject> {
        ObjectQuery(context: context, table: try context.table(type), binding: nil)
    }

    /// The object with the given primary key (or automatic id), or nil when
    /// there is none.
    ///
    /// - Parameters:
    ///   - type: The object type's name.
    ///   - key: The primary key value.
    /// - Throws: ``StrataError`` for an unknown type, a key of the wrong
    ///   type, or a damaged record.
    public func object(_ type: String, key: Value) throws -> DynamicObject? {
        try context.object(type, key: key)
    }

    /// The objects of `type` whose link property `property` (a link, or a
    /// list of links) links to the object with key `key`: its backlinks,
    /// in key order, each once, as a lazy collection. Answered from the
    /// property's backlinks index: `count` and `isEmpty` read no object,
    /// and `where`, `filter`, `sorted`, `offset` and `limit` narrow and
    /// order those objects alone, whatever the size of the table.
    ///
    /// ```swift
    /// let dogs = try tx.objects("Dog", linkingTo: 1, through: "owner").sorted(by: "name").array()
    /// let howMany = try tx.objects("Dog", linkingTo: 1, through: "owner").count
    /// ```
    ///
    /// The same as `objects(type).linking(to: key, through: property)`,
    /// except that it throws its mistakes now rather than when it runs.
    ///
    /// - Throws: ``StrataError`` for an unknown type or property, a
    ///   property that is not a link, or a key of the wrong type.
    public func objects(_ type: String, linkingTo key: Value, through property: String) throws
        -> ObjectQuery<DynamicObject>
    {
        try objects(type).linking(to: key, through: property).checked()
    }

    /// The object that the to-one link `property` of `object` links to,
    /// or nil when the link is null.
    ///
    /// - Throws: ``StrataError`` when `property` is not a to-one link.
    public func object(linkedFrom object: DynamicObject, through property: String) throws -> DynamicObject? {
        try context.linkedObject(object, property)
    }
}

extension ReadTransaction {
    /// The object of model type `M` with `primaryKey` (or automatic id),
    /// decoded, or nil when there is none.
    ///
    /// ```swift
    /// let ada = try db.read { tx in try tx.object(Person.self, primaryKey: 1) }
    /// ```
    ///
    /// - Throws: ``StrataError`` when the schema has no type of the model's
    ///   stored name, the model does not match it, or the record is damaged
    ///   or holds a value the model cannot hold.
    @inlinable
    public func object<M: Model>(_ type: M.Type, primaryKey: M.Key) throws -> M? {
        try decodeObject(M.self, primaryKey: primaryKey.propertyValue)
    }

    /// The effective schema version of the stored object of `M` with
    /// `primaryKey` — the version of the app that last wrote it — or nil
    /// when there is none. In synced mode, a version above
    /// ``appSchemaVersion`` means a newer app wrote it.
    ///
    /// ```swift
    /// let writtenBy = try tx.schemaVersion(of: Person.self, primaryKey: 1)
    /// ```
    public func schemaVersion<M: Model>(of type: M.Type, primaryKey: M.Key) throws -> UInt64? {
        var version: UInt64?
        _ = try context.decodeObject(M.self, primaryKey: primaryKey.propertyValue) { version = $0.schemaVersion }
        return version
    }

    /// Every object of model type `M`, lazily, in primary-key order.
    ///
    /// - Throws: ``StrataError`` when the schema has no type of the model's
    ///   stored name, or the model does not match it.
    public func objects<M: Model>(_ type: M.Type) throws -> ObjectQuery<M> {
        let binding = try context.binding(M.self)
        return ObjectQuery(context: context, table: binding.table, binding: binding)
    }

    /// The object `link` links to, decoded, or nil when it no longer
    /// exists (never after a committed write: links to deleted objects are
    /// nullified, cascaded or refused).
    ///
    /// ```swift
    /// let owner = try tx.object(rex.owner!)
    /// ```
    @inlinable
    public func object<M: Model>(_ link: Link<M>) throws -> M? {
        try decodeObject(M.self, primaryKey: link.key.propertyValue)
    }

    /// The stored object of `M` with `key`, decoded here, in the app's
    /// module when inlined: the model's `init(from:)` runs specialized.
    @inlinable
    func decodeObject<M: Model>(_ type: M.Type, primaryKey key: Value) throws -> M? {
        var found: M?
        _ = try context.decodeObject(M.self, primaryKey: key) { found = try M(from: &$0) }
        return found
    }

    /// The objects of model type `M` whose link at `keyPath` links to the
    /// object of `T` with `key`: its backlinks, in key order, as a lazy
    /// query, as Realm's `LinkingObjects`. Answered from the property's
    /// backlinks index: `count` and `isEmpty` decode nothing and read no
    /// record, and `where`, `filter`, `sorted`, `offset` and `limit`
    /// narrow and order those objects alone, whatever the size of the
    /// table.
    ///
    /// ```swift
    /// let dogs = try tx.objects(Dog.self, linkingTo: ada.id, through: \.owner)
    /// let count = try dogs.count
    /// let puppies = try dogs.where(\.age, in: 0 ..< 1).sorted(by: \.name).array()
    /// ```
    ///
    /// - Throws: ``StrataError`` when `keyPath` is not a stored property
    ///   of `M`, or a model does not match the file.
    public func objects<M: Model, T: Model>(
        _ type: M.Type, linkingTo key: T.Key, through keyPath: KeyPath<M, Link<T>?>
    ) throws -> ObjectQuery<M> {
        try objects(M.self).linking(to: key, through: keyPath).checked()
    }

    /// The objects of model type `M` whose list of links at `keyPath`
    /// holds the object of `T` with `key`, in key order, each once, as a
    /// lazy query: the backlinks of a to-many relationship (see the to-one
    /// form above).
    public func objects<M: Model, T: Model>(
        _ type: M.Type, linkingTo key: T.Key, through keyPath: KeyPath<M, [Link<T>]>
    ) throws -> ObjectQuery<M> {
        try objects(M.self).linking(to: key, through: keyPath).checked()
    }
}

@available(*, unavailable, message: "A transaction is valid only on the thread that runs its closure.")
extension ReadTransaction: Sendable {}
