import Foundation
import Scenarios

/// The peak memory of one trial's timed part, measured in a child process of
/// its own: anonymous memory (heap, stacks) and file-backed pages (LMDB's
/// map, SQLite's cache is anonymous), each the maximum over samples of
/// `/proc/<pid>/smaps_rollup`, and the kernel's exact peak of the whole
/// resident set (`VmHWM`, reset when the timed part begins).
struct MemoryPeak {
    var anonymousKB = 0
    var fileBackedKB = 0
    /// VmHWM: the peak resident set the kernel recorded during the run.
    var residentKB = 0
    /// Anonymous and file-backed memory just before the run: the runtime,
    /// the libraries, and what the setup left (an open environment for the
    /// read scenarios).
    var baselineAnonymousKB = 0
    var baselineFileBackedKB = 0
    var samples = 0
}

/// Samples a process's memory on a thread of its own until stopped.
// @unchecked: every stored property is guarded by `lock`.
final class MemorySampler: @unchecked Sendable {
    private let pid: Int32
    private let lock = NSLock()
    private var running = true
    private var peak = MemoryPeak()
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    init(pid: Int32) { self.pid = pid }

    /// Anonymous and file-backed kB of the process now, or nil when it has gone.
    static func sample(_ pid: Int32) -> (anonymous: Int, fileBacked: Int)? {
        let fd = open("/proc/\(pid)/smaps_rollup", O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        var rss = 0
        var anonymous = 0
        for line in String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count >= 2, let kB = Int(parts[1]) else { continue }
            if parts[0] == "Rss:" { rss = kB } else if parts[0] == "Anonymous:" { anonymous = kB }
        }
        return (anonymous, rss - anonymous)
    }

    func start() {
        if let now = MemorySampler.sample(pid) {
            peak.baselineAnonymousKB = now.anonymous
            peak.baselineFileBackedKB = now.fileBacked
            record(now)
        }
        let thread = Thread { [self] in
            while lock.withLock({ running }) {
                if let now = MemorySampler.sample(pid) { record(now) }
                usleep(2000)
            }
            finished.signal()
        }
        self.thread = thread
        thread.start()
    }

    /// Stops sampling, takes one last sample, and returns the peaks.
    func stop() -> MemoryPeak {
        lock.withLock { running = false }
        finished.wait()
        if let now = MemorySampler.sample(pid) { record(now) }
        return lock.withLock { peak }
    }

    private func record(_ now: (anonymous: Int, fileBacked: Int)) {
        lock.withLock {
            peak.anonymousKB = max(peak.anonymousKB, now.anonymous)
            peak.fileBackedKB = max(peak.fileBackedKB, now.fileBacked)
            peak.samples += 1
        }
    }
}

/// Reads lines from a file descriptor, byte by byte: the few lines of the
/// handshake with a child.
struct LineReader {
    let fd: Int32

    func next() -> String? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1 {
            if byte == 0x0A { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return line.isEmpty ? nil : String(decoding: line, as: UTF8.self)
    }
}

/// Runs one trial in a child process (this program with `--isolate`) and
/// samples its memory while the timed part runs. The child sets up, says
/// `ready` and waits; the parent starts sampling and lets it run; the child
/// says `done` with its VmHWM and waits again, so the check that reads the
/// whole file back is never sampled.
func measureMemory(_ engine: Engine, _ scenario: Scenario, n: Int, folder: URL, expected: UInt64) throws -> MemoryPeak {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = [
        "--isolate", "\(engine.rawValue):\(scenario.rawValue)", "--objects", "\(n)", "--folder", folder.path,
    ]
    let toChild = Pipe()
    let fromChild = Pipe()
    process.standardInput = toChild
    process.standardOutput = fromChild
    try process.run()
    let lines = LineReader(fd: fromChild.fileHandleForReading.fileDescriptor)
    let go = Data("go\n".utf8)
    guard lines.next() == "ready" else {
        process.waitUntilExit()
        throw ScenarioError("the child measuring \(engine.rawValue) in \(scenario.title) failed in its setup")
    }
    let sampler = MemorySampler(pid: process.processIdentifier)
    sampler.start()
    toChild.fileHandleForWriting.write(go)
    let done = lines.next() ?? ""
    var peak = sampler.stop()
    toChild.fileHandleForWriting.write(go)
    let checksum = lines.next() ?? ""
    process.waitUntilExit()
    guard done.hasPrefix("done "), let hwm = Int(done.dropFirst(5)), process.terminationStatus == 0 else {
        throw ScenarioError("the child measuring \(engine.rawValue) in \(scenario.title) failed (\(done))")
    }
    guard checksum == "checksum \(expected)" else {
        throw ScenarioError("the child measuring \(engine.rawValue) in \(scenario.title) got \(checksum)")
    }
    peak.residentKB = hwm
    return peak
}

/// The child's side of `measureMemory`.
func runIsolated(_ engine: Engine, _ scenario: Scenario, n: Int, folder: URL) throws {
    guard let trial = makeTrial(engine, scenario, n: n, folder: folder) else {
        throw ScenarioError("\(engine.rawValue) has no trial for \(scenario.title)")
    }
    defer { trial.cleanup() }
    // Makes the dataset's names before the measurement, as the parent does.
    _ = Dataset.expected(scenario, n: 1)
    try trial.setup()
    say("ready")
    _ = readLine()
    // Writing 5 to clear_refs resets VmHWM, the peak resident set.
    let fd = open("/proc/self/clear_refs", O_WRONLY)
    if fd >= 0 {
        _ = write(fd, "5", 1)
        close(fd)
    }
    try trial.run()
    say("done \(residentPeakKB())")
    _ = readLine()
    say("checksum \(try trial.verify())")
}

/// Writes a line of the handshake straight to the pipe, unbuffered.
private func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// VmHWM from /proc/self/status, in kB.
private func residentPeakKB() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }
    return 0
}
