import Foundation

/// Measures elapsed time for log messages.
struct Stopwatch {
    private let start = DispatchTime.now().uptimeNanoseconds

    /// Milliseconds since the stopwatch was made, with one decimal.
    var milliseconds: String {
        String(format: "%.1f", Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
    }
}
