/// A model query of the objects that link to one object: its backlinks
/// (a dynamic one is made by `ReadTransaction.objects(_:linkingTo:through:)`),
/// and the shared queries of what newer app versions wrote.
extension ObjectQuery where Element: Model {
    /// The values whose link at `keyPath` links to the object of `T` with
    /// `key`: its backlinks, walked from the property's backlinks index
    /// instead of the table (as `ReadTransaction.objects(_:linkingTo:through:)`
    /// returns them). Usable wherever a query is, `observe` included:
    ///
    /// ```swift
    /// for try await change in db.observe(Dog.self, { $0.linking(to: ada.id, through: \.owner) }) { … }
    /// ```
    public func linking<T: Model>(to key: T.Key, through keyPath: KeyPath<Element, Link<T>?>) -> ObjectQuery {
        linking(key.propertyValue, keyPath)
    }

    /// The values whose list of links at `keyPath` holds the object of `T`
    /// with `key`, each once: the backlinks of a to-many relationship.
    public func linking<T: Model>(to key: T.Key, through keyPath: KeyPath<Element, [Link<T>]>) -> ObjectQuery {
        linking(key.propertyValue, keyPath)
    }

    private func linking(_ key: Value, _ keyPath: PartialKeyPath<Element>) -> ObjectQuery {
        guard let position = Element.schema.position(of: keyPath), let field = binding.field(at: position) else {
            var copy = self
            copy.plan.fail(notStored(keyPath, "linking(to:through:)"))
            return copy
        }
        return describing { query in
            let (position, target) = try context.backlinks(of: table, through: field.name, to: key)
            query.plan.keepLinking(to: target, through: position)
        }
    }
}

extension ObjectQuery {
    /// The query, or its first mistake thrown now rather than when it runs.
    func checked() throws -> ObjectQuery {
        if let error = plan.error { throw error }
        return self
    }

    /// The query with what `describe` adds to it; a ``StrataError`` it
    /// throws is kept and thrown when the query runs.
    func describing(_ describe: (inout ObjectQuery) throws -> Void) -> ObjectQuery {
        var copy = self
        do {
            try describe(&copy)
        } catch let error as StrataError {
            copy.plan.fail(error)
        } catch {
            preconditionFailure("Describing a query throws only StrataError, not \(error)")
        }
        return copy
    }

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
    public func writtenByNewerSchema() -> ObjectQuery {
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
    public func holdingUndeclaredFields() -> ObjectQuery {
        var copy = self
        copy.plan.keepHoldingUndeclaredFields()
        return copy
    }
}
