import Foundation
import Testing

/// A folder of its own for one test, under the run's root folder, removed
/// when the test ends.
///
/// A suite marked `@Suite(.temporaryFolder)` gives each of its tests (each
/// case of a parameterized test) a new folder, which the suite reads in a
/// stored property, since Swift Testing makes the suite's instance inside
/// the test's scope:
///
/// ```swift
/// @Suite(.temporaryFolder) struct WriteTests {
///     let folder = TemporaryFolder.current
///     @Test func ...() throws { let db = try Database(configuration: Fixtures.configuration(folder.path())) }
/// }
/// ```
///
/// Code outside such a suite (the child process of an exit test) makes a
/// `TemporaryFolder()` of its own, removed when it is released, or with the
/// run's root if the child dies first.
final class TemporaryFolder: Sendable {
    let url: URL

    /// Creates a new, empty folder under the run's root.
    init() throws {
        url = TestRoot.url.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { remove() }

    /// The path of the file `name` in this folder.
    func path(_ name: String = "test.strata") -> String { url.appendingPathComponent(name).path }

    /// Removes the folder and everything in it.
    func remove() { try? FileManager.default.removeItem(at: url) }

    @TaskLocal fileprivate static var scoped: TemporaryFolder?

    /// The folder of the running test, in a suite or test marked `.temporaryFolder`.
    static var current: TemporaryFolder {
        guard let scoped else {
            preconditionFailure("TemporaryFolder.current is read outside a test marked .temporaryFolder")
        }
        return scoped
    }
}

/// Gives each test, or each case of a parameterized test, a temporary
/// folder of its own as `TemporaryFolder.current`, removed when it ends.
struct TemporaryFolderTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try await TemporaryFolder.$scoped.withValue(folder, operation: function)
    }
}

extension Trait where Self == TemporaryFolderTrait {
    /// A temporary folder for each test, as `TemporaryFolder.current`.
    static var temporaryFolder: Self { Self() }
}

/// The one folder under which a test process makes its temporary folders:
/// `$TMPDIR/strata-tests-<pid>`, named after the process that owns it.
///
/// Processes die without cleaning up: exit tests' children, crash trials'
/// SIGKILLs, a run stopped by hand. So a child of a test process (an exit
/// test) uses its parent's root, which the parent removes; and the first
/// use in a run removes the roots of processes that no longer run, then
/// removes its own root when the process exits.
enum TestRoot {
    static let prefix = "strata-tests-"

    static let url: URL = {
        let temporary = FileManager.default.temporaryDirectory
        let parent = temporary.appendingPathComponent(prefix + String(getppid()))
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: parent.path, isDirectory: &isFolder), isFolder.boolValue {
            return parent
        }
        sweep(temporary)
        let own = temporary.appendingPathComponent(prefix + String(getpid()))
        try? FileManager.default.createDirectory(at: own, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: TestRoot.url) }
        return own
    }()

    /// Removes the roots whose process is gone. Only roots named after a
    /// process: folders of other shapes may belong to a run of other code.
    private static func sweep(_ temporary: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid != getpid() else { continue }
            if kill(pid, 0) == -1 && errno == ESRCH {
                try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
            }
        }
    }
}
