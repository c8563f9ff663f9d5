import Foundation
import Strata

/// Shows a migration's progress: on a terminal, a bar per type and step
/// redrawn in place; otherwise a few plain lines per type and step.
final class ProgressReporter: @unchecked Sendable {
    // @unchecked: the mutable state is only touched while holding `lock`.
    private let lock = NSLock()
    private let drawsBar: Bool
    /// The last quarter (lines) or percentage (bar) shown, by type and step.
    private var lastShown: [String: Int] = [:]
    /// The type and step whose bar line has not ended yet.
    private var openBar: String?

    static let barWidth = 30

    init(drawsBar: Bool = isatty(STDOUT_FILENO) != 0) {
        self.drawsBar = drawsBar
    }

    func report(_ progress: MigrationProgress) {
        let key = "\(progress.typeName).\(progress.step)"
        lock.withLock {
            let fraction = progress.total == 0 ? 1 : min(1, Double(progress.completed) / Double(progress.total))
            let shown = drawsBar ? Int(fraction * 100) : Int(fraction * 4)
            guard lastShown[key] != shown || (drawsBar && openBar != key) else { return }
            lastShown[key] = shown
            // A plain line says how far a step got: the start is no news.
            guard drawsBar else { return shown == 0 && progress.total > 0 ? () : print("  \(progress)") }
            if openBar != key { endBar() }
            let filled = shown * Self.barWidth / 100
            print(
                "\r[\(String(repeating: "#", count: filled))\(String(repeating: ".", count: Self.barWidth - filled))] \(shown)% \(progress)",
                terminator: "")
            openBar = key
            if shown == 100 { endBar() }
            // A line without a newline stays in stdout's buffer otherwise.
            fflush(nil)
        }
    }

    /// Ends a bar that a failed migration left open.
    func finish() {
        lock.withLock { endBar() }
    }

    private func endBar() {
        if openBar != nil { print("") }
        openBar = nil
    }
}
