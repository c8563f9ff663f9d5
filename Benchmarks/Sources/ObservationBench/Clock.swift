import Foundation

/// Nanoseconds on the monotonic clock.
@inline(__always) func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Collects the moment each consumer first received an element since the
/// last ``reset()``, and wakes the writer once every expected consumer
/// did. A consumer's later elements before the reset are ignored.
// @unchecked: every stored property is read and written only while holding `lock`.
final class Arrivals: @unchecked Sendable {
    private let lock = NSLock()
    private var times: [Int: UInt64] = [:]
    private var expected = Int.max
    private var waiter: CheckedContinuation<[UInt64], Never>?
    private var consumers = 0

    /// A number for a new consumer.
    func newConsumer() -> Int {
        lock.withLock {
            defer { consumers += 1 }
            return consumers
        }
    }

    /// Records that `consumer` received an element now.
    func arrive(_ consumer: Int) {
        let time = now()
        let ready: (CheckedContinuation<[UInt64], Never>, [UInt64])? = lock.withLock {
            if times[consumer] == nil { times[consumer] = time }
            guard times.count >= expected, let waiting = waiter else { return nil }
            waiter = nil
            return (waiting, Array(times.values))
        }
        if let (waiting, times) = ready { waiting.resume(returning: times) }
    }

    /// Forgets the arrivals so far.
    func reset() { lock.withLock { times = [:] } }

    /// Waits until `count` consumers received an element since the last
    /// reset, and returns their first arrival times.
    func wait(for count: Int) async -> [UInt64] {
        await withCheckedContinuation { continuation in
            let ready: [UInt64]? = lock.withLock {
                if times.count >= count { return Array(times.values) }
                expected = count
                waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// Median, 90th percentile and the extremes of samples, in microseconds.
struct Summary: CustomStringConvertible {
    let median: Double
    let p90: Double
    let min: Double
    let max: Double
    let count: Int

    init(nanoseconds samples: [UInt64]) {
        let sorted = samples.sorted()
        func at(_ fraction: Double) -> Double {
            Double(sorted[Swift.min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction))]) / 1000
        }
        median = at(0.5)
        p90 = at(0.9)
        min = at(0)
        max = at(1)
        count = sorted.count
    }

    var description: String {
        String(format: "median %8.1f µs  p90 %8.1f µs  (min %.1f, max %.1f, n=%d)", median, p90, min, max, count)
    }
}

/// Lets the consumers that just received an element call `next()` again
/// before the next write.
func settle() async throws { try await Task.sleep(for: .milliseconds(2)) }
