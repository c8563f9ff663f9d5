import Foundation
import StrataHub

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A child process spawned and reaped with POSIX calls: Foundation's
/// `Process` on Linux can miss a child's exit and leave
/// `waitUntilExit()` waiting on a zombie.
struct ChildProcess: Sendable {
    let pid: pid_t
    /// The read end of the child's standard output, when captured.
    let output: Int32?

    init(_ path: String, _ arguments: [String], captureOutput: Bool = false) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var fds: [Int32] = [-1, -1]
        if captureOutput {
            guard pipe(&fds) == 0 else { throw HubTestError("pipe failed") }
            posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
            posix_spawn_file_actions_addclose(&actions, fds[0])
            posix_spawn_file_actions_addclose(&actions, fds[1])
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, path, &actions, nil, argv, environ)
        if captureOutput { close(fds[1]) }
        guard status == 0 else { throw HubTestError("\(path) could not start: \(String(cString: strerror(status)))") }
        self.pid = pid
        output = captureOutput ? fds[0] : nil
    }

    /// Waits for the child to end, off the tasks' threads; its exit status.
    func wait() async -> Int32 {
        let pid = pid
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                continuation.resume(returning: status)
            }
        }
    }

    /// Runs `path` to its end; throws unless it exits with 0.
    static func run(_ path: String, _ arguments: String...) async throws {
        let status = try await ChildProcess(path, arguments).wait()
        guard status == 0 else { throw HubTestError("\(path) \(arguments.joined(separator: " ")) failed (\(status))") }
    }

    /// The child's output to its end, read off the tasks' threads.
    func readAll() async -> String {
        guard let fd = output else { return "" }
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var bytes: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while case let count = read(fd, &buffer, buffer.count), count > 0 { bytes += buffer[..<count] }
                close(fd)
                continuation.resume(returning: String(decoding: bytes, as: UTF8.self))
            }
        }
    }

    /// One line of the child's output, read off the tasks' threads.
    func readLine() async -> String {
        guard let fd = output else { return "" }
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var line: [UInt8] = []
                var byte: UInt8 = 0
                while read(fd, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
                continuation.resume(returning: String(decoding: line, as: UTF8.self))
            }
        }
    }
}

/// `strata-hub serve` as a child process (the binary `make hub-test`
/// built, named by HUB_BINARY), for the tests that kill it.
final class HubProcess: Sendable {
    let child: ChildProcess
    /// The URL it listens on.
    let url: URL

    /// Starts a hub on `settings`' database, on a free port, and waits
    /// until it listens.
    init(settings: PostgresSettings, arguments: [String] = []) async throws {
        guard let binary = ProcessInfo.processInfo.environment["HUB_BINARY"] else {
            throw HubTestError("HUB_BINARY names no strata-hub: run the tests with `make hub-test`.")
        }
        child = try ChildProcess(
            binary,
            [
                "serve", "--port", "0", "--pg-host", settings.host, "--pg-port", "\(settings.port)", "--pg-user",
                settings.user, "--pg-database", settings.database,
            ] + arguments, captureOutput: true)
        // "strata-hub listening on http://127.0.0.1:PORT"
        let line = await child.readLine()
        guard let range = line.range(of: "http://"), let url = URL(string: String(line[range.lowerBound...])) else {
            sendSignal(SIGKILL, to: child.pid)
            _ = await child.wait()
            throw HubTestError("strata-hub serve never listened: '\(line)'")
        }
        self.url = url
    }

    /// SIGKILL: no clean-up of any kind.
    func kill() async {
        sendSignal(SIGKILL, to: child.pid)
        _ = await child.wait()
        if let fd = child.output { close(fd) }
    }

    /// One request to the hub: its status and body, or the error of a
    /// request that got no answer.
    func request(
        _ path: String, method: String = "GET", token: String, body: Data? = nil, timeout: TimeInterval = 120
    ) async throws -> (status: Int, body: Data) {
        var request = URLRequest(url: URL(string: url.absoluteString + "/" + path)!, timeoutInterval: timeout)
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.httpBody = body
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }
}

/// `kill(2)`, by a name the hub process's `kill()` does not hide.
private func sendSignal(_ signal: Int32, to pid: pid_t) {
    _ = kill(pid, signal)
}
