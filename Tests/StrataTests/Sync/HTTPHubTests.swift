import Foundation
import Testing

@testable import Strata

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How ``HTTPHub`` reads the hub's answers and writes its requests, as
/// pure functions of a status and a body: no server.
@Suite struct HTTPHubTests {
    static let token = "s3cret-device-token"
    let hub = HTTPHub(url: URL(string: "https://hub.example.com/base")!, token: HTTPHubTests.token)

    func json(_ text: String) -> Data { Data(text.utf8) }

    @Test func aSessionDecodesFromTheHubsJSON() throws {
        let session = try HTTPHub.decode(
            HubSession.self,
            json(
                """
                {"tenant": "6f1b0c2e-1d7a-4b54-9e0c-2b8e5d0a7f11", "device": "0d7a3c59-2b4e-4f61-8a1d-3e5c7b9f0a12",
                 "epoch": "00112233-4455-6677-8899-aabbccddeeff", "hubSeq": 42, "hubTime": 1764147600000,
                 "maxBodyBytes": 16777216, "pushCursor": {"since": 10, "after": 12, "afterKey": "00ff10"}}
                """), request: "GET /v1/session")
        #expect(session.tenant == UUID(uuidString: "6F1B0C2E-1D7A-4B54-9E0C-2B8E5D0A7F11"))
        #expect(session.hubSeq == 42)
        #expect(session.hubTime == Date(timeIntervalSince1970: 1_764_147_600))
        #expect(session.maxBodyBytes == 16 << 20)
        #expect(session.pushCursor == SyncCursor(since: 10, after: 12, afterKey: Data([0x00, 0xFF, 0x10])))
        #expect(session.epochSite == SiteID(hex: "00112233445566778899aabbccddeeff"))
        // A hub older than compaction names no compacted tombstones.
        #expect(session.compactedSeq == 0)
        // It encodes back to what it decoded from.
        let again = try JSONDecoder().decode(HubSession.self, from: JSONEncoder().encode(session))
        #expect(again == session)
        var compacted = session
        compacted.compactedSeq = 30
        #expect(try JSONDecoder().decode(HubSession.self, from: JSONEncoder().encode(compacted)).compactedSeq == 30)
    }

    @Test func anAnswerThatIsNotTheProtocolsJSONIsTheHubFailing() {
        let error = #expect(throws: StrataError.self) {
            try HTTPHub.decode(HubSession.self, json(#"{"tenant": 1}"#), request: "GET /v1/session")
        }
        #expect(error?.code == .hubUnavailable)
        #expect(error?.message.contains("GET /v1/session") == true)
    }

    @Test func aPushAnswerAndASchemaConflictAreBothAccepted() throws {
        let accepted = try HTTPHub.pushAnswer(
            status: 200,
            body: json(#"{"acceptedThrough": {"since": 12, "after": 12, "afterKey": ""}, "hubSeq": 43, "hubTime": 5}"#),
            request: "POST /v1/push")
        #expect(accepted.acceptedThrough == SyncCursor(since: 12, after: 12))
        #expect(accepted.hubSeq == 43)
        #expect(accepted.refusedFields.isEmpty)
        let conflict = try HTTPHub.pushAnswer(
            status: 422,
            body: json(
                """
                {"error": "schemaConflict", "message": "fields dropped",
                 "acceptedThrough": {"since": 3, "after": 5, "afterKey": "0a"}, "hubSeq": 44, "hubTime": 6,
                 "fields": [{"type": "Note", "field": "score", "descriptor": "string"}]}
                """), request: "POST /v1/push")
        #expect(conflict.acceptedThrough == SyncCursor(since: 3, after: 5, afterKey: Data([0x0A])))
        #expect(conflict.refusedFields == [HubRefusedField(type: "Note", field: "score", descriptor: "string")])
        // A 422 without an accepted cursor is refused like any error.
        let error = #expect(throws: StrataError.self) {
            try HTTPHub.pushAnswer(
                status: 422, body: json(#"{"error": "schemaConflict", "message": "no"}"#), request: "POST /v1/push")
        }
        #expect(error?.hubRefusal?.code == .schemaConflict)
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        var status: Int
        var body: String
        var code: HubRefusal.Code
        var retryable: Bool
        var check: @Sendable (HubRefusal) -> Bool = { _ in true }
        var testDescription: String { "\(status) \(code)" }
    }

    static let refusals: [Refusal] = [
        Refusal(
            status: 400, body: #"{"error": "invalidChangeset", "message": "bad"}"#, code: .invalidChangeset,
            retryable: false),
        Refusal(
            status: 401, body: #"{"error": "unauthorized", "message": "revoked"}"#, code: .unauthorized,
            retryable: false),
        Refusal(
            status: 403, body: #"{"error": "wrongDataset", "message": "no", "dataset": "abc"}"#, code: .wrongDataset,
            retryable: false, check: { $0.dataset == "abc" }),
        Refusal(
            status: 409, body: #"{"error": "clockSkew", "message": "ahead", "hubTime": 1764147600000}"#,
            code: .clockSkew,
            retryable: true, check: { $0.hubTime == Date(timeIntervalSince1970: 1_764_147_600) }),
        Refusal(
            status: 410,
            body: #"{"error": "epochChanged", "message": "restored", "epoch": "00112233-4455-6677-8899-aabbccddeeff"}"#,
            code: .epochChanged, retryable: true,
            check: { $0.epoch == UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF") }),
        Refusal(
            status: 413, body: #"{"error": "bodyTooLarge", "message": "big", "limit": 16777216}"#, code: .bodyTooLarge,
            retryable: false, check: { $0.limit == 16 << 20 }),
        Refusal(
            status: 404, body: "<html>Not Found</html>", code: HubRefusal.Code(rawValue: "http404"), retryable: false),
    ]

    @Test(arguments: refusals) func anErrorAnswerIsARefusalWithItsFields(_ expected: Refusal) throws {
        let error = HTTPHub.error(status: expected.status, body: json(expected.body), request: "GET /v1/pull")
        #expect(error.code == .hubRefused)
        let refusal = try #require(error.hubRefusal)
        #expect(refusal.code == expected.code)
        #expect(refusal.status == expected.status)
        #expect(refusal.isRetryable == expected.retryable)
        #expect(expected.check(refusal))
        #expect(error.message.contains("GET /v1/pull"))
        #expect(HubRunLoop<HTTPHub>.isRetryable(error) == expected.retryable)
    }

    @Test(arguments: [500, 502, 503]) func aServerFailureIsUnavailableAndRetried(_ status: Int) {
        let error = HTTPHub.error(
            status: status, body: json(#"{"error": "unavailable", "message": "PostgreSQL is down"}"#),
            request: "POST /v1/push")
        #expect(error.code == .hubUnavailable)
        #expect(error.hubRefusal?.status == status)
        #expect(HubRunLoop<HTTPHub>.isRetryable(error))
    }

    @Test func requestsCarryTheTokenInTheirHeaderOnly() throws {
        let cursor = SyncCursor(since: 3, after: 5, afterKey: Data([0xAB, 0x01]))
        let epoch = UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!
        let request = try hub.request(
            "GET", "pull",
            query: [
                ("since", "3"), ("after", "5"), ("afterKey", cursor.afterKey.hexString),
                ("epoch", epoch.uuidString.lowercased()),
            ])
        #expect(request.value(forHTTPHeaderField: "Authorization") == "Bearer \(Self.token)")
        let url = try #require(request.url)
        #expect(url.path == "/base/v1/pull")
        #expect(url.query == "since=3&after=5&afterKey=ab01&epoch=00112233-4455-6677-8899-aabbccddeeff")
        #expect(HTTPHub.name(of: request) == "GET /base/v1/pull")
        var dumped = ""
        dump(hub, to: &dumped)
        for text in [hub.description, hub.debugDescription, String(reflecting: hub), dumped] {
            #expect(!text.contains(Self.token))
            #expect(text.contains("hub.example.com"))
        }
        let error = HTTPHub.error(
            status: 401, body: json(#"{"error": "unauthorized", "message": "m"}"#), request: "GET /v1/session")
        #expect(!error.message.contains(Self.token))
    }

    @Test func aStreamMessageGivesTheHubsSequenceNumber() {
        #expect(HTTPHub.commitSequence(json(#"{"hubSeq": 43}"#)) == 43)
        #expect(HTTPHub.commitSequence(json(#"{"other": 1}"#)) == nil)
    }

    @Test func aCustomHubRefusesThroughThePublicInitializer() {
        let error = StrataError(
            .hubRefused, "refused", cause: HubRefusal(code: .wrongDataset, status: 403, message: "another dataset"))
        #expect(error.hubRefusal?.code == .wrongDataset)
        #expect(!HubRunLoop<HTTPHub>.isRetryable(error))
        #expect(HubRunLoop<HTTPHub>.isRetryable(StrataError.hubUnavailable(request: "GET /v1/session", "offline")))
        #expect(!HubRunLoop<HTTPHub>.isRetryable(StrataError(.closed, "closed")))
    }
}

/// ``HTTPHub`` sending its requests through `URLSession`, answered by a
/// stub protocol in the process instead of a server.
@Suite struct HTTPHubTransportTests {
    @Test func requestsGoOutWithTheTokenAndErrorsComeBackMapped() async throws {
        let host = "stub-\(UUID().uuidString.lowercased()).example"
        StubProtocol.answer(host) { request in
            guard request.value(forHTTPHeaderField: "Authorization") == "Bearer tok" else {
                return (401, #"{"error": "unauthorized", "message": "no token"}"#)
            }
            switch request.url?.path {
            case "/v1/session":
                return (
                    200,
                    """
                    {"tenant": "6f1b0c2e-1d7a-4b54-9e0c-2b8e5d0a7f11", "device": "0d7a3c59-2b4e-4f61-8a1d-3e5c7b9f0a12",
                     "epoch": "00112233-4455-6677-8899-aabbccddeeff", "hubSeq": 1, "hubTime": 5, "maxBodyBytes": 100,
                     "pushCursor": {"since": 0, "after": 0, "afterKey": ""}}
                    """
                )
            case "/v1/pull": return (503, #"{"error": "unavailable", "message": "PostgreSQL is down"}"#)
            default: return nil
            }
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [StubProtocol.self]
        let session = URLSession(configuration: configuration)
        let url = URL(string: "https://\(host)")!
        let hub = HTTPHub(url: url, token: "tok", session: session)
        let answer = try await hub.session(site: SiteID(high: 1, low: 2))
        #expect(answer.hubSeq == 1)
        #expect(answer.maxBodyBytes == 100)
        let unavailable = await #expect(throws: StrataError.self) {
            try await hub.pull(from: .start, epoch: answer.epoch, limit: 10)
        }
        #expect(unavailable?.code == .hubUnavailable)
        let refused = await #expect(throws: StrataError.self) {
            try await HTTPHub(url: url, token: "wrong", session: session).session(site: SiteID(high: 1, low: 2))
        }
        #expect(refused?.hubRefusal?.code == .unauthorized)
        #expect(refused?.message.contains("wrong") == false)
        let offline = await #expect(throws: StrataError.self) {
            try await hub.push(Changeset(data: Data([1, 2, 3])))
        }
        #expect(offline?.code == .hubUnavailable)
        #expect(offline?.cause is URLError)
    }
}

/// Answers requests to the hosts a test registered, in the process. It
/// keeps no state of its own; `handlers` is read and written only while
/// holding `lock`.
final class StubProtocol: URLProtocol {
    typealias Handler = @Sendable (URLRequest) -> (Int, String)?
    private static let lock = NSLock()
    nonisolated(unsafe) private static var handlers: [String: Handler] = [:]

    /// Answers the requests to `host` with `handler`'s status and body;
    /// nil fails them as a lost connection.
    static func answer(_ host: String, _ handler: @escaping Handler) {
        lock.withLock { handlers[host] = handler }
    }

    override class func canInit(with request: URLRequest) -> Bool {
        lock.withLock { handlers[request.url?.host ?? ""] != nil }
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        let handler = Self.lock.withLock { Self.handlers[request.url?.host ?? ""] }
        guard let (status, body) = handler?(request), let url = request.url,
            let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: nil)
        else {
            client?.urlProtocol(self, didFailWithError: URLError(.networkConnectionLost))
            return
        }
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client?.urlProtocol(self, didLoad: Data(body.utf8))
        client?.urlProtocolDidFinishLoading(self)
    }

    override func stopLoading() {}
}
