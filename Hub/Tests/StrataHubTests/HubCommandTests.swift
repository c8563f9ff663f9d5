import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `strata-hub`'s commands when PostgreSQL cannot be reached: each fails
/// within seconds, naming where it tried and what to set, instead of
/// waiting for its pool to give up (a minute) with a pool error.
@Suite("strata-hub without PostgreSQL") struct HubCommandTests {
    static let commands: [[String]] = [
        ["migrate"],
        ["device", "add", "--tenant", UUID().uuidString],
        ["device", "revoke", UUID().uuidString],
        ["subject", "revoke", "--issuer", "https://id.example.com", "--subject", "alice"],
        ["epoch", "--tenant", UUID().uuidString],
        ["rules", "show", "--tenant", UUID().uuidString],
        ["rules", "clear", "--tenant", UUID().uuidString],
        ["serve", "--port", "0"],
        ["compact"],
        ["status", "--dataset", UUID().uuidString],
    ]

    @Test(arguments: commands) func aCommandFailsFastNamingTheHostItTried(_ command: [String]) async throws {
        let port = try Self.closedPort()
        let result = try await Self.run(command + ["--pg-host", "127.0.0.1", "--pg-port", "\(port)"])
        #expect(result.status != 0)
        #expect(result.seconds < 20, "\(command) took \(result.seconds) s")
        #expect(result.output.contains("Cannot reach PostgreSQL at 127.0.0.1:\(port) (user "), "\(result.output)")
        #expect(result.output.contains("Set PGHOST (or --pg-host)"), "\(result.output)")
        #expect(!result.output.contains("ConnectionPoolError"), "\(result.output)")
    }

    @Test func withoutPGHOSTTheMessageSaysTheHostIsTheDefault() async throws {
        let port = try Self.closedPort()
        let result = try await Self.run(["device", "add", "--tenant", UUID().uuidString], port: port)
        #expect(result.status != 0)
        #expect(result.seconds < 20, "took \(result.seconds) s")
        #expect(
            result.output.contains(
                "Cannot reach PostgreSQL at localhost:\(port) (user strata, database strata), the default: PGHOST is not set"
            ),
            "\(result.output)")
    }

    @Test func rulesCheckSaysWhatARulesFileAllowsOrWhereItIsWrong() async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        let good = folder.file("good.rules")
        try "# owners\nNote: ownerID = claims.sub\nLabel read: true\n".write(
            toFile: good, atomically: true, encoding: .utf8)
        let checked = try await Self.run(["rules", "check", good])
        #expect(checked.status == 0, "\(checked.output)")
        #expect(checked.output.contains("Label: read by rule, write denied"), "\(checked.output)")
        #expect(checked.output.contains("Note: read by rule, write by rule"), "\(checked.output)")
        let bad = folder.file("bad.rules")
        try "Note: true\nLabel: name = 'open\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = try await Self.run(["rules", "check", bad])
        #expect(refused.status != 0)
        #expect(refused.output.contains("Sync rules, line 2: A string is not closed"), "\(refused.output)")
    }

    @Test func aSocketFolderWithoutAServerIsNamed() async throws {
        let folder = "/tmp/strata-hub-no-server-\(UUID().uuidString.prefix(8))"
        let result = try await Self.run(["migrate", "--pg-host", folder])
        #expect(result.status != 0)
        #expect(result.seconds < 20, "took \(result.seconds) s")
        #expect(result.output.contains("Cannot reach PostgreSQL at the socket \(folder)/.s.PGSQL."), "\(result.output)")
    }

    /// Runs strata-hub without the PG* variables (PGPORT set to `port`
    /// when given), killed after 60 s (a hub that serves without its
    /// database never ends): its exit status, standard output and error
    /// together, and how long it took.
    static func run(_ arguments: [String], port: Int? = nil) async throws -> (
        status: Int32, output: String, seconds: Double
    ) {
        guard let binary = ProcessInfo.processInfo.environment["HUB_BINARY"] else {
            throw HubTestError("HUB_BINARY names no strata-hub: run the tests with `make hub-test`.")
        }
        let unset = ["PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE"].map { "-u \($0)" }.joined(separator: " ")
        let quoted = ([binary] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let portVariable = port.map { "PGPORT=\($0) " } ?? ""
        let start = Date()
        let child = try ChildProcess(
            "/bin/sh", ["-c", "exec timeout -s KILL 60 env \(unset) \(portVariable)\(quoted) 2>&1"], captureOutput: true
        )
        let output = await child.readAll()
        let status = await child.wait()
        return (status, output, Date().timeIntervalSince(start))
    }

    /// A loopback port no one listens on: one the system just handed out
    /// and took back.
    static func closedPort() throws -> Int {
        #if canImport(Glibc)
        let stream = Int32(SOCK_STREAM.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        let fd = socket(AF_INET, stream, 0)
        guard fd >= 0 else { throw HubTestError("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
            }
        }
        guard bound else { throw HubTestError("bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
