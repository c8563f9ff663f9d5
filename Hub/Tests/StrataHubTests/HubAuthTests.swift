import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import HummingbirdWSClient
import JWTKit
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
@_spi(Hub) import Strata
import Testing

@testable import StrataHub

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The app's own authentication: JWTs of its identity provider beside
/// the hub's device tokens, claims, and revocation that closes streams.
@Suite("The app's own authentication")
struct HubAuthTests {
    /// 64 bytes: HS384 (a test signs with it too) needs 48.
    static let secret = String(repeating: "the tests' shared secret ", count: 3).prefix(64).description
    static let issuer = "https://id.example.com"
    static let audience = "strata-hub-tests"

    static func settings(_ keys: JWTSettings.Keys = .hmac(secret: secret)) -> JWTSettings {
        JWTSettings(keys: keys, issuer: issuer, audience: audience, deviceClaim: "device")
    }

    /// A JWT's claims, each left out when nil.
    struct Claims: JWTPayload {
        var iss: String? = HubAuthTests.issuer
        var aud: String? = HubAuthTests.audience
        var sub: String? = "alice"
        var exp: Double? = Date().timeIntervalSince1970 + 3_600
        var nbf: Double?
        var iat: Double? = Date().timeIntervalSince1970 - 10
        var tenant: String?
        var device: String?
        var projects: [String]?
        var admin: Bool?

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func sign(_ claims: Claims, secret: String = secret) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return try await keys.sign(claims)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Every check a JWT must pass, each failing alone: 401 `unauthorized`
    /// on the route, with a message naming the check and never the token.
    @Test func eachCheckOfAJWTRefusesOnItsOwn() async throws {
        try await TestCluster.withHub(jwt: Self.settings()) { hub, settings in
            let tenant = UUID().uuidString
            let now = Date().timeIntervalSince1970
            var good = Claims(tenant: tenant)
            good.device = "phone"
            let valid = try await Self.sign(good)
            let unsignedHeader = Self.base64URL(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
            let validPayload = valid.split(separator: ".")[1]
            let otherAlgorithm = try await {
                let keys = JWTKeyCollection()
                await keys.add(hmac: HMACKey(from: Self.secret), digestAlgorithm: .sha384)
                return try await keys.sign(good)
            }()
            func with(_ change: (inout Claims) -> Void) async throws -> String {
                var claims = good
                change(&claims)
                return try await Self.sign(claims)
            }
            let cases: [(String, String, String)] = [
                (
                    "forged", try await Self.sign(good, secret: String(repeating: "another secret ", count: 5)),
                    "signature does not verify"
                ),
                ("expired", try await with { $0.exp = now - 3_600 }, "expired (exp)"),
                ("no exp", try await with { $0.exp = nil }, "no expiry (exp)"),
                ("not yet valid", try await with { $0.nbf = now + 3_600 }, "not valid yet (nbf)"),
                ("wrong audience", try await with { $0.aud = "another-app" }, "audience (aud)"),
                ("wrong issuer", try await with { $0.iss = "https://evil.example.com" }, "issuer (iss)"),
                ("no subject", try await with { $0.sub = nil }, "no subject (sub)"),
                ("no tenant", try await with { $0.tenant = nil }, "no `tenant` claim"),
                ("tenant not a UUID", try await with { $0.tenant = "acme" }, "`tenant` claim is not a dataset UUID"),
                ("alg none", "\(unsignedHeader).\(validPayload).", "unsigned (alg none)"),
                (
                    "alg none, signature kept", "\(unsignedHeader).\(validPayload).\(valid.split(separator: ".")[2])",
                    "unsigned (alg none)"
                ),
                ("another algorithm", otherAlgorithm, "signed with HS384"),
                ("not base64", "abc.def.ghi", "header is not base64url JSON"),
            ]
            let site = SiteID.random().bytes.map { String(format: "%02x", $0) }.joined()
            try await HubSecurityTests.application(hub).test(.live) { client in
                let accepted = try await client.execute(
                    uri: "/v1/session?site=\(site)", method: .get, headers: [.authorization: "Bearer \(valid)"])
                #expect(accepted.status == .ok, "\(String(buffer: accepted.body))")
                for (name, token, message) in cases {
                    let response = try await client.execute(
                        uri: "/v1/session?site=\(site)", method: .get, headers: [.authorization: "Bearer \(token)"])
                    let body = String(buffer: response.body)
                    #expect(response.status == .unauthorized, "\(name): \(body)")
                    #expect(body.contains("\"error\":\"unauthorized\""), "\(name): \(body)")
                    #expect(body.contains(message), "\(name): \(body)")
                    #expect(!body.contains(token), "\(name): the answer echoes the token")
                    for part in token.split(separator: ".") where part.count > 8 {
                        #expect(!body.contains(part), "\(name): the answer echoes part of the token")
                    }
                }
            }
            // Only the valid token made a device, and one tenant.
            try await settings.withClient(logger: TestCluster.logger) { client in
                let rows = try await client.query(
                    "SELECT count(*) FROM devices WHERE issuer IS NOT NULL", logger: TestCluster.logger)
                for try await count in rows.decode(Int64.self) { #expect(count == 1) }
            }
        }
    }

    /// A hub without JWT settings refuses a JWT, saying so.
    @Test func aHubWithoutJWTSettingsRefusesJWTs() async throws {
        try await TestCluster.withHub { hub, _ in
            let token = try await Self.sign(Claims(tenant: UUID().uuidString))
            let error = await #expect(throws: HubError.self) { try await hub.authenticate(token: token) }
            #expect(error?.code == .unauthorized)
            #expect(error?.message.contains("takes only its own device tokens") == true, "\(error?.message ?? "")")
            let unknown = await #expect(throws: HubError.self) { try await hub.authenticate(token: "sth1_unknown") }
            #expect(unknown?.message.contains("unknown or revoked") == true)
        }
    }

    /// A JWT's devices: one per issuer, subject and device claim, made at
    /// first sight with the token's claims, which a later token updates.
    @Test func aJWTDeviceIsMadeAtFirstSightWithItsClaims() async throws {
        try await TestCluster.withHub(jwt: Self.settings()) { hub, settings in
            let tenant = UUID()
            var claims = Claims(tenant: tenant.uuidString, device: "phone", projects: ["a", "b"], admin: false)
            let phone = try await hub.authenticate(token: try await Self.sign(claims))
            #expect(phone.tenant == tenant)
            #expect(phone.claims["sub"] == .string("alice"))
            #expect(phone.claims["projects"] == .array([.string("a"), .string("b")]))
            #expect(phone.claims["admin"] == .bool(false))
            claims.projects = ["c"]
            let again = try await hub.authenticate(token: try await Self.sign(claims))
            #expect(again.id == phone.id)
            claims.device = "laptop"
            let laptop = try await hub.authenticate(token: try await Self.sign(claims))
            #expect(laptop.id != phone.id)
            try await settings.withClient(logger: TestCluster.logger) { client in
                let rows = try await client.query(
                    """
                    SELECT claims->'projects', subject, device_key FROM devices WHERE id = \(phone.id)
                    """, logger: TestCluster.logger)
                for try await (projects, subject, key) in rows.decode((String, String, String).self) {
                    #expect(projects == #"["c"]"#)
                    #expect(subject == "alice")
                    #expect(key == "phone")
                }
            }
        }
    }

    /// The hub's own tokens carry the claims `device add --claim` gave.
    @Test func aDeviceTokenCarriesItsClaims() async throws {
        try await TestCluster.withHub { hub, _ in
            let claims = DeviceClaims(["sub": .string("bob"), "projects": .array([.string("a"), .string("b")])])
            let added = try await hub.addDevice(tenant: UUID(), name: "phone", claims: claims)
            let device = try #require(try await hub.device(token: added.token))
            #expect(device.claims == claims)
            #expect(device.claims.json == #"{"projects":["a","b"],"sub":"bob"}"#)
            let plain = try await hub.addDevice(tenant: UUID(), name: "plain")
            #expect(try await hub.device(token: plain.token)?.claims == DeviceClaims())
        }
    }

    @Test func claimsAssignmentsAndCanonicalJSON() throws {
        #expect(try DeviceClaims.parse(assignment: "sub=alice") == ("sub", .string("alice")))
        #expect(try DeviceClaims.parse(assignment: "projects=a,b").1 == .array([.string("a"), .string("b")]))
        #expect(try DeviceClaims.parse(assignment: "projects=a,").1 == .array([.string("a")]))
        #expect(try DeviceClaims.parse(assignment: "projects=,").1 == .array([]))
        #expect(try DeviceClaims.parse(assignment: "note=a=b").1 == .string("a=b"))
        #expect(throws: HubError.self) { try DeviceClaims.parse(assignment: "=x") }
        #expect(throws: HubError.self) { try DeviceClaims.parse(assignment: "novalue") }
        let parsed = try DeviceClaims(
            json: #"{"b":1.5,"a":"x\"y","n":7,"ok":true,"list":[1,"two",false],"skip":{"x":1},"nil":null}"#)
        #expect(parsed.json == #"{"a":"x\"y","b":1.5,"list":[1,"two",false],"n":7,"ok":true}"#)
        #expect(try DeviceClaims(json: parsed.json) == parsed)
        #expect(throws: (any Error).self) { try DeviceClaims(json: "[1]") }
    }

    /// A subject revoked: its tokens issued before are refused, a token
    /// issued after is taken.
    @Test func aRevokedSubjectIsRefused() async throws {
        try await TestCluster.withHub(jwt: Self.settings()) { hub, _ in
            let tenant = UUID().uuidString
            let before = try await Self.sign(Claims(tenant: tenant))
            let device = try await hub.authenticate(token: before)
            let noIssuedAt = try await Self.sign(Claims(iat: nil, tenant: tenant))
            #expect(try await hub.revokeSubject(issuer: Self.issuer, subject: "alice") == 1)
            for token in [before, noIssuedAt] {
                let error = await #expect(throws: HubError.self) { try await hub.authenticate(token: token) }
                #expect(error?.code == .unauthorized)
                #expect(error?.message.contains("subject was revoked") == true, "\(error?.message ?? "")")
            }
            let after = try await Self.sign(Claims(iat: Date().timeIntervalSince1970 + 5, tenant: tenant))
            #expect(try await hub.authenticate(token: after).id == device.id)
            // Another subject of the issuer is not touched.
            #expect(try await hub.device(token: try await Self.sign(Claims(sub: "bob", tenant: tenant))) != nil)
        }
    }

    /// A JWT device syncs end to end through the library's client: two
    /// users of one tenant, each with a JWT.
    @Test func jwtDevicesSyncEndToEnd() async throws {
        try await TestCluster.withHub(jwt: Self.settings()) { hub, _ in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let tenant = UUID()
            let phone = try folder.open("phone.strata", tenant: tenant)
            let laptop = try folder.open("laptop.strata", tenant: tenant)
            defer {
                phone.close()
                laptop.close()
            }
            let phoneToken = try await Self.sign(Claims(sub: "alice", tenant: tenant.uuidString, device: "phone"))
            let laptopToken = try await Self.sign(Claims(sub: "bob", tenant: tenant.uuidString, device: "laptop"))
            try await HubClientTests.serving(hub) { url in
                try await phone.write { tx in try tx.insert(Note(id: 1, title: "from alice's phone")) }
                try await phone.sync.exchange(with: HTTPHub(url: url, token: phoneToken))
                try await laptop.sync.exchange(with: HTTPHub(url: url, token: laptopToken))
                try await laptop.write { tx in try tx.insert(Note(id: 2, title: "from bob's laptop")) }
                try await laptop.sync.exchange(with: HTTPHub(url: url, token: laptopToken))
                try await phone.sync.exchange(with: HTTPHub(url: url, token: phoneToken))
            }
            #expect(try await laptop.read { try $0.object(Note.self, primaryKey: 1)?.title } == "from alice's phone")
            #expect(try await phone.read { try $0.object(Note.self, primaryKey: 2)?.title } == "from bob's laptop")
            #expect(try CanonicalState(of: phone) == (try CanonicalState(of: laptop)))
        }
    }

    /// Keys from a JWKS URL: fetched at the first JWT, fetched again for a
    /// key id it lacks (a rotation), but not again and again for unknown
    /// key ids.
    @Test func keysFromAJWKSURLFollowARotation() async throws {
        let first = ES256PrivateKey()
        let second = ES256PrivateKey()
        let rotated = #"{"keys":[\#(Self.jwk(second, "k2"))]}"#
        let served = NIOLockedValueBox((jwks: #"{"keys":[\#(Self.jwk(first, "k1"))]}"#, fetches: 0))
        let router = Router()
        router.get("/jwks.json") { _, _ in
            let jwks = served.withLockedValue { state -> String in
                state.fetches += 1
                return state.jwks
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: jwks)))
        }
        let identityProvider = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: TestCluster.logger)
        try await identityProvider.test(.live) { client in
            let url = URL(string: "http://127.0.0.1:\(client.port!)/jwks.json")!
            try await TestCluster.withHub(jwt: Self.settings(.jwksURL(url, refresh: .seconds(3_600)))) { hub, _ in
                func sign(_ key: ES256PrivateKey, kid: String) async throws -> String {
                    let keys = JWTKeyCollection()
                    await keys.add(ecdsa: key, kid: JWKIdentifier(string: kid))
                    return try await keys.sign(Claims(tenant: UUID().uuidString), kid: JWKIdentifier(string: kid))
                }
                _ = try await hub.authenticate(token: try await sign(first, kid: "k1"))
                #expect(served.withLockedValue { $0.fetches } == 1)
                _ = try await hub.authenticate(token: try await sign(first, kid: "k1"))
                #expect(served.withLockedValue { $0.fetches } == 1)
                served.withLockedValue { $0.jwks = rotated }
                _ = try await hub.authenticate(token: try await sign(second, kid: "k2"))
                #expect(served.withLockedValue { $0.fetches } == 2)
                // A key id no set has: refused, and no third fetch so soon.
                let error = await #expect(throws: HubError.self) {
                    try await hub.authenticate(token: try await sign(ES256PrivateKey(), kid: "k3"))
                }
                #expect(error?.code == .unauthorized)
                #expect(served.withLockedValue { $0.fetches } == 2)
                // A token of the first key, no longer in the set.
                let old = await #expect(throws: HubError.self) {
                    try await hub.authenticate(token: try await sign(first, kid: "k2"))
                }
                #expect(old?.message.contains("signature does not verify") == true, "\(old?.message ?? "")")
            }
        }
    }

    /// `strata-hub serve` as a process of its own, with a JWT key file
    /// and a metrics port: it takes a JWT, serves `/metrics` on its
    /// metrics port only, and closes a stream of a device that this
    /// (another) process revokes.
    @Test func aServedProcessTakesJWTsServesMetricsApartAndHearsRevocations() async throws {
        try await TestCluster.withHub { hub, settings in
            let folder = try TemporaryFolder()
            defer { folder.remove() }
            let keyFile = folder.file("hmac.key")
            try Data((Self.secret + "\n").utf8).write(to: URL(fileURLWithPath: keyFile))
            guard let binary = ProcessInfo.processInfo.environment["HUB_BINARY"] else {
                throw HubTestError("HUB_BINARY names no strata-hub: run the tests with `make hub-test`.")
            }
            let child = try ChildProcess(
                binary,
                [
                    "serve", "--port", "0", "--pg-host", settings.host, "--pg-port", "\(settings.port)", "--pg-user",
                    settings.user, "--pg-database", settings.database, "--jwt-issuer", Self.issuer, "--jwt-audience",
                    Self.audience, "--jwt-hmac-key-file", keyFile, "--metrics-port", "0",
                ], captureOutput: true)
            defer {
                kill(child.pid, SIGKILL)
                Task { _ = await child.wait() }
            }
            var urls: [String: URL] = [:]
            for _ in 0 ..< 2 {
                // "strata-hub listening on http://…", "strata-hub metrics on http://…/metrics"
                let line = await child.readLine()
                guard let range = line.range(of: "http://"), let url = URL(string: String(line[range.lowerBound...]))
                else { throw HubTestError("strata-hub serve printed '\(line)'") }
                urls[line.contains("metrics") ? "metrics" : "hub"] = url
            }
            let hubURL = try #require(urls["hub"])
            let metricsURL = try #require(urls["metrics"])
            let jwt = try await Self.sign(Claims(tenant: UUID().uuidString))
            let site = SiteID.random().bytes.map { String(format: "%02x", $0) }.joined()
            func get(_ url: URL, token: String? = nil) async throws -> (Int, String) {
                var request = URLRequest(url: url)
                if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
                let (data, response) = try await URLSession.shared.data(for: request)
                return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
            }
            let session = try await get(URL(string: hubURL.absoluteString + "/v1/session?site=\(site)")!, token: jwt)
            #expect(session.0 == 200, "\(session.1)")
            #expect(try await get(URL(string: hubURL.absoluteString + "/metrics")!).0 == 404)
            let metrics = try await get(metricsURL)
            #expect(metrics.0 == 200)
            #expect(metrics.1.contains(#"strata_hub_requests_total{route="/v1/session",method="GET",status="200"} 1"#))
            // A device token's stream on the process, revoked here.
            let tenant = UUID()
            let phone = try await hub.addDevice(tenant: tenant, name: "phone")
            let ended = NIOLockedValueBox(false)
            let stream = await HubProcessesTests.openStream(hubURL, token: phone.token, into: EventLog())
            let watcher = Task {
                _ = try? await stream.value
                ended.withLockedValue { $0 = true }
            }
            defer {
                stream.cancel()
                watcher.cancel()
            }
            try await Task.sleep(for: .milliseconds(300))
            #expect(!ended.withLockedValue { $0 })
            #expect(try await hub.revokeDevice(phone.device))
            try await HubClientTests.waitUntil("the process closed the revoked device's stream") {
                ended.withLockedValue { $0 }
            }
        }
    }

    /// `strata-hub device add --claim` and `strata-hub subject revoke`.
    @Test func theCommandsGiveClaimsAndRevokeSubjects() async throws {
        try await TestCluster.withHub(jwt: Self.settings()) { hub, settings in
            guard let binary = ProcessInfo.processInfo.environment["HUB_BINARY"] else {
                throw HubTestError("HUB_BINARY names no strata-hub: run the tests with `make hub-test`.")
            }
            let database = [
                "--pg-host", settings.host, "--pg-port", "\(settings.port)", "--pg-user", settings.user,
                "--pg-database",
                settings.database,
            ]
            func run(_ arguments: [String]) async throws -> (Int32, String) {
                let child = try ChildProcess(binary, arguments + database, captureOutput: true)
                let output = await child.readAll()
                return (await child.wait(), output)
            }
            let (status, output) = try await run([
                "device", "add", "--tenant", UUID().uuidString, "--claim", "sub=bob", "--claim", "projects=a,b",
            ])
            #expect(status == 0, "\(output)")
            let token = try #require(
                output.split(separator: "\n").first { $0.hasPrefix("token") }?.split(separator: " ").last)
            let device = try #require(try await hub.device(token: String(token)))
            #expect(
                device.claims
                    == DeviceClaims(["sub": .string("bob"), "projects": .array([.string("a"), .string("b")])]))
            #expect(try await run(["device", "add", "--tenant", UUID().uuidString, "--claim", "novalue"]).0 != 0)
            let jwt = try await Self.sign(Claims(tenant: UUID().uuidString))
            _ = try await hub.authenticate(token: jwt)
            let revoked = try await run(["subject", "revoke", "--issuer", Self.issuer, "--subject", "alice"])
            #expect(revoked.0 == 0, "\(revoked.1)")
            #expect(revoked.1.contains("(1 device(s))"), "\(revoked.1)")
            #expect(try await hub.device(token: jwt) == nil)
        }
    }

    /// A subject's revocation closes the watchers of its tokens issued
    /// until then (and of tokens without `iat`); a device's, all of them.
    @Test func revocationAnnouncementsCloseTheWatchersTheyName() async throws {
        let revocations = RevocationBroadcaster()
        let id = UUID()
        func watch(_ issuedAt: Double?) -> (AsyncStream<Void>, NIOLockedValueBox<Bool>) {
            (revocations.watch(Hub.Device(id: id, tenant: UUID(), issuedAt: issuedAt)), NIOLockedValueBox(false))
        }
        let watchers = [watch(100), watch(200), watch(nil)]
        #expect(!revocations.publish(notification: "revoked:not-a-uuid"))
        #expect(!revocations.publish(notification: "\(UUID().uuidString):3"))
        #expect(revocations.publish(notification: "revoked:\(id.uuidString):150.5"))
        #expect(revocations.watched[id]?.count == 1)
        #expect(revocations.watched[id]?.first == 200)
        for (stream, closed) in [watchers[0], watchers[2]] {
            for await _ in stream { closed.withLockedValue { $0 = true } }
            #expect(closed.withLockedValue { $0 })
        }
        #expect(revocations.publish(notification: "revoked:\(id.uuidString)"))
        #expect(revocations.watched[id] == nil)
    }

    /// The JWK of `key`'s public key, named `kid`.
    static func jwk(_ key: ES256PrivateKey, _ kid: String) -> String {
        let parameters = key.publicKey.parameters!
        return
            #"{"kty":"EC","crv":"P-256","x":"\#(parameters.x)","y":"\#(parameters.y)","kid":"\#(kid)","alg":"ES256","use":"sig"}"#
    }

    /// A revoked device's open stream and long poll are closed, on another
    /// hub (process) of the database too, and the other devices' stay.
    @Test func revokingADeviceClosesItsOpenStreamsOnEveryHub() async throws {
        try await TestCluster.withHub { hub, settings in
            try await HubProcessesTests.withTwoHubs(hub, settings) { first, second, firstURL, secondURL in
                let tenant = UUID()
                let phone = try await first.addDevice(tenant: tenant, name: "phone")
                let laptop = try await first.addDevice(tenant: tenant, name: "laptop")
                let phoneEnded = NIOLockedValueBox(false)
                let phoneLog = EventLog()
                let laptopLog = EventLog()
                let phoneStream = await HubProcessesTests.openStream(secondURL, token: phone.token, into: phoneLog)
                let watcher = Task {
                    _ = try? await phoneStream.value
                    phoneEnded.withLockedValue { $0 = true }
                }
                let laptopStream = await HubProcessesTests.openStream(secondURL, token: laptop.token, into: laptopLog)
                defer {
                    phoneStream.cancel()
                    laptopStream.cancel()
                    watcher.cancel()
                }
                let waiting = Task {
                    var request = URLRequest(
                        url: URL(string: secondURL.absoluteString + "/v1/wait?after=0&timeout=50")!,
                        timeoutInterval: 120)
                    request.setValue("Bearer \(phone.token)", forHTTPHeaderField: "Authorization")
                    let (data, response) = try await URLSession.shared.data(for: request)
                    return ((response as? HTTPURLResponse)?.statusCode, String(decoding: data, as: UTF8.self))
                }
                try await HubClientTests.waitUntil("the phone's stream and long poll are watched") {
                    second.revocations.watched[phone.device]?.count == 2
                }
                #expect(try await first.revokeDevice(phone.device))
                try await HubClientTests.waitUntil("the phone's stream on the other hub closed") {
                    phoneEnded.withLockedValue { $0 }
                }
                let (status, body) = try await waiting.value
                #expect(status == 401, "\(body)")
                #expect(body.contains("revoked while it waited"), "\(body)")
                // The laptop's stream still hears commits.
                let folder = try TemporaryFolder()
                defer { folder.remove() }
                let file = try folder.open("laptop.strata", tenant: tenant)
                defer { file.close() }
                try await file.write { tx in try tx.insert(Note(id: 1, title: "after the revocation")) }
                try await file.sync.exchange(with: HTTPHub(url: firstURL, token: laptop.token))
                try await HubClientTests.waitUntil("the laptop's stream was poked") { !laptopLog.texts.isEmpty }
                #expect(phoneLog.texts.isEmpty)
            }
        }
    }
}
