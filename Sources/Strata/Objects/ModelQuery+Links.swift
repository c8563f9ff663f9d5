/// A query of the objects that link to one object: its backlinks.
extension ModelQuery {
    /// The values whose link at `keyPath` links to the object of `T` with
    /// `key`: its backlinks, walked from the property's backlinks index
    /// instead of the table (as `ReadTransaction.objects(_:linkingTo:through:)`
    /// returns them). Usable wherever a query is, `observe` included:
    ///
    /// ```swift
    /// for try await change in db.observe(Dog.self, { $0.linking(to: ada.id, through: \.owner) }) { … }
    /// ```
    public func linking<T: Model>(to key: T.Key, through keyPath: KeyPath<M, Link<T>?>) -> ModelQuery {
        linking(key.propertyValue, keyPath)
    }

    /// The values whose list of links at `keyPath` holds the object of `T`
    /// with `key`, each once: the backlinks of a to-many relationship.
    public func linking<T: Model>(to key: T.Key, through keyPath: KeyPath<M, [Link<T>]>) -> ModelQuery {
        linking(key.propertyValue, keyPath)
    }

    private func linking(_ key: Value, _ keyPath: PartialKeyPath<M>) -> ModelQuery {
        var copy = self
        guard let position = M.schema.position(of: keyPath), let field = binding.field(at: position) else {
            copy.plan.fail(notStored(keyPath, "linking(to:through:)"))
            return copy
        }
        do {
            let (position, target) = try context.backlinks(of: binding.table, through: field.name, to: key)
            copy.plan.keepLinking(to: target, through: position)
        } catch let error as StrataError {
            copy.plan.fail(error)
        } catch {
            preconditionFailure("ObjectContext.backlinks throws only StrataError")
        }
        return copy
    }

    /// The query, or its first mistake thrown now rather than when it runs.
    func checked() throws -> ModelQuery {
        if let error = plan.error { throw error }
        return self
    }
}

extension ModelQuery {
    /// The objects a newer app version wrote last: those whose effective
    /// schema version is above this app's. In a synced file shared with
    /// newer devices, they may hold properties this app does not declare
    /// (kept, and read by the newer app), which this app's writes keep.
    ///
    /// ```swift
    /// let fromNewerApps = try tx.objects(Note.self).writtenByNewerSchema().count
    /// ```
    ///
    /// The same as `whereSchemaVersion((appVersion + 1)...)`; it can be
    /// observed like any query.
    public func writtenByNewerSchema() -> ModelQuery {
        whereSchemaVersion((context.engine.writingSchemaVersion + 1)...)
    }

    /// The values whose objects hold a value for a property this app does
    /// not declare, at any nesting level: one a newer app version added,
    /// written to this file or, in a sync-enabled file, learned from a
    /// peer and kept. This app's own edits keep such values, so an object
    /// it rewrote is still listed (``writtenByNewerSchema()`` lists it no
    /// longer). The empty value this app stores for a kept property of an
    /// object it makes does not count.
    ///
    /// ```swift
    /// let holding = try tx.objects(Note.self).holdingUndeclaredFields().map(\.id)
    /// ```
    ///
    /// Each record's fields are read; it can be observed like any query.
    public func holdingUndeclaredFields() -> ModelQuery {
        var copy = self
        copy.plan.keepHoldingUndeclaredFields()
        return copy
    }
}

extension ObjectCollection {
    /// The objects a newer app version wrote last: those whose effective
    /// schema version is above this app's (see
    /// ``ModelQuery/writtenByNewerSchema()``).
    public func writtenByNewerSchema() -> ObjectCollection {
        whereSchemaVersion((context.engine.writingSchemaVersion + 1)...)
    }
}
