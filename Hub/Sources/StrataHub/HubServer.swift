import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
@_spi(Hub) import Strata

/// The hub's HTTP server: the routes of docs/Hub.md on a ``Hub``.
public enum HubServer {
    /// The router of the protocol's routes.
    public static func router(_ hub: Hub) -> Router<BasicWebSocketRequestContext> {
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.add(middleware: RequestObserver(hub: hub))
        router.get("/v1/health") { _, _ in Response(status: .ok) }
        router.get("/v1/session") { request, _ in
            await answer(hub) {
                let device = try await authenticate(request, hub)
                guard let text = request.uri.queryParameters.get("site"), let site = SiteID(hex: text) else {
                    throw HubError.invalidRequest("`site` must be the file's site id, 32 hex digits.")
                }
                return try json(.ok, try await hub.session(device: device, site: site))
            }
        }
        router.post("/v1/push") { request, _ in
            await answer(hub) {
                let device = try await authenticate(request, hub)
                if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > hub.maxBodyBytes {
                    throw HubError.bodyTooLarge(limit: hub.maxBodyBytes)
                }
                var request = request
                let body: ByteBuffer
                do {
                    body = try await request.collectBody(upTo: hub.maxBodyBytes)
                } catch let error as HTTPError where error.status == .contentTooLarge {
                    throw HubError.bodyTooLarge(limit: hub.maxBodyBytes)
                } catch is NIOTooManyBytesError {
                    // A body without a length (chunked) past the limit.
                    throw HubError.bodyTooLarge(limit: hub.maxBodyBytes)
                }
                let (status, answer) = try await hub.push(Data(body.readableBytesView), device: device)
                return Response(
                    status: .init(code: status), headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(bytes: answer)))
            }
        }
        router.get("/v1/pull") { request, _ in
            await answer(hub) {
                let device = try await authenticate(request, hub)
                let query = request.uri.queryParameters
                func number(_ name: String, default value: UInt64? = nil) throws -> UInt64 {
                    guard let text = query.get(name) else {
                        guard let value else { throw HubError.invalidRequest("`\(name)` is missing.") }
                        return value
                    }
                    guard let number = UInt64(text) else {
                        throw HubError.invalidRequest("`\(name)` must be a whole number, not '\(text)'.")
                    }
                    return number
                }
                var epoch: UUID?
                if let text = query.get("epoch") {
                    guard let value = UUID(uuidString: text) ?? SiteID(hex: text).map(\.uuid) else {
                        throw HubError.invalidRequest("`epoch` must be a UUID, not '\(text)'.")
                    }
                    epoch = value
                }
                let limit = try number("limit", default: 5_000)
                func subscriptions(_ name: String) throws -> HubSubscriptions? {
                    guard let text = query.get(name) else { return nil }
                    guard let parsed = HubSubscriptions(parameter: text), !parsed.entries.isEmpty else {
                        throw HubError.invalidRequest("`\(name)` is not the base64url of subscriptions' JSON.")
                    }
                    return parsed
                }
                let data: Data
                if let firstPull = try subscriptions("firstPull") {
                    guard firstPull.entries.count == 1 else {
                        throw HubError.invalidRequest("`firstPull` names one subscription.")
                    }
                    guard let after = Data(hex: query.get("firstPullAfter") ?? "") else {
                        throw HubError.invalidRequest("`firstPullAfter` must be hexadecimal digits.")
                    }
                    data = try await hub.firstPull(
                        device: device, subscription: firstPull.entries[0], upto: try number("upto"),
                        after: [UInt8](after),
                        epoch: epoch, limit: Int(min(limit, 1 << 30)))
                } else {
                    let since = try number("since")
                    let after = try number("after", default: since)
                    if let key = query.get("afterKey"), !key.isEmpty {
                        throw HubError.invalidRequest(
                            "`afterKey` must be empty: the hub's pages end at whole commits.")
                    }
                    let catchUp = try number("catchUp", default: 0)
                    guard catchUp <= 1 else {
                        throw HubError.invalidRequest("`catchUp` must be 0 or 1, not \(catchUp).")
                    }
                    let leaves = try number("leaves", default: 0)
                    guard leaves <= 1 else {
                        throw HubError.invalidRequest("`leaves` must be 0 or 1, not \(leaves).")
                    }
                    data = try await hub.pull(
                        device: device, since: since, after: after, epoch: epoch, limit: Int(min(limit, 1 << 30)),
                        catchUp: catchUp == 1, subscriptions: try subscriptions("subscriptions"), leaves: leaves == 1)
                }
                return Response(
                    status: .ok, headers: [.contentType: "application/vnd.strata.changeset"],
                    body: .init(byteBuffer: ByteBuffer(bytes: data)))
            }
        }
        router.get("/v1/wait") { request, _ in
            // A long poll, for clients without WebSockets: answers at once
            // when the tenant's last commit is past `after`, else at its
            // next commit or after `timeout` seconds (at most 60).
            let query = request.uri.queryParameters
            let afterText = query.get("after") ?? "0"
            let timeoutText = query.get("timeout") ?? "25"
            let after = Int64(afterText) ?? -1
            let timeout = min(max(Int(timeoutText) ?? 25, 1), 60)
            return await answer(hub, deadline: .seconds(timeout) + hub.requestTimeout) {
                let device = try await authenticate(request, hub)
                guard after >= 0, Int(timeoutText) != nil else {
                    throw HubError.invalidRequest(
                        "`after` and `timeout` must be whole numbers, not '\(afterText)' and '\(timeoutText)'.")
                }
                // Subscribed before reading: no commit falls between.
                let commits = hub.commits.subscribe(device.tenant)
                let revoked = hub.revocations.watch(device)
                let current = try await hub.hubSeq(tenant: device.tenant)
                guard current <= after else { return try json(.ok, ["hubSeq": current]) }
                let next = await withTaskGroup(of: WaitEnd.self) { group in
                    group.addTask {
                        for await seq in commits where seq > after { return .commit(seq) }
                        return .timeout
                    }
                    group.addTask {
                        for await _ in revoked { return .revoked }
                        return .timeout
                    }
                    group.addTask {
                        try? await Task.sleep(for: .seconds(timeout))
                        return .timeout
                    }
                    defer { group.cancelAll() }
                    return await group.next() ?? .timeout
                }
                switch next {
                case .commit(let seq): return try json(.ok, ["hubSeq": seq])
                case .timeout: return try json(.ok, ["hubSeq": current])
                case .revoked: throw HubError.notAuthenticated("The device was revoked while it waited.")
                }
            }
        }
        router.ws("/v1/stream") { request, _ in
            (try? await authenticate(request, hub)) == nil ? .dontUpgrade : .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            // The stream's lines carry its upgrade request's id.
            try await Hub.$requestLogger.withValue(context.logger) {
                try await stream(inbound, outbound, context.request, hub)
            }
        }
        return router
    }

    /// A WebSocket stream of the device `request` authenticates: a poke
    /// per commit of its tenant, until the device closes it or is revoked.
    private static func stream(
        _ inbound: WebSocketInboundStream, _ outbound: WebSocketOutboundWriter, _ request: Request, _ hub: Hub
    ) async throws {
        let device = try await authenticate(request, hub)
        let commits = hub.commits.subscribe(device.tenant)
        let revoked = hub.revocations.watch(device)
        // Checked again once watched: a revocation between the first
        // check and the watch is not missed.
        _ = try await authenticate(request, hub)
        let closedByRevocation = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for try await _ in inbound {}
                return false
            }
            group.addTask {
                for await seq in commits { try await outbound.write(.text("{\"hubSeq\":\(seq)}")) }
                return false
            }
            group.addTask {
                for await _ in revoked { return true }
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
        if closedByRevocation {
            hub.logger.notice("Closed a stream of revoked device \(device.id.uuidString).")
            // 4401: the application's code for "revoked" (docs/Hub.md).
            try? await outbound.close(.unknown(4401), reason: "revoked")
        }
    }

    /// How a long poll ended.
    private enum WaitEnd: Sendable {
        case commit(Int64)
        case timeout
        case revoked
    }

    /// The router of `GET /metrics` (``HubMetrics``), for the listener
    /// `strata-hub serve --metrics-port` opens apart from the protocol's:
    /// the metrics need no token, so they are not served where devices
    /// connect (docs/Hub.md, "Deployment").
    public static func metricsRouter(_ hub: Hub) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: hub.metrics.text)))
        }
        return router
    }

    /// The application: the router on `host`:`port`, WebSocket upgrades
    /// included, with the PostgreSQL client, the ``CommitListener`` (the
    /// commits of every hub process on the database) and `maintenance`
    /// (acknowledged cursors, compaction) as services it runs.
    public static func application(
        _ hub: Hub, host: String, port: Int, maintenance: HubMaintenance? = nil,
        onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in },
        logger: Logger
    ) -> some ApplicationProtocol {
        let router = router(hub)
        var services: [any Service] = [hub.client, CommitListener(hub: hub)]
        if let maintenance { services.append(maintenance) }
        var application = Application(
            router: router, server: .http1WebSocketUpgrade(webSocketRouter: router),
            configuration: .init(address: .hostname(host, port: port), serverName: "strata-hub"),
            services: services, onServerRunning: onServerRunning, logger: logger)
        // Serve only a database this hub's version migrated.
        application.beforeServerStarts {
            let version = try await HubSchema.version(hub.client, logger: logger)
            guard version <= HubSchema.currentVersion else {
                throw HubError.schemaTooNew(version, supported: HubSchema.currentVersion)
            }
            guard version == HubSchema.currentVersion else {
                throw HubError.schemaNotMigrated(version, needed: HubSchema.currentVersion)
            }
        }
        return application
    }

    static func authenticate(_ request: Request, _ hub: Hub) async throws -> Hub.Device {
        // `Bearer <token>`; the scheme is a word of HTTP, told apart
        // from the token by the first space.
        guard let header = request.headers[.authorization], let space = header.firstIndex(of: " "),
            header[..<space] == "Bearer"
        else {
            throw HubError.unauthorized
        }
        let token = header[space...].trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty else { throw HubError.unauthorized }
        guard token.utf8.count <= maxTokenBytes else {
            throw HubError.notAuthenticated("The token is over \(maxTokenBytes) bytes.")
        }
        return try await hub.authenticate(token: token)
    }

    /// The longest token taken: a JWT with many claims is a few kilobytes.
    static let maxTokenBytes = 16 << 10

    /// The handler's response, or the JSON refusal of what it threw.
    static func answer(
        _ hub: Hub, deadline: Duration? = nil, _ body: @escaping @Sendable () async throws -> Response
    ) async -> Response {
        let deadline = deadline ?? hub.requestTimeout
        do {
            return try await withThrowingTaskGroup(of: Response.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    try await Task.sleep(for: deadline)
                    throw HubError.unavailable("The hub's database did not answer within \(deadline); retry later.")
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        } catch let error as HubError {
            return refusal(error, hub)
        } catch let error as PSQLError
            where error.serverInfo == nil || Self.timedOut.contains(error.serverInfo?[.sqlState] ?? "")
        {
            hub.logger.error("PostgreSQL unreachable: \(String(reflecting: error))")
            return refusal(.unavailable("The hub cannot reach its database; retry later."), hub)
        } catch {
            hub.logger.error("Request failed: \(String(reflecting: error))")
            return refusal(.internalError(error), hub)
        }
    }

    /// PostgreSQL's codes for a statement it cancelled (the request's
    /// deadline, as `statement_timeout`) and a lock it could not take.
    static let timedOut: Set<String> = ["57014", "55P03"]

    /// The refusal's response, counted and logged (at `notice`: a client's
    /// mistake, not the hub's) with the request's id.
    static func refusal(_ error: HubError, _ hub: Hub) -> Response {
        hub.metrics.refused(error.code.rawValue)
        hub.logger.notice("Refused: \(error.code.rawValue)", metadata: ["message": "\(error.message)"])
        return (try? json(error.status, error.body))
            ?? Response(status: error.status)
    }

    static func json(_ status: HTTPResponse.Status, _ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }
}

/// Each request's logger (with its `hb.request.id`) made the hub's for
/// the request (``Hub/requestLogger``), the id answered in the
/// `Strata-Request-Id` header, the request counted and timed
/// (``HubMetrics``) and logged when answered.
struct RequestObserver<Context: RequestContext>: RouterMiddleware {
    let hub: Hub

    /// The header of the request's id.
    static var requestIDHeader: HTTPField.Name { HTTPField.Name("Strata-Request-Id")! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let started = ContinuousClock.now
        let route = context.endpointPath ?? "unmatched"
        do {
            var response = try await Hub.$requestLogger.withValue(context.logger) {
                try await next(request, context)
            }
            response.headers[Self.requestIDHeader] = context.id
            finish(request, context, route: route, status: response.status.code, started: started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            finish(request, context, route: route, status: status, started: started)
            throw error
        }
    }

    private func finish(
        _ request: Request, _ context: Context, route: String, status: Int, started: ContinuousClock.Instant
    ) {
        let elapsed = ContinuousClock.now - started
        hub.metrics.request(route: route, method: request.method.rawValue, status: status, duration: elapsed)
        context.logger.info(
            "Answered",
            metadata: [
                "method": "\(request.method.rawValue)", "path": "\(request.uri.path)", "status": "\(status)",
                "ms": "\(Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15)",
            ])
    }
}
