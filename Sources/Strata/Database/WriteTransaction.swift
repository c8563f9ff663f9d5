/// A write transaction: reads see its own writes, and everything it writes
/// is committed together when the closure of ``Database/write(_:)-8anng``
/// returns, or discarded when it throws.
///
/// Every write checks its values against the schema first: an unknown
/// property, a value of the wrong type, or a missing required value throws
/// a ``StrataError`` naming the type and property, and writes nothing.
///
/// ```swift
/// try db.write { tx in
///     try tx.insert("Person", ["id": 1, "firstName": "Ada", "lastName": "Lovelace"])
///     try tx.update("Person", key: 1, ["age": 36])
///     try tx.delete("Person", key: 2)
/// }
/// ```
public final class WriteTransaction: ReadTransaction {
    /// Inserts a new object.
    ///
    /// Properties not given take their default (see ``Property/defaultValue``),
    /// or null when optional; a required property without a default must be
    /// given. Objects of a type without a primary key get the next automatic id.
    ///
    /// - Parameters:
    ///   - type: The object type's name.
    ///   - values: Property values by name.
    /// - Returns: The new object's primary key, or its automatic id.
    /// - Throws: ``StrataError``: ``StrataError/Code/duplicatePrimaryKey``
    ///   when an object with the same primary key exists, or an invalid value.
    @discardableResult
    public func insert(_ type: String, _ values: [String: Value]) throws -> Value {
        try context.insert(type, values)
    }

    /// Inserts an object, or replaces every property of the object with the
    /// same primary key. Properties not given take their defaults, as in
    /// ``insert(_:_:)``. For a type without a primary key, this inserts.
    ///
    /// - Returns: The object's primary key, or its automatic id.
    /// - Throws: ``StrataError`` for an invalid value.
    @discardableResult
    public func upsert(_ type: String, _ values: [String: Value]) throws -> Value {
        try context.upsert(type, values)
    }

    /// Changes some properties of an existing object, keeping the others.
    ///
    /// - Parameters:
    ///   - type: The object type's name.
    ///   - key: The object's primary key or automatic id.
    ///   - changes: The new values, by property name.
    /// - Throws: ``StrataError``: ``StrataError/Code/objectNotFound`` when
    ///   there is no such object, or an invalid value (a primary key cannot
    ///   be changed).
    public func update(_ type: String, key: Value, _ changes: [String: Value]) throws {
        try context.update(type, key: key, changes)
    }

    /// Deletes an object.
    ///
    /// - Returns: Whether there was an object to delete.
    @discardableResult
    public func delete(_ type: String, key: Value) throws -> Bool {
        try context.delete(type, key: key)
    }

    /// Deletes every object of a type, keeping the type in the schema.
    public func deleteAll(_ type: String) throws {
        try context.deleteAll(type)
    }
}

extension WriteTransaction {
    /// Inserts a model value as a new object.
    ///
    /// ```swift
    /// try db.write { tx in try tx.insert(Person(id: 1, name: "Ada")) }
    /// ```
    ///
    /// - Returns: The object's primary key, or its automatic id for a model
    ///   without a primary key.
    /// - Throws: ``StrataError``: ``StrataError/Code/duplicatePrimaryKey``
    ///   when an object with the same primary key exists, or a model that
    ///   does not match the file's type.
    @discardableResult
    public func insert<M: Model>(_ object: M) throws -> M.Key {
        try context.insert(object)
    }

    /// Inserts a model value, or replaces every stored property of the
    /// object with the same primary key.
    ///
    /// - Returns: The object's primary key (its automatic id for a model
    ///   without a primary key, which always inserts).
    @discardableResult
    public func upsert<M: Model>(_ object: M) throws -> M.Key {
        try context.replace(object, requireExisting: false)
    }

    /// Replaces every stored property of the existing object with
    /// `object`'s primary key.
    ///
    /// - Throws: ``StrataError``: ``StrataError/Code/objectNotFound`` when
    ///   there is no such object, or ``StrataError/Code/invalidValue`` for a
    ///   model without a primary key.
    public func update<M: Model>(_ object: M) throws {
        _ = try context.replace(object, requireExisting: true)
    }

    /// Deletes the stored object with `object`'s primary key.
    ///
    /// - Returns: Whether there was an object to delete.
    /// - Throws: ``StrataError`` for a model without a primary key: delete
    ///   its objects by id with ``delete(_:primaryKey:)``.
    @discardableResult
    public func delete<M: Model>(_ object: M) throws -> Bool {
        try context.delete(object)
    }

    /// Deletes the object of model type `M` with `primaryKey` (or
    /// automatic id).
    ///
    /// - Returns: Whether there was an object to delete.
    @discardableResult
    public func delete<M: Model>(_ type: M.Type, primaryKey: M.Key) throws -> Bool {
        try context.delete(M.self, primaryKey: primaryKey)
    }

    /// Deletes every object of model type `M`.
    public func deleteAll<M: Model>(_ type: M.Type) throws {
        try context.deleteAll(M.schema.name)
    }
}
