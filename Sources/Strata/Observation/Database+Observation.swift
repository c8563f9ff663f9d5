import Dispatch
import Foundation

extension Database {
    /// Observes a typed query: an asynchronous sequence whose first element
    /// holds the query's values now, followed by one element after each
    /// commit that changed them.
    ///
    /// ```swift
    /// let adults = db.observe(Person.self) { $0.where(\.age, in: 18...).sorted(by: \.name) }
    /// for try await change in adults {
    ///     show(change.results)                        // every matching person, sorted by name
    ///     print(change.insertions, change.deletions)  // positions, for a list's animations
    /// }
    /// ```
    ///
    /// `query` receives every object of the type and narrows, sorts and
    /// cuts it as in a read transaction (`where`, `filter`, `sorted`,
    /// `limit`). It runs when the observation begins, and again only if
    /// the type's table changes; its `where`s, order, limit and filters
    /// are kept for every later evaluation, so keep it free of side
    /// effects and of values that change (build a new observation for new
    /// bounds). The values come in the query's order; without
    /// `sorted(by:)`, in the order of the index a `where` walks, else in
    /// primary-key order.
    ///
    /// What each element contains, and when one comes:
    /// - The first element (``QueryChange/isInitial``) is the values when
    ///   iteration began.
    /// - A commit that wrote or deleted objects of the type, through any
    ///   `Database` of this process, is evaluated at once; another
    ///   process's commits are noticed every
    ///   ``Configuration/externalChangeCheckInterval`` and on
    ///   ``checkForExternalChanges()``. A commit that left the values as
    ///   they were (it changed other objects, or wrote the same values)
    ///   gives no element.
    /// - Elements are evaluated when the loop asks for the next one.
    ///   Commits made while the loop body runs are evaluated together and
    ///   give one element, whose change lists describe them all against
    ///   the previous element; the element always reflects the newest
    ///   commit it read, so the last state is never missed.
    ///
    /// Each loop that iterates the sequence is an observation of its own.
    /// It ends when its task is cancelled, when the loop is left, or when
    /// the database is closed (the loop then ends normally). It throws
    /// when the query throws, or with ``StrataError/Code/schemaChanged``
    /// when another `Database` changed the schema.
    ///
    /// Cost: without a `limit`, a commit that wrote k objects of the type
    /// costs O(k log n), whatever the number n of values; with a `limit`,
    /// or after another process's commit, the query runs again: O(n).
    ///
    /// - Parameters:
    ///   - model: The model type to observe.
    ///   - query: Narrows, sorts or cuts the type's objects; by default,
    ///     every object in primary-key order.
    public func observe<M: Model & Sendable>(
        _ model: M.Type, _ query: @escaping @Sendable (ObjectQuery<M>) -> ObjectQuery<M> = { $0 }
    ) -> QueryObservation<M> where M.Key: Sendable {
        QueryObservation(database: self, objects: { try $0.objects(M.self) }, query: query)
    }

    /// Observes a query of dynamic objects: as `observe(_:_:)` for a
    /// model, with each object handed over as its stored values by
    /// property name (``DynamicObject/values``) and named in the change
    /// lists by its primary key.
    ///
    /// ```swift
    /// for try await change in db.observe("Person", { $0.where("age", in: 18...).sorted(by: "name") }) {
    ///     show(change.results.map { $0["name"]?.string ?? "" })
    /// }
    /// ```
    ///
    /// A type the schema lacks, or a mistake in `query` (a property the
    /// type lacks, a value of the wrong type), makes the first iteration
    /// throw, as a model query's does.
    ///
    /// - Parameters:
    ///   - type: The stored name of the object type to observe.
    ///   - query: Narrows, sorts or cuts the type's objects; by default,
    ///     every object in primary-key order.
    public func observe(
        _ type: String,
        _ query: @escaping @Sendable (ObjectQuery<DynamicObject>) -> ObjectQuery<DynamicObject> = { $0 }
    ) -> QueryObservation<DynamicObject> {
        QueryObservation(database: self, objects: { try $0.objects(type) }, query: query)
    }

    /// Observes one object by primary key: an asynchronous sequence whose
    /// first element holds the object now (or nil), followed by one element
    /// each time a commit inserts it, changes one of its stored properties
    /// or deletes it.
    ///
    /// ```swift
    /// for try await change in db.observe(Person.self, primaryKey: 1) {
    ///     switch change.kind {
    ///     case .initial, .inserted: show(change.object)
    ///     case .modified: print("changed:", change.changedProperties)
    ///     case .deleted: dismiss()
    ///     }
    /// }
    /// ```
    ///
    /// Elements come, coalesce and end as for a query's `observe(_:_:)`. A commit
    /// of this process that writes other objects of the type costs a set
    /// lookup and a short read transaction, whatever the size of the
    /// table; one that writes no object of the type costs nothing.
    public func observe<M: Model & Sendable>(_ model: M.Type, primaryKey: M.Key) -> ObjectObservation<M>
    where M.Key: Sendable {
        ObjectObservation(database: self, primaryKey: primaryKey)
    }

    /// Looks now for commits made by other processes, and brings every
    /// running observation of the file in this process up to date with
    /// them. Call it when other processes may have written, for example
    /// when the app returns to the foreground.
    ///
    /// - Returns: Whether there were commits that the observations of the
    ///   file in this process had not seen; false while none runs.
    @discardableResult
    public func checkForExternalChanges() -> Bool {
        environment.feed.lookForOtherCommits()
    }

    /// The number of observations running on this database.
    public var observationCount: Int { observers.count }
}

/// A query's values, observed: see `Database.observe(_:_:)`, given a
/// model type or the name of a type of dynamic objects.
public struct QueryObservation<Item: QueryElement>: AsyncSequence, Sendable
where Item.Observed: Sendable, Item.ObservedKey: Sendable {
    public typealias Element = QueryChange<Item>
    public typealias Failure = any Error

    let database: Database
    let objects: @Sendable (ReadTransaction) throws -> ObjectQuery<Item>
    let query: @Sendable (ObjectQuery<Item>) -> ObjectQuery<Item>

    /// Starts an observation: every commit from now on counts.
    public func makeAsyncIterator() -> Iterator {
        let evaluator = QueryEvaluator(objects: objects, query)
        return Iterator(ObserverLifetime(Observer(database: database, evaluator: evaluator)))
    }

    /// Hands over the elements of one observation.
    public struct Iterator: AsyncIteratorProtocol {
        let lifetime: ObserverLifetime<QueryEvaluator<Item>>

        init(_ lifetime: ObserverLifetime<QueryEvaluator<Item>>) { self.lifetime = lifetime }

        /// The next element, or nil once the observation ended.
        public mutating func next() async throws -> QueryChange<Item>? {
            try await lifetime.observer.next()
        }

        /// The next element, or nil once the observation ended; awaited
        /// from `actor`'s isolation without sending the iterator across.
        @available(macOS 15.0, iOS 18.0, *)
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(any Error) -> QueryChange<Item>?
        {
            try await lifetime.observer.next()
        }
    }

    /// Calls `onChange` with each element, for code that does not use
    /// `async`: the first element, then one per relevant commit, as the
    /// sequence delivers them.
    ///
    /// ```swift
    /// token = db.observe(Person.self).subscribe(on: .main) { change in
    ///     self.people = Array(change.results)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - queue: A serial queue where `onChange` and `onError` run, in
    ///     order (a concurrent queue could run them out of order); nil: on
    ///     a task of the observation's own. With a queue, each element is
    ///     handed to it as it comes, so a busy queue does not coalesce
    ///     elements as a slow loop over the sequence does.
    ///   - onError: Called once if the observation fails; it then ends.
    ///   - onChange: Called with each element.
    /// - Returns: A token that stops the observation when it is cancelled
    ///   or released. Keep it as long as you want changes.
    public func subscribe(
        on queue: DispatchQueue? = nil, onError: (@Sendable (any Error) -> Void)? = nil,
        _ onChange: @escaping @Sendable (QueryChange<Item>) -> Void
    ) -> ObservationToken {
        ObservationToken(self, on: queue, onError: onError, onChange)
    }
}

/// One object, observed: see ``Database/observe(_:primaryKey:)``.
public struct ObjectObservation<M: Model & Sendable>: AsyncSequence, Sendable where M.Key: Sendable {
    public typealias Element = ObjectChange<M>
    public typealias Failure = any Error

    let database: Database
    let primaryKey: M.Key

    /// Starts an observation: every commit from now on counts.
    public func makeAsyncIterator() -> Iterator {
        Iterator(ObserverLifetime(Observer(database: database, evaluator: ObjectEvaluator(primaryKey: primaryKey))))
    }

    /// Hands over the elements of one observation.
    public struct Iterator: AsyncIteratorProtocol {
        let lifetime: ObserverLifetime<ObjectEvaluator<M>>

        init(_ lifetime: ObserverLifetime<ObjectEvaluator<M>>) { self.lifetime = lifetime }

        /// The next element, or nil once the observation ended.
        public mutating func next() async throws -> ObjectChange<M>? {
            try await lifetime.observer.next()
        }

        /// The next element, or nil once the observation ended; awaited
        /// from `actor`'s isolation without sending the iterator across.
        @available(macOS 15.0, iOS 18.0, *)
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(any Error) -> ObjectChange<M>? {
            try await lifetime.observer.next()
        }
    }

    /// Calls `onChange` with each element, for code that does not use
    /// `async`; see ``QueryObservation/subscribe(on:onError:_:)``.
    ///
    /// - Returns: A token that stops the observation when it is cancelled
    ///   or released.
    public func subscribe(
        on queue: DispatchQueue? = nil, onError: (@Sendable (any Error) -> Void)? = nil,
        _ onChange: @escaping @Sendable (ObjectChange<M>) -> Void
    ) -> ObservationToken {
        ObservationToken(self, on: queue, onError: onError, onChange)
    }
}

/// Keeps a callback observation running: cancelling or releasing the
/// token stops it.
///
/// Once ``cancel()`` has returned, no callback starts. A callback running
/// on another thread at that moment finishes first: `cancel()` waits for
/// it (a callback may cancel its own token without waiting).
public final class ObservationToken: Sendable {
    private let task: Task<Void, Never>
    private let delivery: Delivery

    // @unchecked: `stopped` is read and written only while holding `lock`.
    /// Runs callbacks one at a time, none after the token stops.
    private final class Delivery: @unchecked Sendable {
        /// Held across each callback; recursive, so that a callback can
        /// cancel its own token.
        let lock = NSRecursiveLock()
        var stopped = false

        func run(_ call: () -> Void) {
            lock.lock()
            defer { lock.unlock() }
            if !stopped { call() }
        }

        func stop() {
            lock.lock()
            defer { lock.unlock() }
            stopped = true
        }
    }

    init<S: AsyncSequence & Sendable>(
        _ sequence: S, on queue: DispatchQueue?, onError: (@Sendable (any Error) -> Void)?,
        _ onChange: @escaping @Sendable (S.Element) -> Void
    ) where S.Element: Sendable {
        let delivery = Delivery()
        self.delivery = delivery
        task = Task {
            func deliver(_ call: @escaping @Sendable () -> Void) {
                if let queue { queue.async { delivery.run(call) } } else { delivery.run(call) }
            }
            do {
                for try await element in sequence { deliver { onChange(element) } }
            } catch {
                if let onError { deliver { onError(error) } }
            }
        }
    }

    /// Stops the observation. Calling it again does nothing.
    public func cancel() {
        delivery.stop()
        task.cancel()
    }

    deinit { cancel() }
}
