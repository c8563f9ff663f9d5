import Foundation
import Strata

/// What one latency scenario measured, in nanoseconds.
struct LatencyResult {
    /// From starting the observation to its first element.
    var initial: UInt64
    /// Per write: from just before the write (its commit included) to the
    /// moment the last consumer received its element.
    var fromWrite: [UInt64] = []
    /// Per write: from the write's return to the same moment (0 when the
    /// element came first).
    var fromReturn: [UInt64] = []
}

/// A consumer of one observation: its own task, recording each element's
/// arrival.
func consume<S: AsyncSequence & Sendable>(_ sequence: S, _ arrivals: Arrivals) -> Task<Void, Never>
where S.Element: Sendable {
    let consumer = arrivals.newConsumer()
    return Task {
        do {
            for try await _ in sequence { arrivals.arrive(consumer) }
        } catch {
            fatalError("observation failed: \(error)")
        }
    }
}

/// Starts the consumers `start` makes (one observation each), waits for
/// their first elements, then per round runs `prepare` (not timed), lets
/// every consumer wait again, and times `trigger` until every consumer
/// received its element. The first `warmup` rounds are not kept.
func measure(
    rounds: Int, warmup: Int = 10, prepare: (Int) throws -> Void = { _ in },
    start: (Arrivals) -> [Task<Void, Never>], trigger: (Int) throws -> Void
) async throws -> LatencyResult {
    let arrivals = Arrivals()
    let begin = now()
    let tasks = start(arrivals)
    defer { for task in tasks { task.cancel() } }
    let initial = await arrivals.wait(for: tasks.count).max()! - begin
    var result = LatencyResult(initial: initial)
    for round in 0 ..< warmup + rounds {
        try prepare(round)
        try await settle()
        arrivals.reset()
        let before = now()
        try trigger(round)
        let returned = now()
        let last = await arrivals.wait(for: tasks.count).max()!
        if round >= warmup {
            result.fromWrite.append(last - before)
            // The element can arrive before the write returns to its caller.
            result.fromReturn.append(last > returned ? last - returned : 0)
        }
    }
    return result
}

/// A one-object update of `id`: a new score, the same rank (nil) or a new
/// one.
func update(_ db: Database, id: Int, of n: Int, score: Int, rank: Int? = nil) throws {
    var item = Item(id, of: n)
    item.score = score
    if let rank { item.rank = rank }
    try db.write { tx in try tx.update(item) }
}
