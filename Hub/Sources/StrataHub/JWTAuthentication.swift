import Foundation
import JWTKit
import Logging

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How the hub checks the JWTs of the app's own identity provider, which
/// devices may present instead of the hub's device tokens (docs/Hub.md,
/// "The app's own authentication").
public struct JWTSettings: Sendable {
    /// Where the keys that sign the JWTs come from.
    public enum Keys: Sendable {
        /// A secret shared with the identity provider, at least 32 bytes:
        /// HS256.
        case hmac(secret: String)
        /// A PEM public key: an EC key (ES256, ES384 or ES512, by its
        /// curve) or an RSA key (RS256).
        case publicKeyPEM(String)
        /// A JSON Web Key Set's text (as a file holds it).
        case jwks(json: String)
        /// A JSON Web Key Set fetched from `url`: at the first JWT, again
        /// when `refresh` has passed, and when a JWT names a key id the set
        /// lacks (for that, at most every 30 seconds). A set that cannot be
        /// fetched again is kept; after a failed fetch, none for 5 seconds.
        case jwksURL(URL, refresh: Duration)
    }

    /// The keys.
    public var keys: Keys
    /// The `iss` a JWT must have.
    public var issuer: String
    /// A value `aud` must have (or hold).
    public var audience: String
    /// The claim holding the tenant: the dataset's UUID, as a string.
    public var tenantClaim: String
    /// The claim naming the device (an app install), when the identity
    /// provider issues one: a subject's devices are then told apart.
    /// Without it (or without the claim in a token), a subject is one
    /// device of its tenant.
    public var deviceClaim: String?
    /// The seconds `exp` and `nbf` are allowed to be off the hub's clock.
    public var leewaySeconds: Double

    /// Settings for JWTs of `issuer` for `audience`, signed with `keys`.
    public init(
        keys: Keys, issuer: String, audience: String, tenantClaim: String = "tenant", deviceClaim: String? = nil,
        leewaySeconds: Double = 60
    ) {
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.tenantClaim = tenantClaim
        self.deviceClaim = deviceClaim
        self.leewaySeconds = leewaySeconds
    }
}

/// A JWT that passed every check: who it names.
struct JWTIdentity: Sendable {
    var issuer: String
    var subject: String
    var tenant: UUID
    /// The device claim's value; "" without one.
    var deviceKey: String
    /// `iat`, when the token has one.
    var issuedAt: Double?
    var claims: DeviceClaims
}

/// Checks JWTs against ``JWTSettings``: the signature with the configured
/// keys and the header's algorithm (never `none`), then `iss`, `aud`,
/// `exp`, `nbf`, `sub` and the tenant claim. Each refusal is a
/// ``HubError`` `unauthorized` naming the check that failed.
final class JWTAuthenticator: Sendable {
    let settings: JWTSettings
    private let source: JWTKeySource

    init(_ settings: JWTSettings, logger: Logger) {
        self.settings = settings
        source = JWTKeySource(settings.keys, logger: logger)
    }

    /// Whether `token` is shaped as a JWT: three base64url parts.
    static func looksLikeJWT(_ token: some StringProtocol) -> Bool {
        token.split(separator: ".", omittingEmptySubsequences: false).count == 3
    }

    private struct Header: Decodable {
        var alg: String?
        var kid: String?
    }

    private struct Payload: JWTPayload {
        var values: [String: DeviceClaims.Value]
        init(from decoder: any Decoder) throws { values = try DeviceClaims.Object(from: decoder).values }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(DeviceClaims(values).json)
        }
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// The identity of `token`, at `now` (seconds since 1970).
    func verify(_ token: String, now: Double = Date().timeIntervalSince1970) async throws -> JWTIdentity {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Self.base64URL(parts[0]),
            let header = try? JSONDecoder().decode(Header.self, from: headerData)
        else {
            throw HubError.notAuthenticated("The JWT's header is not base64url JSON.")
        }
        guard let alg = header.alg, alg.lowercased() != "none" else {
            throw HubError.notAuthenticated("The JWT is unsigned (alg none): the hub takes only signed JWTs.")
        }
        let keys = try await source.keys(for: header.kid)
        let key: any JWTAlgorithm
        do {
            key = try await keys.getKey(for: header.kid.map { JWKIdentifier(string: $0) }, alg: alg)
        } catch {
            throw HubError.notAuthenticated("No key of the hub's matches the JWT's key id and algorithm \(alg).")
        }
        guard key.name == alg else {
            throw HubError.notAuthenticated("The JWT is signed with \(alg); the hub's key is for \(key.name).")
        }
        let payload: Payload
        do {
            payload = try await keys.verify(token, as: Payload.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw HubError.notAuthenticated("The JWT's signature does not verify with the hub's key.")
        } catch {
            throw HubError.notAuthenticated("The JWT could not be read: its signature or payload is malformed.")
        }
        return try check(DeviceClaims(payload.values), now: now)
    }

    /// The checks of the claims of a token whose signature verified.
    func check(_ claims: DeviceClaims, now: Double) throws -> JWTIdentity {
        guard case .string(let issuer) = claims["iss"] else {
            throw HubError.notAuthenticated("The JWT has no issuer (iss).")
        }
        guard issuer == settings.issuer else {
            throw HubError.notAuthenticated("The JWT's issuer (iss) '\(issuer)' is not the one the hub trusts.")
        }
        let audiences: [String]
        switch claims["aud"] {
        case .string(let audience): audiences = [audience]
        case .array(let values):
            audiences = values.compactMap {
                if case .string(let audience) = $0 { return audience }
                return nil
            }
        default: audiences = []
        }
        guard audiences.contains(settings.audience) else {
            throw HubError.notAuthenticated("The JWT's audience (aud) does not name this hub's audience.")
        }
        guard case .number(let expires) = claims["exp"] else {
            throw HubError.notAuthenticated("The JWT has no expiry (exp): the hub takes only JWTs that expire.")
        }
        guard now <= expires + settings.leewaySeconds else {
            throw HubError.notAuthenticated("The JWT expired (exp) \(Int(now - expires)) s ago; get a new one.")
        }
        if let notBefore = claims["nbf"] {
            guard case .number(let start) = notBefore else {
                throw HubError.notAuthenticated("The JWT's not-before time (nbf) is not a number.")
            }
            guard now + settings.leewaySeconds >= start else {
                throw HubError.notAuthenticated("The JWT is not valid yet (nbf): it starts in \(Int(start - now)) s.")
            }
        }
        guard case .string(let subject) = claims["sub"], !subject.isEmpty else {
            throw HubError.notAuthenticated("The JWT has no subject (sub).")
        }
        let name = settings.tenantClaim
        guard let tenantValue = claims[name] else {
            throw HubError.notAuthenticated("The JWT has no `\(name)` claim: the dataset's UUID it belongs to.")
        }
        guard case .string(let text) = tenantValue, let tenant = UUID(uuidString: text) else {
            throw HubError.notAuthenticated("The JWT's `\(name)` claim is not a dataset UUID.")
        }
        var deviceKey = ""
        if let claim = settings.deviceClaim, case .string(let value) = claims[claim] { deviceKey = value }
        var issuedAt: Double?
        if case .number(let value) = claims["iat"] { issuedAt = value }
        return JWTIdentity(
            issuer: issuer, subject: subject, tenant: tenant, deviceKey: deviceKey, issuedAt: issuedAt, claims: claims)
    }

    static func base64URL(_ text: some StringProtocol) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

/// The keys of ``JWTSettings/Keys``, fetched again as it says for a URL.
actor JWTKeySource {
    private let keys: JWTSettings.Keys
    private let logger: Logger
    private var collection: JWTKeyCollection?
    private var keyIDs: Set<String> = []
    private var fetchedAt: ContinuousClock.Instant?
    /// The last fetch for a key id the set lacked.
    private var unknownFetchedAt: ContinuousClock.Instant?
    /// The last fetch that failed: none again for 5 seconds.
    private var failedAt: ContinuousClock.Instant?

    init(_ keys: JWTSettings.Keys, logger: Logger) {
        self.keys = keys
        self.logger = logger
    }

    /// The keys to verify a JWT whose header names `kid`.
    func keys(for kid: String?) async throws -> JWTKeyCollection {
        switch keys {
        case .hmac(let secret):
            if let collection { return collection }
            guard secret.utf8.count >= 32 else {
                throw HubError.unavailable(
                    "The hub's JWT secret is shorter than HS256's 32 bytes: the operator must give a longer one.")
            }
            let made = await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
            collection = made
            return made
        case .publicKeyPEM(let pem):
            if let collection { return collection }
            let made = try await Self.collection(pem: pem)
            collection = made
            return made
        case .jwks(let json):
            if let collection { return collection }
            let made = try await Self.collection(jwks: json).collection
            collection = made
            return made
        case .jwksURL(let url, let refresh):
            let now = ContinuousClock.now
            let stale = fetchedAt.map { now - $0 > refresh } ?? true
            let unknown = collection != nil && kid.map { !keyIDs.contains($0) } ?? false
            let unknownMayFetch = unknownFetchedAt.map { now - $0 > .seconds(30) } ?? true
            let failedRecently = failedAt.map { now - $0 < .seconds(5) } ?? false
            if !failedRecently && (collection == nil || stale || (unknown && unknownMayFetch)) {
                if unknown { unknownFetchedAt = now }
                do {
                    let (data, response) = try await URLSession.shared.data(from: url)
                    if let status = (response as? HTTPURLResponse)?.statusCode, status != 200 {
                        throw HubError.unavailable("The JWKS at \(url) answered \(status).")
                    }
                    let (made, ids) = try await Self.collection(jwks: String(decoding: data, as: UTF8.self))
                    collection = made
                    keyIDs = ids
                    fetchedAt = now
                } catch {
                    failedAt = now
                    logger.warning("Could not fetch the JWKS at \(url): \(error)")
                }
            }
            guard let collection else {
                throw HubError.unavailable("The hub cannot fetch its JWT keys (JWKS); retry later.")
            }
            return collection
        }
    }

    static func collection(jwks json: String) async throws -> (collection: JWTKeyCollection, ids: Set<String>) {
        let collection = JWTKeyCollection()
        do {
            let set = try JSONDecoder().decode(JWKS.self, from: Data(json.utf8))
            try await collection.add(jwks: set)
            return (collection, Set(set.keys.compactMap { $0.keyIdentifier?.string }))
        } catch {
            throw HubError.invalidRequest("The JWKS is not a valid JSON Web Key Set: \(error)")
        }
    }

    static func collection(pem: String) async throws -> JWTKeyCollection {
        let collection = JWTKeyCollection()
        if let key = try? ES256PublicKey(pem: pem) {
            await collection.add(ecdsa: key)
        } else if let key = try? ES384PublicKey(pem: pem) {
            await collection.add(ecdsa: key)
        } else if let key = try? ES512PublicKey(pem: pem) {
            await collection.add(ecdsa: key)
        } else if let key = try? Insecure.RSA.PublicKey(pem: pem) {
            await collection.add(rsa: key, digestAlgorithm: .sha256)
        } else {
            throw HubError.invalidRequest("The JWT public key is not a PEM EC (P-256, P-384, P-521) or RSA public key.")
        }
        return collection
    }
}
