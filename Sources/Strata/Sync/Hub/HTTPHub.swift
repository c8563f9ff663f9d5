import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The sync hub `strata-hub`, over HTTP: the transport of
/// ``DatabaseSync/run(with:options:)`` for an app whose devices sync
/// through a server (`docs/Hub.md`).
///
/// ```swift
/// let hub = HTTPHub(url: URL(string: "https://sync.example.com")!, token: deviceToken)
/// let syncing = Task { try await db.sync.run(with: hub) }
/// // ... when the app quits:
/// syncing.cancel()
/// ```
///
/// Every request carries the token as `Authorization: Bearer`; no error,
/// message or description names it. The hub's error answers are thrown as
/// ``StrataError/Code/hubRefused`` with the ``HubRefusal``; a network
/// failure, a 500 or a 503 as ``StrataError/Code/hubUnavailable``.
public struct HTTPHub: SyncHub, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The hub's base URL (`https://sync.example.com`): requests go to
    /// `/v1/...` below it.
    public let url: URL
    private let token: String
    private let session: URLSession

    /// A hub at `url`, reached with the device token `token`.
    ///
    /// - Parameters:
    ///   - url: The hub's base URL.
    ///   - token: The device's token, as `strata-hub device add` printed it.
    ///   - session: The URL session the requests go through.
    public init(url: URL, token: String, session: URLSession = .shared) {
        self.url = url
        self.token = token
        self.session = session
    }

    /// `GET /v1/session?site=S`.
    public func session(site: SiteID) async throws -> HubSession {
        let request = try request("GET", "session", query: [("site", site.description)])
        let (status, body) = try await send(request)
        guard status == 200 else { throw Self.error(status: status, body: body, request: Self.name(of: request)) }
        return try Self.decode(HubSession.self, body, request: Self.name(of: request))
    }

    /// `POST /v1/push`; a `schemaConflict` (422) is an answer with
    /// ``HubPushAnswer/refusedFields``.
    public func push(_ changeset: Changeset) async throws -> HubPushAnswer {
        var request = try request("POST", "push")
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        request.httpBody = changeset.data
        let (status, body) = try await send(request)
        return try Self.pushAnswer(status: status, body: body, request: Self.name(of: request))
    }

    /// `GET /v1/pull?since=&after=&afterKey=&epoch=&limit=&leaves=1`: with
    /// `leaves`, the page also names the objects that left the file's view
    /// (``ChangeEntry/leavesView``), which applying it removes.
    public func pull(from cursor: SyncCursor, epoch: UUID, limit: Int) async throws -> Changeset {
        let request = try request(
            "GET", "pull",
            query: [
                ("since", String(cursor.since)), ("after", String(cursor.after)),
                ("afterKey", cursor.afterKey.hexString), ("epoch", epoch.uuidString.lowercased()),
                ("limit", String(limit)), ("leaves", "1"),
            ])
        let (status, body) = try await send(request)
        guard status == 200 else { throw Self.error(status: status, body: body, request: Self.name(of: request)) }
        return Changeset(data: body)
    }

    /// `GET /v1/pull` with `subscriptions`: the base64url of their JSON
    /// (``HubSubscriptions``).
    public func pull(from cursor: SyncCursor, epoch: UUID, limit: Int, subscriptions: [SyncSubscription])
        async throws -> Changeset
    {
        guard !subscriptions.isEmpty else { return try await pull(from: cursor, epoch: epoch, limit: limit) }
        let request = try request(
            "GET", "pull",
            query: [
                ("since", String(cursor.since)), ("after", String(cursor.after)),
                ("afterKey", cursor.afterKey.hexString), ("epoch", epoch.uuidString.lowercased()),
                ("limit", String(limit)), ("leaves", "1"),
                ("subscriptions", try HubSubscriptions(subscriptions).parameter),
            ])
        let (status, body) = try await send(request)
        guard status == 200 else { throw Self.error(status: status, body: body, request: Self.name(of: request)) }
        return Changeset(data: body)
    }

    /// `GET /v1/pull?firstPull=&upto=&firstPullAfter=&epoch=&limit=`.
    public func firstPull(_ subscription: SyncSubscription, upto: UInt64, after: Data, epoch: UUID, limit: Int)
        async throws -> Changeset
    {
        let request = try request(
            "GET", "pull",
            query: [
                ("firstPull", try HubSubscriptions([subscription]).parameter), ("upto", String(upto)),
                ("firstPullAfter", after.hexString), ("epoch", epoch.uuidString.lowercased()),
                ("limit", String(limit)),
            ])
        let (status, body) = try await send(request)
        guard status == 200 else { throw Self.error(status: status, body: body, request: Self.name(of: request)) }
        return Changeset(data: body)
    }

    /// `GET /v1/pull?since=&after=&epoch=&limit=&catchUp=1` (and
    /// `subscriptions`, when the file has some).
    public func catchUp(
        since: UInt64, after: UInt64, epoch: UUID, limit: Int, subscriptions: [SyncSubscription]
    ) async throws -> Changeset {
        var query = [
            ("since", String(since)), ("after", String(after)), ("epoch", epoch.uuidString.lowercased()),
            ("limit", String(limit)), ("catchUp", "1"),
        ]
        if !subscriptions.isEmpty { query.append(("subscriptions", try HubSubscriptions(subscriptions).parameter)) }
        let request = try request("GET", "pull", query: query)
        let (status, body) = try await send(request)
        guard status == 200 else { throw Self.error(status: status, body: body, request: Self.name(of: request)) }
        return Changeset(data: body)
    }

    /// The hub's sequence number after each commit of the dataset, by
    /// long polls of `GET /v1/wait` (each answered at the next commit, or
    /// after 25 seconds with the last one). Not the hub's WebSocket
    /// (`/v1/stream`): URLSession on Linux has no WebSockets (its libcurl
    /// lacks them), and one transport everywhere is one that is tested.
    /// The stream finishes at the first failed poll; the run loop then
    /// polls the hub itself and opens the stream again after its next
    /// exchange.
    public func commits() -> AsyncStream<UInt64> {
        AsyncStream { continuation in
            let polling = Task {
                var last: UInt64 = 0
                while !Task.isCancelled {
                    guard
                        var request = try? request(
                            "GET", "wait", query: [("after", String(last)), ("timeout", "25")])
                    else { break }
                    request.timeoutInterval = 60
                    guard let (status, body) = try? await send(request), status == 200,
                        let seq = Self.commitSequence(body)
                    else { break }
                    if seq > last {
                        continuation.yield(seq)
                        last = seq
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in polling.cancel() }
        }
    }

    /// The hub's URL; never the token.
    public var description: String { "HTTPHub(\(url.absoluteString))" }
    /// The hub's URL; never the token.
    public var debugDescription: String { description }
    /// The hub's URL only, so that `dump` shows no token.
    public var customMirror: Mirror { Mirror(self, children: ["url": url]) }

    /// A request for `/v1/<endpoint>` with the token.
    func request(_ method: String, _ endpoint: String, query: [(String, String)] = []) throws -> URLRequest {
        var components = URLComponents(
            url: url.appendingPathComponent("v1").appendingPathComponent(endpoint), resolvingAgainstBaseURL: false)
        if !query.isEmpty { components?.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        guard let target = components?.url else {
            throw StrataError.hubURLInvalid(url)
        }
        var request = URLRequest(url: target)
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        return request
    }

    /// Sends `request`; a network failure becomes ``StrataError/Code/hubUnavailable``.
    /// Cancelling the task cancels the request.
    private func send(_ request: URLRequest) async throws -> (status: Int, body: Data) {
        let name = Self.name(of: request)
        let box = TaskBox()
        let result: (Data?, URLResponse?, (any Error)?) = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let task = session.dataTask(with: request) { data, response, error in
                    continuation.resume(returning: (data, response, error))
                }
                box.start(task)
            }
        } onCancel: {
            box.cancel()
        }
        try Task.checkCancellation()
        if let error = result.2 {
            throw StrataError.hubUnavailable(request: name, "\(error.localizedDescription)", cause: error)
        }
        guard let response = result.1 as? HTTPURLResponse else {
            throw StrataError.hubUnavailable(request: name, "the answer is not HTTP")
        }
        return (response.statusCode, result.0 ?? Data())
    }
}

// @unchecked: `task` and `cancelled` are read and written only while holding `lock`.
/// Hands a data task to a cancellation handler that may run before it
/// starts.
private final class TaskBox: @unchecked Sendable {
    private let lock = NSLock()
    private var task: URLSessionDataTask?
    private var cancelled = false

    func start(_ task: URLSessionDataTask) {
        let cancelled = lock.withLock {
            self.task = task
            return self.cancelled
        }
        if cancelled { task.cancel() }
        task.resume()
    }

    func cancel() {
        let task = lock.withLock {
            cancelled = true
            return self.task
        }
        task?.cancel()
    }
}
