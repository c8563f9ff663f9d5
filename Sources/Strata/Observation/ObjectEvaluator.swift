/// Evaluates an observed object: reads it again when a commit wrote its
/// key (or when what a commit wrote is unknown), and names the stored
/// properties whose values changed. O(1) in the size of the table.
struct ObjectEvaluator<M: Model & Sendable>: ObservationEvaluator where M.Key: Sendable {
    let primaryKey: M.Key
    private var key: [UInt8] = []
    private var current: M?
    private var type: TypeID?

    init(primaryKey: M.Key) {
        self.primaryKey = primaryKey
    }

    mutating func initial(in transaction: ReadTransaction) throws -> (ObjectChange<M>, TypeID) {
        let query = try transaction.objects(M.self)
        key = try query.encodedKey(primaryKey)
        current = try query.matchingObject(key: key)?.observed
        type = query.observedTypeID
        let change = ObjectChange(
            kind: .initial, object: current, changedProperties: [], transactionID: transaction.context.lmdb.id)
        return (change, query.observedTypeID)
    }

    mutating func update(in transaction: ReadTransaction, changes: CommittedChanges?) throws -> ObjectChange<M>? {
        let query = try transaction.objects(M.self)
        guard let type, query.observedTypeID == type else {
            throw StrataError.observedTypeReplaced("\(M.self)", path: transaction.context.path)
        }
        if let changes, !changes.wasEmptied(type), changes.keys(of: type)?.contains(key) != true { return nil }
        let now = try query.matchingObject(key: key)?.observed
        defer { current = now }
        let id = transaction.context.lmdb.id
        // `if let`s, not a `switch` over the pair: a tuple of the model's
        // optionals costs a tuple-metadata lookup per update.
        guard let now else {
            return current == nil
                ? nil : ObjectChange(kind: .deleted, object: nil, changedProperties: [], transactionID: id)
        }
        guard let before = current else {
            return ObjectChange(kind: .inserted, object: now, changedProperties: [], transactionID: id)
        }
        let changed = changedNames(query.propertyNames, query.storedValues(of: before), query.storedValues(of: now))
        guard !changed.isEmpty else { return nil }
        return ObjectChange(kind: .modified, object: now, changedProperties: changed, transactionID: id)
    }
}

/// The names of the properties whose stored values differ between `old`
/// and `new`, in order. Not generic, so that it runs as compiled code
/// rather than through the metadata of the tuples of a generic `zip`.
private func changedNames(_ names: [String], _ old: [Value], _ new: [Value]) -> [String] {
    var changed: [String] = []
    for index in 0 ..< min(names.count, old.count, new.count) where !old[index].isStored(identicallyTo: new[index]) {
        changed.append(names[index])
    }
    return changed
}
