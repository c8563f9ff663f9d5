import Foundation

/// Runs blocking work on a Dispatch thread and waits for it without
/// holding a thread of Swift's cooperative pool, which has one thread per
/// core and which every other test's tasks share. Record issues after it
/// returns, in the test's task: `work` runs outside it.
func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}

/// Collects values handed to @Sendable callbacks.
final class Recorder<T: Sendable>: @unchecked Sendable {
    // @unchecked: `items` is only touched while holding `lock`.
    private let lock = NSLock()
    private var items: [T] = []
    func append(_ item: T) { lock.withLock { items.append(item) } }
    var all: [T] { lock.withLock { items } }
}

/// A counter shared between threads.
final class Counter: @unchecked Sendable {
    // @unchecked: `count` is only touched while holding `lock`.
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// A flag set once by one thread and read by others.
final class Flag: @unchecked Sendable {
    // @unchecked: `set` is only touched while holding `lock`.
    private let lock = NSLock()
    private var flag = false
    func set() { lock.withLock { flag = true } }
    var isSet: Bool { lock.withLock { flag } }
}

/// Runs blocking work on a thread of its own and waits for it: for work
/// that must go on while exit tests block every thread of the cooperative
/// pool and of Dispatch (an exit test reads its child's output on the
/// thread that awaits it), such as the work that ends those children.
func onItsOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
