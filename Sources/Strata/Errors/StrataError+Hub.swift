import Foundation

/// The errors of a device's exchange with a sync hub. Each family's message
/// is written here, once; none names the device's token.
extension StrataError {
    /// The hub's answer to a refused request, kept as the ``cause`` of a
    /// ``Code/hubRefused`` error; nil for any other error.
    public var hubRefusal: HubRefusal? { cause as? HubRefusal }

    /// A hub answered `request` with an error.
    ///
    /// - Parameters:
    ///   - refusal: The hub's code, status, message and extra fields.
    ///   - request: What was asked, as "GET /v1/session".
    static func hubRefused(_ refusal: HubRefusal, request: String) -> StrataError {
        StrataError(
            .hubRefused,
            summary: "The hub refused \(request) with \(refusal.status) \(refusal.code): \(refusal.message)",
            remedy: remedy(for: refusal), path: nil, cause: refusal)
    }

    /// A hub that could not be reached or failed; `cause` is the error
    /// behind it (a `URLError`, a decoding error), if any.
    static func hubUnavailable(request: String, _ problem: String, cause: (any Error)? = nil) -> StrataError {
        StrataError(
            .hubUnavailable, summary: "The hub could not answer \(request): \(problem).",
            remedy: "Nothing was lost; try again later.", path: nil, cause: cause)
    }

    /// A push that no page size gets through: one object's changes are
    /// larger than the hub takes.
    static func hubBodyTooLarge(_ refusal: HubRefusal, bytes: Int) -> StrataError {
        StrataError(
            .hubRefused,
            summary:
                "The hub refused a push of one object (\(bytes) bytes) as too large: it takes at most \(refusal.limit.map(String.init) ?? "fewer") bytes.",
            remedy: "Make the object smaller (keep large data out of a synced object), or raise the hub's limit.",
            path: nil, cause: refusal)
    }

    /// A hub URL that no request can be made of.
    static func hubURLInvalid(_ url: URL) -> StrataError {
        StrataError(
            .invalidConfiguration, summary: "The hub URL \(url.absoluteString) is not one a request can be sent to.",
            remedy: "Pass the hub's base URL, such as https://sync.example.com.", path: nil)
    }

    private static func remedy(for refusal: HubRefusal) -> String? {
        switch refusal.code {
        case .unauthorized: "Check the device's token; a revoked token needs a new one (strata-hub device add)."
        case .wrongDataset: "The token belongs to another dataset than the file; use a token of the file's dataset."
        case .siteOfAnotherDevice:
            "This file first synced as another device: a copy of its file? Give it an identity of its own (Database.resetSyncIdentity(at:)), or use that device's token."
        case .clockSkew: "Set this device's clock right; the exchange is retried."
        case .epochChanged: "Pull from the new epoch; the exchange does it by itself."
        case .bodyTooLarge: "Push smaller pages."
        case .cursorCompacted: "The exchange catches up by itself (docs/Hub.md, \"Compaction\"); retry the exchange."
        default: nil
        }
    }
}
