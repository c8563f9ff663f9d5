import Foundation
import Testing

@testable import Strata

#if os(Linux)
/// A map that cannot grow leaves a database that refuses transactions with
/// an error, never one that crashes. Runs in a child process, because it
/// limits the process's address space; the child reports each way it can
/// fail with its own exit code.
@Suite struct MapGrowthFailureTests {
    @Test(
        .disabled(
            if: Sanitizer.address,
            "AddressSanitizer maps memory of its own as the process runs (shadow, fake stacks): under a tight address-space limit its runtime fails before Strata's map does."
        ))
    func aFailedGrowthIsAnErrorAndLaterTransactionsAreRefusedNotCrashed() async {
        await #expect(processExitsWith: .exitCode(42)) {
            #if canImport(Glibc)
            let resource = __rlimit_resource_t(RLIMIT_AS.rawValue)
            #else
            let resource = RLIMIT_AS
            #endif
            let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmSize:") }),
                case let fields = line.split(whereSeparator: \.isWhitespace), fields.count > 1,
                let kilobytes = Int(fields[1])
            else { exit(10) }
            var limit = rlimit()
            guard getrlimit(resource, &limit) == 0 else { exit(11) }
            limit.rlim_cur = rlim_t((kilobytes << 10) + (96 << 20))
            guard setrlimit(resource, &limit) == 0 else { exit(12) }

            let folder = try TemporaryFolder()
            var config = Fixtures.configuration(folder.path(), schema: Blobs.schema)
            config.initialMapSize = 8 << 20
            let db = try Database(configuration: config)
            var growthFailed = false
            for id in 0 ..< 400 where !growthFailed {
                do {
                    try db.write { tx in
                        try tx.insert(
                            "Blob", ["id": .int(Int64(id)), "payload": .data(Blobs.payload(id, size: 1 << 20))])
                    }
                } catch let error as StrataError {
                    guard error.message.contains("Could not grow the memory map") else { exit(13) }
                    growthFailed = true
                }
            }
            guard growthFailed else { exit(14) }
            do {
                _ = try db.read { tx in try tx.objects("Blob").count }
                exit(15)
            } catch let error as StrataError {
                guard error.message.contains("could not be restored") else { exit(16) }
            }
            exit(42)
        }
    }
}
#endif
