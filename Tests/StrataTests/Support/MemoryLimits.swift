import Foundation
import Testing

/// Bounds on the memory of a child process that feeds decoders hostile
/// bytes. On Linux its address space may grow by 128 MiB at most, so that
/// an allocation sized by a damaged length fails (and stops the process)
/// whether or not its pages are touched; everywhere, its peak resident
/// memory is checked at the end, for allocations that were made and used.
struct MemoryLimits {
    private let residentAtStart: Int

    init() throws {
        #if os(Linux)
        // AddressSanitizer maps memory of its own as the process runs
        // (shadow, fake stacks, quarantine): no limit fits it, and it checks
        // every allocation itself.
        if !Sanitizer.address {
            let resource = __rlimit_resource_t(RLIMIT_AS.rawValue)
            var limit = rlimit()
            #expect(getrlimit(resource, &limit) == 0)
            limit.rlim_cur = rlim_t(try MemoryLimits.status("VmSize") + (128 << 20))
            #expect(setrlimit(resource, &limit) == 0)
        }
        #endif
        residentAtStart = try MemoryLimits.peakResident()
    }

    #if os(Linux)
    /// A size from /proc/self/status, in bytes.
    static func status(_ field: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(field + ":") })
        // "VmSize:\t   1234 kB"; under a sanitizer the number fills the
        // spaces, so split on any whitespace.
        let fields = line.split(whereSeparator: \.isWhitespace)
        return try #require(fields.count > 1 ? Int(fields[1]) : nil) * 1024
    }
    #endif

    /// The process's peak resident memory so far, in bytes. On Linux, the
    /// high-water mark of this program's memory (`ru_maxrss` would include
    /// the parent's, which the child inherits across `exec`).
    static func peakResident() throws -> Int {
        #if os(Linux)
        return try status("VmHWM")
        #else
        var usage = rusage()
        getrusage(RUSAGE_SELF, &usage)
        return usage.ru_maxrss
        #endif
    }

    func expectResidentGrowthBelow(_ bytes: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        // AddressSanitizer keeps freed memory in quarantine (256 MiB by
        // default): resident memory says nothing then.
        guard !Sanitizer.address else { return }
        let growth = ((try? MemoryLimits.peakResident()) ?? .max) - residentAtStart
        #expect(growth < bytes, "peak resident memory grew by \(growth) bytes", sourceLocation: sourceLocation)
    }
}
